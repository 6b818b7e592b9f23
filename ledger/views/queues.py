"""Support's queues: the work waiting for a person, oldest first, and resolving a journal
entry from what the external system shows."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from ledger import access
from ledger.actions.journal import resolve_journal_entry
from ledger.actors import Actor
from ledger.models import ErasureRequest, JournalEntry
from ledger.reads.queues import count_up_to, queue_rows
from ledger.rules.journal import stale_intent_cutoff
from ledger.rules.refusals import Refusal
from ledger.views.answers import answer, refused
from ledger.views.http import SignedInRequest, support_only
from ledger.views.paging import BadCursor, keyset_page
from ledger.views.runs import JOURNAL_TEMPLATE, journal_context, journal_row, steps_of

PAGE_SIZE = 50
# A queue is counted up to here and then said to hold "more than" this: a count of every
# memory due for review is a scan of most of the table, on the staff home's every load.
COUNT_CAP = 1_000


@dataclass(frozen=True)
class Queue:
    name: str
    title: str
    # What the count means, to follow the number: "1 guess waiting", "3 guesses waiting".
    one: str
    counted: str
    empty: str
    # The column a row entered the queue by; the list is oldest first on it.
    field: str

    def url(self) -> str:
        return reverse("queue", args=[self.name])


# Erasure is not support's queue: the person's own and an admin's happen at once, and
# support's waits for an admin on the admins' page (counted for them by ``queue_context``).
QUEUES = {
    queue.name: queue
    for queue in [
        Queue(
            "conflicts",
            "Conflicts to resolve",
            "conflict to resolve",
            "conflicts to resolve",
            "No open conflicts.",
            "opened_at",
        ),
        Queue(
            "pending",
            "Guesses waiting for confirmation",
            "guess waiting",
            "guesses waiting",
            "No guesses are waiting for confirmation.",
            "written_at",
        ),
        Queue(
            "review",
            "Memories due for review",
            "memory due for review",
            "memories due for review",
            "Nothing is due for review.",
            "review_at",
        ),
        Queue(
            "journal",
            "Actions whose outcome nobody knows",
            "action to resolve",
            "actions to resolve",
            "Every journaled action has a known outcome.",
            "created_at",
        ),
    ]
}


@dataclass(frozen=True)
class Waiting:
    """How much waits in a queue, counted up to ``COUNT_CAP``: "1000+" past it."""

    number: int
    more: bool

    def __str__(self) -> str:
        return f"{self.number}+" if self.more else str(self.number)


def waiting(rows: QuerySet[Any]) -> Waiting:
    """How many of ``rows`` there are, in one query that stops past ``COUNT_CAP``."""
    counted = count_up_to(rows, COUNT_CAP)
    return Waiting(min(counted, COUNT_CAP), counted > COUNT_CAP)


def queue_counts(now: datetime) -> list[tuple[Queue, Waiting]]:
    """How much is waiting in each queue: one count each, over what the queue holds."""
    return [(queue, waiting(queue_rows(queue.name, now))) for queue in QUEUES.values()]


def queue_context(request: SignedInRequest, now: datetime) -> dict[str, Any]:
    """The queue box's counts; for an admin also the erasure requests waiting for one (one
    more count), which support only files."""
    erasures = (
        waiting(ErasureRequest.objects.waiting())
        if access.may_decide_erasures(request.user)
        else None
    )
    return {"counts": queue_counts(now), "erasures_waiting": erasures}


@support_only
@require_GET
def queues(request: SignedInRequest) -> HttpResponse:
    return render(request, "ledger/queues.html", queue_context(request, timezone.now()))


@support_only
@require_GET
def queue(request: SignedInRequest, name: str) -> HttpResponse:
    chosen = QUEUES.get(name)
    if chosen is None:
        raise Http404("There is no queue of that name.")
    now = timezone.now()
    rows = queue_rows(name, now)
    try:
        page = keyset_page(
            rows,
            field=chosen.field,
            cursor=request.GET.get("after", ""),
            size=PAGE_SIZE,
            newest_first=False,
        )
    except BadCursor as error:
        return HttpResponse(str(error), status=400, content_type="text/plain; charset=utf-8")
    cutoff = stale_intent_cutoff(now)
    context = {
        "queue": chosen,
        "count": waiting(rows),
        "page": page,
        "journal_rows": [journal_row(e, cutoff) for e in page.rows] if name == "journal" else [],
        "back": request.get_full_path(),
        "first_page": not request.GET.get("after"),
    }
    return answer(
        request,
        fragment="ledger/queues.html#queue-rows",
        page="ledger/queues.html",
        context=context,
    )


@support_only
@require_POST
def journal_resolve(request: SignedInRequest, pk: int) -> HttpResponse:
    """Record a journal entry as done or not done, with what the person checked."""
    entry = get_object_or_404(JournalEntry.objects.select_related("run", "agent"), pk=pk)
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        back = reverse("run-journal", args=[entry.run.ref])
    verification = request.POST.get("verification", "")
    try:
        entry = resolve_journal_entry(
            entry=entry,
            state=request.POST.get("state", ""),
            verification=verification,
            actor=Actor.for_user(request.user),
        )
    except Refusal as refusal:
        entry.refresh_from_db()
        return refused(
            request,
            refusal,
            fragment=f"{JOURNAL_TEMPLATE}#entry",
            context=lambda: _entry(request, entry, back, verification=verification),
            # The run's journal, with the refusal said on it and its 4xx kept.
            page=JOURNAL_TEMPLATE,
            page_context=lambda: journal_context(request, entry.run),
        )
    note = f"Recorded as {entry.get_state_display()}, with what you checked."
    return answer(
        request,
        fragment=f"{JOURNAL_TEMPLATE}#entry",
        context=lambda: _entry(request, entry, back, note=note),
        redirect_to=f"{back}#journal-{entry.pk}",
        redirect_status=303,
        message=note,
    )


def _entry(
    request: SignedInRequest, entry: JournalEntry, back: str, **extra: str
) -> dict[str, Any]:
    """What the entry's card reads, swapped in after a resolution: its steps, the new one
    among them."""
    steps = steps_of(JournalEntry.objects.filter(pk=entry.pk), request.user).get(entry.pk, ())
    return {
        "row": journal_row(entry, stale_intent_cutoff(), steps),
        "back": back,
        "show_run": request.POST.get("show_run") == "1",
        **extra,
    }
