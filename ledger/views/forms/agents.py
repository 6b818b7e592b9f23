"""What an admin types about agents: a new one, rotating its key, revoking it, and the
restrictions on its writes, each with why."""

from __future__ import annotations

from typing import Any

from django import forms

from ledger.models import Agent
from ledger.rules.agents import GRACE_HOURS_MAX, Restriction, refuse_bad_agent_name
from ledger.rules.refusals import Refusal
from ledger.rules.text import forbidden_in_excerpt

REASON_MAX = 2000

SCOPE_WORDS = {
    Agent.Scope.READ: "Read: recall memories, read the ledger, the journal and run notes.",
    Agent.Scope.WRITE: "Write: write memories, ledger entries, the journal, notes and snapshots.",
    Agent.Scope.STAFF: "Staff: delete memories in batches across every subject, and "
    "change any agent's writes (support's tooling). Give it only to a tool people run.",
}
SCOPE_LIST = "read, write or staff"


class ReasonField(forms.CharField):
    """Why: required, kept in the agent's history, free of invisible characters."""

    def __init__(self, *, why: str) -> None:
        super().__init__(
            max_length=REASON_MAX,
            error_messages={
                "required": f"Say why {why}: the reason is kept in the agent's history.",
                "max_length": "Keep the reason to %(limit_value)d characters "
                "(this one has %(show_value)d).",
            },
        )

    def clean(self, value: Any) -> str:
        reason: str = super().clean(value)
        bad = forbidden_in_excerpt(reason)
        if bad:
            raise forms.ValidationError(f"The reason holds an invisible character ({bad}).")
        return reason


class AgentForm(forms.Form):
    name = forms.CharField(
        max_length=100,
        error_messages={
            "required": "Give the agent a name, such as crm-assistant.",
            "max_length": "Keep the name to %(limit_value)d characters.",
        },
    )
    scopes = forms.MultipleChoiceField(
        choices=list(SCOPE_WORDS.items()),
        error_messages={
            "required": f"Choose at least one scope: {SCOPE_LIST}.",
            "invalid_choice": f"'%(value)s' is not a scope: choose {SCOPE_LIST}.",
        },
    )

    def clean_name(self) -> str:
        name: str = self.cleaned_data["name"]
        try:
            refuse_bad_agent_name(name)
        except Refusal as refusal:
            raise forms.ValidationError(refusal.detail) from None
        return name


class RotateForm(forms.Form):
    grace_hours = forms.IntegerField(
        min_value=0,
        max_value=GRACE_HOURS_MAX,
        error_messages={
            "required": f"Say how many hours the old key keeps working (0 to {GRACE_HOURS_MAX}).",
            "invalid": f"Give the grace period in whole hours, 0 to {GRACE_HOURS_MAX}.",
            "min_value": f"The grace period is between 0 and {GRACE_HOURS_MAX} hours.",
            "max_value": f"The grace period is between 0 and {GRACE_HOURS_MAX} hours (30 days).",
        },
    )
    reason = ReasonField(why="the key is rotated")
    # The newest key when the page was shown: a second submit of the same form (a reload)
    # must not rotate again and cut short the key that was just handed out.
    newest = forms.CharField(max_length=16, required=False)


class RevokeForm(forms.Form):
    reason = ReasonField(why="the agent is revoked")
    confirm = forms.BooleanField(
        error_messages={
            "required": "Tick the box to confirm: every key of this agent stops working at once."
        }
    )


class RestrictForm(forms.Form):
    restriction = forms.ChoiceField(
        choices=[(r.value, r.words) for r in Restriction],
        error_messages={"invalid_choice": "Choose writes_paused, quarantined or stated_untrusted."},
    )
    on = forms.TypedChoiceField(
        choices=[("1", "on"), ("0", "off")],
        coerce=lambda value: value == "1",
        error_messages={
            "invalid_choice": "Say whether to put the restriction on (1) or lift it (0)."
        },
    )
    reason = ReasonField(why="the agent's writes change")
