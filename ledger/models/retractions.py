"""Batch retractions (support's workbench) and the memories each took."""

from __future__ import annotations

import uuid

from django.db import models

from ledger import choices
from ledger.models.history import tracked
from ledger.models.memories import Memory, Subject, SubjectQuerySet


class RetractionBatch(models.Model):
    """Memories deleted together in one action, such as everything a poisoned message wrote.

    Listed and undone as one: the undo puts back each memory still as the batch left it,
    and reports the ones that changed since.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # What chose the memories: any of source_ref, run, agent, written_after, written_before.
    selection = models.JSONField()
    reason = models.TextField()
    retracted_by = models.CharField(max_length=200)
    retracted_at = models.DateTimeField()
    undone_by = models.CharField(max_length=200, blank=True, default="")
    undone_at = models.DateTimeField(null=True, blank=True)

    history = tracked()

    class Meta:
        ordering = ["-retracted_at"]
        verbose_name_plural = "retraction batches"

    def __str__(self) -> str:
        return f"retraction by {self.retracted_by} at {self.retracted_at:%Y-%m-%d %H:%M}"

    def subjects(self) -> SubjectQuerySet:
        """The subjects this batch took memories from."""
        return Subject.objects.filter(memories__retraction_items__batch=self).distinct()


class RetractionItem(models.Model):
    """One memory of a batch: the status it had before, and its version right after, so
    that an undo can tell whether anyone changed it since."""

    batch = models.ForeignKey(RetractionBatch, on_delete=models.CASCADE, related_name="items")
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="retraction_items")
    status_before = models.CharField(max_length=12, choices=choices.MemoryStatus.choices)
    version_after = models.PositiveIntegerField()

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["batch", "memory"], name="retraction_item_once")
        ]

    def __str__(self) -> str:
        return f"{self.memory_id} in {self.batch_id}"
