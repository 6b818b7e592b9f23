"""Writes that concern a whole subject: making it, naming it, and pausing its memory.

Erasing everything about a subject is ``ledger.actions.erasure``.
"""

from __future__ import annotations

from django.db import transaction

from ledger.actions._tracking import save_tracked
from ledger.actors import Actor
from ledger.models import Subject


def create_subject(*, ref: str, actor: Actor, reason: str, display_name: str = "") -> Subject:
    """A new subject. Agents never call this directly: the first write about someone does."""
    subject = Subject(ref=ref, display_name=display_name)
    save_tracked(subject, actor=actor, reason=reason)
    return subject


def set_display_name(*, subject: Subject, display_name: str, actor: Actor) -> Subject:
    """What people call the subject on the pages; the ref stays its id."""
    subject.display_name = display_name
    save_tracked(subject, actor=actor, reason="Display name set.", update_fields=["display_name"])
    return subject


def set_memory_paused(*, subject: Subject, actor: Actor, paused: bool) -> Subject:
    """The one switch: while paused, the write gate refuses every new memory about them."""
    with transaction.atomic():
        locked = Subject.objects.select_for_update().get(pk=subject.pk)
        if locked.memory_paused != paused:
            locked.memory_paused = paused
            save_tracked(
                locked,
                actor=actor,
                reason="Memory paused: nothing new may be written."
                if paused
                else "Memory switched back on.",
                update_fields=["memory_paused"],
            )
    return locked
