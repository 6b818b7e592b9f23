"""How a conflict opens, closes once, and may be settled."""

from __future__ import annotations

from enum import StrEnum

from ledger.choices import (
    ConflictStatus,
)
from ledger.rules.refusals import Refusal

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
