"""Recording a recall: which agent, run and turn read what, and the exact block it was given."""

from __future__ import annotations

from django.db import transaction

from ledger import policy
from ledger.models import Agent, Recall, RecallItem, Run
from ledger.recall import RecallResult


def record_recall(
    *, agent: Agent, result: RecallResult, run_ref: str | None = None, turn: int | None = None
) -> Recall:
    """Store one read with every memory it served, in a fixed number of queries.

    A run named here that does not exist yet is started for this agent and subject; a run
    that belongs to another agent is refused, so a read is never filed under someone else.
    """
    with transaction.atomic():
        run = None
        if run_ref:
            run, _ = Run.objects.get_or_create(
                ref=run_ref, defaults={"agent": agent, "subject": result.subject}
            )
            if run.agent_id != agent.pk:
                raise policy.Refusal(
                    "run_of_another_agent",
                    f"The run '{run_ref}' belongs to another agent; use a run of your own.",
                    status=409,
                )
        recall = Recall.objects.create(
            agent=agent,
            run=run,
            turn=turn,
            subject=result.subject,
            goal=result.goal,
            k=result.k,
            block=result.block,
            recalled_at=result.recalled_at,
        )
        # Recall items keep no history, and one insert keeps the query count flat whatever k is.
        RecallItem.objects.bulk_create(
            RecallItem(recall=recall, memory=served.memory, position=position, rank=served.rank)
            for position, served in enumerate(result.served(), start=1)
        )
    return recall
