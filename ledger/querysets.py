"""Reads, as chainable QuerySet methods. Views and the API ask these, never raw filters."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict

from django.db import models
from django.db.models import Count, F, Max, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from ledger import access
from ledger.choices import (
    Audience,
    ConflictStatus,
    JournalState,
    LedgerKind,
    LedgerStatus,
    MemoryStatus,
)
from ledger.policy import ACTIONABLE_MEMORY, LIVE_MEMORY

if TYPE_CHECKING:
    # The models import this module, so it names them for the type checker only; the
    # QuerySet[...] parameters below are strings ruff does not count as uses.
    from ledger.models import (  # noqa: F401
        Agent,
        Conflict,
        JournalEntry,
        LedgerEntry,
        Memory,
        RecallItem,
        Reminder,
        Run,
        Subject,
    )


class SubjectQuerySet(models.QuerySet["Subject"]):
    def visible_to(self, user: access.Person) -> SubjectQuerySet:
        return self.filter(access.visible_subjects(user))


class MemoryQuerySet(models.QuerySet["Memory"]):
    def visible_to(self, user: access.Person) -> MemoryQuerySet:
        return self.filter(access.visible_subjects(user, via="subject__"))

    def for_subject(self, subject: Subject) -> MemoryQuerySet:
        return self.filter(subject=subject)

    def live(self) -> MemoryQuerySet:
        """Active or pending: rows the gate compares new writes against."""
        return self.filter(status__in=LIVE_MEMORY)

    def servable(self, now: datetime | None = None) -> MemoryQuerySet:
        """What an agent may be given: active, not past its expiry at this moment, and not
        withheld by the person. The one filter every recall path (ranking, conflicts) uses."""
        now = now or timezone.now()
        return self.filter(status=MemoryStatus.ACTIVE, withheld=False).filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=now)
        )

    def in_slot(self, subject: Subject, key: str) -> MemoryQuerySet:
        return self.filter(subject=subject, key=key)

    def due_to_expire(self, now: datetime | None = None) -> MemoryQuerySet:
        now = now or timezone.now()
        return self.filter(status__in=LIVE_MEMORY, expires_at__lte=now)

    def due_for_review(self, now: datetime | None = None) -> MemoryQuerySet:
        now = now or timezone.now()
        return self.filter(status__in=LIVE_MEMORY, review_at__lte=now)

    def expiring_within(self, now: datetime, until: datetime) -> MemoryQuerySet:
        """Live now, and dying after ``now`` but no later than ``until``."""
        return self.filter(status__in=LIVE_MEMORY, expires_at__gt=now, expires_at__lte=until)

    def shown_on_subject_page(self) -> MemoryQuerySet:
        """What a person's page lists by default: what they may still act on."""
        return self.filter(status__in=ACTIONABLE_MEMORY)

    def matching(self, text: str) -> MemoryQuerySet:
        """A person's search within their memories: every word must appear in the statement."""
        queryset = self
        for word in text.split():
            queryset = queryset.filter(statement__icontains=word)
        return queryset


class UsageRow(TypedDict):
    memory_id: uuid.UUID
    conversations: int
    last_read: datetime


class ConversationRow(TypedDict):
    conversation: int
    run: str | None
    agent: str
    reads: int
    last_read: datetime


class RecallItemQuerySet(models.QuerySet["RecallItem"]):
    """Which memories agents were given. A conversation is one run; a read made outside
    any run has nothing to group it with, so it counts as a conversation of its own."""

    def of_memories(self, memories: Iterable[Memory]) -> RecallItemQuerySet:
        return self.filter(memory__in=list(memories))

    def about(self, subject: Subject) -> RecallItemQuerySet:
        """Every memory of ``subject`` any agent was given (recalls carry their subject)."""
        return self.filter(recall__subject=subject)

    def usage_per_memory(self) -> models.QuerySet[Any, UsageRow]:
        """One row per memory: ``memory_id``, ``conversations`` and ``last_read``."""
        return (
            self.order_by()
            .values("memory_id")
            .annotate(
                conversations=Count("recall__run", distinct=True)
                + Count("pk", filter=Q(recall__run__isnull=True)),
                last_read=Max("recall__recalled_at"),
            )
        )

    def conversations(self) -> models.QuerySet[Any, ConversationRow]:
        """One row per conversation, latest first: ``run`` (its ref, None outside any run),
        ``agent`` (its name), ``reads`` and ``last_read``."""
        return (
            self.annotate(conversation=Coalesce("recall__run_id", F("recall_id") * -1))
            .order_by()
            .values("conversation")
            .annotate(
                run=F("recall__run__ref"),
                agent=F("recall__agent__name"),
                reads=Count("pk"),
                last_read=Max("recall__recalled_at"),
            )
            .order_by("-last_read", "-conversation")
        )


class ConflictQuerySet(models.QuerySet["Conflict"]):
    def open(self) -> ConflictQuerySet:
        return self.filter(status=ConflictStatus.OPEN)

    def visible_to(self, user: access.Person) -> ConflictQuerySet:
        return self.filter(access.visible_subjects(user, via="subject__"))


class LedgerEntryQuerySet(models.QuerySet["LedgerEntry"]):
    def in_force(self, now: datetime | None = None) -> LedgerEntryQuerySet:
        """Active and not past expiry at this moment, whatever the sweep has done so far."""
        now = now or timezone.now()
        return self.filter(status=LedgerStatus.ACTIVE).filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=now)
        )

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


class JournalEntryQuerySet(models.QuerySet["JournalEntry"]):
    def unresolved(self, intended_older_than: datetime) -> JournalEntryQuerySet:
        """Unknown outcomes, and intents that never reported back in time."""
        return self.filter(
            Q(state=JournalState.UNKNOWN)
            | Q(state=JournalState.INTENDED, created_at__lte=intended_older_than)
        )

    def of_agent(self, agent: Agent) -> JournalEntryQuerySet:
        return self.filter(agent=agent)


class ReminderQuerySet(models.QuerySet["Reminder"]):
    def open(self) -> ReminderQuerySet:
        """Not yet cleared by a review of the memory."""
        return self.filter(cleared_at__isnull=True)

    def actionable(self) -> ReminderQuerySet:
        """Open, about a memory a person can still act on: one deleted, superseded or
        erased by any path needs no review any more."""
        return self.open().filter(memory__status__in=ACTIONABLE_MEMORY)

    def unread(self) -> ReminderQuerySet:
        return self.actionable().filter(read_at__isnull=True)

    def unsent(self) -> ReminderQuerySet:
        return self.actionable().filter(sent_at__isnull=True)

    def for_person(self, user: access.Person) -> ReminderQuerySet:
        """A person's own reminders, plus the support queue for support and admins.

        Always limited to memories the person may still see, so a former owner loses
        the reminders of a subject that changed hands.
        """
        if access.role_of(user) is None:
            return self.none()
        mine = Q(audience=Audience.OWNER, recipient=user)
        if access.is_staff(user):
            mine |= Q(audience=Audience.SUPPORT)
        return self.filter(mine, access.visible_subjects(user, via="memory__subject__"))


class RunQuerySet(models.QuerySet["Run"]):
    def of_agent(self, agent: Agent) -> RunQuerySet:
        """A run is the business of the agent that started it, and of nobody else's key."""
        return self.filter(agent=agent)
