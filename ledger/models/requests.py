"""State kept for the API's requests: stored answers for Idempotency-Keys, rate-limit counters."""

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


class RateCounter(models.Model):
    """How many requests of one kind (reads or writes) one agent made in one fixed window,
    when no Redis is configured. ``ledger.api.throttling`` counts in one atomic statement, so
    every web process sees the same number; a window's row is deleted once it has passed."""

    bucket = models.CharField(max_length=100)
    # Seconds since the epoch: the same arithmetic on PostgreSQL and SQLite.
    window_start = models.BigIntegerField()
    expires_at = models.BigIntegerField()
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["bucket", "window_start"], name="rate_counter_one_per_window"
            )
        ]
        indexes = [models.Index(fields=["expires_at"], name="rate_counter_expires")]

    def __str__(self) -> str:
        return f"{self.bucket} from {self.window_start}: {self.count}"
