"""The history of one memory: every version, who changed it and why. For support it is the
trace of a complaint: the write (agent, run, turn, the source and its excerpt, the write
gate's decisions under the policy of the day), its life, its reach (every recall that
served it, with the exact block) and its neighbourhood. A fixed number of queries, however
long the chain of corrections, however often it was read and however many neighbours."""

from __future__ import annotations

import bisect
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db.models import Count, F, Max, Prefetch, Q, Window
from django.db.models.functions import RowNumber
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.http import urlencode
from django.views.decorators.http import require_GET

from ledger import access
from ledger.models import Conflict, LedgerEntry, Memory, Policy, Source, WriteDecision
from ledger.reads import recall_log
from ledger.reads.corrections import version_ids
from ledger.reads.names import Names
from ledger.reads.recall_log import ServedRead
from ledger.rules.agents import Restriction
from ledger.rules.holds import HELD_FOR_REVIEW
from ledger.views.cards import CardContext, card_for
from ledger.views.http import SignedInRequest
from ledger.views.memories import is_own, visible_memory
from ledger.views.presenting import day, source_words, status_words, steps

# The latest reads of one version on its history page; the API lists them all.
READS_SHOWN = 50
# How far a version's reads are counted: past it the page says "more than", so that a
# memory given to agents a million times costs no more to show than one given a thousand.
READS_COUNTED = 1_000
# The latest changes of each version shown at first, each "show more" as many again (the
# write itself is always shown): a memory changed thousands of times stays one page.
CHANGES_SHOWN = 20
# Neighbours of the memory on its trace: enough to spot a pattern, the rest by search.
NEIGHBOURS_SHOWN = 20
# Versions of a chain of corrections on one page, newest first; the others a link away, so
# a memory corrected hundreds of times is still one page of bounded cost.
VERSIONS_SHOWN = 20


@dataclass(frozen=True)
class Decision:
    """What the write gate decided, in words, and under which version of the write policy:
    ``policy`` is empty when it is the version the memory records, said once beside it."""

    decision: WriteDecision
    title: str
    detail: str
    policy: str


# The gate's outcomes as staff read them at the head of a decision.
OUTCOME_TITLES: dict[str, str] = {
    WriteDecision.Outcome.ACCEPTED: "Accepted",
    WriteDecision.Outcome.PENDING: "Held for confirmation",
    WriteDecision.Outcome.MERGED: "Added as evidence",
    WriteDecision.Outcome.CONFLICT: "Accepted, in conflict",
    WriteDecision.Outcome.REFUSED: "Refused",
}
# What an admin's restriction (the decision's code, ``Restriction.code``) means,
# and the opening of the gate's reason that says the same, so it is said once.
HOLDS: dict[str, tuple[str, str]] = {
    Restriction.QUARANTINED.code: (
        "the agent is quarantined by an admin",
        "Quarantined by an admin: ",
    ),
    Restriction.STATED_UNTRUSTED.code: (
        "the agent is not trusted for what people said",
        "This agent is not trusted for what people said: ",
    ),
    HELD_FOR_REVIEW: ("its words need a person's review", "Held for a person's review: "),
}
# The openings of the gate's reasons that repeat the outcome's title.
ACCEPTED_OPENING = "Accepted: "
MERGED_OPENING = "Same statement as a live memory: the source was added as evidence."
STILL_HELD = "It stays pending. "


def decision_words(row: WriteDecision) -> tuple[str, str]:
    """A decision as staff read it: its title, from the outcome and the restriction's code
    ("Held for confirmation"), and the gate's reason after it without what the title says
    ("the agent is quarantined by an admin: <their reason> …"). Never a raw code."""
    title = OUTCOME_TITLES.get(row.outcome, row.outcome)
    reason = row.reason
    hold = HOLDS.get(row.code)
    if row.outcome == WriteDecision.Outcome.PENDING and hold and reason.startswith(hold[1]):
        return title, f"{hold[0]}: {reason.removeprefix(hold[1])}"
    if row.outcome == WriteDecision.Outcome.MERGED and reason.startswith(MERGED_OPENING):
        rest = reason.removeprefix(MERGED_OPENING).strip()
        if hold and rest.startswith(STILL_HELD + hold[1]):
            because = rest.removeprefix(STILL_HELD + hold[1])
            rest = f"It stays held for confirmation: {hold[0]}: {because}"
        return title, f"the same statement came again, from another source. {rest}".strip()
    if reason.startswith(ACCEPTED_OPENING):
        rest = reason.removeprefix(ACCEPTED_OPENING)
        return title, rest[:1].upper() + rest[1:]
    return title, reason


def written_under(memory: Memory, first: Decision | None) -> str:
    """How the trace says which policy a version was written under: "Accepted under", "Held
    for confirmation under" (what the gate did with the write), or "Written under" for what
    did not pass the gate (a correction, a revert), whatever an agent's repeat of it did."""
    if first is None or first.decision.decided_at != memory.written_at:
        return "Written under"
    if first.decision.outcome == WriteDecision.Outcome.PENDING:
        return "Held for confirmation under"
    return "Accepted under"


def counted_words(count: int) -> str:
    """A number of reads as the page says it: exact up to ``READS_COUNTED``."""
    return f"more than {READS_COUNTED:,}" if count > READS_COUNTED else str(count)


@dataclass(frozen=True)
class Reach:
    """How many recalls served a version: since it was written, and since it last changed
    (each counted up to just past ``READS_COUNTED``)."""

    total: int
    since_change: int
    changed_at: datetime | None

    @property
    def total_words(self) -> str:
        return counted_words(self.total)

    @property
    def since_change_words(self) -> str:
        return counted_words(self.since_change)


def _page_start(asked: str, memory: Memory, chain: list[uuid.UUID]) -> tuple[int, str]:
    """Where in ``chain`` (newest first) a page of versions starts: at ``asked`` (``?from=``,
    the newest version a page shows, which the links between pages name), else at the page
    that holds ``memory``; and what is wrong with ``asked``, if it is no version of the
    chain. Pages start at multiples of ``VERSIONS_SHOWN`` from the newest."""
    found = next((i for i, pk in enumerate(chain) if str(pk) == asked), None)
    start = chain.index(memory.pk) if found is None else found
    problem = f"“{asked[:40]}” is no version of this memory." if asked and found is None else ""
    return start // VERSIONS_SHOWN * VERSIONS_SHOWN, problem


def _versions(ids: list[uuid.UUID]) -> dict[uuid.UUID, Memory]:
    """These versions of a chain, each with its subject, agent, run and sources."""
    sources = Source.objects.select_related("run")
    rows = (
        Memory.objects.filter(pk__in=ids)
        .select_related("subject", "agent", "run")
        .prefetch_related(Prefetch("sources", sources))
    )
    return {m.pk: m for m in rows}


@dataclass(frozen=True)
class Read:
    """One recall that served a version, with where the version stood in the block."""

    served: ServedRead
    place: str


def place_words(read: ServedRead) -> str:
    """Where a memory stood in a recall's block and why it was there, in words a person can
    read. Reads recorded before the log kept why are told by their place alone."""
    words = {
        "conflict": "shown for an open conflict",
        "key": "asked for by its slot",
        "kind": "asked for by its kind",
        "recent": "among the newest: no goal",
    }
    if read.via in words:
        return f"{read.position} ({words[read.via]})"
    if not read.via and read.position > read.k:
        return f"{read.position} (shown for an open conflict)"
    if read.rank <= 0:
        return str(read.position)
    return f"{read.position} (relevance to the goal: {read.rank:.3f})"


def _latest_reads(chain: list[Memory]) -> dict[uuid.UUID, list[Read]]:
    """The latest recalls of each version, at most ``READS_SHOWN`` each, in one query."""
    reads: dict[uuid.UUID, list[Read]] = {}
    for served in recall_log.latest_reads([m.pk for m in chain], READS_SHOWN):
        reads.setdefault(served.memory_id, []).append(Read(served, place_words(served)))
    return reads


def _reach(chain: list[Memory], changed: dict[uuid.UUID, datetime]) -> dict[uuid.UUID, Reach]:
    """Per version, the recalls that served it in all and since its last change; one query."""
    counted = recall_log.reads_counted({m.pk: changed.get(m.pk) for m in chain}, READS_COUNTED)
    return {m.pk: Reach(*counted[m.pk], changed_at=changed.get(m.pk)) for m in chain}


@dataclass(frozen=True)
class Changes:
    """A version's history rows as its page shows them, oldest first: the write, then the
    latest changes, with how many between them are left out."""

    first: Any
    latest: list[Any]
    left_out: int
    changed_at: datetime


def _changes(chain: list[Memory], shown: int) -> dict[uuid.UUID, Changes]:
    """Each version's first history row and its latest ``shown`` (with the one before them,
    which the first of them is compared with), in one query however long the history."""
    newest_first = [F("history_date").desc(), F("history_id").desc()]
    rows = (
        Memory.history.filter(id__in=[m.pk for m in chain])
        .annotate(
            newest=Window(RowNumber(), partition_by=[F("id")], order_by=newest_first),
            rows=Window(Count("history_id"), partition_by=[F("id")]),
            changed_at=Window(Max("history_date"), partition_by=[F("id")]),
        )
        .filter(Q(newest__lte=shown + 1) | Q(newest=F("rows")))
        .order_by("history_date", "history_id")
    )
    found: dict[uuid.UUID, list[Any]] = {}
    for row in rows:
        found.setdefault(row.id, []).append(row)
    changes = {}
    for pk, kept in found.items():
        first, count = kept[0], kept[0].rows
        latest = [row for row in kept if row.newest <= shown + 1]
        changes[pk] = Changes(first, latest, max(0, count - 1 - shown), first.changed_at)
    return changes


def _steps(changes: Changes | None, names: Names) -> list[Any]:
    """A version's steps in words: the write, and its latest changes."""
    if changes is None:
        return []
    if not changes.left_out and changes.latest[0] is changes.first:
        return steps(changes.latest, names=names)
    # The oldest row fetched is there only for what changed in the next one.
    return steps([changes.first], names=names) + steps(changes.latest, names=names)[1:]


def _shown_changes(request: HttpRequest) -> tuple[int, str]:
    """How many of each version's latest changes to show (``?changes=``), and what is wrong
    with the number asked for, if anything."""
    text = request.GET.get("changes", "")
    if not text:
        return CHANGES_SHOWN, ""
    if not text.isdecimal() or int(text) < 1:
        return CHANGES_SHOWN, f"“{text[:20]}” is not a number of changes to show: from 1 up."
    return int(text), ""


# The version of the write policy before anyone changed it: the shipped defaults.
DEFAULT_VERSION = 1


def policy_at(changes: list[tuple[datetime, int]], at: datetime) -> tuple[int, str]:
    """The write policy in force at ``at``: the version its last change by then made
    (``changes``: when and which version, sorted), with it in words; the default policy
    before any change. The number is the one memories record (``Memory.policy_version``)."""
    index = bisect.bisect_right(changes, at, key=lambda change: change[0])
    if index == 0:
        return DEFAULT_VERSION, f"policy version {DEFAULT_VERSION}, the default policy"
    changed_at, version = changes[index - 1]
    return version, f"policy version {version}, of {day(changed_at)}"


def _decisions(chain: list[Memory]) -> dict[uuid.UUID, list[Decision]]:
    """Every decision of the write gate about these versions, oldest first: two queries
    (the decisions, and the dates the policy changed), however many there are."""
    changes = list(
        Policy.history.order_by("history_date", "history_id").values_list("history_date", "version")
    )
    recorded = {m.pk: m.policy_version for m in chain}
    found: dict[uuid.UUID, list[Decision]] = {}
    for row in WriteDecision.objects.filter(memory__in=chain).order_by("decided_at", "id"):
        if row.memory_id is not None:
            version, words = policy_at(changes, row.decided_at)
            # The version the memory records is said once, beside the write.
            shown = "" if version == recorded.get(row.memory_id) else words
            found.setdefault(row.memory_id, []).append(Decision(row, *decision_words(row), shown))
    return found


def _conflicts(chain: list[Memory]) -> list[Conflict]:
    """Every conflict any version was in, or was kept by, with all its members."""
    ids = [m.pk for m in chain]
    return list(
        Conflict.objects.filter(Q(memories__in=ids) | Q(kept__in=ids))
        .distinct()
        .select_related("kept", "commitment")
        .prefetch_related("memories")
        .order_by("opened_at", "pk")
    )


def _neighbourhood(
    request: SignedInRequest, memory: Memory, ids: list[uuid.UUID]
) -> dict[str, Any]:
    """Other memories (than the versions ``ids``) from the same source and the same run, and
    that run's ledger entries."""
    sources = list(memory.sources.all())
    refs = {s.ref for s in sources}
    runs = {s.run_id for s in sources if s.run_id is not None}
    if memory.run_id is not None:
        runs.add(memory.run_id)
    visible = Memory.objects.visible_to(request.user).exclude(pk__in=ids).select_related("subject")
    same_source = visible.filter(sources__ref__in=refs).distinct().order_by("-written_at", "pk")
    # Written in one of the runs, or with evidence from one: each found through its own
    # index (an OR across the join would read both tables whole).
    same_run = (
        visible.filter(run_id__in=runs)
        .order_by()
        .union(visible.filter(sources__run_id__in=runs).order_by())
        .order_by("-written_at", "pk")
    )
    ledger = (
        LedgerEntry.objects.visible_to(request.user)
        .filter(run_id__in=runs)
        .select_related("subject", "run")
        .order_by("-recorded_at", "pk")
    )
    return {
        "same_source": list(same_source[:NEIGHBOURS_SHOWN]),
        "same_run": list(same_run[:NEIGHBOURS_SHOWN]),
        "run_ledger": list(ledger[:NEIGHBOURS_SHOWN]),
        "neighbours_shown": NEIGHBOURS_SHOWN,
    }


@login_required
@require_GET
def memory_history(request: SignedInRequest, pk: uuid.UUID) -> HttpResponse:
    """Every version of one memory, a page at a time: the chain of corrections, each with
    its history; for support, the whole trace."""
    memory = visible_memory(request, pk)
    shown, changes_error = _shown_changes(request)
    ids = version_ids(memory)[::-1]
    start, from_error = _page_start(request.GET.get("from", ""), memory, ids)
    end = start + VERSIONS_SHOWN
    # The page's versions, the one either side (what the first replaced, what replaced the
    # last), the newest (what support may act on) and the memory asked about.
    loaded = _versions([*ids[max(0, start - 1) : end + 1], ids[0], memory.pk])
    chain = [loaded[pk] for pk in ids[start:end]]
    history = _changes(chain, shown)
    names = Names.for_labels(
        request.user,
        [row.history_actor for kept in history.values() for row in [kept.first, *kept.latest]],
    )
    staff = access.may_use_support_tools(request.user)
    changed = {pk: kept.changed_at for pk, kept in history.items()}
    # Support traces a complaint: where each version came from, what the gate decided, and
    # which runs read it.
    reads = _latest_reads(chain) if staff else {}
    reach = _reach(chain, changed) if staff else {}
    decisions = _decisions(chain) if staff else {}
    current = loaded[memory.pk]
    conflicts = _conflicts([*chain, current])
    versions = []
    for index, m in enumerate(chain, start=start):
        kept = history.get(m.pk)
        # Who wrote this version: for a dashboard correction, who corrected it.
        wrote = names.who(kept.first.history_actor) if kept else "someone unrecorded"
        sources = [(s, *source_words(s, corrected_by=wrote)) for s in m.sources.all()]
        replaced_by = loaded[ids[index - 1]] if index > 0 else None
        decided = decisions.get(m.pk, [])
        versions.append(
            {
                "memory": m,
                "status": status_words(
                    m, by_revert=replaced_by is not None and replaced_by.restores_id is not None
                ),
                "steps": _steps(kept, names),
                "changes_left_out": kept.left_out if kept else 0,
                "current": m.pk == memory.pk,
                "latest": index == 0,
                "replaced": loaded[ids[index + 1]] if index + 1 < len(ids) else None,
                "replaced_by": replaced_by,
                "conflicts": [
                    c
                    for c in conflicts
                    if c.kept_id == m.pk or any(x.pk == m.pk for x in c.memories.all())
                ],
                "sources": sources if staff else (),
                "decisions": decided,
                "written_under": written_under(m, decided[0] if decided else None),
                "reach": reach.get(m.pk),
                "reads": reads.get(m.pk, []),
            }
        )
    own = is_own(request, memory.subject)
    context: dict[str, Any] = {
        "memory": memory,
        "subject": memory.subject,
        "own": own,
        "versions": versions,
        "trace": staff,
        # The version that accepted a memory links to the policy's history, for who may open it.
        "policy_link": access.may_administer(request.user),
        "changes_shown": shown,
        "changes_error": changes_error,
        "from_error": from_error,
        "latest": loaded[ids[0]],
        "latest_status": status_words(loaded[ids[0]], by_revert=False),
        "versions_shown": VERSIONS_SHOWN,
        "newer_from": ids[max(0, start - VERSIONS_SHOWN)] if start else None,
        "older_from": ids[end] if end < len(ids) else None,
    }
    # "Show more" changes stays on this page of versions.
    more: dict[str, Any] = {"changes": shown + CHANGES_SHOWN}
    if start != _page_start("", memory, ids)[0]:
        more["from"] = ids[start]
    context["more_changes"] = urlencode(more)
    if staff:
        context.update(_neighbourhood(request, current, ids))
        context["open_conflicts"] = [
            c
            for c in conflicts
            if c.status == Conflict.Status.OPEN and any(x.pk == memory.pk for x in c.memories.all())
        ]
        if not own:
            # Support's own actions on the memory, each asking why. Only the card's actions
            # are shown: its conflicts are listed above and its reach counted, bounded, so
            # neither is loaded again (a count over every read the memory ever had).
            context["card"] = card_for(
                current,
                CardContext.load(
                    viewer=request.user,
                    subject=memory.subject,
                    memories=[current],
                    conflicts=(),
                    usage=False,
                ),
            )
    status = 400 if changes_error or from_error else 200
    return render(request, "ledger/memory_history.html", context, status=status)
