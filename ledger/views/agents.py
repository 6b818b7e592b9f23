"""Admins' pages for agents and their API keys: the list, a new agent, one agent's keys,
rotation, revocation, the three restrictions on its writes, and its history.

A new key is shown once. The form that made it answers with a redirect (303) to the
agent's page, so a reload never sends the form again; the key waits for that page in the
session (never in an address or a log line), which shows it with ``Cache-Control:
no-store`` and forgets it: a reload says it was shown once, and no later page can show it
again. Only a fingerprint of it is kept with the agent. Revoking and restricting answer
with a redirect to the agent's page too; their addresses, asked for with GET (a bookmark,
a reload after the redirect), lead to the agent's page as well. Every
form is a plain POST; a refusal re-renders the page with the error beside its field and
what was typed, and changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django import forms
from django.db.models import Max, Prefetch, Q
from django.http import HttpResponse, HttpResponseRedirect, QueryDict
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_GET, require_http_methods

from ledger.actions.agents import create_agent, restrict_agent, revoke_agent, rotate_agent_key
from ledger.actors import Actor
from ledger.choices import ActorRole
from ledger.dates import when
from ledger.models import Agent, AgentKey
from ledger.reads.names import Names
from ledger.reads.revocations import Revocation, revocation_of
from ledger.rules.agents import (
    GRACE_HOURS_MAX,
    Restriction,
    restriction_reason,
)
from ledger.rules.refusals import Refusal
from ledger.views.answers import answer
from ledger.views.forms.agents import (
    SCOPE_WORDS,
    AgentForm,
    RestrictForm,
    RevokeForm,
    RotateForm,
)
from ledger.views.http import SignedInRequest, admin_only
from ledger.views.paging import BadCursor, next_query
from ledger.views.presenting import Change, Step
from ledger.views.sorting import BadSort, Sortable

LIST_TEMPLATE = "ledger/agents.html"
# The agents list's columns that sort it, and a page of it.
AGENT_SORTS = Sortable(
    columns={"name": "name", "created": "created_at", "last-used": "last_used"}, default="name"
)
AGENTS_SHOWN = 100
AGENT_TEMPLATE = "ledger/agent.html"
# The newest history rows an agent's page shows, of the agent and of its keys each.
HISTORY_SHOWN = 100

# What each restriction does, as the admin reads it beside its switch.
RESTRICTION_HELP = {
    Restriction.WRITES_PAUSED: "Its memory and ledger writes, corrections, deletions "
    "and new journal intents are refused, with your reason. Reads, run notes, snapshots "
    "and outcomes of side effects it already journaled still work.",
    Restriction.QUARANTINED: "Everything it writes lands as waiting for a person's "
    "confirmation, and its repeats never make a memory active. What cannot wait (a ledger "
    "entry, a correction, a deletion) is refused.",
    Restriction.STATED_UNTRUSTED: "What it says the person said (a stated memory from "
    "the person's message) is taken as its own claim and waits for a person's "
    "confirmation. What it read from a tool is unaffected.",
}
RESTRICTION_BUTTONS = {
    Restriction.WRITES_PAUSED: ("Pause its writes", "Lift the pause"),
    Restriction.QUARANTINED: ("Quarantine it", "End the quarantine"),
    Restriction.STATED_UNTRUSTED: ("Stop trusting its stated memories", "Trust them again"),
}
# The status word and badge of each restriction in the agents list.
RESTRICTION_STATUS = {
    Restriction.WRITES_PAUSED: ("paused", "writes paused"),
    Restriction.QUARANTINED: ("quarantined", "quarantined"),
    Restriction.STATED_UNTRUSTED: ("distrusted", "not trusted for stated memories"),
}


def _errors(form: forms.Form) -> dict[str, str]:
    return {name: " ".join(str(e) for e in errors) for name, errors in form.errors.items()}


# The list.


def statuses(agent: Agent) -> list[tuple[str, str]]:
    """The agent's status as (badge class, words): revoked, its restrictions, or active."""
    if not agent.is_active:
        return [("revoked", "revoked")]
    on = [RESTRICTION_STATUS[r] for r in Restriction if restriction_reason(agent, r)]
    return on or [("active", "active")]


@admin_only
@require_GET
def agent_list(request: SignedInRequest) -> HttpResponse:
    """Every agent with its working keys' prefixes, scopes, dates and status, by name or as
    sorted (``?sort=-last-used``), a keyset page at a time."""
    now = timezone.now()
    agents = Agent.objects.annotate(last_used=Max("keys__last_used_at")).prefetch_related(
        Prefetch(
            "keys",
            queryset=AgentKey.objects.filter(
                Q(expires_at__isnull=True) | Q(expires_at__gt=now)
            ).order_by("-created_at", "-id"),
            to_attr="unexpired_keys",
        )
    )
    try:
        sort = AGENT_SORTS.chosen(request.GET)
        page = sort.page(agents, cursor=request.GET.get("after", ""), size=AGENTS_SHOWN)
    except (BadSort, BadCursor) as error:
        return render(request, LIST_TEMPLATE, {"rows": [], "error": str(error)}, status=400)
    rows = [
        (agent, getattr(agent, "unexpired_keys", []) if agent.is_active else [], statuses(agent))
        for agent in page.rows
    ]
    context = {"rows": rows, "sort": sort, "next": next_query(request.GET, page.next_cursor)}
    return render(request, LIST_TEMPLATE, context)


@admin_only
@require_http_methods(["GET", "POST"])
def agent_new(request: SignedInRequest) -> HttpResponse:
    """GET: the form. POST: make the agent, then its page shows its first key, once."""
    if request.method == "GET":
        return _new_form(request, AgentForm(), {}, status=200)
    form = AgentForm(request.POST)
    if not form.is_valid():
        return _new_form(request, form, _errors(form), status=400)
    try:
        agent, key = create_agent(
            name=form.cleaned_data["name"],
            scopes=form.cleaned_data["scopes"],
            actor=Actor.for_user(request.user),
        )
    except Refusal as refusal:
        field_name = "scopes" if refusal.code == "scopes_required" else "name"
        # A working agent's name leads to its rotation; a revoked one's to its history.
        named = form.cleaned_data["name"]
        return _new_form(
            request,
            form,
            {field_name: refusal.detail},
            status=refusal.status,
            taken=named if refusal.code == "agent_name_taken" else "",
            revoked=named if refusal.code == "agent_name_revoked" else "",
        )
    except ValueError as error:
        return _new_form(request, form, {"scopes": f"{error}."}, status=400)
    return _with_key(request, agent, NewKeyShown(key=key, first=True))


def _new_form(
    request: SignedInRequest,
    form: AgentForm,
    errors: dict[str, str],
    *,
    status: int,
    taken: str = "",
    revoked: str = "",
) -> HttpResponse:
    data = form.data if isinstance(form.data, QueryDict) else QueryDict()
    chosen = data.getlist("scopes") if form.is_bound else [Agent.Scope.READ]
    context = {
        "creating": True,
        "errors": errors,
        "name": data.get("name", ""),
        "scopes": [(value, words, value in chosen) for value, words in SCOPE_WORDS.items()],
        "taken": taken,
        "revoked": revoked,
    }
    return render(request, LIST_TEMPLATE, context, status=status)


# One agent.


@dataclass(frozen=True)
class NewKeyShown:
    key: str
    first: bool = False
    old_keys_end: datetime | None = None
    replaced: int = 0


@dataclass(frozen=True)
class KeyRow:
    key: AgentKey
    working: bool
    state: str


@dataclass(frozen=True)
class RestrictionRow:
    restriction: Restriction
    because: str
    help: str
    put_on: str
    lift: str
    error: str = ""
    typed: str = ""


def _key_state(key: AgentKey, agent: Agent, now: datetime) -> str:
    """The rest of the sentence its badge ("works", "stopped") begins; nothing to add for
    a key that works with no end."""
    if not agent.is_active:
        return "since the agent was revoked"
    if key.expires_at is None:
        return ""
    if key.expires_at > now:
        return f"until {when(key.expires_at)}, the end of a rotation's grace period"
    return f"on {when(key.expires_at)}: replaced by a rotation"


@dataclass(frozen=True)
class RevokedShown:
    """A revoked agent's page says since when, by whom and why, instead of its forms."""

    at: datetime | None
    who: str
    why: str


def _revoked_shown(request: SignedInRequest, agent: Agent) -> RevokedShown | None:
    if agent.is_active:
        return None
    revocation = revocation_of(agent)
    if revocation is None:
        return RevokedShown(at=None, who="", why="")
    return RevokedShown(at=revocation.at, who=_who(request, revocation), why=revocation.reason)


def _who(request: SignedInRequest, revocation: Revocation) -> str:
    """In the words of the history below it ("you", "an admin (ada)"), by the role then."""
    name = Actor.username_in(revocation.actor) or ""
    staff = {name} if revocation.role in (ActorRole.SUPPORT, ActorRole.ADMIN) else set()
    admins = {name} if revocation.role == ActorRole.ADMIN else set()
    names = Names(request.user.get_username(), frozenset(staff), frozenset(admins))
    return names.who(revocation.actor)


def _agent_context(request: SignedInRequest, agent: Agent, **extra: Any) -> dict[str, Any]:
    now = timezone.now()
    # Through the agent, so each key knows its agent without a query of its own.
    keys = list(agent.keys.order_by("-created_at", "-id"))
    errors: dict[str, str] = extra.pop("errors", {})
    restrict: dict[str, str] = extra.pop("restrict", {})
    restrictions = [
        RestrictionRow(
            restriction=r,
            because=restriction_reason(agent, r),
            help=RESTRICTION_HELP[r],
            put_on=RESTRICTION_BUTTONS[r][0],
            lift=RESTRICTION_BUTTONS[r][1],
            error=errors.get("reason", "") if restrict.get("restriction") == r else "",
            typed=restrict.get("reason", "") if restrict.get("restriction") == r else "",
        )
        for r in Restriction
    ]
    context: dict[str, Any] = {
        "agent": agent,
        "revoked": _revoked_shown(request, agent),
        "statuses": statuses(agent),
        "scopes": [SCOPE_WORDS.get(s, s) for s in agent.scopes],
        "keys": [KeyRow(k, k.works_at(now), _key_state(k, agent, now)) for k in keys],
        "newest": keys[0].prefix if keys else "",
        "restrictions": restrictions,
        "grace_max": GRACE_HOURS_MAX,
        "history": _history(request, agent),
        "errors": errors,
        "form": {},
    }
    context.update(extra)
    return context


@admin_only
@require_GET
def agent_page(request: SignedInRequest, name: str) -> HttpResponse:
    """The agent, its keys, forms and history; once, right after it was made, a new key."""
    agent = get_object_or_404(Agent, name=name)
    shown = _new_key_from_session(request, agent)
    # The page after the one that showed the key (a reload) says where the key went.
    was_shown = request.session.pop(KEY_WAS_SHOWN, None) == agent.pk and shown is None
    if shown is not None:
        request.session[KEY_WAS_SHOWN] = agent.pk
    response = render(
        request,
        AGENT_TEMPLATE,
        _agent_context(request, agent, new_key=shown, key_was_shown=was_shown),
    )
    if shown is not None:
        add_never_cache_headers(response)
    return response


def _to_page(
    request: SignedInRequest, agent: Agent, part: str = "", message: str = ""
) -> HttpResponse:
    return answer(request, redirect_to=reverse("agent", args=[agent.name]) + part, message=message)


@admin_only
@require_http_methods(["GET", "POST"])
def agent_rotate(request: SignedInRequest, name: str) -> HttpResponse:
    """A new key, shown once; the old ones keep working for the grace period chosen."""
    agent = get_object_or_404(Agent, name=name)
    if request.method == "GET":
        return _to_page(request, agent, "#rotate")
    form = RotateForm(request.POST)
    if not form.is_valid():
        return _refused(request, agent, "rotate", form, _errors(form), 400)
    try:
        rotation = rotate_agent_key(
            agent=agent,
            actor=Actor.for_user(request.user),
            grace_hours=form.cleaned_data["grace_hours"],
            reason=form.cleaned_data["reason"],
            expected_newest=form.cleaned_data["newest"] or None,
        )
    except Refusal as refusal:
        field_name = "grace_hours" if refusal.code == "grace_out_of_range" else "rotate"
        return _refused(
            request, agent, "rotate", form, {field_name: refusal.detail}, refusal.status
        )
    shown = NewKeyShown(
        key=rotation.key, old_keys_end=rotation.old_keys_end, replaced=rotation.replaced
    )
    return _with_key(request, agent, shown)


@admin_only
@require_http_methods(["GET", "POST"])
def agent_revoke(request: SignedInRequest, name: str) -> HttpResponse:
    """Every key of the agent stops working at once."""
    agent = get_object_or_404(Agent, name=name)
    if request.method == "GET":
        return _to_page(request, agent, "#revoke")
    form = RevokeForm(request.POST)
    if not form.is_valid():
        return _refused(request, agent, "revoke", form, _errors(form), 400)
    try:
        agent = revoke_agent(
            agent=agent, actor=Actor.for_user(request.user), reason=form.cleaned_data["reason"]
        )
    except Refusal as refusal:
        return _refused(request, agent, "revoke", form, {"revoke": refusal.detail}, refusal.status)
    return _to_page(request, agent, message="Revoked: every key of this agent stopped working.")


@admin_only
@require_http_methods(["GET", "POST"])
def agent_restrict(request: SignedInRequest, name: str) -> HttpResponse:
    """Put one restriction on the agent's writes, or lift it, with a reason."""
    agent = get_object_or_404(Agent, name=name)
    if request.method == "GET":
        return _to_page(request, agent, "#restrictions")
    form = RestrictForm(request.POST)
    typed = {
        "restriction": request.POST.get("restriction", ""),
        "reason": request.POST.get("reason", ""),
    }
    if not form.is_valid():
        errors = _errors(form)
        message = errors.get("reason") or " ".join(errors.values())
        return _restrict_refused(request, agent, typed, message, 400)
    restriction = Restriction(form.cleaned_data["restriction"])
    on: bool = form.cleaned_data["on"]
    try:
        agent = restrict_agent(
            agent=agent,
            actor=Actor.for_user(request.user),
            restriction=restriction,
            on=on,
            reason=form.cleaned_data["reason"],
        )
    except Refusal as refusal:
        return _restrict_refused(request, agent, typed, refusal.detail, refusal.status)
    return _to_page(
        request,
        agent,
        "#restrictions",
        message=f"{restriction.change(on=on)}. Your reason is in the agent's history below.",
    )


def _restrict_refused(
    request: SignedInRequest, agent: Agent, typed: dict[str, str], message: str, status: int
) -> HttpResponse:
    if typed["restriction"] not in Restriction or not agent.is_active:
        # No restriction form (of that name, or at all on a revoked agent's page) to show the
        # error beside: say it at the top.
        context = _agent_context(request, agent, errors={"restrict": message})
    else:
        context = _agent_context(request, agent, errors={"reason": message}, restrict=typed)
    return render(request, AGENT_TEMPLATE, context, status=status)


def _refused(
    request: SignedInRequest,
    agent: Agent,
    which: str,
    form: forms.Form,
    errors: dict[str, str],
    status: int,
) -> HttpResponse:
    """The agent's page again, the error beside the field of the form ``which``."""
    context = _agent_context(
        request,
        agent,
        errors={f"{which}_{name}" if name != which else name: e for name, e in errors.items()},
        form={name: form.data.get(name, "") for name in form.fields},
        failed=which,
    )
    return render(request, AGENT_TEMPLATE, context, status=status)


# Where a new key waits in the session for the agent's page to show it, and where that page
# notes it showed one, for the reload after it.
NEW_KEY = "ledger_new_agent_key"
KEY_WAS_SHOWN = "ledger_agent_key_was_shown"


def _with_key(request: SignedInRequest, agent: Agent, shown: NewKeyShown) -> HttpResponse:
    """Off to the agent's page (303, so a reload there is a GET), the key kept in the
    session for that page alone: the address the browser is sent to names only the agent."""
    request.session[NEW_KEY] = {
        "agent": agent.pk,
        "key": shown.key,
        "first": shown.first,
        "old_keys_end": shown.old_keys_end.isoformat() if shown.old_keys_end else None,
        "replaced": shown.replaced,
    }
    response = HttpResponseRedirect(reverse("agent", args=[agent.name]))
    response.status_code = 303
    return response


def _new_key_from_session(request: SignedInRequest, agent: Agent) -> NewKeyShown | None:
    """The key the form just made for this agent, taken out of the session: shown once. A key
    left there for another agent (its page never loaded) is dropped, not kept."""
    kept: dict[str, Any] | None = request.session.pop(NEW_KEY, None)
    if kept is None or kept.get("agent") != agent.pk:
        return None
    end = kept["old_keys_end"]
    return NewKeyShown(
        key=kept["key"],
        first=kept["first"],
        old_keys_end=datetime.fromisoformat(end) if end else None,
        replaced=kept["replaced"],
    )


# The agent's history.

HISTORY_COLUMNS = (
    "history_id",
    "history_date",
    "history_type",
    "history_actor",
    "history_change_reason",
)
# Simple-history's rows are untyped: what a step says of one row, given the row before it.
type Describe = Callable[[Any, Any | None], tuple[str, list[Change]]]

AGENT_FIELDS = [
    ("name", "Name"),
    ("scopes", "Scopes"),
    ("is_active", "Keys"),
    ("writes_paused_because", "Writes paused"),
    ("quarantined_because", "Quarantined"),
    ("stated_untrusted_because", "Not trusted for stated memories"),
]


def _agent_value(name: str, row: Any) -> str:
    value = getattr(row, name)
    if name == "scopes":
        return ", ".join(value) if value else "none"
    if name == "is_active":
        return "working" if value else "revoked"
    if name.endswith("_because"):
        # The admin's words are the step's reason: said once, not again in the change.
        return "yes" if value else "no"
    return str(value)


def _agent_step(row: Any, previous: Any | None) -> tuple[str, list[Change]]:
    if previous is None:
        return ("Agent created" if row.history_type == "+" else "Agent changed"), []
    changes = [
        Change(label, _agent_value(name, previous), _agent_value(name, row))
        for name, label in AGENT_FIELDS
        if getattr(previous, name) != getattr(row, name)
    ]
    if previous.is_active and not row.is_active:
        return "Revoked", changes
    for restriction in Restriction:
        before, after = getattr(previous, restriction.field), getattr(row, restriction.field)
        if before != after:
            return restriction.change(on=bool(after)), changes
    return "Agent changed", changes


def _key_step(row: Any, previous: Any | None) -> tuple[str, list[Change]]:
    if previous is None or row.history_type == "+":
        return f"Key {row.prefix} made", []
    if previous.expires_at == row.expires_at:
        return f"Key {row.prefix} changed", []
    before = when(previous.expires_at) if previous.expires_at else "no end"
    after = when(row.expires_at) if row.expires_at else "no end"
    return f"Key {row.prefix} given an end", [Change("Works until", before, after)]


def _history(request: SignedInRequest, agent: Agent) -> list[Step]:
    """The agent's and its keys' history rows, newest first, each with before → after."""
    agent_rows = list(
        Agent.history.filter(id=agent.pk).order_by("-history_date", "-history_id")[:HISTORY_SHOWN]
    )
    # Never the hash: a key's history shows its prefix and its end, nothing that opens it.
    key_rows = list(
        AgentKey.history.filter(agent_id=agent.pk)
        .only("id", "prefix", "expires_at", *HISTORY_COLUMNS)
        .order_by("-history_date", "-history_id")[:HISTORY_SHOWN]
    )
    names = Names.for_labels(
        request.user, [row.history_actor for row in (*agent_rows, *key_rows) if row.history_actor]
    )
    steps = [
        *_steps(reversed(agent_rows), _agent_step, names),
        *_steps(reversed(key_rows), _key_step, names),
    ]
    return sorted(steps, key=lambda step: step.at, reverse=True)


def _steps(rows: Iterable[Any], describe: Describe, names: Names) -> list[Step]:
    """Oldest first: each row against the one before it of the same object."""
    previous: dict[int, Any] = {}
    out = []
    for row in rows:
        what, changes = describe(row, previous.get(row.id))
        reason: str = row.history_change_reason or ""
        out.append(
            Step(
                at=row.history_date,
                what=what,
                who=names.who(row.history_actor or ""),
                # "Quarantine started: <why>" is kept whole for the audit; here the step
                # already says what happened.
                why=reason.removeprefix(f"{what}: "),
                changes=changes,
            )
        )
        previous[row.id] = row
    return out
