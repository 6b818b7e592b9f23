"""Keeping a slot honest: the locks every memory write takes, and the slot's conflict.

A slot is one subject + key. Two active memories in a slot that disagree are a conflict,
and nothing here picks a winner: a conflict stays open until a person's correction,
retraction or confirmation leaves one statement standing.
"""

from __future__ import annotations

from django.utils import timezone

from ledger.actions._tracking import save_tracked
from ledger.actors import Actor
from ledger.models import Conflict, Memory, Subject


def lock_slot(memory: Memory) -> Memory:
    """Lock the memory's subject, then the memory, and return the memory as it is now.

    Every write that touches a slot takes the subject row first, as the write gate does, so
    two writes about one subject queue up instead of deadlocking.
    """
    Subject.objects.select_for_update().filter(pk=memory.subject_id).first()
    return Memory.objects.select_for_update().select_related("subject").get(pk=memory.pk)


def refresh_conflict(*, subject: Subject, key: str, actor: Actor) -> Conflict | None:
    """Open, extend or close the conflict for one slot to match what is active in it."""
    if not key:
        return None
    active = list(Memory.objects.in_slot(subject, key).filter(status=Memory.Status.ACTIVE))
    disagree = len({m.normalized for m in active}) > 1
    conflict = Conflict.objects.open().filter(subject=subject, key=key).first()
    now = timezone.now()
    if disagree:
        if conflict is None:
            conflict = Conflict(subject=subject, key=key, opened_at=now)
            save_tracked(conflict, actor=actor, reason=f"Memories disagree in slot '{key}'.")
        conflict.memories.add(*active)
        return conflict
    if conflict is not None:
        conflict.status = Conflict.Status.RESOLVED
        conflict.resolved_at = now
        save_tracked(
            conflict,
            actor=actor,
            reason="Only one statement is left active in the slot.",
            update_fields=["status", "resolved_at"],
        )
    return None
