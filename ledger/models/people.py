"""What happened to people and subjects beyond their memories: erasures, role changes
and lifted lockouts."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from ledger import choices
from ledger.models.memories import Subject


class Erasure(models.Model):
    """The skeleton an erasure leaves: that it happened, when, who asked, who carried it
    out, and how many rows of each kind lost their content. Never any of the content."""

    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="erasures")
    erased_by = models.CharField(max_length=200)
    # The role of whoever carried it out, at the time (``choices.ActorRole``).
    erased_by_role = models.CharField(
        max_length=10, choices=choices.ActorRole.choices, blank=True, default=""
    )
    # Who asked: the person's own label when they erased on the dashboard; otherwise who
    # asked and how, as the staff member who carried it out wrote it ("" before it was kept).
    requested_by = models.CharField(max_length=200, blank=True, default="")
    erased_at = models.DateTimeField()
    memories = models.PositiveIntegerField(default=0)
    ledger_entries = models.PositiveIntegerField(default=0)
    sources = models.PositiveIntegerField(default=0)
    journal_entries = models.PositiveIntegerField(default=0)
    run_notes = models.PositiveIntegerField(default=0)
    recalls = models.PositiveIntegerField(default=0)
    snapshots = models.PositiveIntegerField(default=0)
    # Earlier versions blanked in the history tables, and stored API responses deleted.
    history_rows = models.PositiveIntegerField(default=0)
    stored_responses = models.PositiveIntegerField(default=0)
    conflicts = models.PositiveIntegerField(default=0)
    # The write gate's decisions, whose reasons quote what was written.
    write_decisions = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-erased_at"]

    def __str__(self) -> str:
        return f"erasure by {self.erased_by} at {self.erased_at:%Y-%m-%d %H:%M}"


class PersonChange(models.Model):
    """One change to a person (their role, e-mail, subjects, access, password link). Append-only.

    People are Django's users, which keep no history of their own; this is theirs, written
    by ``ledger.actions.people`` in the same transaction as the change.
    """

    person = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="changes",
    )
    # Kept in words: the audit must still say who, should the person be deleted.
    username = models.CharField(max_length=150)
    field = models.CharField(max_length=40)
    before = models.TextField(blank=True, default="")
    after = models.TextField(blank=True, default="")
    reason = models.TextField(blank=True, default="")
    actor = models.CharField(max_length=200)
    actor_role = models.CharField(max_length=10, choices=choices.ActorRole.choices)
    changed_at = models.DateTimeField()

    class Meta:
        ordering = ["-changed_at", "-id"]

    def __str__(self) -> str:
        return f"{self.username}: {self.field} {self.before} → {self.after}"


class LockoutLift(models.Model):
    """A sign-in lockout an admin lifted before it ended: of a username or of an address,
    what it was, who lifted it, when and why. Append-only; django-axes' records of the
    failures are gone once lifted, so this is what the audit keeps of it."""

    # One of the two: the lockout was of a username, or of an address.
    username = models.CharField(max_length=255, blank=True, default="")
    ip_address = models.GenericIPAddressField(null=True, blank=True)
    failures = models.PositiveIntegerField()
    locked_until = models.DateTimeField()
    reason = models.TextField()
    actor = models.CharField(max_length=200)
    actor_role = models.CharField(max_length=10, choices=choices.ActorRole.choices)
    lifted_at = models.DateTimeField()

    class Meta:
        ordering = ["-lifted_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(username="") & Q(ip_address__isnull=False))
                | (~Q(username="") & Q(ip_address__isnull=True)),
                name="lockout_lift_of_one",
            )
        ]

    def __str__(self) -> str:
        return f"lockout of {self.username or self.ip_address} lifted by {self.actor}"
