"""Recording a recall: which agent, run and turn read what, and the exact block it was given."""

from __future__ import annotations

from django.db import transaction

from ledger.actions.runs import start_run
from ledger.models import Agent, Recall, RecallItem
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
            run = start_run(ref=run_ref, agent=agent, subject=result.subject)
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
            RecallItem(
                recall=recall,
                memory=served.memory,
                position=position,
                rank=served.rank,
                subject=result.subject,
                recalled_at=result.recalled_at,
            )
            for position, served in enumerate(result.served(), start=1)
        )
    return recall
