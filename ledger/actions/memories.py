"""Writes to memories. ``write_memory`` is the write gate: every agent write goes through it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, transaction
from django.utils import timezone

from ledger import policy
from ledger.actions.reminders import clear_reminders
from ledger.actions.runs import start_run
from ledger.actions.tracking import save_tracked
from ledger.actors import Actor
from ledger.models import Agent, Conflict, Memory, Policy, Run, Source, Subject, WriteDecision


@dataclass(frozen=True)
class SourceInput:
    kind: str
    ref: str
    run: str | None = None
    turn: int | None = None
    excerpt: str = ""


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
            result = GateResult(
                outcome=WriteDecision.Outcome.REFUSED,
                reason=refusal.detail,
                code=refusal.code,
                status=refusal.status,
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
    subject = Subject(ref=ref)
    try:
        with transaction.atomic():
            save_tracked(subject, actor=actor, reason="First memory written about this subject.")
    except IntegrityError:
        # A concurrent write created it first: wait for that write, then decide after it.
        return Subject.objects.select_for_update().get(ref=ref)
    return subject


def _decide_and_write(
    *, actor: Actor, agent: Agent, data: MemoryInput, now: datetime
) -> GateResult:
    current = Policy.current()
    policy.refuse_system_of_record(current, data.key)
    subject = _lock_subject(data.subject, actor)
    policy.refuse_if_paused(subject.memory_paused)

    normalized = policy.normalize_statement(data.statement)
    duplicate = Memory.objects.for_subject(subject).live().filter(normalized=normalized).first()
    if duplicate is not None:
        return _merge_evidence(actor=actor, agent=agent, memory=duplicate, data=data, now=now)
    policy.refuse_over_cap(current, Memory.objects.for_subject(subject).live().count())

    expiry = policy.expiry_for(
        current,
        kind=data.kind,
        basis=data.basis,
        now=now,
        requested=data.expires_at,
        omitted=data.expires_omitted,
    )
    pending = policy.needs_corroboration(current, basis=data.basis, distinct_sources=1)
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
        agent=agent,
        run=_run_for(data.source.run, agent=agent, subject=subject),
    )
    if pending:
        reason = (
            f"Inferred from one source; the policy asks for "
            f"{current.inferred_sources_required} independent sources or a person's "
            f"confirmation before agents may use it."
        )
    else:
        reason = f"Accepted: {data.basis} {data.kind}."
    if expiry.capped:
        reason += " Expiry capped at the policy's longest life for an inferred memory."
    save_tracked(memory, actor=actor, reason=reason)
    _add_source(memory=memory, data=data.source, agent=agent, now=now, actor=actor)

    conflict = None if pending else refresh_conflict(subject=subject, key=data.key, actor=actor)
    if conflict is not None:
        return GateResult(
            outcome=WriteDecision.Outcome.CONFLICT,
            reason=reason + f" It disagrees with another memory in the slot '{data.key}'; "
            "both are kept and a conflict is open for a person to resolve.",
            memory=memory,
            conflict=conflict,
            expires_capped=expiry.capped,
        )
    return GateResult(
        outcome=WriteDecision.Outcome.PENDING if pending else WriteDecision.Outcome.ACCEPTED,
        reason=reason,
        memory=memory,
        expires_capped=expiry.capped,
    )


def _merge_evidence(
    *, actor: Actor, agent: Agent, memory: Memory, data: MemoryInput, now: datetime
) -> GateResult:
    """A write that repeats a live memory adds its source as evidence, not a new row."""
    _add_source(memory=memory, data=data.source, agent=agent, now=now, actor=actor)
    reason = "Same statement as a live memory: the source was added as evidence."
    distinct = memory.sources.values("kind", "ref").distinct().count()
    if memory.status == Memory.Status.PENDING and not policy.needs_corroboration(
        Policy.current(), basis=memory.basis, distinct_sources=distinct
    ):
        memory.status = Memory.Status.ACTIVE
        memory.confirmed_at = now
        memory.status_changed_at = now
        reason += f" Corroborated by {distinct} independent sources: now active."
        save_tracked(
            memory,
            actor=actor,
            reason=reason,
            update_fields=["status", "confirmed_at", "status_changed_at"],
            bump_version=True,
        )
        refresh_conflict(subject=memory.subject, key=memory.key, actor=actor)
    return GateResult(
        outcome=WriteDecision.Outcome.MERGED, reason=reason, memory=memory, status=200
    )


def _run_for(ref: str | None, *, agent: Agent | None, subject: Subject) -> Run | None:
    if not ref or agent is None:
        return None
    return start_run(ref=ref, agent=agent, subject=subject)


def _add_source(
    *, memory: Memory, data: SourceInput, agent: Agent | None, now: datetime, actor: Actor
) -> Source:
    return _add_source_row(
        data=data, agent=agent, subject=memory.subject, now=now, actor=actor, memory=memory
    )


def _add_source_row(
    *,
    data: SourceInput,
    agent: Agent | None,
    subject: Subject,
    now: datetime,
    actor: Actor,
    memory: Memory | None = None,
) -> Source:
    source = Source(
        kind=data.kind,
        ref=data.ref,
        run=_run_for(data.run, agent=agent, subject=subject),
        turn=data.turn,
        excerpt=data.excerpt,
        received_at=now,
        memory=memory,
    )
    save_tracked(
        source, actor=actor, reason="Evidence for a memory." if memory else "Source of an entry."
    )
    return source


def refresh_conflict(*, subject: Subject, key: str, actor: Actor) -> Conflict | None:
    """Open, extend or close the conflict for one slot to match what is active in it.

    Nothing here picks a winner: the conflict stays open until only one statement is
    left active in the slot, by a person's correction, retraction or confirmation.
    """
    if not key:
        return None
    active = list(Memory.objects.in_slot(subject, key).filter(status=Memory.Status.ACTIVE))
    disagree = len({m.normalized for m in active}) > 1
    conflict = Conflict.objects.open().filter(subject=subject, key=key).first()
    now = timezone.now()
    if disagree:
        if conflict is None:
            conflict = Conflict(subject=subject, key=key, opened_at=now)
            save_tracked(conflict, actor=actor, reason=f"Memories disagree in slot '{key}'.")
        conflict.memories.add(*active)
        return conflict
    if conflict is not None:
        conflict.status = Conflict.Status.RESOLVED
        conflict.resolved_at = now
        save_tracked(
            conflict,
            actor=actor,
            reason="Only one statement is left active in the slot.",
            update_fields=["status", "resolved_at"],
        )
    return None


def _lock_slot(memory: Memory) -> Memory:
    """Lock the memory's subject, then the memory, and return the memory as it is now.

    Every write that touches a slot takes the subject row first, as the write gate does, so
    two writes about one subject queue up instead of deadlocking.
    """
    Subject.objects.select_for_update().filter(pk=memory.subject_id).first()
    return Memory.objects.select_for_update().select_related("subject").get(pk=memory.pk)


def _refuse_unless(memory: Memory, allowed: tuple[str, ...], code: str, verb: str) -> None:
    if memory.status not in allowed:
        raise policy.Refusal(code, f"A {memory.status} memory cannot be {verb}.", status=409)


CORRECTABLE = (*Memory.LIVE, Memory.Status.EXPIRED)


def correct_memory(
    *,
    memory: Memory,
    actor: Actor,
    statement: str,
    reason: str,
    source: SourceInput | None = None,
) -> Memory:
    """A new memory supersedes the old one, which keeps its text for audit.

    A correction by a person (or by the system on their behalf) is a statement. An agent's
    correction is a write like any other: refused while memory is paused, stated only when
    its source is the person's own message, and a guess stays pending until corroborated.
    """
    now = timezone.now()
    with transaction.atomic():
        old = _lock_slot(memory)
        _refuse_unless(old, CORRECTABLE, "not_correctable", "corrected")
        by_agent = actor.agent is not None
        current = Policy.current()
        source = source or SourceInput(kind=Source.Kind.OPERATOR, ref=f"correction:{old.pk}")
        if by_agent:
            policy.refuse_if_paused(old.subject.memory_paused)
            said_by_person = source.kind == Source.Kind.USER_MESSAGE
            basis = Memory.Basis.STATED if said_by_person else Memory.Basis.INFERRED
        else:
            basis = Memory.Basis.STATED
        pending = by_agent and policy.needs_corroboration(current, basis=basis, distinct_sources=1)
        keeps_no_expiry = old.expires_at is None and basis == Memory.Basis.STATED
        new = Memory(
            subject=old.subject,
            kind=old.kind,
            key=old.key,
            statement=statement,
            normalized=policy.normalize_statement(statement),
            basis=basis,
            stated_by="" if by_agent else "correction",
            status=Memory.Status.PENDING if pending else Memory.Status.ACTIVE,
            written_at=now,
            confirmed_at=None if pending else now,
            expires_at=None
            if keeps_no_expiry
            else policy.expiry_for(
                current, kind=old.kind, basis=basis, now=now, requested=None, omitted=True
            ).expires_at,
            review_at=policy.review_date_for(current, kind=old.kind, now=now),
            supersedes=old,
            agent=actor.agent,
            run=old.run,
        )
        old.status = Memory.Status.SUPERSEDED
        old.status_changed_at = now
        save_tracked(
            old,
            actor=actor,
            reason=f"Corrected: {reason}",
            update_fields=["status", "status_changed_at"],
            bump_version=True,
        )
        save_tracked(new, actor=actor, reason=f"Correction of an earlier memory: {reason}")
        _add_source(memory=new, data=source, agent=actor.agent or old.agent, now=now, actor=actor)
        refresh_conflict(subject=new.subject, key=new.key, actor=actor)
        clear_reminders(memory=old, now=now)
    memory.refresh_from_db()
    return new


def set_status(
    *,
    memory: Memory,
    actor: Actor,
    status: str,
    reason: str,
    allowed_from: tuple[str, ...] = CORRECTABLE,
    refusal: tuple[str, str] = ("not_changeable", "changed"),
) -> Memory:
    """Move one memory to ``status`` and keep the slot honest.

    ``allowed_from`` is checked on the locked row, so a concurrent change is never undone;
    ``refusal`` is the code and past participle used when it does not allow the move.
    """
    now = timezone.now()
    with transaction.atomic():
        locked = _lock_slot(memory)
        _refuse_unless(locked, allowed_from, *refusal)
        locked.status = status
        locked.status_changed_at = now
        save_tracked(
            locked,
            actor=actor,
            reason=reason,
            update_fields=["status", "status_changed_at"],
            bump_version=True,
        )
        refresh_conflict(subject=locked.subject, key=locked.key, actor=actor)
    return locked


def retract_memory(*, memory: Memory, actor: Actor, reason: str) -> Memory:
    with transaction.atomic():
        retracted = set_status(
            memory=memory,
            actor=actor,
            status=Memory.Status.RETRACTED,
            reason=reason,
            allowed_from=CORRECTABLE,
            refusal=("not_retractable", "retracted"),
        )
        clear_reminders(memory=retracted)
    return retracted


def confirm_memory(*, memory: Memory, actor: Actor, reason: str = "") -> Memory:
    """A person says a guess is right: it becomes active and stated, by confirmation."""
    now = timezone.now()
    with transaction.atomic():
        locked = _lock_slot(memory)
        if locked.status not in Memory.LIVE:
            raise policy.Refusal(
                "not_confirmable", f"A {locked.status} memory cannot be confirmed.", status=409
            )
        current = Policy.current()
        if locked.basis == Memory.Basis.INFERRED:
            locked.basis = Memory.Basis.STATED
            locked.stated_by = "confirmation"
            # Confirmed, it is no longer a guess: it lives as long as what the person says.
            locked.expires_at = policy.expiry_for(
                current,
                kind=locked.kind,
                basis=locked.basis,
                now=now,
                requested=None,
                omitted=True,
            ).expires_at
        locked.status = Memory.Status.ACTIVE
        locked.confirmed_at = now
        locked.status_changed_at = now
        locked.review_at = policy.review_date_for(current, kind=locked.kind, now=now)
        save_tracked(
            locked,
            actor=actor,
            reason=reason or "Confirmed by a person.",
            update_fields=[
                "basis",
                "stated_by",
                "expires_at",
                "status",
                "confirmed_at",
                "status_changed_at",
                "review_at",
            ],
            bump_version=True,
        )
        refresh_conflict(subject=locked.subject, key=locked.key, actor=actor)
        clear_reminders(memory=locked, now=now)
    return locked


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
    """Bring in a memory from an older store with its original dates.

    Unlike the gate, this keeps dates in the past: a memory already past its expiry
    arrives expired, so it is never served.
    """
    now = timezone.now()
    expired = expires_at is not None and expires_at <= now
    with transaction.atomic():
        memory = Memory(
            subject=subject,
            kind=kind,
            key=key,
            statement=statement,
            normalized=policy.normalize_statement(statement),
            basis=basis,
            status=Memory.Status.EXPIRED if expired else Memory.Status.ACTIVE,
            written_at=written_at,
            confirmed_at=written_at,
            expires_at=expires_at,
            review_at=policy.review_date_for(Policy.current(), kind=kind, now=written_at),
            status_changed_at=now if expired else None,
        )
        save_tracked(memory, actor=actor, reason="Imported with its original dates.")
        _add_source(memory=memory, data=source, agent=None, now=written_at, actor=actor)
        refresh_conflict(subject=subject, key=key, actor=actor)
    return memory


def renew_memory(
    *, memory: Memory, actor: Actor, expires_at: datetime | None, reason: str
) -> Memory:
    """A person gives a memory a new life: a new expiry, recorded with who and why.

    ``None`` makes it permanent, which only a stated memory may be.
    """
    now = timezone.now()
    if expires_at is not None and expires_at <= now:
        raise policy.Refusal("expiry_in_past", "The new expiry must lie in the future.", 400)
    with transaction.atomic():
        locked = _lock_slot(memory)
        if locked.status not in (*Memory.LIVE, Memory.Status.EXPIRED):
            raise policy.Refusal(
                "not_renewable", f"A {locked.status} memory cannot be renewed.", status=409
            )
        if expires_at is None and locked.basis == Memory.Basis.INFERRED:
            raise policy.Refusal(
                "inferred_needs_expiry", "A guess cannot be made permanent; confirm it first.", 400
            )
        if locked.status == Memory.Status.EXPIRED:
            locked.status = Memory.Status.ACTIVE
            locked.status_changed_at = now
        # A guess keeps the policy's longest life for a guess, whoever renews it.
        expires_at = policy.expiry_for(
            Policy.current(),
            kind=locked.kind,
            basis=locked.basis,
            now=now,
            requested=expires_at,
            omitted=False,
        ).expires_at
        locked.expires_at = expires_at
        locked.review_at = policy.review_date_for(Policy.current(), kind=locked.kind, now=now)
        save_tracked(
            locked,
            actor=actor,
            reason=f"Renewed: {reason}" if reason else "Renewed.",
            update_fields=["status", "status_changed_at", "expires_at", "review_at"],
            bump_version=True,
        )
        refresh_conflict(subject=locked.subject, key=locked.key, actor=actor)
        clear_reminders(memory=locked, now=now)
    return locked


def restore_memory(*, memory: Memory, actor: Actor, within_seconds: int) -> Memory:
    """Undo a retraction: put back the status the memory had, if the undo is still offered.

    Only the one who deleted it may undo, and only for ``within_seconds`` after: later, a
    deletion is final (agents may already have acted on its absence).
    """
    now = timezone.now()
    with transaction.atomic():
        locked = _lock_slot(memory)
        rows = list(locked.history.order_by("-history_date", "-history_id")[:2])
        if locked.status != Memory.Status.RETRACTED or len(rows) < 2:
            raise policy.Refusal("not_undoable", "This memory is not deleted.", status=409)
        if rows[0].history_actor != actor.label:
            raise policy.Refusal(
                "not_undoable", "Only the person who deleted it can undo that.", status=409
            )
        deleted_at = locked.status_changed_at or rows[0].history_date
        if (now - deleted_at).total_seconds() > within_seconds:
            raise policy.Refusal(
                "undo_expired",
                f"Too late to undo: a deletion can only be undone for {within_seconds} "
                "seconds. The memory stays deleted.",
                status=409,
            )
        return set_status(
            memory=locked,
            actor=actor,
            status=rows[1].status,
            reason="Deletion undone by the same person.",
            allowed_from=(Memory.Status.RETRACTED,),
            refusal=("not_undoable", "restored"),
        )


def resolve_conflict(
    *, conflict: Conflict, actor: Actor, keep: Memory | None, statement: str | None
) -> Memory:
    """A person settles a conflict: keep one statement, or rewrite it; the others go.

    With ``statement`` the kept memory (``keep``, or the newest contender) is corrected to
    it; every other contender is retracted. Returns the memory left standing.
    """
    statement = (statement or "").strip() or None
    if keep is None and statement is None:
        raise policy.Refusal(
            "choice_required", "Pick the statement to keep, or write the right one.", 400
        )
    with transaction.atomic():
        Subject.objects.select_for_update().filter(pk=conflict.subject_id).first()
        locked = Conflict.objects.select_for_update().get(pk=conflict.pk)
        if locked.status != Conflict.Status.OPEN:
            raise policy.Refusal("conflict_resolved", "This conflict is already resolved.", 409)
        contenders = list(locked.memories.filter(status=Memory.Status.ACTIVE))
        if not contenders:
            raise policy.Refusal("conflict_resolved", "This conflict is already resolved.", 409)
        if keep is None:
            keep = contenders[0]
        if keep.pk not in {m.pk for m in contenders}:
            raise policy.Refusal(
                "not_a_contender", "That statement is not part of this conflict.", 400
            )
        by_owner = actor.user is not None and locked.subject.owner_id == actor.user.pk
        resolved = "Conflict resolved by the person." if by_owner else "Conflict resolved by staff."
        for other in contenders:
            if other.pk != keep.pk:
                retract_memory(memory=other, actor=actor, reason=resolved)
        if statement is not None and policy.normalize_statement(statement) != keep.normalized:
            keep = correct_memory(memory=keep, actor=actor, statement=statement, reason=resolved)
        else:
            # Keeping one as it is: the slot now holds one statement, so the conflict closes.
            refresh_conflict(subject=locked.subject, key=locked.key, actor=actor)
    return keep
