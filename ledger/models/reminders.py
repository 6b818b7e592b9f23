"""Review-date reminders for people and support."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from ledger import access, choices
from ledger.choices import (
    Audience,
)
from ledger.models.memories import Memory
from ledger.rules.memories import ACTIONABLE_MEMORY


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


class Reminder(models.Model):
    """A memory due for review, or about to expire, for one audience."""

    Kind = choices.ReminderKind
    Audience = choices.Audience

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="reminders")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    audience = models.CharField(max_length=10, choices=Audience.choices)
    recipient = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="reminders",
    )
    due_on = models.DateField()
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    read_at = models.DateTimeField(null=True, blank=True)
    cleared_at = models.DateTimeField(null=True, blank=True)

    objects = ReminderQuerySet.as_manager()

    class Meta:
        ordering = ["due_on", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["memory", "kind", "audience", "due_on"], name="reminder_once_per_due_date"
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} reminder for {self.audience}, due {self.due_on}"
