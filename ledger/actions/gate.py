"""The write gate: every memory an agent writes is decided here, and the decision recorded.

``write_memory`` refuses what the policy refuses (an agent whose writes an admin paused,
a system-of-record key, a paused subject, a full subject), merges a repeat into the
memory it repeats as evidence, holds a single-source guess as pending, holds whatever a
quarantined agent writes (and a statement from an agent not trusted for them) as pending,
as it holds any statement unsafe to hand an assistant (``ledger.poison``), and opens a
conflict when a slot's statements disagree. Every outcome, refusals included, leaves one
``WriteDecision`` saying why, naming the admin's restriction when one applied.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from ledger import policy
from ledger.actions._tracking import save_tracked
from ledger.actions.slots import (
    open_possible_conflicts,
    possible_conflicts_note,
    refresh_conflict,
)
from ledger.actions.sources import SourceInput, add_source, run_for
from ledger.actions.subjects import create_subject
from ledger.actors import Actor
from ledger.models import Agent, Conflict, Memory, Policy, Subject, WriteDecision


@dataclass(frozen=True)
class MemoryInput:
    subject: str
    kind: str
    statement: str
    basis: str
    source: SourceInput
    key: str = ""
    expires_at: datetime | None = None
    # True when the request said nothing about expiry: the policy's default applies.
    expires_omitted: bool = True
    permanent: bool = False


@dataclass(frozen=True)
class GateResult:
    outcome: str
    reason: str
    memory: Memory | None = None
    conflict: Conflict | None = None
    expires_capped: bool = False
    code: str = ""
    status: int = 201
    # The admin's restriction on the agent that decided this outcome, and their reason.
    restriction: policy.Restriction | None = None
    restricted_because: str = ""

    @property
    def refused(self) -> bool:
        return self.outcome == WriteDecision.Outcome.REFUSED


def write_memory(*, agent: Agent, data: MemoryInput) -> GateResult:
    """Decide one agent write, apply it, and record the decision with its reason."""
    actor = Actor.for_agent(agent)
    now = timezone.now()
    with transaction.atomic():
        try:
            # A savepoint: a refusal undoes whatever the decision had written so far.
            with transaction.atomic():
                result = _decide_and_write(actor=actor, agent=agent, data=data, now=now)
        except policy.Refusal as refusal:
            restricted = refusal if isinstance(refusal, policy.RestrictedRefusal) else None
            result = GateResult(
                outcome=WriteDecision.Outcome.REFUSED,
                reason=refusal.detail,
                code=refusal.code,
                status=refusal.status,
                restriction=restricted.restriction if restricted else None,
                restricted_because=restricted.because if restricted else "",
            )
        WriteDecision.objects.create(
            agent=agent,
            subject=(
                result.memory.subject
                if result.memory
                else Subject.objects.filter(ref=data.subject).first()
            ),
            memory=result.memory,
            source=result.memory.sources.last() if result.memory else None,
            outcome=result.outcome,
            code=result.code,
            reason=result.reason,
            decided_at=now,
        )
    return result


def _lock_subject(ref: str, actor: Actor) -> Subject:
    """The subject row, created on first write and locked, so that writes about one
    subject are decided one at a time."""
    subject = Subject.objects.select_for_update().filter(ref=ref).first()
    if subject is not None:
        return subject
    try:
        with transaction.atomic():
            return create_subject(
                ref=ref, actor=actor, reason="First memory written about this subject."
            )
    except IntegrityError:
        # A concurrent write created it first: wait for that write, then decide after it.
        return Subject.objects.select_for_update().get(ref=ref)


def _decide_and_write(
    *, actor: Actor, agent: Agent, data: MemoryInput, now: datetime
) -> GateResult:
    policy.refuse_paused_agent(agent)
    current = Policy.current()
    policy.refuse_system_of_record(current, data.key)
    subject = _lock_subject(data.subject, actor)
    policy.refuse_if_paused(subject.memory_paused)

    normalized = policy.normalize_statement(data.statement)
    hold = policy.hold_for(
        agent, basis=data.basis, source_kind=data.source.kind, statement=data.statement
    )
    duplicate = (
        Memory.objects.for_subject(subject)
        .live()
        .filter(normalized=normalized)
        .select_related("agent")
        .first()
    )
    if duplicate is not None:
        return _merge_evidence(
            actor=actor, agent=agent, memory=duplicate, data=data, now=now, hold=hold
        )
    policy.refuse_over_cap(current, Memory.objects.for_subject(subject).live().count())

    expiry = policy.expiry_for(
        current,
        kind=data.kind,
        basis=data.basis,
        now=now,
        requested=data.expires_at,
        omitted=data.expires_omitted,
    )
    pending = hold is not None or policy.needs_corroboration(current, basis=data.basis, agents=1)
    memory = Memory(
        subject=subject,
        kind=data.kind,
        key=data.key,
        statement=data.statement,
        normalized=normalized,
        basis=data.basis,
        status=Memory.Status.PENDING if pending else Memory.Status.ACTIVE,
        written_at=now,
        confirmed_at=None if pending else now,
        expires_at=expiry.expires_at,
        review_at=policy.review_date_for(current, kind=data.kind, now=now),
        policy_version=current.version,
        agent=agent,
        run=run_for(data.source.run, agent=agent, subject=subject),
    )
    if hold is not None:
        reason = hold.reason
    elif pending:
        reason = (
            f"Inferred by one agent; the policy asks for "
            f"{current.inferred_sources_required} different agents or a person's "
            f"confirmation before agents may use it."
        )
    else:
        # In words, not enum values: people read this reason on the memory's history page.
        reason = f"Accepted: {Memory.Basis(data.basis).label} {Memory.Kind(data.kind).label}."
    if expiry.capped:
        reason += " Expiry capped at the policy's longest life for an inferred memory."
    save_tracked(memory, actor=actor, reason=reason)
    add_source(data=data.source, agent=agent, subject=subject, now=now, actor=actor, memory=memory)

    conflict = None if pending else refresh_conflict(subject=subject, key=data.key, actor=actor)
    possible = open_possible_conflicts(memory=memory, actor=actor, now=now)
    reason += possible_conflicts_note(possible)
    if conflict is not None:
        return GateResult(
            outcome=WriteDecision.Outcome.CONFLICT,
            reason=reason + f" It disagrees with another memory in the slot '{data.key}'; "
            "both are kept and a conflict is open for a person to resolve.",
            memory=memory,
            conflict=conflict,
            expires_capped=expiry.capped,
        )
    accepted = WriteDecision.Outcome.CONFLICT if possible else WriteDecision.Outcome.ACCEPTED
    return GateResult(
        outcome=WriteDecision.Outcome.PENDING if pending else accepted,
        reason=reason,
        memory=memory,
        conflict=possible[0] if possible else None,
        expires_capped=expiry.capped,
        **_held(hold),
    )


def _held(hold: policy.Hold | None) -> dict[str, Any]:
    """What a result says of what held a write pending: an admin's restriction, or its text."""
    if hold is None:
        return {}
    return {
        "code": hold.code,
        "restriction": hold.restriction,
        "restricted_because": hold.because,
    }


def _merge_evidence(
    *,
    actor: Actor,
    agent: Agent,
    memory: Memory,
    data: MemoryInput,
    now: datetime,
    hold: policy.Hold | None,
) -> GateResult:
    """A write that repeats a live memory adds its source as evidence, not a new row.

    A held write (``hold``) never makes a pending memory active, nor does anyone's repeat of
    what a quarantined agent wrote: only a person's confirmation does.
    """
    add_source(
        data=data.source, agent=agent, subject=memory.subject, now=now, actor=actor, memory=memory
    )
    reason = "Same statement as a live memory: the source was added as evidence."
    if memory.status == Memory.Status.PENDING:
        hold = hold or policy.hold_for_repeat(writer=memory.agent, statement=memory.statement)
        if hold is not None:
            return GateResult(
                outcome=WriteDecision.Outcome.MERGED,
                reason=f"{reason} It stays pending. {hold.reason}",
                memory=memory,
                status=200,
                **_held(hold),
            )
    # Independent means from different agents: one agent's repeats, however many messages
    # or tools they cite, are one agent's word.
    agents = memory.sources.agent_count()
    current = Policy.current()
    if memory.status == Memory.Status.PENDING and policy.repeat_activates(
        current, basis=memory.basis, agents=agents
    ):
        memory.status = Memory.Status.ACTIVE
        memory.confirmed_at = now
        memory.status_changed_at = now
        reason += f" Corroborated by {agents} agents: now active."
        save_tracked(
            memory,
            actor=actor,
            reason=reason,
            update_fields=["status", "confirmed_at", "status_changed_at"],
            bump_version=True,
        )
        refresh_conflict(subject=memory.subject, key=memory.key, actor=actor)
    elif memory.status == Memory.Status.PENDING and memory.basis == Memory.Basis.STATED:
        reason += f" {policy.HELD_STATEMENT_WAITS}"
    elif memory.status == Memory.Status.PENDING:
        written = "1 agent has" if agents == 1 else f"{agents} agents have"
        reason += (
            f" It stays pending: {written} written it, and the policy asks for "
            f"{current.inferred_sources_required} different agents or a person's confirmation."
        )
    return GateResult(
        outcome=WriteDecision.Outcome.MERGED, reason=reason, memory=memory, status=200
    )
