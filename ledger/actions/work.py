"""Support's work on queue items: taking one, handing it on or back, its ticket, internal
notes, and confirming several waiting guesses with one reason.

Work is on what waits in a queue now: an item resolved, or erased with its subject, takes
none (a note on an erased subject's item would outlive the erasure)."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import models, transaction
from django.utils import timezone

from ledger import access
from ledger.actions._tracking import save_tracked
from ledger.actions.lifecycle import answer_question
from ledger.actors import Actor
from ledger.models import Conflict, JournalEntry, Memory, QueueNote, QueueWork
from ledger.models.work import ITEM_FIELDS
from ledger.reads.queues import confirmed_alone, waits_in_queue
from ledger.rules.reasons import refuse_unexplained_change
from ledger.rules.refusals import Refusal
from ledger.rules.work import checked_note, checked_ticket

type QueueItem = Conflict | Memory | JournalEntry


def kind_of(item: QueueItem) -> str:
    match item:
        case Conflict():
            return "conflict"
        case Memory():
            return "memory"
        case JournalEntry():
            return "journal"


def _subject_id(item: QueueItem) -> int | None:
    if isinstance(item, JournalEntry):
        return item.run.subject_id
    return item.subject_id


def _locked_work(item: QueueItem) -> QueueWork:
    """The item's work, locked, or a new one not yet saved; refused once the item has left
    its queues. The item is locked first, as an erasure locks it, so that no work begins on
    an item an erasure is blanking."""
    kind = kind_of(item)
    model: type[models.Model] = type(item)
    model._default_manager.select_for_update(of=("self",)).filter(pk=item.pk).first()
    if not waits_in_queue(kind, item.pk, timezone.now()):
        raise Refusal(
            "not_in_queue",
            "This item is no longer waiting in a queue (resolved, or erased): nothing was changed.",
            409,
        )
    field = ITEM_FIELDS[kind]
    work = QueueWork.objects.select_for_update().filter(**{field: item.pk}).first()
    if work is None:
        work = QueueWork(**{field: item}, subject_id=_subject_id(item))
    return work


def _name(user: User | None) -> str:
    return user.get_username() if user is not None else "nobody"


def assign_work(*, item: QueueItem, assignee: User | None, actor: Actor) -> QueueWork:
    """Give the item to ``assignee`` (whoever takes it, or another member of staff), or
    back to the queue (``None``)."""
    if assignee is not None and not access.may_work_queues(assignee):
        raise Refusal(
            "assignee_not_staff",
            f"{assignee.get_username()} does not work the queues: hand it to support or an "
            "admin. Nothing was changed.",
            400,
        )
    with transaction.atomic():
        work = _locked_work(item)
        before = work.assignee if work.assignee_id is not None else None
        if work.pk is not None and work.assignee_id == (assignee.pk if assignee else None):
            return work
        work.assignee = assignee
        work.updated_at = timezone.now()
        if assignee is None:
            reason = f"Given back to the queue (was {_name(before)})."
        elif actor.user is not None and assignee.pk == actor.user.pk:
            reason = f"Taken by {_name(assignee)}."
        else:
            reason = f"Handed to {_name(assignee)}."
        save_tracked(work, actor=actor, reason=reason)
        return work


def set_ticket(*, item: QueueItem, ticket: str, actor: Actor) -> QueueWork:
    """File the item under a ticket of support's other tools, or under none ("")."""
    ticket = checked_ticket(ticket)
    with transaction.atomic():
        work = _locked_work(item)
        if work.pk is not None and work.ticket == ticket:
            return work
        work.ticket = ticket
        work.updated_at = timezone.now()
        # The reason does not repeat the ticket: the row holds it, and history shows it.
        reason = "Ticket reference set." if ticket else "Ticket reference removed."
        save_tracked(work, actor=actor, reason=reason)
        return work


def add_note(*, item: QueueItem, text: str, actor: Actor) -> QueueNote:
    """Leave an internal note on the item, for staff only, signed and dated."""
    text = checked_note(text)
    now = timezone.now()
    with transaction.atomic():
        work = _locked_work(item)
        if work.pk is None:
            work.updated_at = now
            save_tracked(work, actor=actor, reason="Work began with a note.")
        return QueueNote.objects.create(work=work, author=actor.label, text=text, written_at=now)


ALREADY_RESOLVED = "Already resolved: it was no longer waiting. Nothing was changed."
CONFIRM_ALONE = (
    "Held for its words, or written by a quarantined agent: confirm it on its own, on the "
    "subject's page, after reading it. Nothing was changed."
)


@dataclass(frozen=True)
class Confirmed:
    """One selected guess and what became of it: confirmed, or why not (``refusal``)."""

    memory: Memory
    refusal: Refusal | None


def confirm_selected(*, memories: list[Memory], actor: Actor, reason: str) -> list[Confirmed]:
    """Confirm each of the selected guesses with one reason, as support confirms one
    (``answer_question``). Each is its own change: one resolved meanwhile is reported
    ("already resolved"), never confirmed twice, and stops none of the others. One held
    for its words or by a quarantine is refused (``confirmed_alone``): a person confirms
    such a write by itself, never as one of a batch."""
    if not memories:
        raise Refusal("nothing_selected", "Select at least one guess to confirm.", 400)
    refuse_unexplained_change(reason)
    done = []
    for memory in memories:
        if memory.status != Memory.Status.PENDING:
            done.append(Confirmed(memory, Refusal("already_resolved", ALREADY_RESOLVED, 409)))
            continue
        if confirmed_alone(memory):
            done.append(Confirmed(memory, Refusal("confirm_alone", CONFIRM_ALONE, 409)))
            continue
        try:
            answer_question(memory=memory, actor=actor, right=True, reason=reason)
        except Refusal as refusal:
            done.append(Confirmed(memory, refusal))
        else:
            done.append(Confirmed(memory, None))
    return done
