"""Support's queues: the work waiting for a person, oldest first; who has taken each item,
its ticket and internal notes; confirming several waiting guesses at once; and resolving a
journal entry from what the external system shows."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Model, QuerySet
from django.http import Http404, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from ledger import access
from ledger.actions.journal import resolve_journal_entry
from ledger.actions.work import (
    QueueItem,
    add_note,
    assign_work,
    confirm_selected,
    set_ticket,
)
from ledger.actors import Actor
from ledger.models import Conflict, ErasureRequest, JournalEntry, Memory, QueueWork
from ledger.models.work import ITEM_FIELDS
from ledger.reads.queues import (
    WorkFilter,
    confirmed_alone,
    count_up_to,
    queue_rows,
    with_work,
)
from ledger.rules.journal import stale_intent_cutoff
from ledger.rules.refusals import Refusal
from ledger.rules.work import checked_ticket
from ledger.views.answers import answer, refused
from ledger.views.forms.memories import given_reason
from ledger.views.http import SignedInRequest, support_only
from ledger.views.paging import BadCursor, next_query
from ledger.views.runs import JOURNAL_TEMPLATE, journal_context, journal_row, steps_of
from ledger.views.sorting import BadSort, Sortable

PAGE_SIZE = 50
# A queue is counted up to here and then said to hold "more than" this: a count of every
# memory due for review is a scan of most of the table, on the staff home's every load.
COUNT_CAP = 1_000


@dataclass(frozen=True)
class Queue:
    name: str
    title: str
    # What the count means, to follow the number: "1 item waiting", "3 items waiting".
    one: str
    counted: str
    empty: str
    # The columns it may be sorted by; by default oldest first on the one a row entered
    # the queue by.
    sorts: Sortable

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
            Sortable({"opened": "opened_at", "subject": "subject__ref"}, default="opened"),
        ),
        Queue(
            "pending",
            # Not guesses only: writes held for their words or by a quarantine wait here too.
            "Waiting for confirmation: guesses and held writes",
            "item waiting",
            "items waiting",
            "Nothing is waiting for confirmation.",
            Sortable({"written": "written_at", "subject": "subject__ref"}, default="written"),
        ),
        Queue(
            "review",
            "Memories due for review",
            "memory due for review",
            "memories due for review",
            "Nothing is due for review.",
            Sortable({"due": "review_at", "subject": "subject__ref"}, default="due"),
        ),
        Queue(
            "journal",
            "Actions whose outcome nobody knows",
            "action to resolve",
            "actions to resolve",
            "Every journaled action has a known outcome.",
            # Shown as cards, with no column to click: oldest first, or newest (``-journaled``).
            Sortable({"journaled": "created_at"}, default="journaled"),
        ),
    ]
}


# The kind of item each queue holds (``ledger.models.work.ITEM_FIELDS``).
KIND_OF_QUEUE = {
    "conflicts": "conflict",
    "pending": "memory",
    "review": "memory",
    "journal": "journal",
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


def work_filter(data: QueryDict) -> WorkFilter:
    """The queue's narrowing, from the address (so it can be shared, and Back keeps it)."""
    assigned = data.get("assigned", "")
    if assigned not in WorkFilter.CHOICES:
        raise Refusal("assigned_invalid", "Show everything, mine, or unassigned items.", 400)
    return WorkFilter(assigned=assigned, ticket=checked_ticket(data.get("ticket", "")))


def work_of(item: Model) -> QueueWork | None:
    """The work on a row read ``with_work`` (None when nobody has begun any)."""
    work: QueueWork | None = getattr(item, "work", None)
    return work


def queue_page_context(
    request: SignedInRequest, chosen: Queue, data: QueryDict, now: datetime
) -> dict[str, Any]:
    """What a queue's page shows for the address's ``data``: a page of its rows, narrowed
    and sorted as asked, each with the work on it, and the staff an item can be handed to.
    Raises ``BadCursor``, ``BadSort`` and ``Refusal`` (a filter this page does not offer)."""
    filters = work_filter(data)
    sort = chosen.sorts.chosen(data)
    rows = queue_rows(chosen.name, now).filter(filters.where(request.user))
    after = data.get("after", "")
    page = sort.page(with_work(rows), cursor=after, size=PAGE_SIZE)
    cutoff = stale_intent_cutoff(now)
    return {
        "queue": chosen,
        "kind": KIND_OF_QUEUE[chosen.name],
        "filters": filters,
        "filtered": bool(filters.assigned or filters.ticket),
        "sort": sort,
        "count": waiting(rows),
        "page": page,
        "rows": [
            (journal_row(row, cutoff) if chosen.name == "journal" else row, work_of(row))
            for row in page.rows
        ],
        # Pending rows that may not be ticked: each is confirmed on its own.
        "alone": {row.pk for row in page.rows if chosen.name == "pending" and confirmed_alone(row)},
        "next_query": next_query(data, page.next_cursor),
        "staff": list(access.queue_workers()),
        "back": request.get_full_path(),
        "first_page": not after,
    }


@support_only
@require_GET
def queue(request: SignedInRequest, name: str) -> HttpResponse:
    chosen = QUEUES.get(name)
    if chosen is None:
        raise Http404("There is no queue of that name.")
    try:
        context = queue_page_context(request, chosen, request.GET, timezone.now())
    except (BadCursor, BadSort) as error:
        return _bad_address(request, chosen, str(error))
    except Refusal as refusal:
        return _bad_address(request, chosen, refusal.detail)
    return answer(
        request,
        fragment="ledger/queues.html#queue-rows",
        page="ledger/queues.html",
        context=context,
    )


def _bad_address(request: SignedInRequest, chosen: Queue, error: str) -> HttpResponse:
    """The queue's page, or its rows for htmx, saying what in the address it does not
    offer (a filter, a sort, a page), with no rows and a 400."""
    context = {
        "queue": chosen,
        "filters": WorkFilter(),
        # Offers "Show everything": the way back to a queue the page can show.
        "filtered": True,
        "rows": [],
        "page": None,
        "error": error,
        "first_page": True,
    }
    return answer(
        request,
        fragment="ledger/queues.html#queue-rows",
        page="ledger/queues.html",
        context=context,
        status=400,
    )


def _work_item(request: SignedInRequest, kind: str, pk: str) -> QueueItem:
    """The queue item named in the address, for a member of staff; a 404 for anyone else,
    and for an item that does not exist."""
    if not access.may_work_queues(request.user):
        raise Http404
    if kind == "memory":
        try:
            return get_object_or_404(Memory, pk=uuid.UUID(pk))
        except ValueError as error:
            raise Http404 from error
    if not pk.isdigit():
        raise Http404
    if kind == "conflict":
        return get_object_or_404(Conflict, pk=int(pk))
    if kind == "journal":
        return get_object_or_404(JournalEntry.objects.select_related("run"), pk=int(pk))
    raise Http404


def _back(request: SignedInRequest) -> str:
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        back = reverse("queues")
    return back


def _work_context(
    request: SignedInRequest, kind: str, item: QueueItem, back: str, **extra: Any
) -> dict[str, Any]:
    """The item's work box as it is now, swapped in after a change."""
    work = (
        QueueWork.objects.select_related("assignee")
        .prefetch_related("notes")
        .filter(**{ITEM_FIELDS[kind]: item.pk})
        .first()
    )
    return {
        "kind": kind,
        "item": item,
        "work": work,
        "staff": list(access.queue_workers()),
        "back": back,
        **extra,
    }


@support_only
@require_POST
def work_item(request: SignedInRequest, kind: str, pk: str, what: str) -> HttpResponse:
    """Take a queue item, hand it on or give it back (``assign``), file it under a ticket
    (``ticket``) or leave an internal note on it (``note``)."""
    item = _work_item(request, kind, pk)
    back = _back(request)
    actor = Actor.for_user(request.user)
    try:
        match what:
            case "assign":
                done = _assign(request, item, actor)
            case "ticket":
                set_ticket(item=item, ticket=request.POST.get("ticket", ""), actor=actor)
                done = "Ticket reference saved."
            case "note":
                add_note(item=item, text=request.POST.get("text", ""), actor=actor)
                done = "Note added."
            case _:
                raise Http404
    except Refusal as refusal:
        return refused(
            request,
            refusal,
            fragment="ledger/queues.html#work",
            context=lambda: _work_context(request, kind, item, back, notes_open=what == "note"),
            page="ledger/queues.html",
            page_context=lambda: _work_context(request, kind, item, back),
        )
    return answer(
        request,
        fragment="ledger/queues.html#work",
        context=lambda: _work_context(
            request, kind, item, back, note=done, notes_open=what == "note"
        ),
        redirect_to=f"{back}#work-{kind}-{item.pk}",
        redirect_status=303,
        message=done,
    )


def _assign(request: SignedInRequest, item: QueueItem, actor: Actor) -> str:
    name = request.POST.get("assignee", "")
    assignee = None
    if not name and request.POST.get("give_back") != "1":
        # "Hand to" left on "choose…": handing it to nobody is giving it back, which has
        # its own button; a slip must not unassign it.
        raise Refusal("assignee_required", "Choose who to hand it to. Nothing was changed.", 400)
    if name:
        # Only staff are offered; anyone else is refused by the action in words.
        assignee = User.objects.filter(username=name, is_active=True).first()
        if assignee is None:
            raise Refusal("assignee_unknown", f"There is nobody called {name}.", 400)
    assign_work(item=item, assignee=assignee, actor=actor)
    return f"Assigned to {assignee.get_username()}." if assignee else "Given back to the queue."


@support_only
@require_POST
def confirm_pending(request: SignedInRequest) -> HttpResponse:
    """Confirm the selected guesses of the pending queue, with one reason for them all."""
    chosen = QUEUES["pending"]
    back = _back(request)
    if not back.startswith(chosen.url()):
        back = chosen.url()
    actor = Actor.for_user(request.user)

    def page_context(**extra: Any) -> dict[str, Any]:
        return {
            **queue_page_context(request, chosen, QueryDict(), timezone.now()),
            "back": back,
            **extra,
        }

    try:
        confirmed = confirm_selected(
            memories=_selected(request.POST.getlist("memory")),
            actor=actor,
            reason=given_reason(request.POST),
        )
    except Refusal as refusal:
        return refused(
            request,
            refusal,
            fragment="ledger/queues.html#queue-rows",
            context=page_context,
            page="ledger/queues.html",
        )
    said = [
        f"“{done.memory.statement}”: {done.refusal.detail}"
        for done in confirmed
        if done.refusal is not None
    ]
    number = sum(1 for done in confirmed if done.refusal is None)
    summary = f"Confirmed {number} {'guess' if number == 1 else 'guesses'}."
    return answer(
        request,
        fragment="ledger/queues.html#queue-rows",
        context=lambda: page_context(note=summary, problems=said),
        redirect_to=back,
        redirect_status=303,
        message=" ".join([summary, *said]),
    )


def _selected(ids: list[str]) -> list[Memory]:
    """The guesses ticked, in the order shown. An id that is no memory at all is refused
    before anything is confirmed: the page did not offer it."""
    try:
        wanted = list(dict.fromkeys(uuid.UUID(pk) for pk in ids))
    except ValueError as error:
        raise Refusal(
            "selection_invalid", "A selected guess is not one this page offered.", 400
        ) from error
    found = {
        m.pk: m for m in Memory.objects.filter(pk__in=wanted).select_related("subject", "agent")
    }
    if len(found) != len(wanted):
        raise Refusal(
            "selection_unknown",
            "A selected guess does not exist: nothing was confirmed.",
            404,
        )
    return [found[pk] for pk in wanted]


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
