"""The write policy, for admins: every setting with its meaning and bounds in one form that
asks why, and every version since, newest first, with what it changed (before → after).

A change applies to the next write only: memories already written keep their expiry and
the version that accepted them, which their trace links to here (``#version-N``). The
page costs the same few queries however many versions there are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from ledger import policy
from ledger.actions.policy import change_policy
from ledger.actors import Actor
from ledger.choices import ActorRole
from ledger.models import Policy
from ledger.policy import KEYS_SETTING, POLICY_SETTINGS, PolicySetting
from ledger.views.http import SignedInRequest, admin_only
from ledger.views.presenting import Names

TEMPLATE = "ledger/policy.html"
REASON_MAX = 2000
# Room for a hundred long keys; anything longer is not a list someone typed.
KEYS_TEXT_MAX = 12_000
# What a form post carries besides its fields.
FORM_EXTRAS = {"csrfmiddlewaretoken"}


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
            policy.refuse_without_reason(
                reason, why="the policy changes", kept="its history, beside what changed"
            )
        except policy.Refusal as refusal:
            raise forms.ValidationError(refusal.detail) from refusal
        return reason

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        # The bounds ``change_policy`` holds to, beside each field that was a number at all.
        for name, problem in policy.policy_problems(data).items():
            if name not in self.errors:
                self.add_error(name, problem)
        return data

    def changes(self) -> dict[str, Any]:
        return {setting.name: self.cleaned_data[setting.name] for setting in POLICY_SETTINGS}


def value_words(setting: PolicySetting, value: Any) -> str:
    if setting.name == KEYS_SETTING:
        return ", ".join(value) if value else "none"
    return setting.amount(value)


@dataclass(frozen=True)
class SettingChange:
    label: str
    before: str
    after: str


@dataclass
class Version:
    """One version of the policy as its history tells it; version 1 is what ships."""

    number: int
    at: datetime | None = None
    who: str = ""
    why: str = ""
    changes: list[SettingChange] = field(default_factory=list)
    # Only the settings as shipped are listed in full: every later version says what changed.
    shipped: list[tuple[str, str]] = field(default_factory=list)
    # The id the trace links to; empty on an older row with a number a later one repeats.
    anchor: str = ""


def _who(label: str, role: str, viewer: str) -> str:
    """Who changed it, with the role they held then (the history row keeps it)."""
    name = Actor.username_in(label)
    if name is None:
        return Names(viewer, frozenset()).who(label)
    person = "you" if name == viewer else name
    return f"{person} ({ActorRole(role).label})" if role in ActorRole.values else person


def _changes(before: Any, after: Any) -> list[SettingChange]:
    return [
        SettingChange(
            setting.label,
            value_words(setting, getattr(before, setting.name)),
            value_words(setting, getattr(after, setting.name)),
        )
        for setting in POLICY_SETTINGS
        if getattr(before, setting.name) != getattr(after, setting.name)
    ]


def versions(viewer: str) -> list[Version]:
    """Every version, newest first, each against the one before it: one query.

    The first recorded change is compared with the settings memoryadmin ships with (the
    row a migration makes has no history of its own), which are version 1.
    """
    rows = list(Policy.history.order_by("history_date", "history_id"))
    shipped = Policy(pk=1)
    out: list[Version] = []
    if not any(row.version == 1 for row in rows):
        out.append(
            Version(
                1,
                shipped=[
                    (s.label, value_words(s, getattr(shipped, s.name))) for s in POLICY_SETTINGS
                ],
            )
        )
    previous: Any = shipped
    for row in rows:
        out.append(
            Version(
                row.version,
                at=row.history_date,
                who=_who(row.history_actor, row.history_role, viewer),
                why=row.history_change_reason or "",
                changes=_changes(previous, row),
            )
        )
        previous = row
    out.reverse()
    seen: set[int] = set()
    for version in out:
        # A database older than version numbers may repeat one; the latest row is the one
        # that was in force when a memory recorded it.
        if version.number not in seen:
            version.anchor = f"version-{version.number}"
            seen.add(version.number)
    return out


def _page(
    request: SignedInRequest,
    current: Policy,
    form: PolicyForm,
    *,
    editing: int | None = None,
    status: int = 200,
) -> HttpResponse:
    """The page; ``editing`` is the version the form was filled in against (a change is
    refused once the policy has moved on from it), the one in force unless said."""
    history = versions(request.user.get_username())
    rows = [
        (setting, form[setting.name], value_words(setting, getattr(current, setting.name)))
        for setting in POLICY_SETTINGS
    ]
    context = {
        "policy": current,
        "editing": editing or current.version,
        "form": form,
        "rows": rows,
        "versions": history,
        "in_force": history[0],
        "problems": sum(1 for name in form.errors if name in policy.POLICY_SETTING_NAMES),
    }
    return render(request, TEMPLATE, context, status=status)


@admin_only
@require_http_methods(["GET", "POST"])
def policy_page(request: SignedInRequest) -> HttpResponse:
    """GET: the policy in force, its form and its history. POST: a new version, or the form
    again as it was typed with every problem beside its field (nothing is changed)."""
    current = Policy.current()
    if request.method == "POST":
        return _change(request, current)
    return _page(request, current, PolicyForm(current=current))


def _change(request: SignedInRequest, current: Policy) -> HttpResponse:
    form = PolicyForm(request.POST, current=current)
    valid = form.is_valid()
    unknown = sorted(name[:50] for name in request.POST if name not in {*form.fields, *FORM_EXTRAS})
    if unknown:
        form.add_error(None, f"Unknown field: {', '.join(unknown)}. Nothing was changed.")
    # Kept from what was posted, so that a stale form stays stale until it is reloaded.
    editing = form.cleaned_data.get("version")
    if not valid or unknown:
        return _page(request, current, form, editing=editing, status=400)
    try:
        changed = change_policy(
            actor=Actor.for_user(request.user),
            reason=form.cleaned_data["reason"],
            expected_version=form.cleaned_data["version"],
            **form.changes(),
        )
    except policy.PolicyRefusal as refusal:
        for name, problem in refusal.problems.items():
            form.add_error(name, problem)
        return _page(request, current, form, editing=editing, status=refusal.status)
    except policy.Refusal as refusal:
        form.add_error("reason" if refusal.code.startswith("reason_") else None, refusal.detail)
        # Once told the policy moved on, the admin may send the same values against it.
        if refusal.code == "policy_changed":
            current = Policy.current()
            editing = current.version
        return _page(request, current, form, editing=editing, status=refusal.status)
    messages.success(
        request,
        f"Saved as version {changed.version}. It applies to the next write; memories "
        "already written keep the expiry and the version they were accepted with.",
    )
    return HttpResponseRedirect(f"{reverse('policy')}#version-{changed.version}")
