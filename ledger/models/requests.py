"""State kept for the API's requests: stored answers for Idempotency-Keys."""

from __future__ import annotations

from django.db import models

from ledger.models.agents import Agent
from ledger.models.memories import Subject
from ledger.models.runs import Run


class IdempotencyRecord(models.Model):
    """The first response to a write sent with an ``Idempotency-Key``, per agent."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=200)
    fingerprint = models.CharField(max_length=64)
    response_status = models.PositiveSmallIntegerField()
    response_body = models.JSONField()
    subject = models.ForeignKey(Subject, null=True, on_delete=models.CASCADE, related_name="+")
    # The run the request was filed under: a run may learn its subject after the answer was
    # stored, and an erasure of that subject must still find the answer.
    run = models.ForeignKey(Run, null=True, on_delete=models.CASCADE, related_name="+")
    # An answer about several subjects (a batch retraction) names each of them here, so an
    # erasure of any one of them deletes it.
    subjects = models.ManyToManyField(Subject, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["agent", "key"], name="idempotency_key_per_agent")
        ]

    def __str__(self) -> str:
        return f"{self.key} ({self.response_status})"
