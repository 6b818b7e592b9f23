"""Runs: started by an agent on first use, and belonging to that agent from then on."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from ledger.actions._tracking import save_tracked
from ledger.actors import Actor
from ledger.models import Agent, Run, Subject
from ledger.rules.refusals import Refusal


class RunOfAnotherAgent(Refusal):
    def __init__(self, ref: str) -> None:
        super().__init__(
            "run_of_another_agent",
            f"The run '{ref}' belongs to another agent; use a run of your own.",
            status=409,
        )


def start_run(
    *, ref: str, agent: Agent, subject: Subject | None = None, known: Run | None = None
) -> Run:
    """The run ``ref``, started for ``agent`` on first use; it learns its subject once.
    ``known``: its row, when the caller has read it already (the write gate reads it with
    what decides a write), which saves reading it again.

    Nothing is filed under another agent's run: naming one raises ``RunOfAnotherAgent``.
    """
    run = known or Run.objects.filter(ref=ref).first()
    if run is None:
        run = Run(ref=ref, agent=agent, subject=subject)
        try:
            with transaction.atomic():
                save_tracked(run, actor=Actor.for_agent(agent), reason="Run started.")
        except IntegrityError:
            # Started concurrently by another request: use that row.
            run = Run.objects.get(ref=ref)
    if run.agent_id != agent.pk:
        raise RunOfAnotherAgent(ref)
    if run.subject_id is None and subject is not None:
        run.subject = subject
        save_tracked(
            run,
            actor=Actor.for_agent(agent),
            reason=f"Run linked to subject {subject.ref}.",
            update_fields=["subject"],
        )
    return run
