"""Run notes: small keyed notes an agent keeps outside its context window.

A run's notes are its agent's working state, whatever the write policy says of what agents
write about a subject: another agent's run is as good as missing (404), as the API answers."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from ledger.actions._tracking import delete_tracked, save_tracked
from ledger.actors import Actor
from ledger.models import Agent, Run, RunNote
from ledger.rules.refusals import Refusal

# A run's notes are handed back whole; a bound keeps that answer small.
NOTES_PER_RUN_MAX = 200


def write_note(*, run: Run, agent: Agent, key: str, value: str) -> tuple[RunNote, bool]:
    """Set ``key`` to ``value``, overwriting; history keeps the earlier values."""
    _refuse_others_run(run, agent)
    actor = Actor.for_agent(agent)
    with transaction.atomic():
        # Locking the run serialises writers, so the count and the overwrite cannot race.
        Run.objects.select_for_update().get(pk=run.pk)
        note = RunNote.objects.filter(run=run, key=key).first()
        created = note is None
        if note is None:
            if RunNote.objects.filter(run=run).count() >= NOTES_PER_RUN_MAX:
                raise Refusal(
                    "too_many_notes",
                    f"This run already holds {NOTES_PER_RUN_MAX} notes; delete or overwrite one.",
                    status=409,
                )
            note = RunNote(run=run, key=key)
        elif note.value == value:
            return note, False
        note.value = value
        note.updated_at = timezone.now()
        save_tracked(note, actor=actor, reason="Note written." if created else "Note overwritten.")
    return note, created


def delete_note(*, run: Run, agent: Agent, key: str) -> None:
    _refuse_others_run(run, agent)
    with transaction.atomic():
        note = RunNote.objects.select_for_update().filter(run=run, key=key).first()
        if note is None:
            raise Refusal("not_found", f"This run has no note '{key}'.", status=404)
        delete_tracked(note, actor=Actor.for_agent(agent), reason="Note deleted.")


def _refuse_others_run(run: Run, agent: Agent) -> None:
    if run.agent_id != agent.pk:
        raise Refusal("not_found", f"You have no run '{run.ref}'.", status=404)
