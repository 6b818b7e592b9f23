"""A run's journal and notes, for support and admins only."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone

from ledger import access
from ledger.models import JournalEntry, JournalEntryQuerySet, Run, RunNote
from ledger.reads.names import Names
from ledger.rules.journal import journal_moves, stale_intent_cutoff
from ledger.views.answers import answer
from ledger.views.http import SignedInRequest

HISTORY_SHOWN = 100


def staff_run(request: SignedInRequest, ref: str) -> Run:
    """Runs are agents' working state: only support and admins see them; others get a 404."""
    if not access.may_see_runs(request.user):
        raise Http404
    return get_object_or_404(Run.objects.select_related("agent", "subject"), ref=ref)


def pretty(value: Any) -> str:
    return "" if value is None else json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


@dataclass(frozen=True)
class Step:
    """One recorded version of a journal entry, as support reads it: what state it reached,
    when, who said so, and the effect or verification that step brought (blank when the
    step left them as they were)."""

    state: str
    when: datetime
    who: str
    effect: str
    verification: str


@dataclass(frozen=True)
class JournalRow:
    entry: JournalEntry
    intent: str
    effect: str
    verification: str
    stale_intent: bool
    moves: tuple[str, ...]
    # Its life from intent to now, oldest first: "intended → outcome unknown → done".
    steps: tuple[Step, ...] = ()

    @property
    def needs_resolution(self) -> bool:
        return self.entry.state == JournalEntry.State.UNKNOWN or self.stale_intent


def journal_row(entry: JournalEntry, cutoff: datetime, steps: tuple[Step, ...] = ()) -> JournalRow:
    return JournalRow(
        entry=entry,
        intent=pretty(entry.intent),
        effect=pretty(entry.effect),
        verification=pretty(entry.verification),
        stale_intent=entry.is_stale_intent(cutoff),
        # "not done", not the stored "not_done".
        moves=tuple(JournalEntry.State(m).label.lower() for m in journal_moves(entry.state)),
        steps=steps,
    )


def steps_of(entries: JournalEntryQuerySet, viewer: access.Person) -> dict[int, tuple[Step, ...]]:
    """The steps of these entries, keyed by entry: their history in one query, and who
    acted in at most two more (``Names``), however many entries and steps."""
    versions = list(entries.steps())
    return journal_steps(versions, Names.for_labels(viewer, [v.history_actor for v in versions]))


def journal_steps(versions: list[Any], names: Names) -> dict[int, tuple[Step, ...]]:
    """Each entry's steps, from its history rows (ordered by entry, then oldest first).

    A step shows the effect or verification only when it changed them, so "done" carries
    the verification recorded with it and an earlier step does not repeat it. An erasure
    blanks them in history as in the entry, so nothing erased comes back here."""
    steps: dict[int, list[Step]] = defaultdict(list)
    before: dict[int, Any] = {}
    for version in versions:
        previous = before.get(version.id)
        steps[version.id].append(
            Step(
                state=JournalEntry.State(version.state).label,
                when=version.history_date,
                who=names.who(version.history_actor),
                effect=_changed(version.effect, previous.effect if previous else None),
                verification=_changed(
                    version.verification, previous.verification if previous else None
                ),
            )
        )
        before[version.id] = version
    return {entry: tuple(rows) for entry, rows in steps.items()}


def _changed(value: Any, earlier: Any) -> str:
    return "" if value == earlier else pretty(value)


JOURNAL_TEMPLATE = "ledger/run_journal.html"


def journal_context(request: SignedInRequest, run: Run) -> dict[str, Any]:
    """What a run's journal shows: every entry (or those still to resolve), with its steps."""
    cutoff = stale_intent_cutoff(timezone.now())
    only_unresolved = request.GET.get("needs_resolution") == "1"
    entries = run.journal_entries.all()
    if only_unresolved:
        entries = entries.unresolved(cutoff)
    steps = steps_of(entries, request.user)
    return {
        "run": run,
        "rows": [journal_row(e, cutoff, steps.get(e.pk, ())) for e in entries],
        "back": request.get_full_path(),
        "only_unresolved": only_unresolved,
        "unresolved": run.journal_entries.unresolved(cutoff).count(),
    }


@login_required
def run_journal(request: SignedInRequest, ref: str) -> HttpResponse:
    run = staff_run(request, ref)
    return answer(
        request,
        fragment=f"{JOURNAL_TEMPLATE}#entries",
        page=JOURNAL_TEMPLATE,
        context=journal_context(request, run),
    )


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
