"""Support's search across every subject, and everything one message or tool result wrote.

A query that is exactly a run's or a source's reference goes straight to what it names;
anything else lists matching memories in a dense table, newest first or sorted by a column,
a keyset page at a time, with the subjects whose reference or name matches above them, and
above the table the best matches of each type that holds words (``search_everything``):
memories, the ledger, excerpts, run goals and compactions.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from django.db.models import Prefetch, Q
from django.http import Http404, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_GET
from django_htmx.http import push_url, replace_url

from ledger import access
from ledger.dates import day_window
from ledger.models import LedgerEntry, Memory, MemoryQuerySet, Run, Source, Subject
from ledger.reads.retrieval import search_everything
from ledger.rules.memories import RETRACTABLE_MEMORY
from ledger.views.answers import answer
from ledger.views.forms.search import FILTERS, SearchForm
from ledger.views.http import SignedInRequest, support_only
from ledger.views.paging import BadCursor, asked, next_query
from ledger.views.queues import queue_context
from ledger.views.sorting import BadSort, Sortable

PAGE_SIZE = 50
SUBJECTS_SHOWN = 10
# On the staff home without a query: the subjects people most often open first.
HOME_SUBJECTS = 200
# What one message or tool result wrote is a handful of rows; this bounds a reference that
# many agents happened to reuse.
SOURCE_ROWS = 200
MEMORY_SORTS = Sortable(
    columns={
        "written": "written_at",
        "statement": "statement",
        "subject": "subject__ref",
        "kind": "kind",
        "basis": "basis",
        "status": "status",
    },
    default="-written",
)


def _memories(form: SearchForm, now: datetime, viewer: access.Person) -> MemoryQuerySet:
    """The memories the filters allow; the words are matched by the page (``keyset_page``'s
    ``any_of``), each way apart."""
    data = form.cleaned_data
    rows = Memory.objects.visible_to(viewer)
    if data["kind"]:
        rows = rows.filter(kind=data["kind"])
    if data["basis"]:
        rows = rows.filter(basis=data["basis"])
    if data["status"]:
        rows = rows.filter(status=data["status"])
    if data["pending"]:
        rows = rows.pending()
    if data["in_conflict"]:
        rows = rows.in_open_conflict()
    if data["expiring_within"]:
        rows = rows.expiring_within(now, now + timedelta(days=data["expiring_within"]))
    rows = rows.written_between(*day_window(data["written_from"], data["written_to"]))
    sources = Source.objects.select_related("run").order_by("received_at", "id")
    return rows.select_related("subject", "run", "agent").prefetch_related(
        Prefetch("sources", sources)
    )


def _where_it_points(query: str) -> str:
    """The page a query names exactly: a run, or a message or tool result; else ""."""
    if Run.objects.filter(ref=query).exists():
        return reverse("run", args=[query])
    if Source.objects.filter(ref=query).exists():
        return reverse("source", args=[query])
    return ""


def _template(request: SignedInRequest) -> str:
    """The staff home, or for htmx the part of it that the request swaps."""
    if _swapping(request) and request.htmx.target in ("search-results", "subject-results"):
        return f"ledger/home.html#{request.htmx.target}"
    return "ledger/home.html"


def _swapping(request: SignedInRequest) -> bool:
    """An htmx request for a part of the page; Back after htmx's history cache missed asks
    for the whole page instead."""
    return bool(request.htmx) and not request.htmx.history_restore_request


def _keep_in_address(request: SignedInRequest, response: HttpResponse, typing: bool) -> None:
    """One history entry per search: typing refines the entry of the search under way
    (Back never steps through half-typed words), while a search sent, a filter or a sort
    changed, adds one. A search that asks what the address already holds adds none."""
    # The address bar keeps what was asked, not every empty filter of the form.
    url = f"{reverse('home')}?{asked(request.GET).urlencode()}"
    current = urlsplit(request.htmx.current_url or "")
    searching = any(QueryDict(current.query).get(name) for name in ("q", *FILTERS))
    here = f"{current.path}?{current.query}" == url
    if here or (typing and searching):
        replace_url(response, url)
    else:
        push_url(response, url)


def staff_home(request: SignedInRequest) -> HttpResponse:
    """The staff home: one search box across every subject, and what waits in the queues."""
    form = SearchForm(request.GET)
    filters_open = any(request.GET.get(name) for name in FILTERS)
    if not form.is_valid():
        errors = " ".join(
            f"{form.fields[name].label or name}: {error}" if name in form.fields else str(error)
            for name, field_errors in form.errors.items()
            for error in field_errors
        )
        invalid = {"form": form, "errors": errors, "filters_open": filters_open}
        return render(request, _template(request), invalid, status=400)
    query = form.cleaned_data["q"]
    # Results follow the typing; only a submitted search goes straight to the run or the
    # message it names, so a prefix that happens to name one never carries anyone off.
    typing = _swapping(request) and request.htmx.trigger == "q"
    if query and not typing and not form.narrowed() and not form.cleaned_data["after"]:
        target = _where_it_points(query)
        if target:
            return answer(request, redirect_to=target)
    searched = bool(query) or form.narrowed()
    now = timezone.now()
    context: dict[str, Any] = {
        "form": form,
        "query": query,
        "searched": searched,
        "filters_open": filters_open,
    }
    subjects = Subject.objects.visible_to(request.user).with_memory_counts()
    if query:
        subjects = subjects.filter(Q(ref__icontains=query) | Q(display_name__icontains=query))
    if searched:
        # Filters narrow memories; only words can name a subject.
        shown = list(subjects[: SUBJECTS_SHOWN + 1]) if query else []
        memories = _memories(form, now, request.user)
        try:
            sort = MEMORY_SORTS.chosen(request.GET)
            page = sort.page(
                memories,
                cursor=form.cleaned_data["after"],
                size=PAGE_SIZE,
                any_of=memories.search_matches(query, by_subject=bool(shown)) if query else (),
            )
        except (BadSort, BadCursor) as error:
            context.update(errors=str(error))
            return render(request, _template(request), context, status=400)
        if query and not form.cleaned_data["after"] and form.memories_only():
            # Best matches would show memories the filters rule out, and the other types
            # have no kind or status to filter by: the table alone answers a filtered search.
            context["best_left_out"] = True
        elif query and not form.cleaned_data["after"]:
            # The first page only: the next ones go on down the memory table. The days
            # asked narrow every type.
            start, end = day_window(
                form.cleaned_data["written_from"], form.cleaned_data["written_to"]
            )
            context["groups"] = search_everything(query, request.user, start=start, end=end)
        context.update(
            page=page,
            sort=sort,
            retractable=RETRACTABLE_MEMORY,
            subjects=shown[:SUBJECTS_SHOWN],
            more_subjects=len(shown) > SUBJECTS_SHOWN,
            next_query=next_query(request.GET, page.next_cursor),
        )
    else:
        context.update(subjects=subjects[:HOME_SUBJECTS], **queue_context(request, now))
    response = render(request, _template(request), context)
    if _swapping(request):
        _keep_in_address(request, response, typing)
    # Same URL, two bodies: caches must key on the htmx headers too.
    patch_vary_headers(response, ("HX-Request", "HX-Target"))
    return response


@support_only
@require_GET
def source(request: SignedInRequest, ref: str) -> HttpResponse:
    """Everything written from one message or tool result: memories of any status, and the
    ledger entries that cite it, with what was said shown once."""
    evidence = list(
        Source.objects.filter(ref=ref)
        .select_related("run")
        .order_by("received_at", "id")[:SOURCE_ROWS]
    )
    if not evidence:
        raise Http404("No message or tool result has this reference.")
    memories = (
        Memory.objects.visible_to(request.user)
        .filter(pk__in=Source.objects.filter(ref=ref).values("memory_id"))
        .select_related("subject", "run", "agent")
        .prefetch_related(
            Prefetch("sources", Source.objects.filter(ref=ref).select_related("run").order_by("id"))
        )
        .order_by("written_at", "id")[:SOURCE_ROWS]
    )
    entries = (
        LedgerEntry.objects.visible_to(request.user)
        .filter(Q(source__ref=ref) | Q(promotion_source__ref=ref))
        .select_related("subject", "run", "source")
        .order_by("recorded_at", "id")[:SOURCE_ROWS]
    )
    excerpts = list(dict.fromkeys(s.excerpt for s in evidence if s.excerpt))
    return render(
        request,
        "ledger/source.html",
        {
            "ref": ref,
            "first": evidence[0],
            "excerpts": excerpts,
            "memories": memories,
            "entries": entries,
            "limit": SOURCE_ROWS,
        },
    )
