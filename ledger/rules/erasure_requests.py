"""Erasure requests: support's erasure of someone waits for an admin, who approves or declines.

Who may ask and who may decide is ``ledger.access`` (``erasure_needs_approval``,
``may_decide_erasures``); what a request's state allows, and the words of every refusal,
are here.
"""

from __future__ import annotations

from django.db import models

from ledger.rules.refusals import Refusal
from ledger.rules.text import forbidden_in_excerpt


class Decision(models.TextChoices):
    WAITING = "", "Waiting for an admin"
    APPROVED = "approved", "Approved"
    DECLINED = "declined", "Declined"
    # The subject was erased by another route first (the person, or an admin directly):
    # nothing is left for an admin to decide.
    OVERTAKEN = "overtaken", "Erased meanwhile"


def refuse_nothing_to_erase(*, erased_before: bool, holds_content: bool) -> None:
    """A request for a subject already erased, with nothing written about it since, would
    erase nothing: refused, so that no admin is asked to approve it."""
    if erased_before and not holds_content:
        raise Refusal(
            "already_erased",
            "Everything about this person was already erased, and nothing has been remembered "
            "about them since. No erasure was requested.",
            409,
        )


def refuse_second_request(*, waiting_by: str | None) -> None:
    """One request waits per subject: a second would ask the admins twice for one thing."""
    if waiting_by is not None:
        raise Refusal(
            "erasure_already_requested",
            f"An erasure of this person is already waiting for an admin (requested by "
            f"{waiting_by}). No second request was filed.",
            409,
        )


def refuse_decided(decision: str) -> None:
    """Only a waiting request can be approved or declined; a decided one stays decided."""
    if decision != Decision.WAITING:
        label = Decision(decision).label.lower()
        raise Refusal(
            "erasure_request_decided",
            f"This erasure request is no longer waiting ({label}). Nothing was changed.",
            409,
        )


def refuse_own_approval(*, requested_by: str, decider: str) -> None:
    """Two people for an erasure staff ask for: whoever asked may not also approve it."""
    if requested_by == decider:
        raise Refusal(
            "erasure_own_request",
            "You asked for this erasure: another admin must approve it. Nothing was erased.",
            403,
        )


def refuse_unexplained_decline(reason: str) -> None:
    """Declining says why: support, and the audit, read it."""
    if not reason.strip():
        raise Refusal(
            "decline_reason_required",
            "Say why the erasure is declined: support reads it. Nothing was changed.",
            400,
        )
    if (found := forbidden_in_excerpt(reason)) is not None:
        raise Refusal(
            "reason_invalid_character",
            f"The reason holds an invisible character ({found}): type it again. "
            "Nothing was changed.",
            400,
        )
