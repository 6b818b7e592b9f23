"""The journal's lifecycle: done and not_done are final, and an unknown is resolved by
reading the world, never by a retry."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from ledger.choices import (
    JournalState,
)
from ledger.rules.refusals import Refusal
from ledger.rules.text import forbidden_character

# Done and not_done are final: an unknown is resolved by reading the world, never retried.
JOURNAL_MOVES: dict[str, tuple[str, ...]] = {
    JournalState.INTENDED: (JournalState.DONE, JournalState.NOT_DONE, JournalState.UNKNOWN),
    JournalState.UNKNOWN: (JournalState.DONE, JournalState.NOT_DONE),
    JournalState.DONE: (),
    JournalState.NOT_DONE: (),
}


def journal_moves(state: str) -> tuple[str, ...]:
    return JOURNAL_MOVES.get(state, ())


def refuse_journal_move(current: str, target: str) -> None:
    allowed = journal_moves(current)
    if target in allowed:
        return
    if allowed:
        choices = " or ".join(allowed)
        detail = (
            f"A journal entry cannot move from {current} to {target}; "
            f"from {current} it may move to {choices}."
        )
    else:
        detail = (
            f"A journal entry cannot move from {current} to {target}: "
            f"{current} is final and allows no further move."
        )
    raise Refusal("journal_move_refused", detail, status=409)


def stale_intent_cutoff(now: datetime | None = None) -> datetime:
    """Intents older than this never reported back and must be checked against the world."""
    minutes = settings.MEMORYADMIN_JOURNAL_INTENDED_STALE_MINUTES
    return (now or timezone.now()) - timedelta(minutes=minutes)


# What a person may record after reading the external system: an unknown is never
# resolved to another unknown, and "intended" is for the agent alone.
JOURNAL_RESOLUTIONS = (JournalState.DONE, JournalState.NOT_DONE)
VERIFICATION_MAX = 1000


def checked_for_resolution(*, state: str, verification: str) -> str:
    """What a person checked before resolving a journal entry, on one line; refused in
    words when the state is not one a person records or the check is empty, too long or
    holds an invisible character."""
    checked = " ".join(verification.split())
    if state not in JOURNAL_RESOLUTIONS:
        raise Refusal("resolution_invalid", "Record the action as done or as not done.", 400)
    if not checked:
        raise Refusal(
            "verification_required",
            "Say what you checked: the verification is what the next agent will rely on.",
            400,
        )
    if len(checked) > VERIFICATION_MAX:
        raise Refusal(
            "verification_too_long",
            f"Keep what you checked to {VERIFICATION_MAX} characters (this is {len(checked)}).",
            400,
        )
    if (found := forbidden_character(checked)) is not None:
        raise Refusal(
            "verification_invalid_character",
            f"What you checked holds an invisible character ({found}): type it again.",
            400,
        )
    return checked
