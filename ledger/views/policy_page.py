"""The write policy, for admins: every setting with its meaning and bounds in one form that
asks why, and every version since, newest first, with what it changed (before → after).

A change applies to the next write only: memories already written keep their expiry and
the version that accepted them, which their trace links to here (``#version-N``). The
page costs the same few queries however many versions there are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from ledger.actions import vectors
from ledger.actions.policy import change_policy
from ledger.actors import Actor
from ledger.choices import ActorRole
from ledger.embeddings import configured_model
from ledger.models import MemoryVector, Policy
from ledger.reads.names import Names
from ledger.rules.refusals import Refusal
from ledger.rules.write_policy import (
    KEYS_SETTING,
    POLICY_SETTING_NAMES,
    POLICY_SETTINGS,
    PolicyRefusal,
    PolicySetting,
)
from ledger.views.answers import answer
from ledger.views.forms.policy import PolicyForm
from ledger.views.http import SignedInRequest, admin_only

TEMPLATE = "ledger/policy.html"
# What a form post carries besides its fields.
FORM_EXTRAS = {"csrfmiddlewaretoken"}


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
        "embedding_model": configured_model(),
        "embedded": list(MemoryVector.objects.count_per_model()),
        "unembedded": vectors.missing(),
        "editing": editing or current.version,
        "form": form,
        "rows": rows,
        "versions": history,
        "in_force": history[0],
        "problems": sum(1 for name in form.errors if name in POLICY_SETTING_NAMES),
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
    except PolicyRefusal as refusal:
        for name, problem in refusal.problems.items():
            form.add_error(name, problem)
        return _page(request, current, form, editing=editing, status=refusal.status)
    except Refusal as refusal:
        form.add_error("reason" if refusal.code.startswith("reason_") else None, refusal.detail)
        # Once told the policy moved on, the admin may send the same values against it.
        if refusal.code == "policy_changed":
            current = Policy.current()
            editing = current.version
        return _page(request, current, form, editing=editing, status=refusal.status)
    return answer(
        request,
        redirect_to=f"{reverse('policy')}#version-{changed.version}",
        message=f"Saved as version {changed.version}. It applies to the next write; memories "
        "already written keep the expiry and the version they were accepted with.",
    )
