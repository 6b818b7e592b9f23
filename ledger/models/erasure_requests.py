"""Erasure requests: support asks, an admin approves (and the erasure runs) or declines."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from ledger.models.history import tracked
from ledger.models.memories import Subject
from ledger.rules.erasure_requests import Decision


class ErasureRequestQuerySet(models.QuerySet["ErasureRequest"]):
    def waiting(self) -> ErasureRequestQuerySet:
        return self.filter(decision=Decision.WAITING)

    def decided(self) -> ErasureRequestQuerySet:
        return self.exclude(decision=Decision.WAITING)


class ErasureRequest(models.Model):
    """Support's request to erase everything about a subject, waiting for a second person,
    an admin, whose approval runs the erasure. The person's own erasure, and an admin's,
    need none (``access.erasure_needs_approval``)."""

    Decision = Decision

    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="erasure_requests")
    # History labels (``user:sam``), as every record of who acted keeps them.
    requested_by = models.CharField(max_length=200)
    # Who asked for the erasure and how, in support's words: it becomes the erasure's
    # ``requested_by`` (``rules.people.checked_request``).
    reason = models.CharField(max_length=200)
    # The erase form's "also pause memory", carried out with the erasure.
    pause = models.BooleanField(default=True)
    created_at = models.DateTimeField()
    decision = models.CharField(
        max_length=10, choices=Decision.choices, blank=True, default=Decision.WAITING
    )
    decided_by = models.CharField(max_length=200, blank=True, default="")
    decided_at = models.DateTimeField(null=True, blank=True)
    # Why an admin declined (required then); empty otherwise.
    decision_reason = models.TextField(blank=True, default="")

    history = tracked()
    objects = ErasureRequestQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # One request waits per subject; the action refuses a second in words first.
            models.UniqueConstraint(
                fields=["subject"],
                condition=Q(decision=""),
                name="erasure_request_one_waiting",
            )
        ]

    def __str__(self) -> str:
        return f"erasure request by {self.requested_by} at {self.created_at:%Y-%m-%d %H:%M}"
