"""A run's compaction timeline and the diff between two of its generations.

Support and admins only: a run's state documents hold whatever the agent was working on,
across subjects, so anyone else gets the same 404 as for a run that does not exist.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render

from ledger.models import Snapshot
from ledger.rules.snapshots.diff import DocumentCounts, count_document, diff_documents
from ledger.rules.snapshots.schema import BUDGET_PARTS
from ledger.views.answers import answer
from ledger.views.forms.search import DiffForm
from ledger.views.http import SignedInRequest
from ledger.views.runs import staff_run

# Okabe–Ito colours: told apart with the common kinds of colour blindness.
PART_COLOURS = {
    "system_prompt": "#0072b2",
    "tool_definitions": "#e69f00",
    "goal": "#009e73",
    "pinned_facts": "#cc79a7",
    "summary": "#56b4e9",
    "recent_turns": "#d55e00",
    "reserve": "#f0e442",
}
UNSPLIT_COLOUR = "#4f5862"
UNSPLIT_LABEL = "After, not split by part"
PART_LABELS = {part: part.replace("_", " ").capitalize() for part in BUDGET_PARTS}

LABEL_WIDTH = 130
BAR_WIDTH = 520
VALUE_WIDTH = 190
ROW_HEIGHT = 34
TOP = 8
# At phone width the chart is drawn stacked: each row's label and values on a line of
# their own above a bar as wide as the chart, so its text stays as large as the page's.
STACKED_WIDTH = 340
STACKED_ROW_HEIGHT = 52
STACKED_BAR_TOP = 22


@dataclass(frozen=True)
class Segment:
    label: str
    tokens: int
    x: float
    width: float
    colour: str


@dataclass(frozen=True)
class ChartRow:
    generation: int
    rejected: bool
    y: int
    text_y: int
    inner_y: int
    before_width: float
    segments: list[Segment]
    values: str
    before_label: str


@dataclass(frozen=True)
class BudgetChart:
    width: int
    height: int
    bar_x: int
    value_x: int
    rows: list[ChartRow]
    legend: list[tuple[str, str]]
    layout: str = "wide"  # or "stacked"

    @property
    def value_anchor(self) -> str:
        return "end" if self.layout == "stacked" else "start"


def _tokens(n: int | None) -> str:
    return "?" if n is None else f"{n:,}"


def budget_chart(snapshots: Sequence[Snapshot], *, stacked: bool = False) -> BudgetChart | None:
    """One row per generation: tokens before as a grey bar, after as coloured parts.

    ``stacked`` draws it for a phone: labels above the bars instead of beside them.
    """
    if not snapshots:
        return None
    totals = [
        max(s.tokens_before or 0, s.tokens_after or 0, sum((s.budget or {}).values()))
        for s in snapshots
    ]
    # The stacked bars start 1 unit in, so their left border is not cut off.
    bar_x, bar_width = (1, STACKED_WIDTH - 2) if stacked else (LABEL_WIDTH, BAR_WIDTH)
    row_height = STACKED_ROW_HEIGHT if stacked else ROW_HEIGHT
    scale = bar_width / max(max(totals), 1)
    rows = []
    used_parts: set[str] = set()
    unsplit = False
    for index, snapshot in enumerate(snapshots):
        top = TOP + index * row_height
        y = top + STACKED_BAR_TOP if stacked else top
        segments = []
        x = float(bar_x)
        budget = snapshot.budget or {}
        if budget:
            for part in BUDGET_PARTS:
                tokens = budget.get(part)
                if not tokens:
                    continue
                used_parts.add(part)
                width = tokens * scale
                segments.append(
                    Segment(
                        PART_LABELS[part], tokens, round(x, 1), round(width, 1), PART_COLOURS[part]
                    )
                )
                x += width
        elif snapshot.tokens_after:
            unsplit = True
            width = snapshot.tokens_after * scale
            segments.append(
                Segment(UNSPLIT_LABEL, snapshot.tokens_after, x, round(width, 1), UNSPLIT_COLOUR)
            )
        rows.append(
            ChartRow(
                generation=snapshot.generation,
                rejected=snapshot.status == Snapshot.Status.REJECTED,
                y=y,
                text_y=top + 9 if stacked else y + 16,
                inner_y=y + 5,
                before_width=round((snapshot.tokens_before or 0) * scale, 1),
                segments=segments,
                values=f"{_tokens(snapshot.tokens_before)} → {_tokens(snapshot.tokens_after)}",
                before_label=f"Before compaction: {_tokens(snapshot.tokens_before)} tokens",
            )
        )
    legend = [(PART_LABELS[p], PART_COLOURS[p]) for p in BUDGET_PARTS if p in used_parts]
    if unsplit:
        legend.append((UNSPLIT_LABEL, UNSPLIT_COLOUR))
    if stacked:
        return BudgetChart(
            width=STACKED_WIDTH,
            height=TOP * 2 + len(rows) * STACKED_ROW_HEIGHT,
            bar_x=bar_x,
            value_x=STACKED_WIDTH,
            rows=rows,
            legend=legend,
            layout="stacked",
        )
    return BudgetChart(
        width=LABEL_WIDTH + BAR_WIDTH + VALUE_WIDTH,
        height=TOP * 2 + len(rows) * ROW_HEIGHT,
        bar_x=LABEL_WIDTH,
        value_x=LABEL_WIDTH + BAR_WIDTH + 8,
        rows=rows,
        legend=legend,
    )


@dataclass(frozen=True)
class Generation:
    snapshot: Snapshot
    counts: DocumentCounts
    previous: int | None
    budget: list[tuple[str, str]]

    @property
    def tokens(self) -> str:
        return f"{_tokens(self.snapshot.tokens_before)} → {_tokens(self.snapshot.tokens_after)}"

    @property
    def document_text(self) -> str:
        # Shown as text in a <pre>: the template escapes it like any other document text.
        return json.dumps(self.snapshot.document, indent=2, ensure_ascii=False)


@login_required
def timeline(request: SignedInRequest, ref: str) -> HttpResponse:
    run = staff_run(request, ref)
    snapshots = list(run.snapshots.select_related("agent").order_by("generation"))
    generations = [
        Generation(
            snapshot=snapshot,
            counts=count_document(snapshot.document),
            previous=snapshots[index - 1].generation if index else None,
            budget=[
                (PART_LABELS[part], _tokens(snapshot.budget[part]))
                for part in BUDGET_PARTS
                if snapshot.budget and part in snapshot.budget
            ],
        )
        for index, snapshot in enumerate(snapshots)
    ]
    return render(
        request,
        "ledger/run_snapshots.html",
        {
            "run": run,
            "generations": generations,
            # Both drawn; the style sheet shows the one that fits the screen.
            "charts": [budget_chart(snapshots), budget_chart(snapshots, stacked=True)]
            if snapshots
            else [],
            "accepted": sum(s.status == Snapshot.Status.ACCEPTED for s in snapshots),
            "rejected": sum(s.status == Snapshot.Status.REJECTED for s in snapshots),
        },
    )


@login_required
def diff(request: SignedInRequest, ref: str) -> HttpResponse:
    run = staff_run(request, ref)
    snapshots = {s.generation: s for s in run.snapshots.order_by("generation")}
    ordered = list(snapshots.values())
    data: Mapping[str, str] | None = (
        request.GET if ("a" in request.GET or "b" in request.GET) else None
    )
    if data is None and len(ordered) >= 2:
        data = {"a": str(ordered[-2].generation), "b": str(ordered[-1].generation)}
    form = DiffForm(data, generations=ordered)
    context: dict[str, Any] = {"run": run, "form": form, "enough": len(ordered) >= 2}
    status = 200
    if data is not None and form.is_valid():
        before = snapshots[form.cleaned_data["a"]]
        after = snapshots[form.cleaned_data["b"]]
        context.update(
            before=before,
            after=after,
            sides=[before] if before == after else [before, after],
            tokens=f"{_tokens(before.tokens_after)} → {_tokens(after.tokens_after)}",
            changes=diff_documents(before.document, after.document),
        )
    elif data is not None:
        status = 400
    return answer(
        request,
        fragment="ledger/snapshot_diff.html#result",
        page="ledger/snapshot_diff.html",
        context=context,
        status=status,
    )
