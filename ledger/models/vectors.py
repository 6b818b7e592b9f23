"""Each memory's meaning as a vector, from the embedding model of ``ledger.embeddings``.

Derived data, not a record: no history, rebuilt by ``manage.py embed_memories`` after a
model change, and deleted with the words it came from when a person is erased (a vector
can be turned back into something close to its sentence).
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models import Count, QuerySet


class MemoryVectorQuerySet(models.QuerySet["MemoryVector"]):
    def of_model(self, model: str) -> MemoryVectorQuerySet:
        return self.filter(model=model)

    def count_per_model(self) -> QuerySet[Any, Any]:
        """``model`` and ``memories`` for each model vectors are stored under, largest first."""
        return (
            self.order_by()
            .values("model")
            .annotate(memories=Count("pk"))
            .order_by("-memories", "model")
        )


class MemoryVector(models.Model):
    memory = models.OneToOneField(
        "ledger.Memory", primary_key=True, on_delete=models.CASCADE, related_name="vector"
    )
    model = models.CharField(max_length=200)
    dimensions = models.PositiveSmallIntegerField()
    # Little-endian float32, ``dimensions`` of them, length 1 (ledger.embeddings.to_bytes):
    # one column that PostgreSQL and SQLite keep alike; recall scores a subject's few
    # hundred at most in NumPy (docs/recall.md says why not pgvector here).
    vector = models.BinaryField()
    embedded_at = models.DateTimeField()

    objects = MemoryVectorQuerySet.as_manager()

    class Meta:
        indexes = [models.Index(fields=["model"], name="memory_vector_model")]

    def __str__(self) -> str:
        return f"{self.model} vector of {self.memory_id}"
