"""Bringing in memories from another store: two ways, for two purposes.

``import_memories`` is the import agents and operators use (``POST /api/v1/imports``,
``manage.py import_memories``): every entry goes through the write gate as the importing
agent's write, with ``source.kind = import`` and the file's name and line as its ref, and
is decided like any other write (held, refused, merged as a repeat, in conflict).

``import_memory`` is for the demo's history only (``seed_demo``): it bypasses the gate to
keep an older store's dates in the past, and names no agent. Nothing an agent sends uses it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from ledger.actions._tracking import save_tracked
from ledger.actions.gate import MemoryInput, write_memory
from ledger.actions.slots import refresh_conflict
from ledger.actions.sources import SourceInput, add_source
from ledger.actors import Actor
from ledger.models import Agent, Memory, Policy, Subject, WriteDecision
from ledger.rules.gate import review_date_for
from ledger.rules.holds import hold_for_text
from ledger.rules.text import normalize_statement

SKIPPED = "skipped"
OUTCOMES = (*WriteDecision.Outcome.values, SKIPPED)


@dataclass(frozen=True)
class ImportLine:
    """One entry of a file, checked: the write it asks for, or why it is left out."""

    line: int
    ref: str
    subject: str
    statement: str
    memory: MemoryInput | None
    skipped: str = ""


@dataclass(frozen=True)
class LineReport:
    line: int
    ref: str
    subject: str
    statement: str
    # The gate's outcome (``WriteDecision.Outcome``), or ``skipped``.
    outcome: str
    reason: str
    code: str = ""
    # The memory kept or merged into, and its status; a dry run names only one that was
    # already there (a repeat's), since it keeps nothing new.
    memory: str | None = None
    memory_status: str | None = None


@dataclass(frozen=True)
class ImportReport:
    name: str
    format: str
    dry_run: bool
    lines: list[LineReport]

    @property
    def totals(self) -> dict[str, int]:
        counts = Counter(line.outcome for line in self.lines)
        return {"entries": len(self.lines), **{o: counts[o] for o in OUTCOMES}}

    @property
    def refused(self) -> int:
        return self.totals[WriteDecision.Outcome.REFUSED]

    @property
    def subjects(self) -> set[str]:
        return {line.subject for line in self.lines}


def import_memories(
    *,
    agent: Agent,
    name: str,
    format: str,
    lines: Sequence[ImportLine],
    dry_run: bool,
    in_force: Policy | None = None,
) -> ImportReport:
    """Send each line through the write gate as ``agent``'s write, in file order, and say
    what the gate decided for each. A refused line does not stop the others: each is its
    own decision, as if sent alone (a later line that repeats an earlier one merges).

    One transaction for the file, so a failure half-way leaves none of it. A dry run is
    the same gate, the same decisions, in a transaction rolled back at the end: no row,
    history row, decision, seal or queued task is left (what ``transaction.on_commit``
    queued goes with the rollback)."""
    current = in_force or Policy.current()
    reports = []
    with transaction.atomic():
        for line in lines:
            reports.append(_decide(agent, line, current, dry_run=dry_run))
        if dry_run:
            transaction.set_rollback(True)
    return ImportReport(name=name, format=format, dry_run=dry_run, lines=reports)


def _decide(agent: Agent, line: ImportLine, current: Policy, *, dry_run: bool) -> LineReport:
    if line.memory is None:
        return LineReport(
            line=line.line,
            ref=line.ref,
            subject=line.subject,
            statement=line.statement,
            outcome=SKIPPED,
            reason=line.skipped,
        )
    result = write_memory(agent=agent, data=line.memory, in_force=current)
    memory = result.memory
    # A repeat names the memory it merges into, which a dry run's rollback leaves standing.
    kept = result.outcome == WriteDecision.Outcome.MERGED
    return LineReport(
        line=line.line,
        ref=line.ref,
        subject=line.subject,
        statement=line.statement,
        outcome=result.outcome,
        reason=result.reason,
        code=result.code,
        memory=str(memory.pk) if memory is not None and (kept or not dry_run) else None,
        memory_status=memory.status if memory is not None else None,
    )


def import_memory(
    *,
    subject: Subject,
    kind: str,
    statement: str,
    basis: str,
    source: SourceInput,
    written_at: datetime,
    expires_at: datetime | None,
    actor: Actor,
    key: str = "",
) -> Memory:
    """One memory as the older store had it.

    Unlike the gate, this keeps dates in the past: a memory already past its expiry
    arrives expired, so it is never served. Like the gate, it holds words unsafe to hand
    an assistant pending, for a person's review (``hold_for_text``).
    """
    now = timezone.now()
    expired = expires_at is not None and expires_at <= now
    hold = hold_for_text(statement)
    current = Policy.current()
    with transaction.atomic():
        memory = Memory(
            subject=subject,
            kind=kind,
            key=key,
            statement=statement,
            normalized=normalize_statement(statement),
            basis=basis,
            status=Memory.Status.EXPIRED
            if expired
            else Memory.Status.PENDING
            if hold
            else Memory.Status.ACTIVE,
            written_at=written_at,
            confirmed_at=None if hold else written_at,
            expires_at=expires_at,
            review_at=review_date_for(current, kind=kind, now=written_at),
            policy_version=current.version,
            status_changed_at=now if expired else None,
        )
        held = f" {hold.reason}" if hold else ""
        save_tracked(memory, actor=actor, reason=f"Imported with its original dates.{held}")
        add_source(
            data=source, agent=None, subject=subject, now=written_at, actor=actor, memory=memory
        )
        refresh_conflict(subject=subject, key=key, actor=actor)
    return memory
