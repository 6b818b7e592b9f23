"""The ledger: durable facts and commitments that must survive every compaction."""

from __future__ import annotations

import uuid
from datetime import datetime

from django.db import models
from django.db.models import Q
from django.utils import timezone

from ledger import access, choices
from ledger.choices import (
    LedgerKind,
    LedgerStatus,
)
from ledger.models.agents import Agent
from ledger.models.history import tracked
from ledger.models.memories import Source, Subject
from ledger.models.runs import Run


def ledger_entry_in_force(now: datetime, via: str = "") -> Q:
    """Active and not past expiry at ``now``, whatever the sweep has done so far."""
    return Q(**{f"{via}status": LedgerStatus.ACTIVE}) & (
        Q(**{f"{via}expires_at__isnull": True}) | Q(**{f"{via}expires_at__gt": now})
    )


class LedgerEntryQuerySet(models.QuerySet["LedgerEntry"]):
    def in_force(self, now: datetime | None = None) -> LedgerEntryQuerySet:
        """In force (``ledger_entry_in_force``) at ``now``, by default this moment."""
        return self.filter(ledger_entry_in_force(now or timezone.now()))

    def stale(self, now: datetime | None = None) -> LedgerEntryQuerySet:
        now = now or timezone.now()
        return self.filter(
            Q(status=LedgerStatus.EXPIRED) | Q(status=LedgerStatus.ACTIVE, expires_at__lte=now)
        )

    def visible_to(self, user: access.Person) -> LedgerEntryQuerySet:
        return self.filter(access.visible_subjects(user, via="subject__"))

    def due_to_expire(self, now: datetime | None = None) -> LedgerEntryQuerySet:
        now = now or timezone.now()
        return self.filter(status=LedgerStatus.ACTIVE, expires_at__lte=now)

    def superseded(self) -> LedgerEntryQuerySet:
        return self.filter(status=LedgerStatus.SUPERSEDED)

    def withdrawn(self) -> LedgerEntryQuerySet:
        return self.filter(status=LedgerStatus.WITHDRAWN)

    def shown_to_owner(self, now: datetime | None = None) -> LedgerEntryQuerySet:
        """What an end user sees about themselves: commitments and proposals in force."""
        return self.in_force(now).filter(kind__in=(LedgerKind.COMMITMENT, LedgerKind.PROPOSAL))

    def contradictions(self, now: datetime | None = None) -> list[list[LedgerEntry]]:
        """Groups of in-force established entries on one subject and key whose facts differ.

        Nothing picks a winner: every entry in a group is returned, oldest first.
        """
        groups: dict[tuple[int, str], list[LedgerEntry]] = {}
        rows = (
            self.in_force(now)
            .filter(kind=LedgerKind.ESTABLISHED)
            .exclude(key="")
            .select_related("subject")
            .order_by("subject_id", "key", "recorded_at")
        )
        for entry in rows:
            groups.setdefault((entry.subject_id, entry.key), []).append(entry)
        return [
            group
            for group in groups.values()
            if len({" ".join(e.fact.casefold().split()) for e in group}) > 1
        ]

    def commitments_to_carry(
        self, subject: Subject | None, now: datetime | None = None
    ) -> list[str]:
        """The facts every compaction of a run about ``subject`` must carry word for word."""
        if subject is None:
            return []
        rows = self.in_force(now).filter(subject=subject, kind=LedgerKind.COMMITMENT)
        return list(rows.order_by("recorded_at").values_list("fact", flat=True))


class LedgerEntry(models.Model):
    """A durable fact or commitment that must survive every compaction."""

    Kind = choices.LedgerKind
    Status = choices.LedgerStatus

    FACT_MAX = 2000

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="ledger_entries")
    run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="ledger_entries"
    )
    agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="ledger_entries"
    )
    key = models.CharField(max_length=100, blank=True, default="")
    fact = models.TextField()
    kind = models.CharField(max_length=20, choices=Kind.choices)
    source = models.ForeignKey(Source, on_delete=models.PROTECT, related_name="ledger_entries")
    promotion_source = models.ForeignKey(
        Source, null=True, blank=True, on_delete=models.PROTECT, related_name="promotions"
    )
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.ACTIVE)
    immutable = models.BooleanField(default=False)
    expires_at = models.DateTimeField(null=True, blank=True)
    supersedes = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="superseded_by"
    )
    recorded_at = models.DateTimeField()
    version = models.PositiveIntegerField(default=1)

    history = tracked()
    objects = LedgerEntryQuerySet.as_manager()

    class Meta:
        ordering = ["-recorded_at"]
        verbose_name_plural = "ledger entries"
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=["established", "interpretation", "proposal", "commitment"]),
                name="ledger_kind_valid",
            ),
            models.CheckConstraint(
                condition=Q(status="erased") | ~Q(fact=""), name="ledger_fact_not_empty"
            ),
        ]
        indexes = [
            models.Index(fields=["subject", "status", "expires_at"], name="ledger_subject_live"),
            # The Django admin lists every entry, newest first.
            models.Index(fields=["-recorded_at", "-id"], name="ledger_newest"),
            models.Index(
                fields=["expires_at"], name="ledger_expiring", condition=Q(status="active")
            ),
        ]

    def __str__(self) -> str:
        return self.fact

    def status_at(self, now: datetime) -> str:
        """An active entry past its expiry is expired now, whether or not the sweep has run."""
        if self.status == self.Status.ACTIVE and self.expires_at and self.expires_at <= now:
            return self.Status.EXPIRED
        return self.status
