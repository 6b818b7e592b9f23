"""Sources: the evidence every memory and ledger entry points at. No source, no memory."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ledger.actions._tracking import save_tracked
from ledger.actions.runs import start_run
from ledger.actors import Actor
from ledger.models import Agent, Memory, Run, Source, Subject


@dataclass(frozen=True)
class SourceInput:
    kind: str
    ref: str
    run: str | None = None
    turn: int | None = None
    excerpt: str = ""


def run_for(
    ref: str | None, *, agent: Agent | None, subject: Subject, known: Run | None = None
) -> Run | None:
    """The agent's run named ``ref``, started on first use; None when there is none to name.
    ``known``: its row, when the caller has read it already."""
    if not ref or agent is None:
        return None
    return start_run(ref=ref, agent=agent, subject=subject, known=known)


def add_source(
    *,
    data: SourceInput,
    agent: Agent | None,
    subject: Subject,
    now: datetime,
    actor: Actor,
    memory: Memory | None = None,
    run: Run | None = None,
) -> Source:
    """Store one source: evidence for ``memory``, or (without one) the source of an entry.
    ``run``: the run ``data`` names, when the caller has it already (``run_for``)."""
    source = Source(
        kind=data.kind,
        ref=data.ref,
        run=run or run_for(data.run, agent=agent, subject=subject),
        turn=data.turn,
        excerpt=data.excerpt,
        received_at=now,
        memory=memory,
    )
    save_tracked(
        source, actor=actor, reason="Evidence for a memory." if memory else "Source of an entry."
    )
    return source
