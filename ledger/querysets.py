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


class JournalEntryQuerySet(models.QuerySet):
    def unresolved(self, intended_older_than: datetime) -> JournalEntryQuerySet:
        """Unknown outcomes, and intents that never reported back in time."""
        return self.filter(
            Q(state="unknown") | Q(state="intended", created_at__lte=intended_older_than)
        )
