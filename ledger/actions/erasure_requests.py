"""Erasure requests: support's erasure of someone waits for an admin, whose approval runs it.

Four eyes on the one change that cannot be undone: support files the request with who asked
and how, every admin with an e-mail address is told, and an admin other than the one who
asked approves (the real erasure runs, in the same transaction) or declines with a reason.
The person's own erasure, and an admin's, stay immediate (``access.erasure_needs_approval``).
"""

from __future__ import annotations

import logging
from smtplib import SMTPException

from django.conf import settings
from django.core.mail import EmailMessage, mailers
from django.db import transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from ledger import access
from ledger.actions._tracking import save_tracked
from ledger.actions.erasure import erase_subject
from ledger.actors import Actor
from ledger.models import Erasure, ErasureRequest, LedgerEntry, Memory, Subject
from ledger.rules import erasure_requests as rules
from ledger.rules.people import checked_request
from ledger.rules.refusals import Refusal

logger = logging.getLogger(__name__)


def request_erasure(
    *, subject: Subject, actor: Actor, reason: str, pause: bool = True
) -> ErasureRequest:
    """File support's request to erase everything about ``subject``; ``reason`` is who asked
    and how, as the erase form asks it. Admins are e-mailed once it is committed.

    Refused: without who asked, for a subject already erased with nothing remembered since,
    and while another request for it waits."""
    reason = checked_request(reason, required=True)
    with transaction.atomic():
        # The subject's row first, as the erasure itself locks it: two requests at once
        # queue here, and the second finds the first waiting.
        locked = Subject.objects.select_for_update().get(pk=subject.pk)
        rules.refuse_nothing_to_erase(
            erased_before=Erasure.objects.filter(subject=locked).exists(),
            holds_content=_holds_content(locked),
        )
        waiting = ErasureRequest.objects.filter(subject=locked).waiting().first()
        rules.refuse_second_request(waiting_by=_username(waiting.requested_by) if waiting else None)
        request = ErasureRequest(
            subject=locked,
            requested_by=actor.label,
            reason=reason,
            pause=pause,
            created_at=timezone.now(),
        )
        save_tracked(request, actor=actor, reason="Erasure requested; waiting for an admin.")
        transaction.on_commit(lambda: _tell_admins(request.pk), robust=True)
    return request


def approve_erasure(*, request: ErasureRequest, actor: Actor) -> Erasure:
    """An admin other than the one who asked approves: the request is marked approved and
    the erasure runs, in one transaction (a failed erasure leaves the request waiting)."""
    _refuse_non_admin(actor)
    with transaction.atomic():
        locked = ErasureRequest.objects.select_for_update().get(pk=request.pk)
        rules.refuse_decided(locked.decision)
        rules.refuse_own_approval(requested_by=locked.requested_by, decider=actor.label)
        _decide(locked, actor=actor, decision=ErasureRequest.Decision.APPROVED, why="")
        erasure = erase_subject(
            subject=locked.subject, actor=actor, pause=locked.pause, requested_by=locked.reason
        )
    request.refresh_from_db()
    return erasure


def decline_erasure(*, request: ErasureRequest, actor: Actor, reason: str) -> ErasureRequest:
    """An admin declines, saying why; nothing is erased, and support may ask again."""
    _refuse_non_admin(actor)
    rules.refuse_unexplained_decline(reason)
    with transaction.atomic():
        locked = ErasureRequest.objects.select_for_update().get(pk=request.pk)
        rules.refuse_decided(locked.decision)
        _decide(locked, actor=actor, decision=ErasureRequest.Decision.DECLINED, why=reason.strip())
    return locked


def _decide(request: ErasureRequest, *, actor: Actor, decision: str, why: str) -> None:
    request.decision = decision
    request.decided_by = actor.label
    request.decided_at = timezone.now()
    request.decision_reason = why
    words = "Approved: the erasure runs." if decision == rules.Decision.APPROVED else "Declined."
    save_tracked(
        request,
        actor=actor,
        reason=f"{words} {why}".strip(),
        update_fields=["decision", "decided_by", "decided_at", "decision_reason"],
    )


def _refuse_non_admin(actor: Actor) -> None:
    # The system (a command) may decide; an agent never, a person only as an admin.
    if actor.agent is not None or (
        actor.user is not None and not access.may_decide_erasures(actor.user)
    ):
        raise Refusal(
            "erasure_needs_admin",
            "Only an admin approves or declines an erasure request. Nothing was changed.",
            403,
        )


def _holds_content(subject: Subject) -> bool:
    """Whether anything is remembered about the subject that an erasure would remove."""
    return (
        bool(subject.display_name)
        or Memory.objects.filter(subject=subject).exclude(status=Memory.Status.ERASED).exists()
        or LedgerEntry.objects.filter(subject=subject)
        .exclude(status=LedgerEntry.Status.ERASED)
        .exists()
    )


def _username(label: str) -> str:
    return Actor.username_in(label) or label


def _tell_admins(request_pk: int) -> None:
    """E-mail every admin with an address that a request waits. A mail that fails is
    logged; the request waits on the admins' page all the same."""
    request = ErasureRequest.objects.select_related("subject").get(pk=request_pk)
    admins = list(access.admin_people())
    if not admins:
        return
    context = {
        "request": request,
        "requested_by": _username(request.requested_by),
        "url": settings.MEMORYADMIN_SITE_URL + reverse("erasure-requests"),
    }
    subject = " ".join(
        render_to_string("ledger/email/erasure_request_subject.txt", context).split()
    )
    body = render_to_string("ledger/email/erasure_request.txt", context)
    try:
        with mailers.default as mailer:
            mailer.send_messages(
                [EmailMessage(subject=subject, body=body, to=[admin.email]) for admin in admins]
            )
    except (SMTPException, OSError):
        logger.exception("Erasure request #%d: the admins could not be e-mailed.", request_pk)
