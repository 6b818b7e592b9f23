"""What waits in support's queues, one definition for the queue pages and for ``/metrics``."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Exists, OuterRef, Prefetch, Q, QuerySet

from ledger.models import Conflict, Erasure, JournalEntry, Memory
from ledger.models.ledger_entries import ledger_entry_in_force
from ledger.rules.holds import held_by_quarantine, held_words
from ledger.rules.journal import stale_intent_cutoff

QUEUE_NAMES = ("conflicts", "pending", "review", "journal")

# The queues each kind of item waits in (``ledger.models.work.ITEM_FIELDS``' kinds).
QUEUES_OF_KIND = {
    "conflict": ("conflicts",),
    "memory": ("pending", "review"),
    "journal": ("journal",),
}


def queue_rows(name: str, now: datetime) -> QuerySet[Any]:
    """What is waiting in the queue ``name`` at ``now``, with what its rows show."""
    match name:
        case "conflicts":
            # A possible conflict shows its two statements: they are why it is queued. One
            # with a side still waiting for a person is settled there first, and the
            # subject's page does not show it yet: not queued.
            return (
                Conflict.objects.open()
                .with_active_sides()
                .filter(
                    Q(active_sides__gte=2)
                    | Q(active_sides=1) & ledger_entry_in_force(now, via="commitment__")
                )
                .select_related("subject", "commitment")
                # Every conflict shows the statements that disagree, a slot's as a pair's.
                .prefetch_related(
                    Prefetch("memories", queryset=Memory.objects.order_by("written_at", "pk"))
                )
            )
        case "pending":
            return Memory.objects.pending().select_related("subject", "agent")
        case "review":
            return Memory.objects.due_for_review(now).select_related("subject", "agent")
        case "journal":
            cutoff = stale_intent_cutoff(now)
            return (
                JournalEntry.objects.unresolved(cutoff)
                .exclude(_erased_journal_entry())
                .select_related("run", "agent")
            )
        case _:
            raise LookupError(f"There is no queue named {name!r}.")


def _erased_journal_entry() -> Exists:
    """Journaled before an erasure of its run's subject: blanked by it, with nothing left
    to check against the world, and nobody's to resolve. (Memories and conflicts leave the
    queues by their status: an erasure marks them erased and closed.)"""
    return Exists(
        Erasure.objects.filter(
            subject=OuterRef("run__subject"), erased_at__gte=OuterRef("created_at")
        )
    )


def count_up_to(rows: QuerySet[Any], cap: int) -> int:
    """How many of ``rows`` there are, in one query that stops counting past ``cap``: a
    count of every memory due for review is a scan of most of the table."""
    return int(rows.order_by()[: cap + 1].count())


@dataclass(frozen=True)
class WorkFilter:
    """Support's narrowing of a queue: ``assigned`` is "" (everything), "mine" or
    "unassigned"; ``ticket`` a ticket reference, matched however it was typed."""

    assigned: str = ""
    ticket: str = ""

    CHOICES = ("", "mine", "unassigned")

    def where(self, user: User) -> Q:
        """The queue's rows this keeps, through their work (``QueueWork``, ``work``)."""
        kept = Q()
        if self.assigned == "mine":
            kept &= Q(work__assignee=user)
        elif self.assigned == "unassigned":
            # No work yet, or work given back: the outer join's null either way.
            kept &= Q(work__assignee__isnull=True)
        if self.ticket:
            kept &= Q(work__ticket__iexact=self.ticket)
        return kept


def with_work(rows: QuerySet[Any]) -> QuerySet[Any]:
    """The queue's rows with the work on each, its assignee and notes: two more queries
    however many rows (the notes' one; the rest joined)."""
    return rows.select_related("work__assignee").prefetch_related("work__notes")


def waits_in_queue(kind: str, pk: Any, now: datetime) -> bool:
    """Whether the item is waiting in one of support's queues now: work is on those only."""
    return any(queue_rows(name, now).filter(pk=pk).exists() for name in QUEUES_OF_KIND[kind])


def confirmed_alone(memory: Memory) -> bool:
    """Whether a waiting memory must be confirmed on its own, on the subject's page, never
    among a selection: held for its words (an injection confirmed in bulk goes live), or
    written by a quarantined agent (an admin asked for a person's look at each). The
    memory's agent should be loaded with it."""
    writer = memory.agent if memory.agent_id is not None else None
    return bool(
        held_words(status=memory.status, statement=memory.statement)
        or held_by_quarantine(status=memory.status, writer=writer, for_person=False)
    )
