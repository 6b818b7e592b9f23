"""Pure policy decisions: no writes, no queries. The write functions and the pages ask these.

Every lifecycle is one table here: from each status, the moves a row may make. The write
functions check a move against its table on the locked row; the pages ask the same table
whether to offer a button; the querysets filter by the statuses a table allows.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING

from django.conf import settings
from django.utils import timezone

from ledger.choices import (
    Basis,
    ConflictStatus,
    JournalState,
    LedgerKind,
    LedgerStatus,
    MemoryStatus,
    SourceKind,
)
from ledger.dates import when

if TYPE_CHECKING:
    from ledger.models import Agent, LedgerEntry, Policy

# Characters that could end a line, reorder text or hide words when a statement is pasted
# into a prompt or shown on a page: control characters, line and paragraph separators,
# lone surrogates, and invisible format characters (bidi overrides, zero-width spaces, the
# "tag" block that can smuggle text a model reads and a person never sees). The zero-width
# joiner stays: emoji sequences need it and it carries no text.
_FORBIDDEN_CATEGORIES = {"Cc", "Cs", "Zl", "Zp", "Cf"}
_ALLOWED_FORMAT = {"\u200d"}
KEY_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_.\-]{0,99}$")


class Refusal(Exception):
    """A write the policy refuses. ``code`` is stable for programs, ``detail`` for people."""

    def __init__(self, code: str, detail: str, status: int = 422) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.status = status


# Lifecycles.


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


MEMORY_MOVES: dict[str, tuple[MemoryMove, ...]] = {
    MemoryStatus.ACTIVE: (
        MemoryMove.CORRECT,
        MemoryMove.RETRACT,
        MemoryMove.CONFIRM,
        MemoryMove.RENEW,
        MemoryMove.EXPIRE,
        MemoryMove.WITHHOLD,
        MemoryMove.ALLOW,
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
    ),
    # An expired memory stays with the person, who may still fix it or give it a new life,
    # and say before renewing it that it must not be used.
    MemoryStatus.EXPIRED: (
        MemoryMove.CORRECT,
        MemoryMove.RETRACT,
        MemoryMove.RENEW,
        MemoryMove.WITHHOLD,
        MemoryMove.ALLOW,
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
}


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


class LedgerMove(StrEnum):
    PROMOTE = "promote"
    SUPERSEDE = "supersede"
    EDIT = "edit"
    WITHDRAW = "withdraw"
    EXPIRE = "expire"


LEDGER_MOVES: dict[str, tuple[LedgerMove, ...]] = {
    LedgerStatus.ACTIVE: (
        LedgerMove.PROMOTE,
        LedgerMove.SUPERSEDE,
        LedgerMove.EDIT,
        LedgerMove.WITHDRAW,
        LedgerMove.EXPIRE,
    ),
    # No longer in force, but still the last word on its key until something replaces it.
    LedgerStatus.EXPIRED: (LedgerMove.SUPERSEDE, LedgerMove.WITHDRAW),
    LedgerStatus.SUPERSEDED: (),
    LedgerStatus.WITHDRAWN: (),
    LedgerStatus.ERASED: (),
}

_LEDGER_PARTICIPLES = {
    LedgerMove.PROMOTE: "promoted",
    LedgerMove.SUPERSEDE: "superseded",
    LedgerMove.EDIT: "edited",
    LedgerMove.WITHDRAW: "withdrawn",
    LedgerMove.EXPIRE: "expired",
}


def refuse_ledger_move(status: str, move: LedgerMove) -> None:
    if move in LEDGER_MOVES.get(status, ()):
        return
    allowed = [s for s, moves in LEDGER_MOVES.items() if move in moves]
    raise Refusal(
        f"ledger_entry_{status}",
        f"This entry is {status}; only an {' or '.join(allowed)} entry can be "
        f"{_LEDGER_PARTICIPLES[move]}.",
        status=409,
    )


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


# A conflict opens when a slot's active statements disagree, and closes once.
CONFLICT_MOVES: dict[str, tuple[str, ...]] = {
    ConflictStatus.OPEN: (ConflictStatus.RESOLVED,),
    ConflictStatus.RESOLVED: (),
}


def refuse_conflict_resolved(status: str) -> None:
    if ConflictStatus.RESOLVED not in CONFLICT_MOVES.get(status, ()):
        raise Refusal("conflict_resolved", "This conflict is already resolved.", 409)


# Text.


def forbidden_character(text: str) -> str | None:
    """The first character a one-line text may not hold, described, or None."""
    for ch in text:
        if unicodedata.category(ch) in _FORBIDDEN_CATEGORIES and ch not in _ALLOWED_FORMAT:
            return f"U+{ord(ch):04X}"
    return None


def forbidden_in_excerpt(text: str) -> str | None:
    """Excerpts may keep line breaks and tabs, but nothing else invisible."""
    return forbidden_character(text.replace("\n", " ").replace("\r", " ").replace("\t", " "))


def normalize_statement(statement: str) -> str:
    return " ".join(statement.casefold().split())


# The write gate.


def refuse_system_of_record(policy: Policy, key: str) -> None:
    if key and key in policy.system_of_record_keys:
        raise Refusal(
            "system_of_record",
            f"The key '{key}' belongs to another system of record; read it from there.",
        )


def refuse_if_paused(memory_paused: bool) -> None:
    if memory_paused:
        raise Refusal(
            "memory_paused",
            "The person has paused memory for this subject; nothing new may be written.",
            status=423,
        )


def refuse_over_cap(policy: Policy, live_count: int) -> None:
    if live_count >= policy.subject_active_cap:
        raise Refusal(
            "subject_cap_reached",
            f"This subject already holds {live_count} live memories, the policy's "
            f"limit of {policy.subject_active_cap}. Retract or let some expire first.",
            status=409,
        )


@dataclass(frozen=True)
class Expiry:
    expires_at: datetime | None
    capped: bool


def expiry_for(
    policy: Policy,
    *,
    kind: str,
    basis: str,
    now: datetime,
    requested: datetime | None,
    omitted: bool,
) -> Expiry:
    """When a new memory dies: the request, else the kind's default; guesses are capped."""
    expires_at = now + timedelta(days=policy.ttl_days(kind)) if omitted else requested
    if basis != Basis.INFERRED:
        return Expiry(expires_at, capped=False)
    longest = now + timedelta(days=policy.inferred_max_days)
    if expires_at is None or expires_at > longest:
        return Expiry(longest, capped=not omitted)
    return Expiry(expires_at, capped=False)


def review_date_for(policy: Policy, *, kind: str, now: datetime) -> datetime:
    return now + timedelta(days=policy.review_days(kind))


def needs_corroboration(policy: Policy, *, basis: str, distinct_sources: int) -> bool:
    return basis == Basis.INFERRED and distinct_sources < policy.inferred_sources_required


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


def renew_periods(policy: Policy, *, basis: str) -> tuple[RenewPeriod, ...]:
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


def default_renew_period(policy: Policy, *, kind: str, basis: str) -> RenewPeriod:
    """The one preselected: the longest offered within the kind's usual life."""
    offered = renew_periods(policy, basis=basis)
    within = [p for p in offered if p.days <= policy.ttl_days(kind)]
    return within[-1] if within else offered[0]


def renew_period(policy: Policy, *, basis: str, chosen: str) -> RenewPeriod:
    """The period a person chose, if it is one offered for this memory."""
    for period in renew_periods(policy, basis=basis):
        if chosen == str(period.days):
            return period
    words = ", ".join(p.words for p in renew_periods(policy, basis=basis))
    raise Refusal(
        "period_required", f"Choose how long to keep it: one of {words}. Nothing was changed.", 400
    )


# The ledger.

# Sources that name where a fact was verified. An operator's say-so is not evidence.
NAMED_SOURCE_KINDS = (SourceKind.USER_MESSAGE, SourceKind.TOOL_RESULT, SourceKind.IMPORT)
# Only the person can agree to a proposal, so only their message can promote one.
AGREEMENT_SOURCE_KINDS = (SourceKind.USER_MESSAGE,)


def refuse_unnamed_establishment(*, kind: str, source_kind: str, source_ref: str) -> None:
    if kind != LedgerKind.ESTABLISHED:
        return
    if source_kind not in NAMED_SOURCE_KINDS or not source_ref.strip():
        raise Refusal(
            "established_needs_named_source",
            "An established fact needs a named source: a message from the person, a tool "
            "result or an import, with its reference. Record it as an interpretation instead.",
        )


def refuse_unless_proposal(kind: str) -> None:
    if kind != LedgerKind.PROPOSAL:
        raise Refusal(
            "not_a_proposal",
            f"Only a proposal can be promoted; this entry is a {kind}.",
            status=409,
        )


def refuse_unagreed_promotion(source_kind: str) -> None:
    if source_kind not in AGREEMENT_SOURCE_KINDS:
        raise Refusal(
            "agreement_needs_person",
            "A proposal becomes a commitment only with the person's agreement: give the "
            "source as their message (kind 'user_message').",
        )


def refuse_if_immutable(entry: LedgerEntry, verb: str) -> None:
    if entry.immutable:
        raise Refusal(
            "ledger_entry_immutable",
            f"This entry is immutable and cannot be {verb}: supersede it with a new entry "
            f"(POST /api/v1/ledger/{entry.pk}/supersede).",
            status=409,
        )


def refuse_if_stale(entry: LedgerEntry, now: datetime, verb: str) -> None:
    if entry.expires_at is not None and entry.expires_at <= now:
        raise Refusal(
            "ledger_entry_expired",
            f"This entry stopped being true at {entry.expires_at.isoformat()}; "
            f"an expired entry cannot be {verb}. Supersede it with a current one.",
            status=409,
        )


# Batch retractions (support's workbench).

# What a batch retraction may take: whatever a single deletion may.
RETRACTABLE_MEMORY = memory_statuses_allowing(MemoryMove.RETRACT)
# One batch is one transaction holding a lock on every memory it takes: a selection wider
# than this is almost certainly a mistake, and would hold those locks for too long.
RETRACTION_BATCH_MAX = 1000
RETRACTION_CRITERIA = ("source_ref", "run", "agent", "written_after", "written_before")


def refuse_empty_selection(criteria: Mapping[str, object]) -> None:
    """At least one criterion: retracting everything is never what anyone meant."""
    if any(criteria.get(name) not in (None, "") for name in RETRACTION_CRITERIA):
        return
    raise Refusal(
        "selection_empty",
        "Choose at least one of: source reference, run, agent, written after, written "
        "before. Retracting every memory is never what anyone meant. Nothing was changed.",
        400,
    )


def refuse_backwards_window(after: datetime | None, before: datetime | None) -> None:
    if after is not None and before is not None and after >= before:
        raise Refusal(
            "window_backwards",
            "'Written after' must be earlier than 'written before'. Nothing was changed.",
            400,
        )


def refuse_batch_size(found: int, *, expected: int | None = None) -> None:
    """Nothing to take, too much to take in one go, or not what the person previewed."""
    if found == 0:
        raise Refusal(
            "selection_matches_nothing",
            "No memory that can still be deleted matches this selection. Nothing was changed.",
            409,
        )
    if found > RETRACTION_BATCH_MAX:
        raise Refusal(
            "selection_too_large",
            f"This selection matches more than {RETRACTION_BATCH_MAX} memories, the most one "
            "batch takes. Narrow it (a source, a run, a shorter time window). "
            "Nothing was changed.",
            400,
        )
    if expected is not None and expected != found:
        raise Refusal(
            "selection_changed",
            f"The selection now matches {found} memories, not the {expected} you previewed: "
            "check the preview again. Nothing was changed.",
            409,
        )


def refuse_without_reason(reason: str, *, why: str = "these memories are deleted") -> None:
    """A batch changes other people's memories: it says why, in each one's history."""
    if not reason.strip():
        raise Refusal(
            "reason_required",
            f"Say why {why}: the reason is kept in each one's history.",
            400,
        )


# A rotated key's grace period: long enough to redeploy an agent, short enough to matter.
GRACE_HOURS_MAX = 24 * 30


def refuse_bad_grace(hours: int) -> None:
    if not 0 <= hours <= GRACE_HOURS_MAX:
        raise Refusal(
            "grace_out_of_range",
            f"The grace period is between 0 and {GRACE_HOURS_MAX} hours (30 days); "
            f"{hours} is outside it.",
            400,
        )


def refuse_if_revoked(agent: Agent) -> None:
    if not agent.is_active:
        raise Refusal(
            "agent_revoked",
            f"The agent '{agent.name}' is revoked; a revoked agent gets no new key.",
            409,
        )


def refuse_undone_twice(undone_at: datetime | None) -> None:
    if undone_at is not None:
        raise Refusal(
            "batch_already_undone",
            f"This batch was already undone ({when(undone_at)}); nothing was changed.",
            409,
        )


def left_as_batch_left_it(*, status: str, version: int, version_after: int) -> bool:
    """Whether a batch's undo may put a memory back: still deleted, and nobody touched it
    since the batch (its version is the one the batch left). Anything else was someone's
    later decision, which an undo must not overrule."""
    return status == MemoryStatus.RETRACTED and version == version_after


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
