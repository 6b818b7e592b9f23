"""A person settles a conflict: one statement is kept, or the right one written; a possible
conflict may also be dismissed as not a conflict."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from ledger import access
from ledger.actions._reasons import refuse_missing_reason
from ledger.actions._tracking import save_tracked
from ledger.actions.lifecycle import correct_memory, retract_memory
from ledger.actions.slots import lock_slot, refresh_conflict
from ledger.actors import Actor
from ledger.models import Conflict, LedgerEntry, Memory, Subject
from ledger.rules.conflicts import ConflictMove, refuse_conflict_move, refuse_conflict_resolved
from ledger.rules.refusals import Refusal
from ledger.rules.text import normalize_statement

# The start of the reason on the kept memory's history row; its history page names the
# step by it.
KEPT_IN_CONFLICT = "Kept when the conflict was resolved"


def resolve_conflict(
    *,
    conflict: Conflict,
    actor: Actor,
    keep: Memory | None,
    statement: str | None,
    reason: str = "",
) -> Memory:
    """Keep one statement, or rewrite it; the others go.

    With ``statement`` the kept memory (``keep``, or the newest contender) is corrected to
    it; every other contender is retracted. Returns the memory left standing. ``reason``
    is why, in the words of whoever settled it (support must give one; the person need
    not), and goes into every history row the resolution writes.
    """
    statement = (statement or "").strip() or None
    if keep is None and statement is None:
        raise Refusal("choice_required", "Pick the statement to keep, or write the right one.", 400)
    with transaction.atomic():
        locked = _lock(conflict)
        refuse_missing_reason(actor=actor, subject=locked.subject, reason=reason)
        contenders = list(locked.memories.filter(status=Memory.Status.ACTIVE))
        # Closed, or open with nobody left standing: either way there is nothing to choose.
        refuse_conflict_resolved(locked.status if contenders else Conflict.Status.RESOLVED)
        if statement is None:
            refuse_conflict_move(
                ConflictMove.KEEP_MEMORY,
                possible=locked.possible,
                has_commitment=locked.commitment_id is not None,
            )
        if keep is None:
            keep = contenders[0]
        if keep.pk not in {m.pk for m in contenders}:
            raise Refusal("not_a_contender", "That statement is not part of this conflict.", 400)
        resolved = f"Conflict resolved {_by(actor, locked)}.{_why(reason)}"
        deleted = [other for other in contenders if other.pk != keep.pk]
        for other in deleted:
            retract_memory(memory=other, actor=actor, reason=resolved)
        how = Conflict.Resolution.KEPT
        if statement is not None and normalize_statement(statement) != keep.normalized:
            keep = correct_memory(memory=keep, actor=actor, statement=statement, reason=resolved)
            how = Conflict.Resolution.REWRITTEN
        else:
            # Keeping one as it is: the slot now holds one statement, so the conflict closes.
            refresh_conflict(subject=locked.subject, key=locked.key, actor=actor)
            # Nothing in the kept row changes, but a person chose it over the others: its
            # own history (not only the losers') says who, when and over what.
            keep = lock_slot(keep)
            others = ", ".join(f"“{other.statement}”" for other in deleted)
            save_tracked(
                keep,
                actor=actor,
                reason=f"{KEPT_IN_CONFLICT} {_by(actor, locked)}: deleted instead {others}"
                + (f". {reason}" if reason else ""),
                update_fields=[],
                bump_version=True,
            )
        locked.refresh_from_db()
        locked.resolution, locked.kept = how, keep
        save_tracked(locked, actor=actor, reason=resolved, update_fields=["resolution", "kept"])
    return keep


def dismiss_conflict(*, conflict: Conflict, actor: Actor, reason: str = "") -> Conflict:
    """A person read a possible conflict and found it is not one: both statements stay.
    ``reason`` is why, in their words: support must give one, the person need not."""
    with transaction.atomic():
        locked = _lock(conflict)
        refuse_missing_reason(actor=actor, subject=locked.subject, reason=reason)
        refuse_conflict_move(
            ConflictMove.DISMISS,
            possible=locked.possible,
            has_commitment=locked.commitment_id is not None,
        )
        refuse_conflict_resolved(locked.status)
        locked.status = Conflict.Status.RESOLVED
        locked.resolution = Conflict.Resolution.DISMISSED
        locked.resolved_at = timezone.now()
        save_tracked(
            locked,
            actor=actor,
            reason=f"Not a conflict, said {_by(actor, locked)}.{_why(reason)}",
            update_fields=["status", "resolution", "resolved_at"],
        )
    return locked


def keep_commitment(*, conflict: Conflict, actor: Actor, reason: str = "") -> LedgerEntry:
    """Settle a possible conflict with a ledger commitment: the commitment stands and the
    memory that contradicts it is retracted. The commitment itself is the agent's record of
    an agreement and changes only through the ledger. ``reason`` is why, in the words of
    whoever settled it: support must give one, the person need not."""
    with transaction.atomic():
        locked = _lock(conflict)
        refuse_missing_reason(actor=actor, subject=locked.subject, reason=reason)
        contenders = list(locked.memories.filter(status=Memory.Status.ACTIVE))
        refuse_conflict_resolved(locked.status if contenders else Conflict.Status.RESOLVED)
        commitment = locked.commitment
        refuse_conflict_move(
            ConflictMove.KEEP_COMMITMENT,
            possible=locked.possible,
            has_commitment=commitment is not None,
        )
        assert commitment is not None  # refused just above
        resolved = (
            f"Conflict resolved {_by(actor, locked)}: the ledger commitment stands.{_why(reason)}"
        )
        for memory in contenders:
            # Retracting the memory leaves one side, so the conflict closes as it goes.
            retract_memory(memory=memory, actor=actor, reason=resolved)
        locked.refresh_from_db()
        locked.resolution = Conflict.Resolution.KEPT
        save_tracked(locked, actor=actor, reason=resolved, update_fields=["resolution"])
        return commitment


def _lock(conflict: Conflict) -> Conflict:
    Subject.objects.select_for_update().filter(pk=conflict.subject_id).first()
    return Conflict.objects.select_for_update().select_related("subject").get(pk=conflict.pk)


def _by(actor: Actor, conflict: Conflict) -> str:
    by_person = actor.user is not None and access.acts_for_person(actor.user, conflict.subject)
    return "by the person" if by_person else "by staff"


def _why(reason: str) -> str:
    return f" {reason}" if reason else ""
