"""A person settles a conflict: one statement is kept, or the right one written."""

from __future__ import annotations

from django.db import transaction

from ledger import access, policy
from ledger.actions.lifecycle import correct_memory, retract_memory
from ledger.actions.slots import refresh_conflict
from ledger.actors import Actor
from ledger.models import Conflict, Memory, Subject


def resolve_conflict(
    *, conflict: Conflict, actor: Actor, keep: Memory | None, statement: str | None
) -> Memory:
    """Keep one statement, or rewrite it; the others go.

    With ``statement`` the kept memory (``keep``, or the newest contender) is corrected to
    it; every other contender is retracted. Returns the memory left standing.
    """
    statement = (statement or "").strip() or None
    if keep is None and statement is None:
        raise policy.Refusal(
            "choice_required", "Pick the statement to keep, or write the right one.", 400
        )
    with transaction.atomic():
        Subject.objects.select_for_update().filter(pk=conflict.subject_id).first()
        locked = Conflict.objects.select_for_update().select_related("subject").get(pk=conflict.pk)
        contenders = list(locked.memories.filter(status=Memory.Status.ACTIVE))
        # Closed, or open with nobody left standing: either way there is nothing to choose.
        policy.refuse_conflict_resolved(locked.status if contenders else Conflict.Status.RESOLVED)
        if keep is None:
            keep = contenders[0]
        if keep.pk not in {m.pk for m in contenders}:
            raise policy.Refusal(
                "not_a_contender", "That statement is not part of this conflict.", 400
            )
        by_person = actor.user is not None and access.acts_for_person(actor.user, locked.subject)
        resolved = (
            "Conflict resolved by the person." if by_person else "Conflict resolved by staff."
        )
        for other in contenders:
            if other.pk != keep.pk:
                retract_memory(memory=other, actor=actor, reason=resolved)
        if statement is not None and policy.normalize_statement(statement) != keep.normalized:
            keep = correct_memory(memory=keep, actor=actor, statement=statement, reason=resolved)
        else:
            # Keeping one as it is: the slot now holds one statement, so the conflict closes.
            refresh_conflict(subject=locked.subject, key=locked.key, actor=actor)
    return keep
