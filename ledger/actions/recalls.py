"""Recording a recall: which agent, run and turn read what, and the exact block it was given.

Recalls and their items keep no history: they are the log of reads, written once.
"""

from __future__ import annotations

from django.db import connections, router, transaction

from ledger.actions.runs import start_run
from ledger.models import Agent, Recall, RecallItem, Run
from ledger.reads.recall import RECENT_WHY, RecallResult
from ledger.reads.retrieval import Ranked
from ledger.rules.ranking import Why


def record_recall(
    *, agent: Agent, result: RecallResult, run_ref: str | None = None, turn: int | None = None
) -> Recall:
    """Store one read with every memory it served, in a fixed number of queries whatever k
    is: on PostgreSQL one statement, the run's lookup included.

    A run named here that does not exist yet is started for this agent and subject; a run
    that belongs to another agent is refused, so a read is never filed under someone else.
    """
    run_ref = run_ref or None
    # The ranking may have read from a replica; the record goes where writes go.
    using = router.db_for_write(Recall)
    if connections[using].vendor != "postgresql":
        return _record_in_steps(agent=agent, result=result, run_ref=run_ref, turn=turn)
    stored = _record_in_one_statement(agent=agent, result=result, run_ref=run_ref, turn=turn)
    if stored is None:
        assert run_ref is not None
        # The run is new, another agent's, or has no subject yet: ``start_run`` starts it,
        # refuses it or links it, and the read is stored with it in the same transaction.
        with transaction.atomic(using=using):
            start_run(ref=run_ref, agent=agent, subject=result.subject)
            stored = _record_in_one_statement(
                agent=agent, result=result, run_ref=run_ref, turn=turn
            )
        assert stored is not None
    return stored


# One statement, atomic on its own: the recall, then its items from the id it was given.
# The run is looked up in it too, and only a run of this agent that already knows its
# subject is used; for any other the statement stores nothing and says so (no row).
# Items carry their own subject and time, and name their recall by its id only: the log
# is partitioned by time, and nothing here relies on a foreign key between the two tables.
_RECORD = """
WITH run AS (
    SELECT id FROM {run}
    WHERE ref = %(run_ref)s AND agent_id = %(agent)s AND subject_id IS NOT NULL
), recall AS (
    INSERT INTO {recall} (agent_id, run_id, turn, subject_id, goal, k, block, recalled_at,
        semantic, model)
    SELECT %(agent)s, (SELECT id FROM run), %(turn)s::integer, %(subject)s, %(goal)s,
        %(k)s, %(block)s, %(recalled_at)s, %(semantic)s, %(model)s
    WHERE %(run_ref)s::text IS NULL OR EXISTS (SELECT FROM run)
    RETURNING id, run_id
), items AS (
    INSERT INTO {item} (recall_id, memory_id, position, rank, subject_id, recalled_at,
        via, lexical, matched, semantic)
    SELECT recall.id, served.memory_id, served.position, served.rank, %(subject)s,
        %(recalled_at)s, served.via, served.lexical, served.matched, served.semantic
    FROM recall, UNNEST(
        %(memories)s::uuid[], %(ranks)s::double precision[], %(vias)s::text[],
        %(lexical)s::double precision[], %(matched)s::text[], %(semantics)s::double precision[]
    ) WITH ORDINALITY AS served (memory_id, rank, via, lexical, matched, semantic, position)
)
SELECT id, run_id FROM recall
"""


def _record_in_one_statement(
    *, agent: Agent, result: RecallResult, run_ref: str | None, turn: int | None
) -> Recall | None:
    """The stored recall, or None when ``run_ref`` names no run this read may use as it is."""
    connection = connections[router.db_for_write(Recall)]
    sql = _RECORD.format(
        **{
            name: connection.ops.quote_name(model._meta.db_table)
            for name, model in (("run", Run), ("recall", Recall), ("item", RecallItem))
        }
    )
    served = result.served()
    with connection.cursor() as cursor:
        cursor.execute(
            sql,
            {
                "run_ref": run_ref,
                "agent": agent.pk,
                "turn": turn,
                "subject": result.subject.pk,
                "goal": result.goal,
                "k": result.k,
                "block": result.block,
                "recalled_at": result.recalled_at,
                "semantic": result.semantic.value,
                # Positions are the array's order, from 1: WITH ORDINALITY numbers them.
                "memories": [r.memory.pk for r in served],
                "ranks": [r.rank for r in served],
                "vias": [why(r).via for r in served],
                "lexical": [why(r).lexical for r in served],
                "matched": [matched(r) for r in served],
                "semantics": [why(r).semantic for r in served],
                "model": result.model,
            },
        )
        row = cursor.fetchone()
    if row is None:
        return None
    recall = Recall(
        pk=row[0],
        agent=agent,
        run_id=row[1],
        turn=turn,
        subject=result.subject,
        goal=result.goal,
        k=result.k,
        block=result.block,
        recalled_at=result.recalled_at,
        semantic=result.semantic.value,
        model=result.model,
    )
    # As ``create`` would leave it: a stored row, not one still to be added.
    recall._state.adding = False
    recall._state.db = connection.alias
    return recall


def why(ranked: Ranked) -> Why:
    return ranked.why or RECENT_WHY


def matched(ranked: Ranked) -> str:
    """The goal's words the statement contained, as the log keeps them (one string)."""
    return " ".join(why(ranked).matched)[: RecallItem._meta.get_field("matched").max_length]


def _record_in_steps(
    *, agent: Agent, result: RecallResult, run_ref: str | None, turn: int | None
) -> Recall:
    """Elsewhere (SQLite): the run, the recall, then every item in one insert."""
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
            semantic=result.semantic.value,
            model=result.model,
        )
        RecallItem.objects.bulk_create(
            RecallItem(
                recall=recall,
                memory=served.memory,
                position=position,
                rank=served.rank,
                via=why(served).via,
                lexical=why(served).lexical,
                matched=matched(served),
                semantic=why(served).semantic,
                subject=result.subject,
                recalled_at=result.recalled_at,
            )
            for position, served in enumerate(result.served(), start=1)
        )
    return recall
