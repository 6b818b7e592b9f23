"""The permission page: what each role may do on the dashboard, and what a key holding each
API scope may do, each beside the rule of ``ledger.access`` that decides it and its why.

Nothing here is a table of its own: every cell is the answer ``ledger.access`` gives a
stand-in of the role (``access.QUESTIONS``), and the API's operations are read from the URL
patterns with the scope ``access.scope_needed`` asks of each method.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.urls import URLPattern, URLResolver, get_resolver
from django.views.decorators.http import require_GET
from rest_framework.permissions import AllowAny

from ledger import access
from ledger.choices import Scope
from ledger.views.http import SignedInRequest

TEMPLATE = "ledger/permissions.html"
# The dashboard's roles as the columns name them.
ROLES = (
    (access.Role.END_USER, "The person"),
    (access.Role.SUPPORT, "Support"),
    (access.Role.ADMIN, "An admin"),
)
API_PREFIX = "api/v1/"
# The methods a client calls; HEAD and OPTIONS come with GET and with every view.
METHODS = ("get", "post", "put", "patch", "delete")


@dataclass(frozen=True)
class Row:
    action: str
    cells: list[str]
    rule: str
    why: str
    about_others: bool = False
    means: str = ""


def rule_name(rule: Callable[..., object]) -> str:
    return f"access.{rule.__name__}"


def why(rule: Callable[..., object]) -> str:
    """The rule's why in plain words: its docstring's first paragraph, one line. What
    follows it is for whoever reads the code, not for this page."""
    doc = inspect.getdoc(rule) or ""
    return " ".join(doc.split("\n\n", 1)[0].split())


def role_rows() -> list[Row]:
    """One row per question, a cell per role: the rule's answer for a stand-in of the role."""
    stand_ins = [access.stand_in(role) for role, _ in ROLES]
    return [
        Row(
            q.action,
            [q.answer(u) for u in stand_ins],
            rule_name(q.rule),
            why(q.rule),
            about_others=q.about_others,
            means=q.means,
        )
        for q in access.QUESTIONS
    ]


def scope_rows() -> list[Row]:
    """Every API operation (path × the methods a scope opens), then the agents' questions."""
    scopes = list(Scope)
    rows = []
    for route, methods, open_to_all in api_operations():
        cells = []
        for scope in scopes:
            allowed = [
                m.upper() for m, required in methods if access.scope_needed(m, required) == scope
            ]
            cells.append("any caller" if open_to_all else ", ".join(allowed) or "no")
        rows.append(Row(f"/{API_PREFIX}{route}", cells, rule_name(access.scope_needed), ""))
    rows += [
        Row(q.action, [q.answer(s) for s in scopes], rule_name(q.rule), why(q.rule))
        for q in access.SCOPE_QUESTIONS
    ]
    return rows


def api_operations() -> list[tuple[str, list[tuple[str, str | None]], bool]]:
    """Each API path with its methods and the scope its view asks for (None: by method),
    and whether it is open to any caller, read from the URL patterns themselves."""
    out = []
    for route, callback in _patterns(get_resolver(), ""):
        if not route.startswith(API_PREFIX):
            continue
        view: Any = getattr(callback, "cls", None)
        if view is None:
            continue
        actions: dict[str, str] | None = getattr(callback, "actions", None)
        names = list(actions) if actions else [m for m in METHODS if hasattr(view, m)]
        required: str | None = getattr(view, "required_scope", None)
        open_to_all = any(issubclass(p, AllowAny) for p in view.permission_classes)
        out.append(
            (
                route.removeprefix(API_PREFIX),
                [(m, required) for m in METHODS if m in names],
                open_to_all,
            )
        )
    return out


def _patterns(resolver: URLResolver, prefix: str) -> Iterator[tuple[str, Any]]:
    for pattern in resolver.url_patterns:
        route = prefix + _readable(str(pattern.pattern))
        if isinstance(pattern, URLResolver):
            yield from _patterns(pattern, route)
        elif isinstance(pattern, URLPattern):
            yield route, pattern.callback


def _readable(pattern: str) -> str:
    """As a client reads a path: ``^memories/(?P<pk>[^/.]+)$`` and ``memories/<uuid:pk>``
    both become ``memories/<pk>``."""
    named = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"<\1>", pattern)
    return re.sub(r"<\w+:(\w+)>", r"<\1>", named).lstrip("^").rstrip("$")


@login_required
def permissions_page(request: SignedInRequest) -> HttpResponse:
    # Who may see it before how it is asked: an end user learns nothing, not even a 405.
    if not access.may_see_permissions(request.user):
        raise Http404
    return _page(request)


@require_GET
def _page(request: SignedInRequest) -> HttpResponse:
    rows = role_rows()
    support = [r for r, _ in ROLES].index(access.Role.SUPPORT)
    context = {
        # What support may and may not do to any subject, first: the question support comes
        # here with.
        "support_may": [
            (row, row.cells[support])
            for row in rows
            if row.about_others and row.cells[support] != "no"
        ],
        "support_may_not": [row for row in rows if row.about_others and row.cells[support] == "no"],
        "roles": [words for _, words in ROLES],
        "role_rows": rows,
        "scopes": [str(s) for s in Scope],
        "scope_rows": scope_rows(),
        "scope_rule": Row("", [], "", why(access.scope_needed)),
    }
    return render(request, TEMPLATE, context)
