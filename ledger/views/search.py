"""Support's search across every subject, and everything one message or tool result wrote.

A query that is exactly a run's or a source's reference goes straight to what it names;
anything else lists matching memories in a dense table, newest first, a keyset page at a
time, with the subjects whose reference or name matches above them, and above the table
the best matches of each type that holds words (``search_everything``): memories, the
ledger, excerpts, run goals and compactions.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db.models import Prefetch, Q
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_GET
from django_htmx.http import push_url

from ledger import access
from ledger.dates import day_window
from ledger.models import LedgerEntry, Memory, MemoryQuerySet, Run, Source, Subject
from ledger.reads.retrieval import search_everything
from ledger.views.answers import answer
from ledger.views.forms.search import FILTERS, SearchForm
from ledger.views.http import SignedInRequest, support_only
from ledger.views.paging import BadCursor, asked, keyset_page, next_query
from ledger.views.queues import queue_context

PAGE_SIZE = 50
SUBJECTS_SHOWN = 10
# On the staff home without a query: the subjects people most often open first.
HOME_SUBJECTS = 200
# What one message or tool result wrote is a handful of rows; this bounds a reference that
# many agents happened to reuse.
SOURCE_ROWS = 200


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
        return render(request, "ledger/home.html", invalid, status=400)
    query = form.cleaned_data["q"]
    # Results follow the typing; only a submitted search goes straight to the run or the
    # message it names, so a prefix that happens to name one never carries anyone off.
    typing = bool(request.htmx) and request.htmx.trigger == "q"
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
            page = keyset_page(
                memories,
                field="written_at",
                cursor=form.cleaned_data["after"],
                size=PAGE_SIZE,
                newest_first=True,
                any_of=memories.search_matches(query, by_subject=bool(shown)) if query else (),
            )
        except BadCursor as error:
            context.update(errors=str(error))
            return render(request, "ledger/home.html", context, status=400)
        if query and not form.cleaned_data["after"]:
            # The first page only: the next ones go on down the memory table. The days
            # asked narrow every type; the other filters are the memory table's own.
            start, end = day_window(
                form.cleaned_data["written_from"], form.cleaned_data["written_to"]
            )
            context["groups"] = search_everything(query, request.user, start=start, end=end)
        context.update(
            page=page,
            subjects=shown[:SUBJECTS_SHOWN],
            more_subjects=len(shown) > SUBJECTS_SHOWN,
            next_query=next_query(request.GET, page.next_cursor),
        )
    else:
        context.update(subjects=subjects[:HOME_SUBJECTS], **queue_context(request, now))
    template = "ledger/home.html"
    if request.htmx and request.htmx.target in ("search-results", "subject-results"):
        template += "#" + request.htmx.target
    response = render(request, template, context)
    if request.htmx:
        # The address bar keeps what was asked, not every empty filter of the form.
        push_url(response, f"{reverse('home')}?{asked(request.GET).urlencode()}")
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
