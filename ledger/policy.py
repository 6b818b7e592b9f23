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

from ledger import poison
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
    from ledger.lockouts import Lockout
    from ledger.models import Agent, LedgerEntry, Policy
    from ledger.revocations import Revocation

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


class ConflictMove(StrEnum):
    """How an open conflict may be settled, besides writing what is right (always allowed)."""

    KEEP_MEMORY = "keep_memory"
    KEEP_COMMITMENT = "keep_commitment"
    DISMISS = "dismiss"


def refuse_conflict_move(move: ConflictMove, *, possible: bool, has_commitment: bool) -> None:
    if move == ConflictMove.KEEP_MEMORY and has_commitment:
        raise Refusal(
            "commitment_stands",
            "This memory contradicts a ledger commitment, which changes only through the "
            "ledger: keep the commitment, write what is right, or say it is not a conflict.",
            409,
        )
    if move == ConflictMove.KEEP_COMMITMENT and not has_commitment:
        raise Refusal("no_commitment", "This conflict has no ledger commitment to keep.", 400)
    if move == ConflictMove.DISMISS and not possible:
        raise Refusal(
            "not_possible",
            "Only a possible conflict can be dismissed: these statements share a slot and "
            "say different things. Keep one, or write what is right.",
            400,
        )


def allows_conflict_move(move: ConflictMove, *, possible: bool, has_commitment: bool) -> bool:
    """Whether a conflict may be settled by ``move``: what a page asks to offer a button."""
    try:
        refuse_conflict_move(move, possible=possible, has_commitment=has_commitment)
    except Refusal:
        return False
    return True


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


# Idempotency: which answers a retry with the same Idempotency-Key gets again. A refusal
# caused by a state that can change is decided afresh, or a retry after the person resumed
# memory, an admin lifted a pause or freed a system-of-record key, a memory was retracted or
# a rate limit reset would be refused forever; a refusal that the request alone decides, or
# a state that never goes back, is replayed. The statuses are refusals of the first kind
# whatever their code: the subject or the agent is paused (423), the client's copy is stale
# (412), the agent sent too much too fast (429).
PASSING_REFUSAL_STATUSES = frozenset({412, 423, 429})


class OnRetry(StrEnum):
    DECIDED_AGAIN = "decided again"  # depends on a state that can change
    REPLAYED = "replayed"  # permanent for this request


_AGAIN, _REPLAYED = OnRetry.DECIDED_AGAIN, OnRetry.REPLAYED
# Every code a write refuses with (a test reads them from the source). A memory or a
# ledger entry refused a move because of its status: a deleted memory can be restored and
# a pending one confirmed, so those are decided again; a superseded, withdrawn or erased
# ledger entry stays so.
REFUSAL_ON_RETRY: dict[str, OnRetry] = {
    # The write gate.
    "system_of_record": _AGAIN,  # an admin edits the keys on the policy page
    "subject_cap_reached": _AGAIN,
    "memory_paused": _AGAIN,
    "agent_writes_paused": _AGAIN,
    "agent_quarantined": _AGAIN,
    "agent_stated_untrusted": _AGAIN,
    "unsafe_text": _REPLAYED,
    "agent_revoked": _REPLAYED,
    # A memory's moves.
    **{code: _AGAIN for code, _participle in _MEMORY_REFUSALS.values()},
    "not_the_person": _AGAIN,  # a subject can be linked to its person
    "not_current": _AGAIN,
    "not_a_correction": _REPLAYED,
    "subject_erased": _REPLAYED,
    "words_already_live": _AGAIN,
    "undo_expired": _REPLAYED,
    "expiry_in_past": _REPLAYED,
    "inferred_needs_expiry": _REPLAYED,
    "period_required": _REPLAYED,
    "not_an_admin": _AGAIN,
    # Conflicts.
    "conflict_resolved": _REPLAYED,
    "choice_required": _REPLAYED,
    "not_a_contender": _AGAIN,  # a slot's conflict gains contenders
    "commitment_stands": _REPLAYED,
    "no_commitment": _REPLAYED,
    "not_possible": _REPLAYED,
    # The ledger.
    "ledger_entry_active": _AGAIN,
    "ledger_entry_expired": _AGAIN,
    "ledger_entry_superseded": _REPLAYED,
    "ledger_entry_withdrawn": _REPLAYED,
    "ledger_entry_erased": _REPLAYED,
    "ledger_entry_immutable": _REPLAYED,
    "established_needs_named_source": _REPLAYED,
    "agreement_needs_person": _REPLAYED,
    "not_a_proposal": _REPLAYED,
    "use_promote": _REPLAYED,
    "use_supersede": _REPLAYED,
    # Journal, notes, snapshots.
    "journal_move_refused": _AGAIN,  # an entry moves on, and may then allow the move
    "resolution_not_needed": _AGAIN,  # an intent that never reports back goes stale
    "resolution_invalid": _REPLAYED,
    "verification_required": _REPLAYED,
    "verification_too_long": _REPLAYED,
    "verification_invalid_character": _REPLAYED,
    "not_found": _AGAIN,  # the run or entry may be written next
    "too_many_notes": _AGAIN,  # a note can be deleted
    "unknown_subject": _AGAIN,  # a subject is made by its first write
    "subject_mismatch": _REPLAYED,  # a run keeps one subject
    "generation_exists": _REPLAYED,  # generations are never replaced
    # Retractions and their undo.
    "reason_required": _REPLAYED,
    "reason_invalid_character": _REPLAYED,
    "request_too_long": _REPLAYED,
    "request_invalid_character": _REPLAYED,
    "selection_empty": _REPLAYED,
    "window_backwards": _REPLAYED,
    "selection_matches_nothing": _AGAIN,
    "selection_too_large": _AGAIN,
    "selection_changed": _AGAIN,
    "batch_already_undone": _REPLAYED,
    # Pages only (people, agents, the policy), listed so that none is left undecided.
    "policy_unknown_setting": _REPLAYED,
    "policy_unchanged": _AGAIN,
    "policy_changed": _AGAIN,
    "grace_out_of_range": _REPLAYED,
    "keys_changed": _AGAIN,
    "scopes_required": _REPLAYED,
    "restriction_unchanged": _AGAIN,
    "agent_name_invalid": _REPLAYED,
    "agent_name_reserved": _REPLAYED,
    "agent_name_revoked": _REPLAYED,  # a revoked name is never reused
    "agent_name_taken": _REPLAYED,
    "username_reserved": _REPLAYED,
    "person_yourself": _REPLAYED,
    "person_superuser": _AGAIN,
    "person_active": _AGAIN,
    "person_disabled": _AGAIN,
    "person_not_end_user": _AGAIN,
    "person_owns_subjects": _AGAIN,
    "person_without_email": _AGAIN,
    "role_unchanged": _AGAIN,
    "subject_already_linked": _AGAIN,
    "subject_not_owned": _AGAIN,
    "subject_taken": _AGAIN,
    "mail_not_sent": _AGAIN,
    "not_locked_out": _AGAIN,  # a username or address can be locked out again
}


def answer_is_replayed(status: int, code: str) -> bool:
    """Whether a write's answer is kept for its Idempotency-Key: what happened, and a
    refusal ``REFUSAL_ON_RETRY`` calls permanent. A malformed request (400) is not kept
    either: the client fixes it and sends it again under the same key."""
    if status == 400 or status in PASSING_REFUSAL_STATUSES:
        return False
    return REFUSAL_ON_RETRY.get(code, OnRetry.REPLAYED) == OnRetry.REPLAYED


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


def successor_expiry(
    policy: Policy, *, kind: str, basis: str, replaced_expires_at: datetime | None, now: datetime
) -> datetime | None:
    """When a memory written in place of another dies (a correction, a revert): a stated
    one that never expired still never does; any other gets the life of a new memory."""
    if replaced_expires_at is None and basis == Basis.STATED:
        return None
    return expiry_for(
        policy, kind=kind, basis=basis, now=now, requested=None, omitted=True
    ).expires_at


def review_date_for(policy: Policy, *, kind: str, now: datetime) -> datetime:
    return now + timedelta(days=policy.review_days(kind))


def needs_corroboration(policy: Policy, *, basis: str, agents: int) -> bool:
    """Whether a guess still waits: ``agents`` is how many different agents wrote it. One
    agent's repeats, from however many messages or tools, never corroborate it; a person's
    confirmation is the other way out (``lifecycle.confirm_memory``)."""
    return basis == Basis.INFERRED and agents < policy.inferred_sources_required


# Why a repeat leaves a pending statement as it is.
HELD_STATEMENT_WAITS = (
    "It stays pending: it was held by an admin's restriction on the agent that wrote it, "
    "and only a person's confirmation makes it active."
)


def repeat_activates(policy: Policy, *, basis: str, agents: int) -> bool:
    """Whether a repeat makes a pending memory active: a guess, once enough different agents
    have written it.

    A statement is pending only because an admin's restriction held it: no repeat is a
    person's confirmation, whoever sends it (its own agent from a tool, say) and whether
    or not the restriction has been lifted since.
    """
    return basis == Basis.INFERRED and not needs_corroboration(policy, basis=basis, agents=agents)


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


def refuse_without_reason(
    reason: str, *, why: str = "these memories are deleted", kept: str = "each one's history"
) -> None:
    """A change to what others rely on says why, in words that hide nothing: the reason is
    kept in the history and shown on pages."""
    if not reason.strip():
        raise Refusal("reason_required", f"Say why {why}: the reason is kept in {kept}.", 400)
    refuse_hidden_characters(reason)


def refuse_hidden_characters(reason: str) -> None:
    """A reason is kept in the history and shown on pages: nothing in it may hide or
    reorder what it says."""
    if (found := forbidden_in_excerpt(reason)) is not None:
        raise Refusal(
            "reason_invalid_character",
            f"The reason holds an invisible character ({found}): type it again. "
            "Nothing was changed.",
            400,
        )


# Who asked for an erasure, as staff record it: a line, not a story (it outlives the content).
ERASURE_REQUEST_MAX = 200


def checked_request(text: str) -> str:
    """Who asked for an erasure and how, on one line; refused in words when it is too long
    or holds an invisible character. Empty is allowed: the action does not know who asked."""
    request = " ".join(text.split())
    if len(request) > ERASURE_REQUEST_MAX:
        raise Refusal(
            "request_too_long",
            f"Keep who asked to {ERASURE_REQUEST_MAX} characters (this is {len(request)}). "
            "Nothing was erased.",
            400,
        )
    if (found := forbidden_character(request)) is not None:
        raise Refusal(
            "request_invalid_character",
            f"Who asked holds an invisible character ({found}): type it again. Nothing was erased.",
            400,
        )
    return request


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


def refuse_if_revoked(agent: Agent, revoked: Revocation | None) -> None:
    if not agent.is_active:
        raise Refusal(
            "agent_revoked",
            f"The agent '{agent.name}' was revoked {_revoked_words(revoked)} A revoked agent "
            "gets no new key and its name is not used again: make a new agent, with another "
            "name, to give the program a key.",
            409,
        )


# Agents: their names, and the restrictions an admin puts on their writes.

# Names appear in addresses (/agents/<name>/) and in history labels ("agent:<name>").
AGENT_NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}")


# Addresses under /agents/ that are pages, not agents.
RESERVED_AGENT_NAMES = frozenset({"new"})


def refuse_bad_agent_name(name: str) -> None:
    if not AGENT_NAME_PATTERN.fullmatch(name):
        raise Refusal(
            "agent_name_invalid",
            "An agent's name is 1 to 100 letters, digits, dots, dashes or underscores, "
            "starting with a letter or a digit (such as crm-assistant).",
            400,
        )
    if name.lower() in RESERVED_AGENT_NAMES:
        raise Refusal(
            "agent_name_reserved",
            f"'{name}' is the address of a page: choose another name for the agent.",
            400,
        )


def refuse_taken_agent_name(
    name: str, *, existing: Agent | None, revoked: Revocation | None
) -> None:
    """A name is never used twice. A revoked agent keeps its name with its history, which
    the audit and everything it wrote show under that name: another agent of that name
    would be taken for it. Only a working agent's name points to rotation."""
    if existing is None:
        return
    if not existing.is_active:
        raise Refusal(
            "agent_name_revoked",
            f"The name '{name}' belonged to an agent revoked {_revoked_words(revoked)} A "
            "revoked agent keeps its name with its history, so the name must not be used "
            "again: choose another name.",
            409,
        )
    raise Refusal(
        "agent_name_taken",
        f"An agent named '{name}' already exists, made on {when(existing.created_at)}: its "
        "key was shown once, then, and cannot be shown again. To give it a new key, rotate "
        "its key: its old key keeps working for a grace period you choose, then stops.",
        409,
    )


def _revoked_words(revoked: Revocation | None) -> str:
    if revoked is None:
        return "(its history does not say when)."
    return _sentence(revoked.words)


def refuse_without_scopes(scopes: list[str]) -> None:
    if not scopes:
        raise Refusal("scopes_required", "Choose at least one scope: read, write or staff.", 400)


def refuse_stale_rotation(expected_newest: str | None, newest: str | None) -> None:
    """A rotation asked for against keys that have changed since (the same form sent twice)."""
    if expected_newest is not None and expected_newest != newest:
        raise Refusal(
            "keys_changed",
            "This agent's keys changed since the page was shown (it was rotated again, "
            "perhaps by this same form sent twice). Nothing was changed: check its keys, "
            "and rotate again only if you still need a new key.",
            409,
        )


def refuse_revoked_twice(agent: Agent) -> None:
    if not agent.is_active:
        raise Refusal(
            "agent_revoked", f"The agent '{agent.name}' is already revoked; nothing changed.", 409
        )


def refuse_restricting_revoked(agent: Agent, revoked: Revocation | None) -> None:
    """A revoked agent has no working key: there are no writes left to restrict."""
    if not agent.is_active:
        raise Refusal(
            "agent_revoked",
            f"The agent '{agent.name}' was revoked {_revoked_words(revoked)} None of its "
            "keys works, so it has no writes to restrict. Nothing changed.",
            409,
        )


class Restriction(StrEnum):
    """What an admin may do to an agent's writes; each is kept as the admin's reason in the
    agent's ``<name>_because`` field (empty: not restricted)."""

    WRITES_PAUSED = "writes_paused"
    QUARANTINED = "quarantined"
    STATED_UNTRUSTED = "stated_untrusted"

    @property
    def field(self) -> str:
        return f"{self.value}_because"

    @property
    def words(self) -> str:
        return _RESTRICTION_WORDS[self]

    @property
    def code(self) -> str:
        """The stable code a program reads in a decision the restriction changed."""
        return f"agent_{self.value}"

    def change(self, *, on: bool) -> str:
        """What putting it on (or lifting it) is called: the start of the reason kept in the
        agent's history, before the admin's own words."""
        return _RESTRICTION_CHANGES[self][0 if on else 1]


_RESTRICTION_WORDS = {
    Restriction.WRITES_PAUSED: "writes paused",
    Restriction.QUARANTINED: "quarantined",
    Restriction.STATED_UNTRUSTED: "not trusted for stated memories",
}
_RESTRICTION_CHANGES = {
    Restriction.WRITES_PAUSED: ("Writes paused", "Pause lifted"),
    Restriction.QUARANTINED: ("Quarantine started", "Quarantine ended"),
    Restriction.STATED_UNTRUSTED: (
        "Stated memories no longer trusted",
        "Stated memories trusted again",
    ),
}

# 423 Locked: the request may be fine; an admin holds this agent's writes until they lift
# the restriction (a person's paused memory answers the same).
RESTRICTED_STATUS = 423


def restriction_reason(agent: Agent, restriction: Restriction) -> str:
    """The admin's reason for ``restriction`` on ``agent``; empty when it is not on."""
    reason: str = getattr(agent, restriction.field)
    return reason


def refuse_restriction_unchanged(agent: Agent, restriction: Restriction, *, on: bool) -> None:
    """Putting on what is on, or lifting what is off, is a mistake worth saying."""
    if bool(restriction_reason(agent, restriction)) != on:
        return
    if on:
        detail = (
            f"The agent '{agent.name}' is already {restriction.words} "
            f"(reason: {_sentence(restriction_reason(agent, restriction))}) Nothing changed."
        )
    else:
        detail = f"The agent '{agent.name}' is not {restriction.words}; nothing to lift."
    raise Refusal("restriction_unchanged", detail, 409)


class RestrictedRefusal(Refusal):
    """A write refused because of a restriction an admin put on the agent, with their reason."""

    def __init__(self, restriction: Restriction, because: str, detail: str) -> None:
        super().__init__(restriction.code, detail, RESTRICTED_STATUS)
        self.restriction = restriction
        self.because = because


# The decision's code for a write held because its text is unsafe to hand an assistant.
HELD_FOR_REVIEW = "held_for_review"


@dataclass(frozen=True)
class Hold:
    """Why an agent's write lands pending whatever the rest of the policy says: an admin's
    restriction on the agent (with the admin's reason, ``because``), or a finding of
    ``ledger.poison`` in its text."""

    restriction: Restriction | None
    because: str
    reason: str

    @property
    def code(self) -> str:
        return self.restriction.code if self.restriction else HELD_FOR_REVIEW


def hold_for_text(statement: str) -> Hold | None:
    """A statement that speaks to the model, carries a link or markup, or holds a secret
    waits for a person, whoever wrote it and on whatever basis."""
    found = poison.finding(statement)
    if found is None:
        return None
    return Hold(
        None,
        "",
        f"Held for a person's review: {found.message} Agents are not given it until a "
        "person confirms it.",
    )


def refuse_unsafe_text(text: str, *, what: str) -> None:
    """Text that has no pending state to wait in (``what``: a ledger fact) is refused when
    it would be unsafe to hand an assistant: agents are given it verbatim once it is stored."""
    found = poison.finding(text)
    if found is None:
        return
    raise Refusal(
        "unsafe_text",
        f"{what} is handed to agents verbatim and cannot wait for a person's review, so it "
        f"is refused: {found.message} Nothing was written.",
    )


def held_for_review(*, status: str, statement: str) -> str:
    """Why a memory waiting for a person was held for its words, for whoever answers it;
    empty when nothing in them was unsafe."""
    found = poison.finding(statement) if status == MemoryStatus.PENDING else None
    return f"Held for review: {found.message}" if found else ""


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if text.endswith((".", "!", "?")) else f"{text}."


def refuse_paused_agent(agent: Agent | None) -> None:
    """A paused agent's memory, ledger and new journal writes are refused; None is a person."""
    if agent is None or not agent.writes_paused:
        return
    because = agent.writes_paused_because
    raise RestrictedRefusal(
        Restriction.WRITES_PAUSED,
        because,
        f"An admin paused this agent's writes: {_sentence(because)} Nothing was written; "
        "writes work again once an admin lifts the pause.",
    )


def refuse_unheld_change(agent: Agent | None, *, what: str) -> None:
    """A change that cannot wait for a person's confirmation (``what``: a deletion, a ledger
    entry) is refused while the agent is paused or quarantined."""
    refuse_paused_agent(agent)
    if agent is None or not agent.quarantined:
        return
    because = agent.quarantined_because
    raise RestrictedRefusal(
        Restriction.QUARANTINED,
        because,
        f"An admin quarantined this agent: {_sentence(because)} Its memories wait for a "
        f"person's confirmation, but {what} cannot wait, so it is refused. Nothing was written.",
    )


# Sources by which an agent says the person said it: their message, or an older system's
# record of what they stated (an import).
PERSONS_WORD = (SourceKind.USER_MESSAGE, SourceKind.IMPORT)


def hold_for(agent: Agent, *, basis: str, source_kind: str, statement: str) -> Hold | None:
    """Why this agent's memory write lands pending, or None: quarantined, everything it
    writes; not trusted for stated memories, a statement it says came from the person
    (in a message, or in an import); and from anyone, a statement unsafe to hand an
    assistant."""
    if agent.quarantined:
        because = agent.quarantined_because
        return Hold(
            Restriction.QUARANTINED,
            because,
            f"Quarantined by an admin: {_sentence(because)} Everything this agent writes "
            "waits for a person's confirmation before agents may use it.",
        )
    if agent.stated_untrusted and basis == Basis.STATED and source_kind in PERSONS_WORD:
        because = agent.stated_untrusted_because
        return Hold(
            Restriction.STATED_UNTRUSTED,
            because,
            f"This agent is not trusted for what people said: {_sentence(because)} Its "
            "report of the person's message is taken as its own claim, and waits for a "
            "person's confirmation before agents may use it.",
        )
    return hold_for_text(statement)


def hold_for_repeat(*, writer: Agent | None, statement: str) -> Hold | None:
    """A pending memory a quarantined agent wrote, or one unsafe to hand an assistant, waits
    for a person, whoever repeats it: another agent's repeat is no confirmation."""
    if writer is None or not writer.quarantined:
        return hold_for_text(statement)
    because = writer.quarantined_because
    return Hold(
        Restriction.QUARANTINED,
        because,
        f"It was first written by '{writer.name}', which an admin quarantined: "
        f"{_sentence(because)} Only a person's confirmation makes it active.",
    )


def refuse_untrusted_statement(agent: Agent | None, *, source_kind: str, what: str) -> None:
    """Not trusted for stated memories: ``what`` (an established fact, an agreement) resting
    on the person's message would be the agent's claim passed off as the person's word."""
    if agent is None or not agent.stated_untrusted or source_kind not in PERSONS_WORD:
        return
    because = agent.stated_untrusted_because
    raise RestrictedRefusal(
        Restriction.STATED_UNTRUSTED,
        because,
        f"An admin marked this agent not trusted for what people said: {_sentence(because)} "
        f"{what} on the strength of the person's message is refused; record it as an "
        "interpretation instead. Nothing was written.",
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


# The write policy's settings (H6): one table for the admin's page, its form and
# ``change_policy``, so that no route can store a value the writes cannot live with.

# A hundred years: a longer life would give dates beyond what the pages can show.
POLICY_DAYS_MAX = 36_500
KEYS_SETTING = "system_of_record_keys"
# The usual lives of the three kinds: a guess may not be given a longer one.
LIFE_SETTINGS = ("ttl_preference_days", "ttl_account_fact_days", "ttl_episode_days")


@dataclass(frozen=True)
class PolicySetting:
    """One setting: what the page says of it, and the values it may take (``low`` to
    ``high`` of ``many``; for the system-of-record keys, how many keys the list holds)."""

    name: str
    label: str
    meaning: str
    one: str
    many: str
    low: int
    high: int

    def amount(self, count: int) -> str:
        return f"{count} {self.one if count == 1 else self.many}"

    @property
    def bounds(self) -> str:
        if self.low == 0:
            return f"at most {self.amount(self.high)}"
        return f"from {self.low} to {self.amount(self.high)}"


def _days(name: str, label: str, meaning: str) -> PolicySetting:
    return PolicySetting(name, label, meaning, "day", "days", 1, POLICY_DAYS_MAX)


POLICY_SETTINGS: tuple[PolicySetting, ...] = (
    _days(
        "ttl_preference_days",
        "Life of a preference",
        "When an agent gives no expiry, a new preference (how the person likes things "
        "done) expires after this many days.",
    ),
    _days(
        "ttl_account_fact_days",
        "Life of an account fact",
        "When an agent gives no expiry, a new account fact (their plan, a setting of "
        "their account) expires after this many days.",
    ),
    _days(
        "ttl_episode_days",
        "Life of an episode",
        "When an agent gives no expiry, a new episode (something that happened) expires "
        "after this many days.",
    ),
    _days(
        "inferred_max_days",
        "Longest life of a guess",
        "A guess (a memory an agent inferred rather than heard) never lives longer than "
        "this, whatever expiry the agent asks for. It may not be longer than the shortest "
        "life above: a guess never outlives what a person said.",
    ),
    PolicySetting(
        "inferred_sources_required",
        "Agents a guess needs",
        "A guess waits, unused, until this many different agents have written it, or the "
        "person confirms it. One agent repeating itself counts once, however many messages "
        "or tools it names. 1 means the agent that wrote it is enough.",
        "agent",
        "agents",
        1,
        10,
    ),
    _days(
        "review_preference_days",
        "Review of a preference",
        "The person is reminded to check a new preference this many days after it is written.",
    ),
    _days(
        "review_account_fact_days",
        "Review of an account fact",
        "The person is reminded to check a new account fact this many days after it is written.",
    ),
    _days(
        "review_episode_days",
        "Review of an episode",
        "The person is reminded to check a new episode this many days after it is written.",
    ),
    PolicySetting(
        "subject_active_cap",
        "Live memories per subject",
        "The most memories in use or waiting for confirmation one subject may hold; a new "
        "one beyond it is refused until some are deleted or expire.",
        "memory",
        "memories",
        1,
        10_000,
    ),
    PolicySetting(
        "recall_cap",
        "Memories per recall",
        "The most memories an agent is given in one recall: the largest number it may ask for.",
        "memory",
        "memories",
        1,
        100,
    ),
    PolicySetting(
        KEYS_SETTING,
        "Slots another system owns",
        "Slot keys whose truth lives in another system (billing, the customer database): an "
        "agent's write to one of them is refused, so that it reads them from there. One "
        "key per line, such as billing.address.",
        "key",
        "keys",
        0,
        100,
    ),
)
POLICY_SETTING_NAMES = frozenset(setting.name for setting in POLICY_SETTINGS)


def _shown(value: int) -> str:
    # A number too long to read (or, past 4300 digits, to print) is not echoed back.
    return str(value) if value.bit_length() <= 64 else "that number"


def _number_problem(setting: PolicySetting, value: object) -> str | None:
    if not isinstance(value, int) or isinstance(value, bool):
        return f"Give a whole number of {setting.many}."
    if not setting.low <= value <= setting.high:
        return f"Choose {setting.bounds}; {_shown(value)} is outside that."
    return None


def _keys_problem(setting: PolicySetting, value: object) -> str | None:
    if not isinstance(value, list) or not all(isinstance(key, str) for key in value):
        return "Give the slot keys, one per line."
    if len(value) > setting.high:
        return f"At most {setting.amount(setting.high)}; this is {len(value)}."
    seen: set[str] = set()
    for key in value:
        if (found := forbidden_character(key)) is not None:
            return f"A key holds an invisible character ({found}): type it again."
        if not KEY_PATTERN.fullmatch(key):
            return (
                f"“{key[:50]}” is not a slot key: use lower-case letters, digits, dots, "
                "dashes and underscores, starting with a letter or a digit, at most 100 "
                "characters, such as billing.address."
            )
        if key in seen:
            return f"“{key}” is listed twice."
        seen.add(key)
    return None


def _guess_problem(numbers: Mapping[str, int]) -> str | None:
    shortest = min(LIFE_SETTINGS, key=lambda name: numbers[name])
    longest_guess = numbers["inferred_max_days"]
    if longest_guess <= numbers[shortest]:
        return None
    label = next(s.label for s in POLICY_SETTINGS if s.name == shortest).lower()
    return (
        f"At most {numbers[shortest]} days, the {label}: a guess never outlives what a "
        f"person said. {longest_guess} is longer."
    )


def policy_problems(values: Mapping[str, object]) -> dict[str, str]:
    """What is wrong with a whole policy (a value for every setting), setting by setting,
    in words to show beside each; empty when every value may be stored."""
    problems: dict[str, str] = {}
    for setting in POLICY_SETTINGS:
        check = _keys_problem if setting.name == KEYS_SETTING else _number_problem
        if (problem := check(setting, values.get(setting.name))) is not None:
            problems[setting.name] = problem
    if not problems.keys() & {*LIFE_SETTINGS, "inferred_max_days"}:
        numbers = {name: value for name, value in values.items() if isinstance(value, int)}
        if (problem := _guess_problem(numbers)) is not None:
            problems["inferred_max_days"] = problem
    return problems


class PolicyRefusal(Refusal):
    """Settings a policy change may not take: ``problems`` names each, with why."""

    def __init__(self, problems: Mapping[str, str]) -> None:
        labels = {setting.name: setting.label for setting in POLICY_SETTINGS}
        detail = " ".join(f"{labels[name]} ({name}): {words}" for name, words in problems.items())
        super().__init__("policy_out_of_bounds", f"{detail} Nothing was changed.", 400)
        self.problems = dict(problems)


def refuse_bad_policy(values: Mapping[str, object]) -> None:
    if problems := policy_problems(values):
        raise PolicyRefusal(problems)


def refuse_unknown_settings(changes: Mapping[str, object]) -> None:
    if unknown := sorted(changes.keys() - POLICY_SETTING_NAMES):
        raise Refusal(
            "policy_unknown_setting",
            f"Not settings of the write policy: {', '.join(unknown)}. Nothing was changed.",
            400,
        )


def refuse_stale_policy(expected: int | None, current: int) -> None:
    """A change made on the page of an earlier version would silently undo the one since."""
    if expected is not None and expected != current:
        raise Refusal(
            "policy_changed",
            f"The policy changed while you were editing it: it is now version {current}, not "
            f"{expected}. Check the values in force and submit again. Nothing was changed.",
            409,
        )


def refuse_unchanged_policy(changed: Mapping[str, object]) -> None:
    if not changed:
        raise Refusal(
            "policy_unchanged",
            "Nothing to save: every setting already has the value you gave, so no new "
            "version was made.",
            400,
        )


# People: what the People page and the create_person command may change about a person.


class PersonMove(StrEnum):
    CHANGE_ROLE = "change_role"
    LINK_SUBJECT = "link_subject"
    UNLINK_SUBJECT = "unlink_subject"
    DISABLE = "disable"
    ENABLE = "enable"
    SEND_PASSWORD_LINK = "send_password_link"
    LIFT_LOCKOUT = "lift_lockout"


@dataclass(frozen=True)
class PersonFacts:
    """What the rules about changing a person look at, read from the person beforehand."""

    name: str
    superuser: bool
    # The person is the admin asking.
    yourself: bool
    active: bool
    end_user: bool
    has_email: bool
    owned_subjects: int


def refuse_person_move(move: PersonMove, person: PersonFacts) -> None:
    """Why ``move`` may not be made on ``person``, as a refusal; nothing when it may."""
    if person.superuser:
        raise Refusal(
            "person_superuser",
            f"{person.name} is a superuser: superusers are managed from the command line "
            "only, never from a page. Nothing was changed.",
            403,
        )
    if person.yourself and move in (PersonMove.CHANGE_ROLE, PersonMove.DISABLE):
        raise Refusal(
            "person_yourself",
            "You cannot change your own role or disable yourself: ask another admin. "
            "Nothing was changed.",
            403,
        )
    if move == PersonMove.DISABLE and not person.active:
        raise Refusal("person_disabled", f"{person.name} is already disabled.", 409)
    if move == PersonMove.ENABLE and person.active:
        raise Refusal("person_active", f"{person.name} can already sign in.", 409)
    if move == PersonMove.CHANGE_ROLE:
        refuse_owner_leaving_end_users(person)
    if move == PersonMove.LINK_SUBJECT and not person.end_user:
        raise Refusal(
            "person_not_end_user",
            f"Only an end user owns a subject, and {person.name} is not one: make them an "
            "end user first. Nothing was changed.",
            409,
        )
    if move == PersonMove.SEND_PASSWORD_LINK and not person.active:
        raise Refusal(
            "person_disabled",
            f"{person.name} is disabled: enable them first, or the password they set would "
            "not let them in. Nothing was sent.",
            409,
        )
    if move == PersonMove.SEND_PASSWORD_LINK and not person.has_email:
        raise Refusal(
            "person_without_email",
            f"{person.name} has no e-mail address, so there is nowhere to send the link. "
            "An address is set from the command line "
            "(manage.py create_person NAME --update --email ADDRESS). Nothing was sent.",
            409,
        )


def refuse_owner_leaving_end_users(person: PersonFacts) -> None:
    """An end user who owns subjects stays one: as support or an admin they would work on
    their own subjects as staff, not as the person whose subjects they are. Their subjects
    are unlinked first, each with its reason, so that their history says so."""
    if person.end_user and person.owned_subjects:
        owned = "a subject" if person.owned_subjects == 1 else f"{person.owned_subjects} subjects"
        raise Refusal(
            "person_owns_subjects",
            f"{person.name} owns {owned}: as support or an admin they would work on their own "
            "as staff. Unlink their subjects first (on their page, each with a reason), then "
            "change the role. Nothing was changed.",
            409,
        )


def person_move_refusal(move: PersonMove, person: PersonFacts) -> Refusal | None:
    """Why the person page does not offer ``move``, or None when it does."""
    try:
        refuse_person_move(move, person)
    except Refusal as refusal:
        return refusal
    return None


def person_moves(person: PersonFacts) -> frozenset[PersonMove]:
    """The moves the person page offers: the ones ``refuse_person_move`` lets through."""
    return frozenset(move for move in PersonMove if person_move_refusal(move, person) is None)


def refuse_nothing_to_lift(lockout: Lockout | None, *, name: str) -> Lockout:
    """A lift needs a lockout in force: one that ended, or another admin lifted, is not
    lifted again (nor recorded as lifted)."""
    if lockout is None:
        raise Refusal(
            "not_locked_out",
            f"{name} is not locked out of sign-in (any more): nothing was lifted.",
            409,
        )
    return lockout


# Addresses under /people/ that are pages, not people.
RESERVED_USERNAMES = frozenset({"new"})


def refuse_reserved_username(username: str) -> None:
    if username.lower() in RESERVED_USERNAMES:
        raise Refusal(
            "username_reserved",
            f"'{username}' is the address of a page: choose another username.",
            400,
        )


def refuse_same_role(*, name: str, current: str, wanted: str) -> None:
    if current == wanted:
        raise Refusal("role_unchanged", f"{name} already has that role; nothing was changed.", 409)


def refuse_subject_taken(*, subject_ref: str, owner: str, person: str) -> None:
    """A subject has one owner: taking it from someone is two steps, each with a reason."""
    if owner == person:
        raise Refusal("subject_already_linked", f"{person} already owns {subject_ref}.", 409)
    if owner:
        raise Refusal(
            "subject_taken",
            f"The subject {subject_ref} belongs to {owner}. A subject has one owner: unlink "
            f"it on {owner}'s page first, with a reason. Nothing was changed.",
            409,
        )
