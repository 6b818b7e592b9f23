"""A memory's lifecycle after the gate: the one table of moves each status allows, undo,
revert and renewal. The write functions check a move on the locked row, the pages ask the
same table whether to offer a button, and the querysets filter by the statuses it allows."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from ledger.choices import (
    Basis,
    MemoryStatus,
)
from ledger.dates import day
from ledger.rules.facts import PolicyFacts
from ledger.rules.refusals import Refusal


class MemoryMove(StrEnum):
    """What can happen to a memory after it is written. Erasure is not a move: it reaches
    every row about a subject, whatever its status."""

    CORRECT = "correct"
    RETRACT = "retract"
    CONFIRM = "confirm"
    RENEW = "renew"
    RESTORE = "restore"
    EXPIRE = "expire"
    # "True, but don't use it", and back: the memory keeps its status, agents lose it.
    WITHHOLD = "withhold"
    ALLOW = "allow"
    # An admin undoes a correction: a copy of the memory it replaced supersedes it.
    REVERT = "revert"


MEMORY_MOVES: dict[str, tuple[MemoryMove, ...]] = {
    MemoryStatus.ACTIVE: (
        MemoryMove.CORRECT,
        MemoryMove.RETRACT,
        MemoryMove.CONFIRM,
        MemoryMove.RENEW,
        MemoryMove.EXPIRE,
        MemoryMove.WITHHOLD,
        MemoryMove.ALLOW,
        MemoryMove.REVERT,
    ),
    # A guess is not used until confirmed anyway, so it is answered, not withheld; one that
    # inherited the person's "don't use" (an agent corrected a withheld memory) may be let go.
    MemoryStatus.PENDING: (
        MemoryMove.CORRECT,
        MemoryMove.RETRACT,
        MemoryMove.CONFIRM,
        MemoryMove.RENEW,
        MemoryMove.EXPIRE,
        MemoryMove.ALLOW,
        MemoryMove.REVERT,
    ),
    # An expired memory stays with the person, who may still fix it or give it a new life,
    # and say before renewing it that it must not be used.
    MemoryStatus.EXPIRED: (
        MemoryMove.CORRECT,
        MemoryMove.RETRACT,
        MemoryMove.RENEW,
        MemoryMove.WITHHOLD,
        MemoryMove.ALLOW,
        MemoryMove.REVERT,
    ),
    # Only for the undo window, and only by the one who deleted it (``restore_memory``).
    MemoryStatus.RETRACTED: (MemoryMove.RESTORE,),
    # Kept unchanged for audit: a correction is corrected, never its original.
    MemoryStatus.SUPERSEDED: (),
    MemoryStatus.ERASED: (),
}

# The refusal's code and past participle for each move.
_MEMORY_REFUSALS = {
    MemoryMove.CORRECT: ("not_correctable", "corrected"),
    MemoryMove.RETRACT: ("not_retractable", "retracted"),
    MemoryMove.CONFIRM: ("not_confirmable", "confirmed"),
    MemoryMove.RENEW: ("not_renewable", "renewed"),
    MemoryMove.RESTORE: ("not_undoable", "restored"),
    MemoryMove.EXPIRE: ("not_expirable", "expired"),
    MemoryMove.WITHHOLD: ("not_withholdable", "withheld from the assistant"),
    MemoryMove.ALLOW: ("not_allowable", "allowed again"),
    MemoryMove.REVERT: ("not_revertable", "reverted"),
}
# Every code a refused move answers with (the idempotency rules classify them).
MEMORY_REFUSAL_CODES = tuple(code for code, _participle in _MEMORY_REFUSALS.values())


def memory_statuses_allowing(move: MemoryMove) -> tuple[str, ...]:
    return tuple(status for status, moves in MEMORY_MOVES.items() if move in moves)


# What the write gate compares new writes against, and what expiry sweeps: active or pending.
LIVE_MEMORY = memory_statuses_allowing(MemoryMove.EXPIRE)
# What people may still act on, and what their page lists by default: live or expired.
ACTIONABLE_MEMORY = memory_statuses_allowing(MemoryMove.CORRECT)


def is_actionable(status: str) -> bool:
    """Whether a person may still correct, delete or renew a memory in this status."""
    return status in ACTIONABLE_MEMORY


def allows(status: str, move: MemoryMove) -> bool:
    """Whether a memory in ``status`` may make ``move``: what a page asks to offer a button."""
    return move in MEMORY_MOVES.get(status, ())


def refuse_memory_move(status: str, move: MemoryMove) -> None:
    if allows(status, move):
        return
    code, participle = _MEMORY_REFUSALS[move]
    raise Refusal(code, f"A {status} memory cannot be {participle}.", status=409)


def undo_seconds_left(*, deleted_at: datetime, now: datetime, within_seconds: int) -> float:
    """How long a deletion can still be undone: negative once its window has passed."""
    return within_seconds - (now - deleted_at).total_seconds()


def undo_refusal(
    *, deleted_by: str, by: str, deleted_at: datetime, now: datetime, within_seconds: int
) -> Refusal | None:
    """Why ``by`` may not undo a deletion now, or None: only the one who deleted it may, and
    only within the window (later, agents may already have acted on its absence).

    ``restore_memory`` raises it; the page offers an Undo button only while it is None.
    """
    if deleted_by != by:
        return Refusal("not_undoable", "Only the person who deleted it can undo that.", 409)
    if undo_seconds_left(deleted_at=deleted_at, now=now, within_seconds=within_seconds) < 0:
        return Refusal(
            "undo_expired",
            f"Too late to undo: a deletion can only be undone for {within_seconds} seconds. "
            "The memory stays deleted.",
            409,
        )
    return None


def refuse_revert(*, is_correction: bool, status: str, restored_status: str) -> None:
    """Whether a memory may be reverted: it must be a correction (or a revert), still the
    current version of its slot, and the words it would put back must still exist.

    ``status`` is the replacement's, ``restored_status`` that of the memory it replaced.
    ``ledger.actions.reverts`` raises it on the locked rows; the page asks it too.
    """
    if not is_correction:
        raise Refusal(
            "not_a_correction",
            "This memory is not a correction: only a memory that replaced another on the "
            "dashboard, or a revert, can be reverted. Nothing was changed.",
            409,
        )
    if MemoryStatus.ERASED in (status, restored_status):
        raise Refusal(
            "subject_erased",
            "This subject was erased: no words are left to put back. Nothing was changed.",
            409,
        )
    if not allows(status, MemoryMove.REVERT):
        raise Refusal(
            "not_current",
            "This correction is no longer the current memory (it is now "
            f"{MemoryStatus(status).label}): only the latest version can be reverted. "
            "Nothing was changed.",
            409,
        )


def refuse_revert_to_live_words(live_copy: str | None) -> None:
    """A revert would put back words another live memory of the subject says again since
    (``live_copy``: its id): two live memories would say the same thing."""
    if live_copy is not None:
        raise Refusal(
            "words_already_live",
            "The words this correction replaced are live again in another memory (id "
            f"{live_copy}): reverting would make a second copy. Correct or delete this one "
            "instead. Nothing was changed.",
            409,
        )


def revert_refusal(*, is_correction: bool, status: str, restored_status: str) -> Refusal | None:
    """``refuse_revert`` as an answer, for a page deciding whether to offer the form."""
    try:
        refuse_revert(is_correction=is_correction, status=status, restored_status=restored_status)
    except Refusal as refusal:
        return refusal
    return None


def refuse_past_expiry(expires_at: datetime | None, now: datetime) -> None:
    if expires_at is not None and expires_at <= now:
        raise Refusal("expiry_in_past", "The new expiry must lie in the future.", 400)


def refuse_permanent_guess(*, basis: str, expires_at: datetime | None) -> None:
    if expires_at is None and basis == Basis.INFERRED:
        raise Refusal(
            "inferred_needs_expiry", "A guess cannot be made permanent; confirm it first.", 400
        )


@dataclass(frozen=True)
class RenewPeriod:
    days: int
    words: str

    def kept_for(self, until: datetime) -> str:
        """How a renewal's history row says it: "kept for 1 year, until 3 May 2028"."""
        return f"kept for {self.words}, until {day(until)}"


# How long a person may keep a memory when they renew it on the dashboard. Periods, not a
# date picker: nobody has to read a browser's date format, and a memory still gets an end.
RENEW_PERIODS = (
    RenewPeriod(7, "1 week"),
    RenewPeriod(30, "1 month"),
    RenewPeriod(90, "3 months"),
    RenewPeriod(180, "6 months"),
    RenewPeriod(365, "1 year"),
    RenewPeriod(730, "2 years"),
)


def renew_periods(policy: PolicyFacts, *, basis: str) -> tuple[RenewPeriod, ...]:
    """The periods offered for a memory: a guess no longer than the longest life of a guess."""
    if basis != Basis.INFERRED:
        return RENEW_PERIODS
    longest = policy.inferred_max_days
    if longest >= RENEW_PERIODS[-1].days:
        return RENEW_PERIODS
    shorter = tuple(p for p in RENEW_PERIODS if p.days < longest)
    same = [p for p in RENEW_PERIODS if p.days == longest]
    words = f"{longest} day{'s' if longest != 1 else ''}"
    return (*shorter, same[0] if same else RenewPeriod(longest, words))


def default_renew_period(policy: PolicyFacts, *, kind: str, basis: str) -> RenewPeriod:
    """The one preselected: the longest offered within the kind's usual life."""
    offered = renew_periods(policy, basis=basis)
    within = [p for p in offered if p.days <= policy.ttl_days(kind)]
    return within[-1] if within else offered[0]


def renew_period(policy: PolicyFacts, *, basis: str, chosen: str) -> RenewPeriod:
    """The period a person chose, if it is one offered for this memory."""
    for period in renew_periods(policy, basis=basis):
        if chosen == str(period.days):
            return period
    words = ", ".join(p.words for p in renew_periods(policy, basis=basis))
    raise Refusal(
        "period_required", f"Choose how long to keep it: one of {words}. Nothing was changed.", 400
    )


# What a batch retraction may take: whatever a single deletion may.
RETRACTABLE_MEMORY = memory_statuses_allowing(MemoryMove.RETRACT)
