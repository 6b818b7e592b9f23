"""Embedding memories: right after the write commits, by the backfill, and after a change
of model.

A new memory is embedded by a Celery task queued when its transaction commits (one task
per transaction, however many memories it wrote), or at once in this process when tasks
run eagerly. The write never waits for the model and never fails for it: until its vector
exists a memory is ranked by its words, and recall says so. The beat's pass
(``embed_missing``) embeds whatever a broker outage or a backend failure left behind, and
``manage.py embed_memories`` does the same for every memory after a model change.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from celery import current_app
from django.db import connections, transaction
from django.db.models import QuerySet
from django.utils import timezone

from ledger.delivery import broker
from ledger.embeddings import (
    EmbeddingUnavailable,
    Vectors,
    configured_model,
    embedder,
    to_bytes,
)
from ledger.models import Memory, MemoryQuerySet, MemoryVector
from ledger.rules.memories import LIVE_MEMORY

logger = logging.getLogger(__name__)

EMBED_TASK = "ledger.tasks.embed_memories"
BATCH = 64


def embed(memory_ids: Iterable[uuid.UUID], *, using: str = "default") -> int:
    """Embed those of ``memory_ids`` that have no vector of the configured model; how many.
    Raises ``EmbeddingUnavailable`` when the backend cannot embed now."""
    backend = embedder()
    if backend is None:
        return 0
    wanted = list(memory_ids)
    done = 0
    for start in range(0, len(wanted), BATCH):
        rows = list(
            Memory.objects.using(using)
            .filter(pk__in=wanted[start : start + BATCH])
            .exclude(vector__model=backend.model)
            .values_list("pk", "statement")
        )
        if rows:
            vectors = backend.embed([statement for _, statement in rows])
            _store(rows, vectors, backend.model, using=using)
            done += len(rows)
    return done


def _store(rows: list[tuple[uuid.UUID, str]], vectors: Vectors, model: str, *, using: str) -> None:
    now = timezone.now()
    MemoryVector.objects.using(using).bulk_create(
        [
            MemoryVector(
                memory_id=pk,
                model=model,
                dimensions=len(vector),
                vector=to_bytes(vector),
                embedded_at=now,
            )
            for (pk, _), vector in zip(rows, vectors, strict=True)
        ],
        update_conflicts=True,
        unique_fields=["memory"],
        update_fields=["model", "dimensions", "vector", "embedded_at"],
    )


def missing(*, using: str = "default") -> int:
    """How many live memories have no vector of the configured model."""
    model = configured_model()
    if model is None:
        return 0
    return _unembedded(model, using).count()


def _unembedded(model: str, using: str) -> MemoryQuerySet:
    return (
        Memory.objects.using(using)
        .filter(status__in=LIVE_MEMORY)
        .exclude(pk__in=MemoryVector.objects.using(using).of_model(model).values("memory_id"))
        .order_by("pk")
    )


def embed_missing(
    *,
    using: str = "default",
    limit: int | None = None,
    progress: Callable[[int], object] | None = None,
) -> int:
    """Embed live memories without a vector of the configured model, a batch at a time, in
    the order of their ids; at most ``limit``; how many. Resumable and idempotent: each
    batch is stored when done, and a memory with its vector is never embedded twice."""
    model = configured_model()
    if model is None:
        return 0
    done = 0
    while limit is None or done < limit:
        size = BATCH if limit is None else min(BATCH, limit - done)
        queryset = _unembedded(model, using)
        ids = list(queryset.values_list("pk", flat=True)[:size])
        if not ids:
            break
        done += embed(ids, using=using)
        if progress is not None:
            progress(len(ids))
    return done


@dataclass(eq=False)
class _EmbedAfterCommit:
    """The memories one transaction wrote, for the embedder once it commits."""

    using: str
    ids: list[uuid.UUID] = field(default_factory=list)

    def __call__(self) -> None:
        queue(self.ids, using=self.using)


def embed_after_commit(memory_id: uuid.UUID, using: str) -> None:
    """Have the new memory ``memory_id`` embedded once the current transaction commits."""
    if configured_model() is None:
        return
    for entry in connections[using].run_on_commit:
        # Each entry is (savepoints, callback, robust): as ``seals.seal_after_commit``.
        if isinstance(entry[1], _EmbedAfterCommit):
            entry[1].ids.append(memory_id)
            return
    transaction.on_commit(_EmbedAfterCommit(using, [memory_id]), using=using, robust=True)


def queue(memory_ids: list[uuid.UUID], *, using: str) -> None:
    """The embedding task for ``memory_ids``; with ``CELERY_TASK_ALWAYS_EAGER``, now."""
    if current_app.conf.task_always_eager:
        try:
            embed(memory_ids, using=using)
        except EmbeddingUnavailable as error:
            logger.warning("New memories were not embedded (%s): the beat's pass will.", error)
        return
    broker.send(
        EMBED_TASK, ([str(pk) for pk in memory_ids], using), instead="the beat's pass embeds them"
    )


def forget(memory_ids: QuerySet[Any, Any], *, using: str = "default") -> int:
    """Delete the vectors of the memories ``memory_ids`` selects (an erasure's): a vector
    can be turned back into something close to its words."""
    deleted, _ = MemoryVector.objects.using(using).filter(memory_id__in=memory_ids).delete()
    return deleted
