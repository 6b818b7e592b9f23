"""The write gate: every memory an agent writes is decided here, and the decision recorded.

``write_memory`` refuses what the policy refuses (an agent whose writes an admin paused,
a system-of-record key, a paused subject, a full subject), merges a repeat into the
memory it repeats as evidence, holds a single-source guess as pending, holds whatever a
quarantined agent writes (and a statement from an agent not trusted for them) as pending,
as it holds any statement unsafe to hand an assistant (``ledger.rules.poison``), and opens a
conflict when a slot's statements disagree. Every outcome, refusals included, leaves one
``WriteDecision`` saying why, naming the admin's restriction when one applied.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from django.db import IntegrityError, transaction
from django.db.models import (
    CharField,
    Count,
    Exists,
    F,
    JSONField,
    QuerySet,
    Subquery,
    UUIDField,
    Value,
)
from django.db.models.functions import Cast, Coalesce, JSONObject
from django.utils import timezone
from opentelemetry import trace

from ledger.actions._tracking import save_tracked
from ledger.actions.lifecycle import announce_change
from ledger.actions.slots import (
    CANDIDATE_SIDES,
    Candidate,
    open_possible_conflicts,
    possible_conflict_candidates,
    possible_conflicts_note,
    refresh_conflict,
    settle_slot,
)
from ledger.actions.sources import SourceInput, add_source, run_for
from ledger.actions.subjects import create_subject
from ledger.actions.webhooks import emit_memories
from ledger.actors import Actor
from ledger.metrics import HELD_WRITES, WRITE_DECISIONS
from ledger.models import (
    Agent,
    Conflict,
    Memory,
    Policy,
    Run,
    Source,
    Subject,
    WebhookEndpoint,
    WriteDecision,
)
from ledger.rules import poison, webhooks
from ledger.rules.agents import RestrictedRefusal, Restriction
from ledger.rules.gate import (
    HELD_STATEMENT_WAITS,
    expiry_for,
    needs_corroboration,
    refuse_if_paused,
    refuse_over_cap,
    refuse_system_of_record,
    repeat_activates,
    review_date_for,
)
from ledger.rules.holds import (
    HELD_FOR_REVIEW,
    Hold,
    hold_for,
    hold_for_repeat,
    refuse_paused_agent,
)
from ledger.rules.memories import MemoryMove
from ledger.rules.refusals import Refusal
from ledger.rules.text import normalize_statement


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
    restriction: Restriction | None = None
    restricted_because: str = ""
    # The subject the write named, when it exists; the source this write stored.
    subject: Subject | None = None
    source: Source | None = None
    # For a memory this write created: every conflict it is in, all opened or joined just
    # now, so that what was written can be shown without reading it back. None otherwise.
    conflicts: tuple[Conflict, ...] | None = None

    @property
    def refused(self) -> bool:
        return self.outcome == WriteDecision.Outcome.REFUSED


# Spans name who wrote about whom and what the gate decided, never the statement
# (docs/logs-and-traces.md).
tracer = trace.get_tracer(__name__)


@tracer.start_as_current_span("memoryadmin.write")
def write_memory(*, agent: Agent, data: MemoryInput, in_force: Policy | None = None) -> GateResult:
    """Decide one agent write, apply it, and record the decision with its reason.

    ``in_force``: the policy, when the caller has read it already (an API request reads it
    with its key, ``ledger.api.auth.policy_of``); else it is read here."""
    span = trace.get_current_span()
    span.set_attributes(
        {"memoryadmin.agent": agent.name, "memoryadmin.subject": data.subject}
        | ({"memoryadmin.run": data.source.run} if data.source.run else {})
    )
    actor = Actor.for_agent(agent)
    now = timezone.now()
    current = in_force or Policy.current()
    try:
        refuse_paused_agent(agent)
        refuse_system_of_record(current, data.key)
        with transaction.atomic():
            result = _decide_and_write(
                actor=actor, agent=agent, data=data, now=now, current=current
            )
            _record(agent, result, now, run_id=result.source.run_id if result.source else None)
            _count(result, data.statement)
    except Refusal as refusal:
        # The refusal's transaction took whatever the decision had written so far with it
        # (a subject created by this write, say): the decision is recorded on its own.
        restricted = refusal if isinstance(refusal, RestrictedRefusal) else None
        result = GateResult(
            outcome=WriteDecision.Outcome.REFUSED,
            reason=refusal.detail,
            code=refusal.code,
            status=refusal.status,
            restriction=restricted.restriction if restricted else None,
            restricted_because=restricted.because if restricted else "",
            subject=Subject.objects.filter(ref=data.subject).first(),
        )
        # The run the write named, if it exists, read within the decision's own insert.
        named = Run.objects.filter(ref=data.source.run, agent=agent).values("pk")[:1]
        _record(agent, result, now, run_id=Subquery(named) if data.source.run else None)
        _count(result, data.statement)
    span.set_attribute("memoryadmin.outcome", result.outcome)
    return result


def _record(
    agent: Agent, result: GateResult, now: datetime, *, run_id: int | Subquery | None
) -> None:
    WriteDecision.objects.create(
        agent=agent,
        subject=result.subject,
        memory=result.memory,
        source=result.source,
        run_id=run_id,
        outcome=result.outcome,
        code=result.code,
        reason=result.reason,
        decided_at=now,
    )


def _count(result: GateResult, statement: str) -> None:
    """Count the decision for /metrics once it is committed: a write rolled back with the
    transaction around it was never decided. A write held for its text is counted again,
    by what was found in it."""
    decision, reason = str(result.outcome), result.code or "none"
    held = None
    if result.code == HELD_FOR_REVIEW:
        found = poison.finding(statement)
        held = str(found.category) if found else "other"

    def count() -> None:
        WRITE_DECISIONS.labels(decision=decision, reason=reason).inc()
        if held is not None:
            HELD_WRITES.labels(reason=held).inc()

    transaction.on_commit(count)


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


_SUBJECT, _RUN, _SLOT = "subject", "run", "slot"


@dataclass(frozen=True)
class _Holdings:
    """What the subject already holds that decides a write, read in one query."""

    live: int
    # The live memory that says the same, which a repeat merges into.
    same: UUID | None
    # The run the source names, if it exists.
    run: Run | None
    # The id and normalized statement of each active memory in the write's slot, and the
    # slot's open conflict.
    slot: list[tuple[Any, str]]
    open_conflict: int | None
    candidates: list[Candidate]
    # Whether any webhook endpoint is active: if not, the write files no event, at no cost.
    listening: bool


def _holdings(subject: Subject, *, data: MemoryInput, normalized: str, now: datetime) -> _Holdings:
    """One round trip, read under the subject's lock (so after every earlier write about
    the subject has committed): a row for the subject with the counts and ids the decision
    needs, the run the source names, the slot's active memories, then the statements the
    new words may contradict (``possible_conflict_candidates``)."""
    live = Memory.objects.for_subject(subject).live()
    facts: dict[str, Any] = {
        "live": Coalesce(
            Subquery(live.order_by().values("subject").annotate(n=Count("pk")).values("n")), 0
        ),
        "same": Subquery(live.filter(normalized=normalized).values("pk")[:1]),
        "hooks": Exists(WebhookEndpoint.objects.filter(active=True)),
    }
    if data.key:
        slot = Conflict.objects.open().filter(subject=subject, key=data.key)
        facts["conflict"] = Subquery(slot.values("pk")[:1])
    parts = [_facts_row(Subject.objects.filter(pk=subject.pk), _SUBJECT, JSONObject(**facts))]
    if data.source.run:
        named = JSONObject(id="id", agent="agent_id", subject="subject_id")
        parts.append(_facts_row(Run.objects.filter(ref=data.source.run), _RUN, named))
    none = Value(None, output_field=JSONField())
    if data.key:
        active = Memory.objects.in_slot(subject, data.key).filter(status=Memory.Status.ACTIVE)
        parts.append(
            active.annotate(
                text=F("normalized"), side=Value(_SLOT, output_field=CharField()), facts=none
            )
            .order_by()
            .values_list("id", "text", "side", "facts")
        )
    parts += [
        part.annotate(facts=none).values_list("id", "text", "side", "facts")
        for part in possible_conflict_candidates(
            subject=subject, statement=data.statement, key=data.key, now=now
        )
    ]
    rows = list(parts[0].union(*parts[1:], all=True).order_by())
    facts_of = {side: facts for _pk, _text, side, facts in rows if side in (_SUBJECT, _RUN)}
    found, run = facts_of[_SUBJECT], facts_of.get(_RUN)
    return _Holdings(
        live=found["live"],
        same=UUID(found["same"]) if found["same"] else None,
        # Only what the write needs of it: its history, should it learn its subject, reads
        # the rest then.
        run=Run.from_db(
            subject._state.db,
            ["id", "ref", "agent_id", "subject_id"],
            [run["id"], data.source.run, run["agent"], run["subject"]],
        )
        if run
        else None,
        slot=[(pk, text) for pk, text, side, _facts in rows if side == _SLOT],
        open_conflict=found.get("conflict"),
        candidates=[(pk, text, side) for pk, text, side, _facts in rows if side in CANDIDATE_SIDES],
        listening=bool(found["hooks"]),
    )


def _facts_row(rows: QuerySet[Any], side: str, facts: JSONObject) -> QuerySet[Any]:
    """``rows`` as rows of the holdings' union that carry ``facts`` and no statement."""
    # A typed NULL: PostgreSQL gives two untyped ones at the head of a union the type text.
    no_id = Cast(Value(None), output_field=UUIDField())
    annotated: QuerySet[Any] = rows.annotate(
        row=no_id,
        text=Value("", output_field=CharField()),
        side=Value(side, output_field=CharField()),
        facts=facts,
    )
    return annotated.order_by().values_list("row", "text", "side", "facts")


def _decide_and_write(
    *, actor: Actor, agent: Agent, data: MemoryInput, now: datetime, current: Policy
) -> GateResult:
    subject = _lock_subject(data.subject, actor)
    refuse_if_paused(subject.memory_paused)

    normalized = normalize_statement(data.statement)
    hold = hold_for(agent, basis=data.basis, source_kind=data.source.kind, statement=data.statement)
    held = _holdings(subject, data=data, normalized=normalized, now=now)
    run = run_for(data.source.run, agent=agent, subject=subject, known=held.run)
    if held.same is not None:
        duplicate = Memory.objects.select_related("agent").get(pk=held.same)
        duplicate.subject = subject
        return _merge_evidence(
            actor=actor,
            agent=agent,
            memory=duplicate,
            data=data,
            now=now,
            hold=hold,
            current=current,
            run=run,
            listening=held.listening,
        )
    refuse_over_cap(current, held.live)

    expiry = expiry_for(
        current,
        kind=data.kind,
        basis=data.basis,
        now=now,
        requested=data.expires_at,
        omitted=data.expires_omitted,
    )
    pending = hold is not None or needs_corroboration(current, basis=data.basis, agents=1)
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
        review_at=review_date_for(current, kind=data.kind, now=now),
        policy_version=current.version,
        agent=agent,
        run=run,
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
    source = add_source(
        data=data.source,
        agent=agent,
        subject=subject,
        now=now,
        actor=actor,
        memory=memory,
        run=run,
    )

    # A new memory takes nothing out of use, so no possible conflict loses a side: only its
    # slot is settled anew, from what was read before it was written.
    conflict = None
    if not pending and data.key:
        conflict = settle_slot(
            subject=subject,
            key=data.key,
            active=[*held.slot, (memory.pk, normalized)],
            conflict=Conflict.objects.get(pk=held.open_conflict) if held.open_conflict else None,
            actor=actor,
            listening=held.listening,
        )
    possible = open_possible_conflicts(
        memory=memory, actor=actor, now=now, candidates=held.candidates, listening=held.listening
    )
    reason += possible_conflicts_note(possible)
    written: dict[str, Any] = {
        "memory": memory,
        "expires_capped": expiry.capped,
        "subject": subject,
        "source": source,
        "conflicts": (*([conflict] if conflict else []), *possible),
    }
    if conflict is not None:
        result = GateResult(
            outcome=WriteDecision.Outcome.CONFLICT,
            reason=reason + f" It disagrees with another memory in the slot '{data.key}'; "
            "both are kept and a conflict is open for a person to resolve.",
            conflict=conflict,
            **written,
        )
    else:
        accepted = WriteDecision.Outcome.CONFLICT if possible else WriteDecision.Outcome.ACCEPTED
        result = GateResult(
            outcome=WriteDecision.Outcome.PENDING if pending else accepted,
            reason=reason,
            conflict=possible[0] if possible else None,
            **written,
            **_held(hold),
        )
    emit_memories(
        webhooks.Event.MEMORY_WRITTEN,
        [memory.pk],
        extra={"outcome": result.outcome},
        listening=held.listening,
    )
    return result


def _held(hold: Hold | None) -> dict[str, Any]:
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
    hold: Hold | None,
    current: Policy,
    run: Run | None,
    listening: bool,
) -> GateResult:
    """A write that repeats a live memory adds its source as evidence, not a new row.

    A held write (``hold``) never makes a pending memory active, nor does anyone's repeat of
    what a quarantined agent wrote: only a person's confirmation does.
    """
    source = add_source(
        data=data.source,
        agent=agent,
        subject=memory.subject,
        now=now,
        actor=actor,
        memory=memory,
        run=run,
    )
    reason = "Same statement as a live memory: the source was added as evidence."
    merged: dict[str, Any] = {
        "memory": memory,
        "status": 200,
        "subject": memory.subject,
        "source": source,
    }
    if memory.status == Memory.Status.PENDING:
        hold = hold or hold_for_repeat(writer=memory.agent, statement=memory.statement)
        if hold is not None:
            return GateResult(
                outcome=WriteDecision.Outcome.MERGED,
                reason=f"{reason} It stays pending. {hold.reason}",
                **merged,
                **_held(hold),
            )
    # Independent means from different agents: one agent's repeats, however many messages
    # or tools they cite, are one agent's word.
    agents = memory.sources.agent_count()
    if memory.status == Memory.Status.PENDING and repeat_activates(
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
        # Confirmed by agents, not a person: the payload's basis stays inferred.
        announce_change(MemoryMove.CONFIRM, [memory.pk], listening=listening)
    elif memory.status == Memory.Status.PENDING and memory.basis == Memory.Basis.STATED:
        reason += f" {HELD_STATEMENT_WAITS}"
    elif memory.status == Memory.Status.PENDING:
        written = "1 agent has" if agents == 1 else f"{agents} agents have"
        reason += (
            f" It stays pending: {written} written it, and the policy asks for "
            f"{current.inferred_sources_required} different agents or a person's confirmation."
        )
    return GateResult(outcome=WriteDecision.Outcome.MERGED, reason=reason, **merged)
