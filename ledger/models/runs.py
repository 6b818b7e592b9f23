"""An agent's runs and what it keeps during one: its journal of side effects, run notes
and compaction snapshots."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import models
from django.db.models import Q

from ledger import choices
from ledger.choices import (
    JournalState,
)
from ledger.models.agents import Agent
from ledger.models.history import tracked


class JournalEntryQuerySet(models.QuerySet["JournalEntry"]):
    def unresolved(self, intended_older_than: datetime) -> JournalEntryQuerySet:
        """Unknown outcomes, and intents that never reported back in time."""
        return self.filter(
            Q(state=JournalState.UNKNOWN)
            | Q(state=JournalState.INTENDED, created_at__lte=intended_older_than)
        )

    def of_agent(self, agent: Agent) -> JournalEntryQuerySet:
        return self.filter(agent=agent)

    def steps(self) -> models.QuerySet[Any]:
        """Every recorded version of these entries (intended, outcome unknown, done…), each
        entry's oldest first, in one query however many entries and steps there are."""
        history = self.model.history
        rows: models.QuerySet[Any] = history.filter(id__in=self.values("pk"))
        return rows.order_by("id", "history_date", "history_id")


class RunQuerySet(models.QuerySet["Run"]):
    def of_agent(self, agent: Agent) -> RunQuerySet:
        """A run is the business of the agent that started it, and of nobody else's key."""
        return self.filter(agent=agent)


class Run(models.Model):
    """One agent run: the unit that reads, writes, journals and compacts."""

    ref = models.CharField(max_length=100, unique=True)
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="runs")
    subject = models.ForeignKey(
        "Subject", null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    started_at = models.DateTimeField(auto_now_add=True)

    history = tracked()
    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-started_at"]
        # The subject page lists a person's latest runs.
        indexes = [models.Index(fields=["subject", "-started_at"], name="run_subject_recent")]

    def __str__(self) -> str:
        return self.ref


class JournalEntry(models.Model):
    """An agent's side effect, written before it acts: intent → effect → verification."""

    State = choices.JournalState

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="journal_entries")
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="journal_entries")
    idempotency_key = models.CharField(max_length=200)
    action = models.CharField(max_length=200)
    intent = models.JSONField()
    effect = models.JSONField(null=True, blank=True)
    verification = models.JSONField(null=True, blank=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.INTENDED)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    history = tracked()
    objects = JournalEntryQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "journal entries"
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "idempotency_key"], name="journal_key_per_agent"
            ),
            models.CheckConstraint(
                condition=Q(state__in=["intended", "done", "not_done", "unknown"]),
                name="journal_state_valid",
            ),
        ]
        indexes = [
            models.Index(fields=["state", "created_at"], name="journal_state_age"),
            # The Django admin lists every entry, newest first.
            models.Index(fields=["-created_at", "-id"], name="journal_newest"),
        ]

    def __str__(self) -> str:
        return f"{self.action} ({self.state})"

    def is_stale_intent(self, cutoff: datetime) -> bool:
        """Journaled before ``cutoff`` and never reported back: it may have happened."""
        return self.state == self.State.INTENDED and self.created_at <= cutoff

    def needs_resolution(self, cutoff: datetime) -> bool:
        """The row-level twin of ``JournalEntryQuerySet.unresolved``."""
        return self.state == self.State.UNKNOWN or self.is_stale_intent(cutoff)


class RunNote(models.Model):
    """A small keyed note an agent keeps during a run, outside its context window."""

    KEY_MAX = 40
    VALUE_MAX = 500

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="notes")
    key = models.CharField(max_length=KEY_MAX)
    value = models.CharField(max_length=VALUE_MAX)
    updated_at = models.DateTimeField()

    history = tracked()

    class Meta:
        ordering = ["key"]
        constraints = [models.UniqueConstraint(fields=["run", "key"], name="run_note_key_once")]

    def __str__(self) -> str:
        return f"{self.key}={self.value}"


class Snapshot(models.Model):
    """One compaction of a run: the state document, checked by shape."""

    Status = choices.SnapshotStatus

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="snapshots")
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="snapshots")
    generation = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices)
    document = models.JSONField()
    pinned = models.JSONField(default=list)
    tokens_before = models.PositiveIntegerField(null=True, blank=True)
    tokens_after = models.PositiveIntegerField(null=True, blank=True)
    budget = models.JSONField(null=True, blank=True)
    narrative = models.TextField(blank=True, default="")
    problems = models.JSONField(default=list)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["run", "generation"]
        constraints = [
            models.UniqueConstraint(fields=["run", "generation"], name="snapshot_generation_once")
        ]

    def __str__(self) -> str:
        return f"{self.run.ref}#{self.generation} ({self.status})"
