"""Review reminders: what is due for review or about to expire, for whom, and the e-mail.

A reminder is stored once per memory, kind, audience and due date (a unique constraint,
written with ``ON CONFLICT DO NOTHING``), so however often the task runs, and even if two
runs overlap, nobody is reminded twice of the same thing. Reminders are not tracked
models: they are notices about memories, not claims, and carry no history.
"""

from __future__ import annotations

import email.policy
import logging
from datetime import datetime, timedelta
from email.policy import Policy
from smtplib import SMTPException

from django.conf import settings
from django.contrib.auth.models import User
from django.core.mail import EmailMessage, mailers
from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q
from django.db.models.functions import TruncDate
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from ledger import access
from ledger.models import Memory, MemoryQuerySet, Reminder

logger = logging.getLogger(__name__)

# Memories looked at per query while creating reminders.
CREATE_BATCH = 500
# Reminders one run e-mails at most; the rest wait for the next run.
DIGEST_LIMIT = 5000


class DigestNotSent(Exception):
    """Some digests failed; their reminders stay unsent so a retry sends them."""


def create_due_reminders(*, now: datetime | None = None) -> int:
    """Create the reminders that have become due; returns how many memories got one."""
    now = now or timezone.now()
    soon = now + timedelta(days=settings.MEMORYADMIN_EXPIRING_SOON_DAYS)
    return _remind(
        Memory.objects.due_for_review(now), kind=Reminder.Kind.REVIEW, due_field="review_at"
    ) + _remind(
        Memory.objects.expiring_within(now, soon),
        kind=Reminder.Kind.EXPIRING,
        due_field="expires_at",
    )


def _remind(candidates: MemoryQuerySet, *, kind: str, due_field: str) -> int:
    """One reminder per audience for each candidate that lacks one for its due date."""
    same_due = Reminder.objects.filter(memory=OuterRef("pk"), kind=kind, due_on=OuterRef("due"))
    missing = (
        candidates.annotate(due=TruncDate(due_field))
        .filter(
            ~Exists(same_due.filter(audience=Reminder.Audience.SUPPORT))
            | (
                Q(subject__owner__isnull=False)
                & ~Exists(same_due.filter(audience=Reminder.Audience.OWNER))
            )
        )
        .order_by("pk")
        .values_list("pk", "due", "subject__owner_id")
    )
    reminded = 0
    after = None
    while True:
        page = missing if after is None else missing.filter(pk__gt=after)
        batch = list(page[:CREATE_BATCH])
        if not batch:
            return reminded
        rows = []
        for memory_id, due_on, owner_id in batch:
            rows.append(
                Reminder(
                    memory_id=memory_id,
                    kind=kind,
                    audience=Reminder.Audience.SUPPORT,
                    due_on=due_on,
                )
            )
            if owner_id is not None:
                rows.append(
                    Reminder(
                        memory_id=memory_id,
                        kind=kind,
                        audience=Reminder.Audience.OWNER,
                        recipient_id=owner_id,
                        due_on=due_on,
                    )
                )
        # Another run may have created some of these a moment ago: the constraint keeps one.
        Reminder.objects.bulk_create(rows, ignore_conflicts=True)
        reminded += len(batch)
        after = batch[-1][0]


def send_digests(*, now: datetime | None = None) -> int:
    """E-mail every recipient one digest of their unsent reminders; returns digests sent.

    The reminders are locked while their digests go out, so an overlapping run skips
    them instead of sending them again. People without an e-mail address still see their
    reminders on the page; they are simply not e-mailed.
    """
    now = now or timezone.now()
    support = list(access.support_people())
    # An owner's reminder goes to the subject's owner as they are now: someone who no longer
    # owns it must not be mailed its memories.
    deliverable = Q(
        audience=Reminder.Audience.OWNER,
        recipient__email__gt="",
        recipient=F("memory__subject__owner"),
    )
    if support:
        deliverable |= Q(audience=Reminder.Audience.SUPPORT)
    failed: list[str] = []
    sent = 0
    with transaction.atomic():
        rows = list(
            Reminder.objects.unsent()
            .filter(deliverable)
            .select_for_update(skip_locked=True, of=("self",))
            .select_related("memory__subject", "recipient")
            .order_by("due_on", "pk")[:DIGEST_LIMIT]
        )
        digests: dict[int, tuple[User, list[Reminder]]] = {}
        for reminder in rows:
            people = (
                support if reminder.audience == Reminder.Audience.SUPPORT else [reminder.recipient]
            )
            for person in people:
                if person is not None:
                    digests.setdefault(person.pk, (person, []))[1].append(reminder)
        delivered = {reminder.pk for reminder in rows}
        if digests:
            with mailers.default as mailer:
                for person, reminders in digests.values():
                    try:
                        mailer.send_messages([_digest(person, reminders)])
                    except (SMTPException, OSError):
                        logger.exception("Reminder digest to %s failed.", person.email)
                        failed.append(person.email)
                        delivered -= {reminder.pk for reminder in reminders}
                    else:
                        sent += 1
                        # By id: an operator's log is no place for people's addresses.
                        logger.info(
                            "Reminder digest sent to person #%d: %d reminder(s).",
                            person.pk,
                            len(reminders),
                        )
        Reminder.objects.filter(pk__in=delivered).update(sent_at=now)
    if failed:
        raise DigestNotSent(f"{len(failed)} digest(s) failed: {', '.join(failed)}")
    return sent


def _digest(person: User, reminders: list[Reminder]) -> EmailMessage:
    context = {
        "person": person,
        "review": [r for r in reminders if r.kind == Reminder.Kind.REVIEW],
        "expiring": [r for r in reminders if r.kind == Reminder.Kind.EXPIRING],
        "count": len(reminders),
        "reminders_url": settings.MEMORYADMIN_SITE_URL + reverse("reminders"),
    }
    subject = " ".join(
        render_to_string("ledger/email/reminder_digest_subject.txt", context).split()
    )
    body = render_to_string("ledger/email/reminder_digest.txt", context)
    return _PlainText(subject=subject, body=body, to=[person.email])


class _PlainText(EmailMessage):
    """Sent as 8-bit text: a line past 78 characters (a long statement) would otherwise turn
    the whole body quoted-printable, unreadable on the console and in a raw mail file."""

    def message(self, *, policy: Policy | None = None) -> email.message.EmailMessage:
        policy = policy or email.policy.default
        return super().message(policy=policy.clone(max_line_length=998))


def clear_reminders(*, memory: Memory, now: datetime | None = None) -> int:
    """A person reviewed the memory: its open reminders are done with."""
    return Reminder.objects.filter(memory=memory, cleared_at__isnull=True).update(
        cleared_at=now or timezone.now()
    )


def reopen_reminders(*, memory: Memory, cleared_at: datetime) -> int:
    """The reminders one change closed (a deletion, at ``cleared_at``), open again."""
    return Reminder.objects.filter(memory=memory, cleared_at=cleared_at).update(cleared_at=None)


def mark_read(*, reminder: Reminder, now: datetime | None = None) -> Reminder:
    if reminder.read_at is None:
        reminder.read_at = now or timezone.now()
        reminder.save(update_fields=["read_at"])
    return reminder
