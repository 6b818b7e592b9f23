"""The ledger's lifecycle and what an established fact or a commitment rests on."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from ledger.choices import (
    LedgerKind,
    LedgerStatus,
    SourceKind,
)
from ledger.rules.facts import LedgerEntryFacts
from ledger.rules.refusals import Refusal


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


def refuse_if_immutable(entry: LedgerEntryFacts, verb: str) -> None:
    if entry.immutable:
        raise Refusal(
            "ledger_entry_immutable",
            f"This entry is immutable and cannot be {verb}: supersede it with a new entry "
            f"(POST /api/v1/ledger/{entry.pk}/supersede).",
            status=409,
        )


def refuse_if_stale(entry: LedgerEntryFacts, now: datetime, verb: str) -> None:
    if entry.expires_at is not None and entry.expires_at <= now:
        raise Refusal(
            "ledger_entry_expired",
            f"This entry stopped being true at {entry.expires_at.isoformat()}; "
            f"an expired entry cannot be {verb}. Supersede it with a current one.",
            status=409,
        )
