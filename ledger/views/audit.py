"""The audit log, for admins: every change by a person, an agent or the system, filtered
and sorted in the address bar (so a view of it can be shared), a keyset page at a time, and
the same entries as a CSV file streamed row by row. Above it, the audit chain's status: the
last verification (its failing rows marked in the list) and Verify now, with its progress."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass

from django.contrib import messages
from django.http import HttpResponse, HttpResponseBase, QueryDict, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import push_url

from ledger.actions import audit_verified
from ledger.actors import Actor
from ledger.choices import ActorRole
from ledger.reads import audit
from ledger.reads.audit_verified import Verification, last_verification, progress
from ledger.reads.names import Names
from ledger.views.answers import answer
from ledger.views.forms.search import AuditForm
from ledger.views.http import SignedInRequest, admin_only
from ledger.views.sorting import BadSort, Sort, Sortable

TEMPLATE = "ledger/audit.html"
# Entries a page: each lists every field it changed, so a page of 25 is already long, and
# its rendering is most of its time.
PAGE_SIZE = 25
# Entries the export reads at a time: memory stays flat however long the log is.
CSV_CHUNK = 500
CURSOR = "after"
SORT = "sort"
# The log is one order merged from every history table: by when, newest first or oldest
# first. (Who and role would sort by the recorded label, not the name shown.)
AUDIT_SORTS = Sortable(columns={"when": "at"}, default="-when")
CSV_HEADER = [
    "entry",
    "when",
    "who",
    "actor",
    "role",
    "action",
    "kind",
    "object",
    "object_id",
    "subject",
    "field",
    "before",
    "after",
    "reason",
]
# A spreadsheet runs a cell that starts with one of these as a formula.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


@dataclass(frozen=True)
class Row:
    entry: audit.Entry
    who: str
    role: str
    # Why the last verification failed this row ("" when it did not).
    seal_fails: str = ""


def _marks(verification: Verification | None) -> dict[tuple[str, int], str]:
    """The rows the last verification failed, by (kind, id) as the log's entries are."""
    if verification is None or verification.ok:
        return {}
    kinds = audit.kinds_of_tables()
    marks: dict[tuple[str, int], str] = {}
    for failure in verification.failures:
        if failure.table in kinds:
            key = (kinds[failure.table], failure.row_id)
            marks[key] = f"{marks[key]}; {failure.problem}" if key in marks else failure.problem
    return marks


def _chain(polling: bool = False) -> dict[str, object]:
    """The chain's status: the last verification, and the one running if one is."""
    return {"verification": last_verification(), "running": progress(), "polling": polling}


def who(entry: audit.Entry, viewer: str) -> str:
    """Who acted, in the words the history pages use, by the role they had then."""
    name = Actor.username_in(entry.actor) or ""
    staff = frozenset({name} if entry.role in (ActorRole.SUPPORT, ActorRole.ADMIN) else ())
    admins = frozenset({name} if entry.role == ActorRole.ADMIN else ())
    return Names(viewer, staff, admins).who(entry.actor)


def role_words(role: str) -> str:
    return str(ActorRole(role).label) if role in ActorRole.values else ""


def _asked(data: QueryDict, *, cursor: bool = False) -> QueryDict:
    """What was asked, without the empty fields (and without the page's cursor unless
    ``cursor``): the address a view of the log is shared by."""
    asked = QueryDict(mutable=True)
    for name, values in data.lists():
        if (cursor or name != CURSOR) and any(v.strip() for v in values):
            asked.setlist(name, [v for v in values if v.strip()])
    return asked


def _unknown(data: QueryDict) -> list[str]:
    return sorted(name[:50] for name in data if name not in AuditForm.base_fields and name != SORT)


def _refused(request: SignedInRequest, form: AuditForm, problems: list[str]) -> HttpResponse:
    context = {"form": form, "problems": problems, **_chain()}
    return answer(
        request, fragment=f"{TEMPLATE}#results", page=TEMPLATE, context=context, status=400
    )


def _checked(request: SignedInRequest) -> tuple[AuditForm, Sort] | HttpResponse:
    form = AuditForm(request.GET)
    unknown = _unknown(request.GET)
    if unknown:
        return _refused(request, form, [f"Unknown filter: {', '.join(unknown)}."])
    try:
        sort = AUDIT_SORTS.chosen(request.GET)
    except BadSort as error:
        return _refused(request, form, [str(error)])
    if not form.is_valid():
        return _refused(request, form, form.problems())
    return form, sort


@admin_only
@require_GET
def audit_log(request: SignedInRequest) -> HttpResponse:
    checked = _checked(request)
    if isinstance(checked, HttpResponse):
        return checked
    form, sort = checked
    found = audit.page(
        form.filters(),
        after=form.cleaned_data["after"],
        size=PAGE_SIZE,
        oldest_first=not sort.descending,
    )
    viewer = request.user.get_username()
    verification = last_verification()
    marks = _marks(verification)
    asked = _asked(request.GET)
    following = asked.copy()
    following[CURSOR] = found.next_cursor
    context = {
        "form": form,
        "verification": verification,
        "running": progress(),
        "rows": [
            Row(
                entry,
                who(entry, viewer),
                role_words(entry.role),
                marks.get((entry.kind, entry.id), ""),
            )
            for entry in found.entries
        ],
        "sort": sort,
        "narrowed": bool(asked),
        "continued": bool(form.cleaned_data["after"]),
        "older": following.urlencode() if found.next_cursor else "",
        "asked": asked.urlencode(),
    }
    if request.htmx and not request.htmx.history_restore_request:
        response = render(request, f"{TEMPLATE}#results", context)
        # The address bar keeps what was asked, not every empty field of the form.
        push_url(response, f"{reverse('audit')}?{_asked(request.GET, cursor=True).urlencode()}")
    else:
        response = render(request, TEMPLATE, context)
    patch_vary_headers(response, ("HX-Request",))
    return response


@admin_only
@require_GET
def audit_chain(request: SignedInRequest) -> HttpResponse:
    """The chain's status alone, which the page polls while a verification runs. When the
    poll finds it done, the page reloads: its rows' marks are the new verification's."""
    polling = request.GET.get("polling") == "1"
    context = _chain(polling)
    if not request.htmx:
        return redirect("audit")
    response = render(request, f"{TEMPLATE}#chain", context)
    if polling and context["running"] is None:
        response["HX-Refresh"] = "true"
    return response


@admin_only
@require_POST
def audit_verify(request: SignedInRequest) -> HttpResponse:
    """Verify now: queue the verification, once however often it is clicked."""
    problem = audit_verified.start_verification(Actor.for_user(request.user).label)
    return answer(
        request,
        fragment=f"{TEMPLATE}#chain",
        context=lambda: {**_chain(), "problem": problem},
        redirect_to=reverse("audit"),
        message=problem or "The verification was started: its progress is shown below.",
        level=messages.ERROR if problem else messages.SUCCESS,
        status=409 if problem else 200,
    )


class _Echo:
    """A file that hands back what is written to it: ``csv.writer`` formats one row, and
    the response streams it on."""

    def write(self, value: str) -> str:
        return value


def safe_cell(value: str) -> str:
    """A cell a spreadsheet shows as text: a leading formula character is quoted."""
    return f"'{value}" if value.startswith(FORMULA_STARTS) else value


def csv_lines(filters: audit.Filters, *, oldest_first: bool = False) -> Iterator[str]:
    """The header, then one line per field each entry changed (one line for an entry that
    changed none, such as a deletion), newest first; ``entry`` names the entry a line is of,
    the same on each of its lines. Values are the page's words, but for moments, which are
    ISO 8601 like ``when``."""
    writer = csv.writer(_Echo())
    yield writer.writerow(CSV_HEADER)
    for entry in audit.every_entry(filters, chunk=CSV_CHUNK, oldest_first=oldest_first):
        common = [
            f"{entry.kind}-{entry.id}",
            entry.at.isoformat(),
            who(entry, ""),
            entry.actor,
            entry.role,
            entry.action,
            entry.kind_label,
            entry.object_words,
            entry.object_id,
            entry.subject,
        ]
        for change in entry.changes or (audit.Change("", "", ""),):
            cells = [*common, change.field, *change.exported, entry.reason]
            yield writer.writerow([safe_cell(cell) for cell in cells])


@admin_only
@require_GET
def audit_export(request: SignedInRequest) -> HttpResponseBase:
    """The filtered log as a CSV file, whatever the page shows: every matching entry."""
    checked = _checked(request)
    if isinstance(checked, HttpResponse):
        return checked
    form, sort = checked
    filename = f"memoryadmin-audit-{timezone.localdate():%Y-%m-%d}.csv"
    return StreamingHttpResponse(
        csv_lines(form.filters(), oldest_first=not sort.descending),
        content_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )
