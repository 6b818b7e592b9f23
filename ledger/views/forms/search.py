"""What people type to find things: the subject page's filters, support's search, the
audit log's, the corrections review's and the complaint page's filters, and the
generations a compaction diff compares."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from django import forms
from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.http import QueryDict
from django.utils.http import urlencode

from ledger.actors import Actor
from ledger.choices import ActorRole
from ledger.dates import FIRST_YEAR, LAST_YEAR, askable, day_window
from ledger.models import Agent, Memory, Snapshot, Subject
from ledger.reads import audit
from ledger.rules.text import forbidden_character
from ledger.views.presenting import STATUS_CHANGES

ANY = [("", "Any")]

# The subject page's filters.

STATUS_FILTERS = {
    "": "Current",
    "active": "In use",
    "pending": "Waiting for confirmation",
    "expired": "Expired",
    "retracted": "Deleted",
}
BASIS_FILTERS = {"": "Anyone", "stated": "Said by the person", "inferred": "Guessed"}


@dataclass
class Filters:
    q: str = ""
    kind: str = ""
    basis: str = ""
    status: str = ""

    @classmethod
    def from_data(cls, data: QueryDict) -> Filters:
        def pick(name: str, allowed: Any) -> str:
            value = data.get(name, "")
            return value if value in allowed else ""

        return cls(
            q=data.get("q", "").strip()[:200],
            kind=pick("kind", Memory.Kind.values),
            basis=pick("basis", BASIS_FILTERS),
            status=pick("status", STATUS_FILTERS),
        )

    @property
    def narrowed(self) -> bool:
        return bool(self.q or self.kind or self.basis or self.status)

    def query(self) -> str:
        """The filters set, as a query string a link to another page of the list keeps
        ("" when none is set)."""
        fields = {"q": self.q, "kind": self.kind, "basis": self.basis, "status": self.status}
        return urlencode({name: value for name, value in fields.items() if value})


class DayField(forms.DateField):
    """A calendar day a person asks about, within the years the pages can look around."""

    def validate(self, value: Any) -> None:
        super().validate(value)
        if value and not askable(value):
            raise forms.ValidationError(f"Choose a day between {FIRST_YEAR} and {LAST_YEAR}.")


# Support's search across every subject.

EXPIRING_DAYS_MAX = 3650
QUERY_MAX = 200
# The search's filters besides its words: any of them set opens the filters on the page.
FILTERS = (
    "kind",
    "basis",
    "status",
    "written_from",
    "written_to",
    "expiring_within",
    "in_conflict",
    "pending",
)
# The filters that only memories have; the days narrow every type of the best matches too.
MEMORY_FILTERS = tuple(name for name in FILTERS if name not in ("written_from", "written_to"))


class SearchForm(forms.Form):
    q = forms.CharField(
        required=False,
        max_length=QUERY_MAX,
        strip=True,
        label="Search",
        error_messages={
            "max_length": "%(show_value)d characters is too long for a search (%(limit_value)d "
            "at most): a few distinctive words, a reference or a name find what you need."
        },
    )
    kind = forms.ChoiceField(required=False, choices=ANY + list(Memory.Kind.choices), label="Kind")
    basis = forms.ChoiceField(
        required=False, choices=ANY + list(Memory.Basis.choices), label="Said or guessed"
    )
    status = forms.ChoiceField(
        required=False,
        choices=ANY + [(s, STATUS_CHANGES[s]) for s in Memory.Status.values],
        label="Status",
    )
    written_from = DayField(required=False, label="Written from")
    written_to = DayField(required=False, label="Written to (inclusive)")
    expiring_within = forms.IntegerField(
        required=False, min_value=1, max_value=EXPIRING_DAYS_MAX, label="Expiring within (days)"
    )
    in_conflict = forms.BooleanField(required=False, label="In an open conflict")
    pending = forms.BooleanField(required=False, label="Waiting for confirmation")
    after = forms.CharField(required=False, label="Next page")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        start, end = data.get("written_from"), data.get("written_to")
        if start and end and end < start:
            raise forms.ValidationError("“Written to” is before “written from”.")
        return data

    def narrowed(self) -> bool:
        """Whether any filter besides the text is set."""
        return any(self.cleaned_data.get(name) for name in FILTERS)

    def memories_only(self) -> bool:
        """Whether a filter only a memory has is set: any but the days written."""
        return any(self.cleaned_data.get(name) for name in MEMORY_FILTERS)


# The audit log's filters.


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
        bad = forbidden_character(value)
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


# The corrections review's filters.

# The roles that correct on the dashboard, worded as the audit log's role filter words them.
WHO_CHOICES = [("", "Any")] + [
    (role.value, role.label) for role in (ActorRole.PERSON, ActorRole.SUPPORT, ActorRole.ADMIN)
]


class CorrectionFilters(forms.Form):
    # The labels are the audit log's: the same words filter both pages.
    who = forms.ChoiceField(required=False, choices=WHO_CHOICES, label="Role")
    person = forms.CharField(required=False, max_length=150, label="Person (username)")
    subject = forms.CharField(required=False, max_length=100, label="Subject (reference)")
    written_from = DayField(required=False, label="From (day)")
    written_to = DayField(required=False, label="To (day, included)")
    after = forms.CharField(required=False, label="Next page")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        start, end = data.get("written_from"), data.get("written_to")
        if start and end and end < start:
            self.add_error("written_to", "“To” is before “from”.")
        ref = data.get("subject") or ""
        data["subject_row"] = Subject.objects.filter(ref=ref).first() if ref else None
        if ref and data["subject_row"] is None:
            self.add_error("subject", f"No subject has the reference “{ref}”.")
        return data


# The complaint page.


class ComplaintForm(forms.Form):
    """What support knows of a complaint: its words, whom it is about, the days; the words
    or the subject at least. ``subjects`` are the ones the viewer may see."""

    phrase = forms.CharField(label="Words from the complaint", max_length=200, required=False)
    subject = forms.CharField(label="Subject (reference or name)", max_length=200, required=False)
    start = DayField(label="From (day)", required=False)
    end = DayField(label="To (day, included)", required=False)

    def __init__(self, *args: Any, subjects: QuerySet[Subject], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.subjects = subjects

    def clean_phrase(self) -> str:
        phrase: str = self.cleaned_data["phrase"].strip()
        return phrase

    def clean_subject(self) -> Subject | None:
        """A subject's reference, or its name when exactly one subject has it; None when
        none is given (the words alone are searched)."""
        typed = self.cleaned_data["subject"].strip()
        if not typed:
            return None
        subject = self.subjects.filter(ref=typed).first()
        if subject is not None:
            return subject
        named = list(self.subjects.filter(display_name__iexact=typed)[:2])
        if len(named) == 1:
            return named[0]
        if named:
            raise forms.ValidationError(
                f"More than one subject is called “{typed}”: give the reference instead."
            )
        raise forms.ValidationError(f"No subject has the reference or name “{typed}”.")

    def clean(self) -> dict[str, object] | None:
        data = super().clean() or {}
        start, end = data.get("start"), data.get("end")
        if isinstance(start, date) and isinstance(end, date) and start > end:
            raise forms.ValidationError("The first day comes after the last one.")
        # A subject typed but not found has said so already.
        if not data.get("phrase") and not data.get("subject") and "subject" not in self.errors:
            raise forms.ValidationError(
                "Nothing to look for: give words from the complaint, a subject, or both."
            )
        return data


# The compaction diff.


class DiffForm(forms.Form):
    a = forms.TypedChoiceField(label="From generation", coerce=int)
    b = forms.TypedChoiceField(label="To generation", coerce=int)

    def __init__(self, *args: Any, generations: Sequence[Snapshot], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = [
            (str(s.generation), f"{s.generation} ({s.get_status_display()})") for s in generations
        ]
        for name in ("a", "b"):
            field = self.fields[name]
            assert isinstance(field, forms.ChoiceField)
            field.choices = choices
