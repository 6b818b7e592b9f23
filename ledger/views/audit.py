"""The audit log, for admins: every change by a person, an agent or the system, filtered
in the address bar (so a view of it can be shared), a keyset page at a time, and the same
entries as a CSV file streamed row by row."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass

from django.http import HttpResponse, HttpResponseBase, QueryDict, StreamingHttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_GET
from django_htmx.http import push_url

from ledger.actors import Actor
from ledger.choices import ActorRole
from ledger.reads import audit
from ledger.reads.names import Names
from ledger.views.answers import answer
from ledger.views.forms.search import AuditForm
from ledger.views.http import SignedInRequest, admin_only

TEMPLATE = "ledger/audit.html"
PAGE_SIZE = 50
# Entries the export reads at a time: memory stays flat however long the log is.
CSV_CHUNK = 500
CURSOR = "after"
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
    return sorted(name[:50] for name in data if name not in AuditForm.base_fields)


def _refused(request: SignedInRequest, form: AuditForm, problems: list[str]) -> HttpResponse:
    context = {"form": form, "problems": problems}
    return answer(
        request, fragment=f"{TEMPLATE}#results", page=TEMPLATE, context=context, status=400
    )


def _checked(request: SignedInRequest) -> AuditForm | HttpResponse:
    form = AuditForm(request.GET)
    unknown = _unknown(request.GET)
    if unknown:
        return _refused(request, form, [f"Unknown filter: {', '.join(unknown)}."])
    if not form.is_valid():
        return _refused(request, form, form.problems())
    return form


@admin_only
@require_GET
def audit_log(request: SignedInRequest) -> HttpResponse:
    form = _checked(request)
    if isinstance(form, HttpResponse):
        return form
    found = audit.page(form.filters(), after=form.cleaned_data["after"], size=PAGE_SIZE)
    viewer = request.user.get_username()
    asked = _asked(request.GET)
    following = asked.copy()
    following[CURSOR] = found.next_cursor
    context = {
        "form": form,
        "rows": [Row(entry, who(entry, viewer), role_words(entry.role)) for entry in found.entries],
        "narrowed": bool(asked),
        "continued": bool(form.cleaned_data["after"]),
        "older": following.urlencode() if found.next_cursor else "",
        "asked": asked.urlencode(),
    }
    if request.htmx:
        response = render(request, f"{TEMPLATE}#results", context)
        # The address bar keeps what was asked, not every empty field of the form.
        push_url(response, f"{reverse('audit')}?{_asked(request.GET, cursor=True).urlencode()}")
    else:
        response = render(request, TEMPLATE, context)
    patch_vary_headers(response, ("HX-Request",))
    return response


class _Echo:
    """A file that hands back what is written to it: ``csv.writer`` formats one row, and
    the response streams it on."""

    def write(self, value: str) -> str:
        return value


def safe_cell(value: str) -> str:
    """A cell a spreadsheet shows as text: a leading formula character is quoted."""
    return f"'{value}" if value.startswith(FORMULA_STARTS) else value


def csv_lines(filters: audit.Filters) -> Iterator[str]:
    """The header, then one line per field each entry changed (one line for an entry that
    changed none, such as a deletion), newest first; ``entry`` names the entry a line is of,
    the same on each of its lines. Values are the page's words, but for moments, which are
    ISO 8601 like ``when``."""
    writer = csv.writer(_Echo())
    yield writer.writerow(CSV_HEADER)
    for entry in audit.every_entry(filters, chunk=CSV_CHUNK):
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
    form = _checked(request)
    if isinstance(form, HttpResponse):
        return form
    filename = f"memoryadmin-audit-{timezone.localdate():%Y-%m-%d}.csv"
    return StreamingHttpResponse(
        csv_lines(form.filters()),
        content_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )
