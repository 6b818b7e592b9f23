"""What people type to change memories: why (a reason), a correction, an admin's revert,
and support's batch deletion (what to select, and why)."""

from __future__ import annotations

import uuid
from typing import Any

from django import forms
from django.http import QueryDict

from ledger.actions.retractions import Selection
from ledger.models import Memory
from ledger.rules.refusals import Refusal
from ledger.rules.text import forbidden_character

# An admin's reason for a revert, kept in the history of both memories.
REVERT_REASON_MAX = 500
# Support's reason for a batch deletion, kept in each memory's history.
BATCH_REASON_MAX = 2000
WHEN_HELP = "a date and time such as 2027-03-04 18:00"
# Memories ticked in the search results: a few pages' worth, within the address's length.
TICKED_MAX = 200


class ReasonForm(forms.Form):
    """Why a change is made, in the words of whoever makes it. Whether one must be given
    (support changing someone's memory must say why; the person need not) is the actions'
    rule: this only checks what was typed."""

    reason = forms.CharField(max_length=500, required=False)

    def problem(self) -> str:
        """Every error, in one sentence to show beside the button."""
        return " ".join(str(e) for field_errors in self.errors.values() for e in field_errors)


def given_reason(data: QueryDict) -> str:
    """The reason posted with a change ("" when none was given), for the action to judge.
    One that cannot be kept as typed (too long, a NUL byte) is a 400 in words."""
    form = ReasonForm(data)
    if not form.is_valid():
        raise Refusal("reason_invalid", form.problem(), 400)
    reason: str = form.cleaned_data["reason"]
    return reason


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
        bad = forbidden_character(statement)
        if bad:
            raise forms.ValidationError(f"The statement holds an invisible character ({bad}).")
        return statement


class RevertForm(forms.Form):
    reason = forms.CharField(
        max_length=REVERT_REASON_MAX,
        error_messages={
            "required": "Say why this correction is reverted: the reason is kept in the "
            "history of both memories. Nothing was changed.",
            "max_length": "Keep the reason to %(limit_value)d characters (this one has "
            "%(show_value)d). Nothing was changed.",
        },
    )


class TickedField(forms.Field):
    """Memories ticked one by one: a ``memories`` value each (the search's checkboxes), or
    one with their ids comma-separated (as the preview sends them back)."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value: Any) -> tuple[uuid.UUID, ...]:
        texts = [part.strip() for item in value or () for part in str(item).split(",")]
        texts = [text for text in texts if text]
        if len(texts) > TICKED_MAX:
            raise forms.ValidationError(
                f"Tick at most {TICKED_MAX} memories for one batch ({len(texts)} are ticked)."
            )
        ids = []
        for text in texts:
            try:
                ids.append(uuid.UUID(text))
            except ValueError:
                raise forms.ValidationError(f"“{text[:50]}” is not a memory's id.") from None
        return tuple(dict.fromkeys(ids))


class SelectionForm(forms.Form):
    source_ref = forms.CharField(label="Source reference", max_length=200, required=False)
    run = forms.CharField(label="Run", max_length=100, required=False)
    agent = forms.CharField(label="Agent", max_length=100, required=False)
    written_after = forms.DateTimeField(
        label="Written after",
        required=False,
        error_messages={"invalid": f"Written after: give {WHEN_HELP}."},
    )
    written_before = forms.DateTimeField(
        label="Written before",
        required=False,
        error_messages={"invalid": f"Written before: give {WHEN_HELP}."},
    )
    memories = TickedField(label="Memories", required=False)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for name in ("source_ref", "run", "agent"):
            bad = forbidden_character(data.get(name) or "")
            if bad:
                self.add_error(name, f"{self.fields[name].label} holds an invisible character.")
        return data

    def selection(self) -> Selection:
        return Selection.from_data(self.cleaned_data)


class BatchForm(SelectionForm):
    reason = forms.CharField(
        max_length=BATCH_REASON_MAX,
        error_messages={
            "required": "Say why these memories are deleted: the reason is kept in each "
            "one's history."
        },
    )
    expected = forms.IntegerField(min_value=0)
