"""A run's journal and notes, for support and admins only."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone

from ledger import access
from ledger.models import JournalEntry, Run, RunNote
from ledger.policy import journal_moves, stale_intent_cutoff
from ledger.views.http import SignedInRequest
from ledger.views.presenting import Names

HISTORY_SHOWN = 100


def staff_run(request: SignedInRequest, ref: str) -> Run:
    """Runs are agents' working state: only support and admins see them; others get a 404."""
    if not access.may_see_runs(request.user):
        raise Http404
    return get_object_or_404(Run.objects.select_related("agent", "subject"), ref=ref)


def pretty(value: Any) -> str:
    return "" if value is None else json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


@dataclass(frozen=True)
class JournalRow:
    entry: JournalEntry
    intent: str
    effect: str
    verification: str
    stale_intent: bool
    moves: tuple[str, ...]

    @property
    def needs_resolution(self) -> bool:
        return self.entry.state == JournalEntry.State.UNKNOWN or self.stale_intent


def journal_row(entry: JournalEntry, cutoff: datetime) -> JournalRow:
    return JournalRow(
        entry=entry,
        intent=pretty(entry.intent),
        effect=pretty(entry.effect),
        verification=pretty(entry.verification),
        stale_intent=entry.is_stale_intent(cutoff),
        # "not done", not the stored "not_done".
        moves=tuple(JournalEntry.State(m).label.lower() for m in journal_moves(entry.state)),
    )


@login_required
def run_journal(request: SignedInRequest, ref: str) -> HttpResponse:
    run = staff_run(request, ref)
    cutoff = stale_intent_cutoff(timezone.now())
    only_unresolved = request.GET.get("needs_resolution") == "1"
    entries = run.journal_entries.all()
    if only_unresolved:
        entries = entries.unresolved(cutoff)
    context = {
        "run": run,
        "rows": [journal_row(e, cutoff) for e in entries],
        "back": request.get_full_path(),
        "only_unresolved": only_unresolved,
        "unresolved": run.journal_entries.unresolved(cutoff).count(),
    }
    template = "ledger/run_journal.html#entries" if request.htmx else "ledger/run_journal.html"
    return render(request, template, context)


@login_required
def run_notes(request: SignedInRequest, ref: str) -> HttpResponse:
    run = staff_run(request, ref)
    earlier = list(
        RunNote.history.filter(run_id=run.pk).order_by("-history_date", "-history_id")[
            :HISTORY_SHOWN
        ]
    )
    names = Names.for_labels(request.user, [row.history_actor for row in earlier])
    return render(
        request,
        "ledger/run_notes.html",
        {
            "run": run,
            "notes": run.notes.all(),
            "earlier": [(row, names.who(row.history_actor)) for row in earlier],
        },
    )
