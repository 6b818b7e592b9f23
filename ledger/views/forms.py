"""What people type on the subject page: the filters of its search, and a correction."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms
from django.http import QueryDict
from django.utils.http import urlencode

from ledger import policy
from ledger.dates import FIRST_YEAR, LAST_YEAR, askable
from ledger.models import Memory

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


class ReasonForm(forms.Form):
    """Why a change is made: required of anyone changing someone else's memory
    (``access.change_needs_reason``), optional for the person."""

    reason = forms.CharField(max_length=500, required=False)

    def __init__(self, *args: Any, reason_required: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["reason"].required = reason_required
        self.fields["reason"].error_messages["required"] = (
            "Support must say why they change someone's memory."
        )

    def problem(self) -> str:
        """Every error, in one sentence to show beside the button."""
        return " ".join(str(e) for field_errors in self.errors.values() for e in field_errors)


class CorrectionForm(ReasonForm):
    statement = forms.CharField(
        max_length=Memory.STATEMENT_MAX,
        error_messages={
            "required": "Write what is right: the statement cannot be empty.",
            "max_length": "Keep it to one sentence of at most %(limit_value)d characters "
            "(this one has %(show_value)d).",
        },
    )

    def clean_statement(self) -> str:
        statement = " ".join(self.cleaned_data["statement"].split())
        bad = policy.forbidden_character(statement)
        if bad:
            raise forms.ValidationError(f"The statement holds an invisible character ({bad}).")
        return statement
