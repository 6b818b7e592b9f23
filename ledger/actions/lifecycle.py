"""A memory's life after the gate: corrected, deleted, confirmed, renewed, withheld, restored.

Each move is checked against ``MEMORY_MOVES`` on the locked row, so a concurrent
change is never undone, and each keeps its slot's conflict in step.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from ledger import access
from ledger.actions._ownership import refuse_unless_own
from ledger.actions._reasons import refuse_missing_reason
from ledger.actions._tracking import save_tracked
from ledger.actions.reminders import clear_reminders, reopen_reminders
from ledger.actions.slots import (
    lock_slot,
    open_possible_conflicts,
    refresh_conflict,
    reopen_conflicts,
)
from ledger.actions.sources import SourceInput, add_source
from ledger.actions.webhooks import emit_memories
from ledger.actors import Actor
from ledger.choices import CORRECTIONS, StatedBy
from ledger.models import Memory, Policy, Source
from ledger.rules import webhooks
from ledger.rules.gate import (
    expiry_for,
    needs_corroboration,
    refuse_if_paused,
    review_date_for,
    successor_expiry,
)
from ledger.rules.holds import (
    held_for_review,
    hold_for,
    hold_for_text,
    refuse_confirming_own_held_words,
    refuse_unheld_change,
)
from ledger.rules.memories import (
    MemoryMove,
    refuse_memory_move,
    refuse_past_expiry,
    refuse_permanent_guess,
    undo_refusal,
)
from ledger.rules.refusals import Refusal
from ledger.rules.text import normalize_statement
from ledger.words import CORRECTED, CORRECTION_OF, CORRECTION_REF

# A correction to words another live memory already says: the start of the reasons kept in
# the corrected memory's history (before the other memory's id) and in the other's.
MERGED_INTO = "The corrected words are already those of another live memory (id "
CORRECTION_SAID_SO = "A correction of another memory said the same: "
WITHHELD_CARRIED = (
    "The person does not want the assistant to use the memory corrected into these words, "
    "so it is not used either."
)
DELETED_BY_PERSON = "Deleted by the person."
CONFIRMED_BY_PERSON = "Confirmed by the person."
GUESS_DENIED_BY_PERSON = "The person said the guess is wrong."
HELD_WRITE_DELETED_BY_PERSON = "The person deleted a write held for review."


def correct_memory(
    *,
    memory: Memory,
    actor: Actor,
    statement: str,
    reason: str,
    source: SourceInput | None = None,
) -> Memory:
    """A new memory supersedes the old one, which keeps its text for audit; or, when the
    new words are already another live memory's, that one is returned, kept as the one
    live memory saying them (``_merge_correction``).

    A correction by a person (or by the system on their behalf) is a statement. An agent's
    correction is a write like any other: refused while memory is paused, stated only when
    its source is the person's own message, and a guess stays pending until corroborated;
    it may correct only what it wrote, unless its key or the write policy lets it correct
    another's (``refuse_unless_own``). Whoever writes them, words unsafe to hand an
    assistant land pending for someone else's review (``hold_for_text``).
    Support or an admin must say why (``reason``); the person need not.
    """
    now = timezone.now()
    with transaction.atomic():
        old = lock_slot(memory)
        refuse_missing_reason(actor=actor, subject=old.subject, reason=reason)
        refuse_memory_move(old.status, MemoryMove.CORRECT)
        by_agent = actor.agent is not None
        current = Policy.current()
        refuse_unless_own(actor=actor, writer_id=old.agent_id, what="This memory", in_force=current)
        source = source or SourceInput(kind=Source.Kind.OPERATOR, ref=f"{CORRECTION_REF}{old.pk}")
        if by_agent:
            # A correction takes the memory it replaces out of use at once, pending or not:
            # from a quarantined agent that is a deletion by another name, refused as one.
            refuse_unheld_change(
                actor.agent, what="a correction (it takes the memory it replaces out of use)"
            )
            refuse_if_paused(old.subject.memory_paused)
            said_by_person = source.kind == Source.Kind.USER_MESSAGE
            basis = Memory.Basis.STATED if said_by_person else Memory.Basis.INFERRED
        else:
            basis = Memory.Basis.STATED
        same = (
            Memory.objects.for_subject(old.subject)
            .live()
            .filter(normalized=normalize_statement(statement))
            .exclude(pk=old.pk)
            .first()
        )
        if same is not None:
            kept = _merge_correction(
                old=old, into=same, actor=actor, reason=reason, source=source, now=now
            )
            _corrected(old, kept)
            memory.refresh_from_db()
            return kept
        by_person = actor.user is not None and access.acts_for_person(actor.user, old.subject)
        if by_agent:
            stated_by = StatedBy.PERSON
        else:
            stated_by = StatedBy.CORRECTION if by_person else StatedBy.SUPPORT_CORRECTION
        # What holds an agent's write holds its correction: an admin's restriction, poisoned
        # text. Poisoned text is held whoever types it: a person's words reach the assistant
        # as verbatim as an agent's, and a pasted instruction is no safer for being pasted
        # on the dashboard. Someone other than its writer confirms it (``confirm_memory``).
        hold = (
            hold_for(actor.agent, basis=basis, source_kind=source.kind, statement=statement)
            if actor.agent
            else hold_for_text(statement)
        )
        pending = hold is not None or (
            by_agent and needs_corroboration(current, basis=basis, agents=1)
        )
        new = Memory(
            subject=old.subject,
            kind=old.kind,
            key=old.key,
            statement=statement,
            normalized=normalize_statement(statement),
            basis=basis,
            stated_by=stated_by,
            status=Memory.Status.PENDING if pending else Memory.Status.ACTIVE,
            written_at=now,
            confirmed_at=None if pending else now,
            expires_at=successor_expiry(
                current, kind=old.kind, basis=basis, replaced_expires_at=old.expires_at, now=now
            ),
            review_at=review_date_for(current, kind=old.kind, now=now),
            policy_version=current.version,
            supersedes=old,
            agent=actor.agent,
            # A person's correction on the dashboard belongs to no agent run: selecting the
            # run's writes (a batch deletion, say) must not take the fix with the mistake.
            run=old.run if by_agent else None,
            # Only the person lifts their "don't use it": rewording the memory, as an
            # agent or support may, must not bring it back to the assistant.
            withheld=old.withheld,
        )
        # The person need not say why (support and admins must, ``refuse_missing_reason``):
        # without a reason the rows say only what happened, and pages say "no reason given".
        why = " ".join(part for part in (reason.strip(), hold.reason if hold else "") if part)
        supersede_memory(
            old=old,
            new=new,
            actor=actor,
            old_reason=f"{CORRECTED}{reason.strip()}",
            new_reason=f"{CORRECTION_OF}{why}",
            now=now,
        )
        add_source(
            data=source,
            agent=actor.agent or old.agent,
            subject=new.subject,
            now=now,
            actor=actor,
            memory=new,
        )
        _corrected(old, new)
    memory.refresh_from_db()
    return new


def _corrected(old: Memory, new: Memory) -> None:
    """The ``memory.corrected`` event: the memory that now stands, and the one it replaced."""
    emit_memories(webhooks.Event.MEMORY_CORRECTED, [new.pk], extra={"corrects": str(old.pk)})


def announce_change(
    move: MemoryMove, memory_ids: Sequence[Any], *, listening: bool | None = None
) -> None:
    """The ``memory.changed`` event for each of ``memory_ids``, as it now is, with ``change``
    the move's name: the vocabulary of ``MEMORY_MOVES``, so a receiver learns no
    second one. The gate and a revert file theirs through it too."""
    emit_memories(
        webhooks.Event.MEMORY_CHANGED, memory_ids, extra={"change": move.value}, listening=listening
    )


def _merge_correction(
    *,
    old: Memory,
    into: Memory,
    actor: Actor,
    reason: str,
    source: SourceInput,
    now: datetime,
) -> Memory:
    """A correction to words a live memory already says keeps that memory as the one live
    row, as the write gate merges a repeat: ``old`` is superseded (kept, unchanged, for
    audit), and the corrector's source becomes evidence for ``into``. A person's or
    support's correction states the words, so it confirms ``into`` when it was a guess;
    an agent's is evidence and nothing more, like any repeat of its own."""
    supersede_memory(
        old=old,
        new=None,
        actor=actor,
        old_reason=f"{CORRECTED}{reason} {MERGED_INTO}{into.pk}), which stays the one memory "
        "saying them.",
        now=now,
    )
    merged = lock_slot(into)
    add_source(
        data=source,
        agent=actor.agent or merged.agent,
        subject=merged.subject,
        now=now,
        actor=actor,
        memory=merged,
    )
    said = f"{CORRECTION_SAID_SO}{reason}"
    # Words held for review stay held: saying them again is no review of them.
    if (
        actor.agent is None
        and hold_for_text(merged.statement) is None
        and (merged.status == Memory.Status.PENDING or merged.basis == Memory.Basis.INFERRED)
    ):
        # The correction's ``memory.corrected`` carries ``into`` as it now is, confirmed.
        merged = confirm_memory(memory=merged, actor=actor, reason=said, announce=False)
    else:
        save_tracked(merged, actor=actor, reason=said, update_fields=[], bump_version=True)
    if old.withheld and not merged.withheld:
        # Only the person lifts their "don't use it", as when a correction makes a new row:
        # their words must not reach the assistant because they merged into another memory.
        merged.withheld = True
        save_tracked(
            merged,
            actor=actor,
            reason=WITHHELD_CARRIED,
            update_fields=["withheld"],
            bump_version=True,
        )
    return merged


def supersede_memory(
    *,
    old: Memory,
    new: Memory | None,
    actor: Actor,
    old_reason: str,
    new_reason: str = "",
    now: datetime,
) -> None:
    """Write ``new`` in place of ``old`` (a correction, a revert), or, with no ``new``, let
    a live memory that already says the corrected words stand for it (a merge): the old one
    is kept, superseded, for audit; the slot's conflict is settled anew; the old one's
    reminders are done with; an active ``new`` whose words likely contradict another live
    memory or a commitment opens a possible conflict, as a write through the gate does.
    The caller holds the slot's lock and gives ``new`` its sources."""
    old.status = Memory.Status.SUPERSEDED
    old.status_changed_at = now
    save_tracked(
        old,
        actor=actor,
        reason=old_reason,
        update_fields=["status", "status_changed_at"],
        bump_version=True,
    )
    if new is not None:
        save_tracked(new, actor=actor, reason=new_reason)
    refresh_conflict(subject=old.subject, key=old.key, actor=actor)
    clear_reminders(memory=old, now=now)
    if new is not None and new.status == Memory.Status.ACTIVE:
        open_possible_conflicts(memory=new, actor=actor, now=now)


def move_memory(
    *,
    memory: Memory,
    actor: Actor,
    move: MemoryMove,
    status: str,
    reason: str,
    undoing: Collection[datetime] = (),
) -> Memory:
    """Make ``move``, which leaves the memory in ``status``, and keep the slot honest.
    Support or an admin must say why (``reason``); the person need not. ``undoing``: the
    moments of the deletions a restore undoes, whose conflicts it reopens."""
    now = timezone.now()
    with transaction.atomic():
        locked = lock_slot(memory)
        refuse_missing_reason(actor=actor, subject=locked.subject, reason=reason)
        refuse_memory_move(locked.status, move)
        locked.status = status
        locked.status_changed_at = now
        save_tracked(
            locked,
            actor=actor,
            reason=reason,
            update_fields=["status", "status_changed_at"],
            bump_version=True,
        )
        # Before the refresh, which would open a new slot conflict in place of the old.
        reopen_conflicts(memory=locked, actor=actor, closed_at=undoing)
        # At the move's moment, which a conflict it closes keeps: an undo finds it by that.
        refresh_conflict(subject=locked.subject, key=locked.key, actor=actor, now=now)
    return locked


def retract_memory(*, memory: Memory, actor: Actor, reason: str, announce: bool = True) -> Memory:
    """Delete, softly: agents stop recalling it at once; its history stays.

    ``announce=False`` leaves its ``memory.retracted`` event to the caller: a batch deletion
    files all of its memories' events in one statement, but takes every other step here.
    """
    refuse_unheld_change(actor.agent, what="a deletion")
    # Who wrote a memory never changes: the unlocked row answers as well as the locked one.
    refuse_unless_own(actor=actor, writer_id=memory.agent_id, what="This memory")
    if not reason.strip() and _by_person(actor, memory):
        reason = DELETED_BY_PERSON
    with transaction.atomic():
        retracted = move_memory(
            memory=memory,
            actor=actor,
            move=MemoryMove.RETRACT,
            status=Memory.Status.RETRACTED,
            reason=reason,
        )
        clear_reminders(memory=retracted, now=retracted.status_changed_at)
        if announce:
            emit_memories(webhooks.Event.MEMORY_RETRACTED, [retracted.pk])
    return retracted


def confirm_memory(
    *, memory: Memory, actor: Actor, reason: str = "", announce: bool = True
) -> Memory:
    """A person says a guess is right: it becomes active and stated, by confirmation.

    Confirmed by anyone but the person it is about (support, say, after a phone call), it
    is recorded as support's confirmation, and never shown as the person's; they must say
    why (``reason``), the person need not. Words held for review are confirmed by someone
    other than whoever wrote them: the person's own held correction by support, support's
    by the person or another member of staff.
    ``announce=False``: a correction merged into it tells receivers with its own event.
    """
    now = timezone.now()
    with transaction.atomic():
        locked = lock_slot(memory)
        refuse_missing_reason(actor=actor, subject=locked.subject, reason=reason)
        refuse_memory_move(locked.status, MemoryMove.CONFIRM)
        current = Policy.current()
        refuse_unless_own(
            actor=actor, writer_id=locked.agent_id, what="This memory", in_force=current
        )
        by_person = actor.user is not None and access.acts_for_person(actor.user, locked.subject)
        held = held_for_review(status=locked.status, statement=locked.statement)
        if held:
            refuse_confirming_own_held_words(
                held=held,
                written_by=_written_by(locked),
                confirmer=actor.label,
                by_person=by_person,
            )
        confirmed_by = StatedBy.CONFIRMATION if by_person else StatedBy.SUPPORT_CONFIRMATION
        # A correction held for its words stays its writer's words when staff let it through.
        staff_review = locked.stated_by in CORRECTIONS and not by_person
        if locked.status == Memory.Status.PENDING and not staff_review:
            # A statement held pending (its agent was restricted) was only the agent's claim:
            # from now on it is the word of whoever confirmed it.
            locked.stated_by = confirmed_by
        if locked.basis == Memory.Basis.INFERRED:
            locked.basis = Memory.Basis.STATED
            locked.stated_by = confirmed_by
            # Confirmed, it is no longer a guess: it lives as long as what the person says.
            locked.expires_at = expiry_for(
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
        locked.review_at = review_date_for(current, kind=locked.kind, now=now)
        save_tracked(
            locked,
            actor=actor,
            reason=reason or (CONFIRMED_BY_PERSON if by_person else "Confirmed by a person."),
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
        if announce:
            announce_change(MemoryMove.CONFIRM, [locked.pk])
    return locked


def answer_question(*, memory: Memory, actor: Actor, right: bool, reason: str = "") -> Memory:
    """The answer to the question a memory waiting for a person asks (a guess, a write held
    for review): right confirms it, wrong deletes it. Support or an admin says why; the
    person need not, and their answer is then said for them in the history."""
    if right:
        return confirm_memory(memory=memory, actor=actor, reason=reason)
    if not reason.strip() and _by_person(actor, memory):
        held = held_for_review(status=memory.status, statement=memory.statement)
        reason = HELD_WRITE_DELETED_BY_PERSON if held else GUESS_DENIED_BY_PERSON
    return retract_memory(memory=memory, actor=actor, reason=reason)


def _written_by(memory: Memory) -> str:
    """Who wrote the memory, as its history names them (``Actor.label``): the actor of its
    first history row."""
    first = memory.history.filter(history_type="+").order_by("history_date", "history_id")
    return first.values_list("history_actor", flat=True).first() or ""


def _by_person(actor: Actor, memory: Memory) -> bool:
    """Whether the person the memory is about makes this change themselves."""
    return actor.user is not None and access.acts_for_person(actor.user, memory.subject)


def renew_memory(
    *,
    memory: Memory,
    actor: Actor,
    expires_at: datetime | None,
    reason: str,
    kept_for: str = "",
) -> Memory:
    """A person gives a memory a new life: a new expiry, recorded with who and why.

    ``None`` makes it permanent, which only a stated memory may be. ``reason`` is why, in
    the renewer's words: support or an admin must give one, the person need not.
    ``kept_for`` says for how long ("kept for 1 year, until …"), kept beside it in history.
    """
    now = timezone.now()
    refuse_past_expiry(expires_at, now)
    with transaction.atomic():
        locked = lock_slot(memory)
        refuse_missing_reason(actor=actor, subject=locked.subject, reason=reason)
        refuse_memory_move(locked.status, MemoryMove.RENEW)
        refuse_unless_own(actor=actor, writer_id=locked.agent_id, what="This memory")
        refuse_permanent_guess(basis=locked.basis, expires_at=expires_at)
        if locked.status == Memory.Status.EXPIRED:
            locked.status = Memory.Status.ACTIVE
            locked.status_changed_at = now
        current = Policy.current()
        # A guess keeps the policy's longest life for a guess, whoever renews it.
        locked.expires_at = expiry_for(
            current,
            kind=locked.kind,
            basis=locked.basis,
            now=now,
            requested=expires_at,
            omitted=False,
        ).expires_at
        locked.review_at = review_date_for(current, kind=locked.kind, now=now)
        save_tracked(
            locked,
            actor=actor,
            reason=_renewed(reason, kept_for),
            update_fields=["status", "status_changed_at", "expires_at", "review_at"],
            bump_version=True,
        )
        refresh_conflict(subject=locked.subject, key=locked.key, actor=actor)
        clear_reminders(memory=locked, now=now)
        announce_change(MemoryMove.RENEW, [locked.pk])
    return locked


def _renewed(reason: str, kept_for: str) -> str:
    """A renewal's words in the history: why, then for how long when that is given."""
    if not kept_for:
        return f"Renewed: {reason}" if reason else "Renewed."
    why = reason.strip()
    return f"Renewed: {why} ({kept_for})." if why else f"Renewed: {kept_for}."


def withhold_memory(*, memory: Memory, actor: Actor, withheld: bool) -> Memory:
    """The person's "true, but don't use it" (``withheld``), or letting it be used again.

    The memory keeps its status and stays live for the gate (a repeat merges into it, it
    still counts towards the cap, conflicts and expiry), but recall never serves it
    (``MemoryQuerySet.servable``). Asking for the state it is already in changes nothing.
    """
    move = MemoryMove.WITHHOLD if withheld else MemoryMove.ALLOW
    with transaction.atomic():
        locked = lock_slot(memory)
        if not access.may_withhold(actor.user, locked.subject):
            raise Refusal(
                "not_the_person",
                "Only the person this memory is about can decide whether the assistant uses it.",
                status=403,
            )
        refuse_memory_move(locked.status, move)
        if locked.withheld == withheld:
            return locked
        locked.withheld = withheld
        said = (
            "True, but the person does not want the assistant to use it."
            if withheld
            else "The person lets the assistant use it again."
        )
        save_tracked(
            locked,
            actor=actor,
            reason=said,
            update_fields=["withheld"],
            bump_version=True,
        )
        announce_change(move, [locked.pk])
    return locked


def restore_memory(*, memory: Memory, actor: Actor, within_seconds: int) -> Memory:
    """Undo a retraction: put back the status the memory had, if the undo is still offered.

    Only the one who deleted it may undo, and only for ``within_seconds`` after: later, a
    deletion is final (agents may already have acted on its absence).
    """
    now = timezone.now()
    with transaction.atomic():
        locked = lock_slot(memory)
        rows = list(locked.history.order_by("-history_date", "-history_id")[:2])
        if locked.status != Memory.Status.RETRACTED or len(rows) < 2:
            raise Refusal("not_undoable", "This memory is not deleted.", status=409)
        refusal = undo_refusal(
            deleted_by=rows[0].history_actor,
            by=actor.label,
            deleted_at=locked.status_changed_at or rows[0].history_date,
            now=now,
            within_seconds=within_seconds,
        )
        if refusal is not None:
            raise refusal
        deleted_at = locked.status_changed_at
        restored = move_memory(
            memory=locked,
            actor=actor,
            move=MemoryMove.RESTORE,
            status=rows[1].status,
            reason="Deletion undone by the same person.",
            undoing=[deleted_at] if deleted_at is not None else [],
        )
        # The deletion closed the memory's reminders; undoing it must not lose them.
        if deleted_at is not None:
            reopen_reminders(memory=restored, cleared_at=deleted_at)
        emit_memories(
            webhooks.Event.MEMORY_WRITTEN, [restored.pk], extra={"outcome": webhooks.RESTORED}
        )
        return restored
