"""Support's work on a queue item: who has taken it, the ticket it belongs to, and the
internal notes left on it. Staff only: none of it reaches the person, the API or agents."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Upper

from ledger.models.history import tracked
from ledger.models.memories import Conflict, Memory, Subject
from ledger.models.runs import JournalEntry
from ledger.rules.work import TICKET_MAX

# The queue item each kind of work is on: the field naming it on ``QueueWork``.
ITEM_FIELDS: dict[str, str] = {
    "conflict": "conflict",
    "memory": "memory",
    "journal": "journal_entry",
}


class QueueWorkQuerySet(models.QuerySet["QueueWork"]):
    def about(self, subjects: Any) -> QueueWorkQuerySet:
        """Work on these subjects' items, a journal entry's found by its run (which may
        have learnt its subject after the work began)."""
        return self.filter(work_about(subjects))


def work_about(subjects: Any) -> Q:
    return Q(subject__in=subjects) | Q(journal_entry__run__subject__in=subjects)


class QueueWork(models.Model):
    """The work on one queue item: exactly one of ``conflict``, ``memory`` and
    ``journal_entry`` is set, and each item has at most one (the one-to-one keys)."""

    conflict = models.OneToOneField(
        Conflict, null=True, blank=True, on_delete=models.CASCADE, related_name="work"
    )
    memory = models.OneToOneField(
        Memory, null=True, blank=True, on_delete=models.CASCADE, related_name="work"
    )
    journal_entry = models.OneToOneField(
        JournalEntry, null=True, blank=True, on_delete=models.CASCADE, related_name="work"
    )
    # The item's subject when the work began (none for a run not yet about anyone): the
    # audit files the work's changes under it.
    subject = models.ForeignKey(
        Subject, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="queue_work",
    )
    ticket = models.CharField(max_length=TICKET_MAX, blank=True, default="")
    updated_at = models.DateTimeField()

    history = tracked()
    objects = QueueWorkQuerySet.as_manager()

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(conflict__isnull=False, memory__isnull=True, journal_entry__isnull=True)
                | Q(conflict__isnull=True, memory__isnull=False, journal_entry__isnull=True)
                | Q(conflict__isnull=True, memory__isnull=True, journal_entry__isnull=False),
                name="queue_work_one_item",
            ),
        ]
        indexes = [
            # "Mine": the queue joins work by item, then keeps one person's.
            models.Index(fields=["assignee"], name="queue_work_assignee"),
            # Support finds items by ticket however it was typed (``ticket__iexact``).
            models.Index(Upper("ticket"), name="queue_work_ticket"),
        ]

    def __str__(self) -> str:
        return f"work {self.pk}"


class QueueNote(models.Model):
    """An internal note on a queue item, by a member of staff. Never changed: a later note
    says what changed. Erasure deletes the notes on a subject's items (they may quote them)."""

    work = models.ForeignKey(QueueWork, on_delete=models.CASCADE, related_name="notes")
    # Who wrote it, as history names people (``Actor.label``): "user:sam".
    author = models.CharField(max_length=200)
    text = models.TextField()
    written_at = models.DateTimeField()

    class Meta:
        ordering = ["written_at", "id"]

    def __str__(self) -> str:
        return f"note by {self.author}"

    @property
    def author_name(self) -> str:
        _, _, name = self.author.partition(":")
        return name
