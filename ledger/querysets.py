"""Reads, as chainable QuerySet methods. Views and the API ask these, never raw filters."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import models
from django.db.models import Q
from django.utils import timezone

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

SUPPORT_GROUP = "support"
ADMIN_GROUP = "admin"


def is_staff_role(user: AbstractBaseUser | AnonymousUser) -> bool:
    """Support and admins see every subject; everyone else only the subjects they own."""
    if not user.is_authenticated:
        return False
    if getattr(user, "is_superuser", False):
        return True
    groups = user.groups.all()  # type: ignore[union-attr]
    return any(g.name in (SUPPORT_GROUP, ADMIN_GROUP) for g in groups)


class SubjectQuerySet(models.QuerySet):
    def visible_to(self, user: AbstractBaseUser | AnonymousUser) -> SubjectQuerySet:
        if not user.is_authenticated:
            return self.none()
        if is_staff_role(user):
            return self
        return self.filter(owner=user)


class MemoryQuerySet(models.QuerySet):
    LIVE = ("active", "pending")

    def visible_to(self, user: AbstractBaseUser | AnonymousUser) -> MemoryQuerySet:
        return self.filter(subject__in=type(self)._subjects_for(user))

    @staticmethod
    def _subjects_for(user: AbstractBaseUser | AnonymousUser) -> Any:
        from ledger.models import Subject

        return Subject.objects.visible_to(user).values("pk")

    def for_subject(self, subject: Any) -> MemoryQuerySet:
        return self.filter(subject=subject)

    def live(self) -> MemoryQuerySet:
        """Active or pending: rows the gate compares new writes against."""
        return self.filter(status__in=self.LIVE)

    def servable(self, now: datetime | None = None) -> MemoryQuerySet:
        """What an agent may be given: active and not past its expiry at this moment."""
        now = now or timezone.now()
        return self.filter(status="active").filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=now)
        )

    def in_slot(self, subject: Any, key: str) -> MemoryQuerySet:
        return self.filter(subject=subject, key=key)

    def due_to_expire(self, now: datetime | None = None) -> MemoryQuerySet:
        now = now or timezone.now()
        return self.filter(status__in=self.LIVE, expires_at__lte=now)

    def due_for_review(self, now: datetime | None = None) -> MemoryQuerySet:
        now = now or timezone.now()
        return self.filter(status__in=self.LIVE, review_at__lte=now)

    def expiring_within(self, now: datetime, until: datetime) -> MemoryQuerySet:
        """Live now, and dying after ``now`` but no later than ``until``."""
        return self.filter(status__in=self.LIVE, expires_at__gt=now, expires_at__lte=until)

    def shown_on_subject_page(self) -> MemoryQuerySet:
        """What a person's page lists by default: live, and expired (which they may renew)."""
        return self.filter(status__in=(*self.LIVE, "expired"))

    def matching(self, text: str) -> MemoryQuerySet:
        """A person's search within their memories: every word must appear in the statement."""
        queryset = self
        for word in text.split():
            queryset = queryset.filter(statement__icontains=word)
        return queryset


class ConflictQuerySet(models.QuerySet):
    def open(self) -> ConflictQuerySet:
        return self.filter(status="open")

    def visible_to(self, user: AbstractBaseUser | AnonymousUser) -> ConflictQuerySet:
        return self.filter(subject__in=MemoryQuerySet._subjects_for(user))


class LedgerEntryQuerySet(models.QuerySet):
    def in_force(self, now: datetime | None = None) -> LedgerEntryQuerySet:
        """Active and not past expiry at this moment, whatever the sweep has done so far."""
        now = now or timezone.now()
        return self.filter(status="active").filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=now)
        )

    def stale(self, now: datetime | None = None) -> LedgerEntryQuerySet:
        now = now or timezone.now()
        return self.filter(Q(status="expired") | Q(status="active", expires_at__lte=now))

    def visible_to(self, user: AbstractBaseUser | AnonymousUser) -> LedgerEntryQuerySet:
        return self.filter(subject__in=MemoryQuerySet._subjects_for(user))

    def due_to_expire(self, now: datetime | None = None) -> LedgerEntryQuerySet:
        now = now or timezone.now()
        return self.filter(status="active", expires_at__lte=now)

    def superseded(self) -> LedgerEntryQuerySet:
        return self.filter(status="superseded")

    def withdrawn(self) -> LedgerEntryQuerySet:
        return self.filter(status="withdrawn")

    def shown_to_owner(self, now: datetime | None = None) -> LedgerEntryQuerySet:
        """What an end user sees about themselves: commitments and proposals in force."""
        return self.in_force(now).filter(kind__in=("commitment", "proposal"))

    def contradictions(self, now: datetime | None = None) -> list[list[Any]]:
        """Groups of in-force established entries on one subject and key whose facts differ.

        Nothing picks a winner: every entry in a group is returned, oldest first.
        """
        groups: dict[tuple[int, str], list[Any]] = {}
        rows = (
            self.in_force(now)
            .filter(kind="established")
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

    def commitments_to_carry(self, subject: Any, now: datetime | None = None) -> list[str]:
        """The facts every compaction of a run about ``subject`` must carry word for word."""
        if subject is None:
            return []
        rows = self.in_force(now).filter(subject=subject, kind="commitment")
        return list(rows.order_by("recorded_at").values_list("fact", flat=True))


class JournalEntryQuerySet(models.QuerySet):
    def unresolved(self, intended_older_than: datetime) -> JournalEntryQuerySet:
        """Unknown outcomes, and intents that never reported back in time."""
        return self.filter(
            Q(state="unknown") | Q(state="intended", created_at__lte=intended_older_than)
        )

    def of_agent(self, agent: Any) -> JournalEntryQuerySet:
        return self.filter(agent=agent)


class ReminderQuerySet(models.QuerySet):
    # A memory deleted, superseded or erased by any path needs no review any more.
    REVIEWABLE = ("active", "pending", "expired")

    def open(self) -> ReminderQuerySet:
        """Not yet cleared by a review of the memory."""
        return self.filter(cleared_at__isnull=True)

    def actionable(self) -> ReminderQuerySet:
        """Open, about a memory a person can still review."""
        return self.open().filter(memory__status__in=self.REVIEWABLE)

    def unread(self) -> ReminderQuerySet:
        return self.actionable().filter(read_at__isnull=True)

    def unsent(self) -> ReminderQuerySet:
        return self.actionable().filter(sent_at__isnull=True)

    def for_person(self, user: AbstractBaseUser | AnonymousUser) -> ReminderQuerySet:
        """A person's own reminders, plus the support queue for support and admins.

        Always limited to memories the person may still see, so a former owner loses
        the reminders of a subject that changed hands.
        """
        if not user.is_authenticated:
            return self.none()
        mine = Q(audience="owner", recipient=user)
        if is_staff_role(user):
            mine |= Q(audience="support")
        return self.filter(mine, memory__subject__in=MemoryQuerySet._subjects_for(user))


class RunQuerySet(models.QuerySet):
    def of_agent(self, agent: Any) -> RunQuerySet:
        """A run is the business of the agent that started it, and of nobody else's key."""
        return self.filter(agent=agent)
