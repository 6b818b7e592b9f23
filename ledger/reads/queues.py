"""What waits in support's queues, one definition for the queue pages and for ``/metrics``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet

from ledger.models import Conflict, JournalEntry, Memory
from ledger.models.ledger_entries import ledger_entry_in_force
from ledger.rules.journal import stale_intent_cutoff

QUEUE_NAMES = ("conflicts", "pending", "review", "journal")


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
                .prefetch_related("memories")
            )
        case "pending":
            return Memory.objects.pending().select_related("subject", "agent")
        case "review":
            return Memory.objects.due_for_review(now).select_related("subject", "agent")
        case "journal":
            cutoff = stale_intent_cutoff(now)
            return JournalEntry.objects.unresolved(cutoff).select_related("run", "agent")
        case _:
            raise LookupError(f"There is no queue named {name!r}.")


def count_up_to(rows: QuerySet[Any], cap: int) -> int:
    """How many of ``rows`` there are, in one query that stops counting past ``cap``: a
    count of every memory due for review is a scan of most of the table."""
    return int(rows.order_by()[: cap + 1].count())
