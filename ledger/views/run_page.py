"""A run's overview for support: what it wrote, and what it recalled, turn by turn.

A fixed number of queries whatever the run holds: every list is one query (prefetched
where it nests), and the journal, notes and compactions are counted and shortened here,
with their own pages one link away.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby

from django.db.models import F, Prefetch
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from ledger.models import Memory, Recall, RecallItem, Run, Source, WriteDecision
from ledger.views.http import SignedInRequest, support_only
from ledger.views.presenting import STATUS_CHANGES

# How many journal entries, notes and compactions the overview lists; their pages list all.
SHORT_LIST = 5
# A run is one conversation, so its recalls are bounded; this keeps a runaway loop's page
# readable, and the page says when it stopped.
RECALLS_SHOWN = 200
# How many refused writes the overview lists, newest first; the page says how many more.
REFUSALS_SHOWN = 20


@dataclass(frozen=True)
class Written:
    memory: Memory
    status: str


@dataclass(frozen=True)
class Read:
    recall: Recall
    # Each memory served, with the words for its status now.
    served: list[tuple[RecallItem, str]]


@dataclass(frozen=True)
class Turn:
    turn: int | None
    reads: list[Read]


def _written(memory: Memory) -> Written:
    return Written(memory, STATUS_CHANGES.get(memory.status, memory.status))


def _turns(recalls: list[Recall]) -> list[Turn]:
    """Recalls grouped by turn, in turn order; reads with no turn come last."""
    return [
        Turn(
            turn=turn,
            reads=[
                Read(recall, [(item, _written(item.memory).status) for item in recall.items.all()])
                for recall in group
            ],
        )
        for turn, group in groupby(recalls, key=lambda recall: recall.turn)
    ]


@support_only
@require_GET
def run_overview(request: SignedInRequest, ref: str) -> HttpResponse:
    run = get_object_or_404(Run.objects.select_related("agent", "subject"), ref=ref)
    sources = Source.objects.filter(run=run).order_by("received_at", "id")
    memories = list(
        Memory.objects.written_in(run)
        .prefetch_related(Prefetch("sources", sources, to_attr="run_sources"))
        .order_by("written_at", "id")
    )
    recalls = list(
        run.recalls.order_by(F("turn").asc(nulls_last=True), "recalled_at", "id")
        .select_related("agent")
        .prefetch_related(
            Prefetch("items", RecallItem.objects.select_related("memory").order_by("position"))
        )[: RECALLS_SHOWN + 1]
    )
    # A refused write keeps its code and the gate's reason (which may quote the key it tried;
    # an erasure blanks it), never the statement: there is nothing more to show, or to leak.
    # WriteDecision has the default manager, so its reads are asked of their QuerySet here.
    refused = WriteDecision.objects.refused_during(run)
    refusals = list(refused.order_by("-decided_at", "-id")[:REFUSALS_SHOWN])
    refusals_count = refused.count()
    context = {
        "run": run,
        "memories": [_written(memory) for memory in memories],
        "refusals": refusals,
        "refusals_count": refusals_count,
        "refusals_more": refusals_count - len(refusals),
        "entries": list(run.ledger_entries.order_by("recorded_at", "id")),
        "journal": run.journal_entries.order_by("-created_at", "-id")[:SHORT_LIST],
        "journal_count": run.journal_entries.count(),
        "notes": run.notes.order_by("-updated_at", "key")[:SHORT_LIST],
        "notes_count": run.notes.count(),
        "snapshots": run.snapshots.order_by("-generation")[:SHORT_LIST],
        "snapshots_count": run.snapshots.count(),
        "turns": _turns(recalls[:RECALLS_SHOWN]),
        "recalls_cut": len(recalls) > RECALLS_SHOWN,
        "recalls_shown": RECALLS_SHOWN,
    }
    return render(request, "ledger/run.html", context)
