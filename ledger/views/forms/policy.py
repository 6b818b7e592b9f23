"""What an admin types to change the write policy: every setting at once, the version it
was read at, and why."""

from __future__ import annotations

import re
from typing import Any

from django import forms

from ledger.models import Policy
from ledger.rules.reasons import refuse_without_reason
from ledger.rules.refusals import Refusal
from ledger.rules.write_policy import (
    KEYS_SETTING,
    POLICY_SETTINGS,
    PolicySetting,
    policy_problems,
)

REASON_MAX = 2000
# Room for a hundred long keys; anything longer is not a list someone typed.
KEYS_TEXT_MAX = 12_000


class KeysField(forms.Field):
    """Slot keys as an admin types them: one a line (commas or spaces part them too)."""

    widget = forms.Textarea

    def to_python(self, value: Any) -> list[str]:
        text = str(value or "")
        if len(text) > KEYS_TEXT_MAX:
            raise forms.ValidationError(f"Keep the list under {KEYS_TEXT_MAX} characters.")
        return [key for key in re.split(r"[\s,]+", text) if key]


def _field_for(setting: PolicySetting, value: Any) -> forms.Field:
    if setting.name == KEYS_SETTING:
        return KeysField(required=False, initial="\n".join(value))
    if setting.off_on is not None:
        # A box left unticked is not sent at all: off.
        return forms.BooleanField(required=False, initial=value)
    return forms.IntegerField(
        initial=value,
        error_messages={
            "required": f"Give a number of {setting.many}.",
            "invalid": f"Give a whole number of {setting.many}, such as {value}.",
        },
    )


class PolicyForm(forms.Form):
    """Every setting at once, the version it was read at, and why it changes."""

    version = forms.IntegerField(
        error_messages={
            "required": "Reload the page: the form did not say which version you changed.",
            "invalid": "Reload the page: the form did not say which version you changed.",
        }
    )
    reason = forms.CharField(
        max_length=REASON_MAX,
        error_messages={
            "required": "Say why the policy changes: the reason is kept in its history, "
            "beside what changed.",
            "max_length": f"Keep the reason to {REASON_MAX} characters.",
            "null_characters_not_allowed": "The reason holds an invisible character: "
            "type it again.",
        },
    )

    def __init__(self, *args: Any, current: Policy, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for setting in POLICY_SETTINGS:
            self.fields[setting.name] = _field_for(setting, getattr(current, setting.name))

    def clean_reason(self) -> str:
        reason: str = self.cleaned_data["reason"]
        try:
            refuse_without_reason(
                reason, why="the policy changes", kept="its history, beside what changed"
            )
        except Refusal as refusal:
            raise forms.ValidationError(refusal.detail) from refusal
        return reason

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        # The bounds ``change_policy`` holds to, beside each field that was a number at all.
        for name, problem in policy_problems(data).items():
            if name not in self.errors:
                self.add_error(name, problem)
        return data

    def changes(self) -> dict[str, Any]:
        return {setting.name: self.cleaned_data[setting.name] for setting in POLICY_SETTINGS}
