"""The audit log, for admins: every change by a person, an agent or the system, filtered
in the address bar (so a view of it can be shared), a keyset page at a time, and the same
entries as a CSV file streamed row by row."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from typing import Any

from django import forms
from django.contrib.auth.models import User
from django.http import HttpResponse, HttpResponseBase, QueryDict, StreamingHttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_GET
from django_htmx.http import push_url

from ledger import audit, policy
from ledger.actors import Actor
from ledger.choices import ActorRole
from ledger.dates import day_window
from ledger.models import Agent
from ledger.views.forms import DayField
from ledger.views.http import SignedInRequest, admin_only
from ledger.views.presenting import Names

TEMPLATE = "ledger/audit.html"
PAGE_SIZE = 50
# Entries the export reads at a time: memory stays flat however long the log is.
CSV_CHUNK = 500
ANY = [("", "Any")]
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


class AuditForm(forms.Form):
    person = forms.CharField(label="Person (username)", max_length=150, required=False)
    agent = forms.CharField(label="Agent (name)", max_length=100, required=False)
    role = forms.ChoiceField(label="Role", choices=ANY + list(ActorRole.choices), required=False)
    subject = forms.CharField(label="Subject (reference)", max_length=100, required=False)
    action = forms.ChoiceField(
        label="Action",
        choices=ANY + [(words, words) for words in audit.ACTIONS.values()],
        required=False,
    )
    kind = forms.ChoiceField(label="Kind of object", required=False)
    start = DayField(label="From (day)", required=False)
    end = DayField(label="To (day, included)", required=False)
    after = forms.CharField(label="Older entries", max_length=300, required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        named = sorted(audit.kinds().items(), key=lambda item: item[1])
        self.fields["kind"].choices = ANY + [(kind, label) for kind, label in named]  # type: ignore[attr-defined]

    def _text(self, name: str) -> str:
        value: str = self.cleaned_data[name].strip()
        bad = policy.forbidden_character(value)
        if bad:
            raise forms.ValidationError(f"It holds an invisible character ({bad}).")
        return value

    def clean_person(self) -> str:
        username = self._text("person")
        if username and not User.objects.filter(username=username).exists():
            raise forms.ValidationError(f"Nobody is called “{username}”.")
        return username

    def clean_agent(self) -> str:
        name = self._text("agent")
        if name and not Agent.objects.filter(name=name).exists():
            raise forms.ValidationError(f"No agent is called “{name}”.")
        return name

    def clean_subject(self) -> int | None:
        ref = self._text("subject")
        if not ref:
            return None
        found = audit.subject_id_for(ref)
        if found is None:
            raise forms.ValidationError(f"No subject has the reference “{ref}”.")
        return found

    def clean_after(self) -> audit.Cursor | None:
        text = self.cleaned_data["after"].strip()
        try:
            return audit.Cursor.decode(text) if text else None
        except audit.BadCursor as error:
            raise forms.ValidationError(str(error)) from error

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("person") and data.get("agent"):
            self.add_error("agent", "Choose a person or an agent: each change has one author.")
        start, end = data.get("start"), data.get("end")
        if isinstance(start, date) and isinstance(end, date) and end < start:
            self.add_error("end", "This day comes before the first one.")
        return data

    def filters(self) -> audit.Filters:
        data = self.cleaned_data
        start, end = day_window(data["start"], data["end"])
        if data["person"]:
            actor = Actor.label_for_user(data["person"])
        else:
            actor = f"agent:{data['agent']}" if data["agent"] else ""
        return audit.Filters(
            actor=actor,
            role=data["role"],
            subject_id=data["subject"],
            action=data["action"],
            kind=data["kind"],
            start=start,
            end=end,
        )

    def problems(self) -> list[str]:
        """Every error, each naming its field."""
        return [
            f"{self.fields[name].label}: {error}" if name in self.fields else str(error)
            for name, errors in self.errors.items()
            for error in errors
        ]


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
    template = f"{TEMPLATE}#results" if request.htmx else TEMPLATE
    response = render(request, template, context, status=400)
    patch_vary_headers(response, ("HX-Request",))
    return response


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
