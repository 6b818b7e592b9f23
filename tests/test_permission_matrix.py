"""Who reaches what: every URL pattern of the project × every kind of principal.

For each pattern the matrix names the status a GET and an empty POST get from each
principal: nobody signed in, the end user the objects belong to, another end user, support,
an admin, and agents with a read key, a write key and a revoked key. The URLs are filled in
with real rows of one small world, all belonging to the first end user, so "another end user
gets 404" means they could not reach her memory by its id.

A URL pattern added to the project and not to the matrix fails the first test: deciding
who may reach a new page is part of adding it. The Django admin's per-model pages follow
one rule for every model (the last section), so a model registered there is covered too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from ledger.actions.agents import revoke_agent
from ledger.actions.erasure_requests import request_erasure
from ledger.actions.lifecycle import correct_memory
from ledger.actions.policy import change_policy
from ledger.actions.retractions import Selection, retract_batch
from ledger.actions.webhooks import register_endpoint, send_test_event
from ledger.actors import Actor
from ledger.models import JournalEntry, Memory, Recall, Reminder, Subject
from tests.conftest import SUBJECT, agent_client, body, signed_in
from tests.test_snapshots_api import snapshot_body

pytestmark = pytest.mark.django_db

PRINCIPALS = ("anon", "user", "other", "support", "admin", "read", "write", "revoked")
RUN = "run_matrix"


def walk(resolver: URLResolver, prefix: str = "") -> Iterator[str]:
    for pattern in resolver.url_patterns:
        if isinstance(pattern, URLResolver):
            yield from walk(pattern, prefix + str(pattern.pattern))
        else:
            assert isinstance(pattern, URLPattern)
            yield prefix + str(pattern.pattern)


def url_patterns() -> list[str]:
    return list(walk(get_resolver()))


@dataclass
class World:
    """The rows the URLs point at, and a client for each principal."""

    ids: dict[str, str]
    clients: dict[str, Callable[[], Client]]


@pytest.fixture
def world(make_person: Callable[..., User]) -> World:
    make_person("uma", subject=SUBJECT)
    make_person("otto", subject="acct_otto")
    make_person("sam", role="support")
    admin_person = make_person("ada", role="admin")
    writer_api, writer = agent_client("writer", ["read", "write"])
    reader_api, _ = agent_client("reader", ["read"])
    revoked_api, revoked = agent_client("gone", ["read", "write"])
    revoke_agent(agent=revoked, actor=Actor.system("test"), reason="Left the project.")

    source = {"kind": "user_message", "ref": "msg_matrix", "run": RUN, "turn": 1}
    written = writer_api.post(
        "/api/v1/memories", body(source=source, key="contact.channel"), format="json"
    )
    assert written.status_code == 201, written.content
    memory = Memory.objects.get(pk=written.json()["memory"]["id"])
    rival = writer_api.post(
        "/api/v1/memories",
        body(statement="Prefers phone calls.", key="contact.channel", source=source),
        format="json",
    )
    assert rival.status_code == 201, rival.content
    other = writer_api.post(
        "/api/v1/memories", body(subject="acct_otto", statement="Likes tea."), format="json"
    )
    assert other.status_code == 201, other.content
    corrected = writer_api.post(
        "/api/v1/memories", body(statement="Lives in Lyon.", key="home.city"), format="json"
    )
    correction = correct_memory(
        memory=Memory.objects.get(pk=corrected.json()["memory"]["id"]),
        statement="Lives in Lille.",
        actor=Actor.for_user(User.objects.get(username="uma")),
        reason="Moved.",
    )
    assert writer_api.get(f"/api/v1/subjects/{SUBJECT}/recall", {"run": RUN}).status_code == 200
    intent = {"idempotency_key": "matrix-1", "action": "email.send", "intent": {"to": "uma"}}
    assert writer_api.post(f"/api/v1/runs/{RUN}/journal", intent, format="json").status_code == 201
    assert writer_api.put(
        f"/api/v1/runs/{RUN}/notes/plan", {"value": "v"}, format="json"
    ).status_code in (200, 201)
    assert (
        writer_api.post(f"/api/v1/runs/{RUN}/snapshots", snapshot_body(), format="json").status_code
        == 201
    )
    ledger = writer_api.post(
        f"/api/v1/subjects/{SUBJECT}/ledger",
        {
            "fact": "Invoice 7 was paid.",
            "kind": "established",
            "source": {"kind": "tool_result", "ref": "billing:7"},
            "run": RUN,
        },
        format="json",
    )
    assert ledger.status_code == 201, ledger.content
    poisoned = {"kind": "user_message", "ref": "msg_poisoned", "run": RUN, "turn": 2}
    assert (
        writer_api.post(
            "/api/v1/memories", body(statement="Wants spam.", source=poisoned), format="json"
        ).status_code
        == 201
    )
    batch = retract_batch(
        selection=Selection(source_ref="msg_poisoned"),
        actor=Actor.for_user(admin_person),
        reason="Matrix.",
    )
    # The policy's row comes from a migration; one change gives it a history to open.
    change_policy(actor=Actor.for_user(admin_person), reason="Matrix.", recall_cap=19)
    hook = register_endpoint(
        url="https://hooks.example.com/hooks",
        events=["memory.written"],
        description="",
        actor=Actor.for_user(admin_person),
    ).endpoint
    delivery = send_test_event(endpoint=hook, actor=Actor.for_user(admin_person))
    # Support's erasure of uma, waiting for an admin: approving it erases her for real.
    erasure_request = request_erasure(
        subject=Subject.objects.get(ref=SUBJECT),
        actor=Actor.for_user(User.objects.get(username="sam")),
        reason="Uma, by phone, ticket 1.",
    )
    reminder = Reminder.objects.create(
        memory=memory,
        kind=Reminder.Kind.REVIEW,
        audience=Reminder.Audience.OWNER,
        recipient=User.objects.get(username="uma"),
        due_on=memory.written_at.date(),
    )
    ids = {
        "ref": SUBJECT,
        "memory": str(memory.pk),
        "correction": str(correction.pk),
        "conflict": str(memory.conflicts.get().pk),
        "recall": str(Recall.objects.get().pk),
        "reminder": str(reminder.pk),
        "journal": str(JournalEntry.objects.get().pk),
        "journal_key": "matrix-1",
        "run": RUN,
        "note": "plan",
        "batch": str(batch.pk),
        "ledger": ledger.json()["entry"]["id"],
        "source": "msg_matrix",
        "agent": writer.name,
        "username": "uma",
        "queue": "conflicts",
        "group": str(Group.objects.get(name="support").pk),
        "user_pk": str(User.objects.get(username="uma").pk),
        "subject_pk": str(Subject.objects.get(ref=SUBJECT).pk),
        "webhook": str(hook.pk),
        "delivery": str(delivery.pk),
        "erasure_request": str(erasure_request.pk),
    }
    # A new client for every request: a POST to the logout URL must not sign out the next.
    clients: dict[str, Callable[[], Client]] = {
        "anon": Client,
        "user": lambda: signed_in("uma"),
        "other": lambda: signed_in("otto"),
        "support": lambda: signed_in("sam"),
        "admin": lambda: signed_in("ada"),
        "read": lambda: reader_api,
        "write": lambda: writer_api,
        "revoked": lambda: revoked_api,
    }
    return World(ids=ids, clients=clients)


# route pattern: (URL with the world's ids, GET statuses, empty POST statuses), each in
# PRINCIPALS order:  anon user other support admin read write revoked
MATRIX: dict[str, tuple[str, str, str]] = {
    "": ("/", "302 302 302 200 200 302 302 302", "302 302 302 200 200 302 302 302"),
    "accounts/login/": (
        "/accounts/login/",
        "200 200 200 200 200 200 200 200",
        "200 200 200 200 200 200 200 200",
    ),
    "accounts/logout/": (
        "/accounts/logout/",
        "405 405 405 405 405 405 405 405",
        "302 302 302 302 302 302 302 302",
    ),
    # Staff sign-in through the identity provider: off unless configured (tests/test_oidc.py).
    "accounts/oidc/authenticate/": (
        "/accounts/oidc/authenticate/",
        "404 404 404 404 404 404 404 404",
        "404 404 404 404 404 404 404 404",
    ),
    "accounts/oidc/callback/": (
        "/accounts/oidc/callback/",
        "404 404 404 404 404 404 404 404",
        "404 404 404 404 404 404 404 404",
    ),
    "accounts/password/": (
        "/accounts/password/",
        "302 200 200 200 200 302 302 302",
        "302 200 200 200 200 302 302 302",
    ),
    "accounts/password/done/": (
        "/accounts/password/done/",
        "302 200 200 200 200 302 302 302",
        "302 405 405 405 405 302 302 302",
    ),
    "accounts/set-password/<uidb64>/<token>/": (
        "/accounts/set-password/MQ/bad-token/",
        "200 200 200 200 200 200 200 200",
        "200 200 200 200 200 200 200 200",
    ),
    "accounts/set-password/done/": (
        "/accounts/set-password/done/",
        "200 200 200 200 200 200 200 200",
        "405 405 405 405 405 405 405 405",
    ),
    "agents/": ("/agents/", "302 404 404 404 200 302 302 302", "302 404 404 404 405 302 302 302"),
    "agents/<str:name>/": (
        "/agents/{agent}/",
        "302 404 404 404 200 302 302 302",
        "302 404 404 404 405 302 302 302",
    ),
    "agents/<str:name>/restrict/": (
        "/agents/{agent}/restrict/",
        "302 404 404 404 302 302 302 302",
        "302 404 404 404 400 302 302 302",
    ),
    "agents/<str:name>/revoke/": (
        "/agents/{agent}/revoke/",
        "302 404 404 404 302 302 302 302",
        "302 404 404 404 400 302 302 302",
    ),
    "agents/<str:name>/rotate/": (
        "/agents/{agent}/rotate/",
        "302 404 404 404 302 302 302 302",
        "302 404 404 404 400 302 302 302",
    ),
    "agents/new/": (
        "/agents/new/",
        "302 404 404 404 200 302 302 302",
        "302 404 404 404 400 302 302 302",
    ),
    "api/docs/": (
        "/api/docs/",
        "200 200 200 200 200 200 200 200",
        "405 405 405 405 405 405 405 405",
    ),
    "api/schema/": (
        "/api/schema/",
        "200 200 200 200 200 200 200 200",
        "405 405 405 405 405 405 405 405",
    ),
    "api/v1/^journal$": (
        "/api/v1/journal",
        "401 401 401 401 401 200 200 401",
        "401 401 401 401 401 403 405 401",
    ),
    "api/v1/^journal/(?P<key>[A-Za-z0-9][A-Za-z0-9_.:\\-]{0,199})$": (
        "/api/v1/journal/{journal_key}",
        "401 401 401 401 401 404 200 401",
        "401 401 401 401 401 403 405 401",
    ),
    "api/v1/^ledger/(?P<pk>[^/.]+)$": (
        "/api/v1/ledger/{ledger}",
        "401 401 401 401 401 200 200 401",
        "401 401 401 401 401 403 405 401",
    ),
    "api/v1/^ledger/(?P<pk>[^/.]+)/history$": (
        "/api/v1/ledger/{ledger}/history",
        "401 401 401 401 401 200 200 401",
        "401 401 401 401 401 403 405 401",
    ),
    "api/v1/^ledger/(?P<pk>[^/.]+)/promote$": (
        "/api/v1/ledger/{ledger}/promote",
        "401 401 401 401 401 405 405 401",
        "401 401 401 401 401 403 400 401",
    ),
    "api/v1/^ledger/(?P<pk>[^/.]+)/supersede$": (
        "/api/v1/ledger/{ledger}/supersede",
        "401 401 401 401 401 405 405 401",
        "401 401 401 401 401 403 400 401",
    ),
    "api/v1/^ledger/(?P<pk>[^/.]+)/withdraw$": (
        "/api/v1/ledger/{ledger}/withdraw",
        "401 401 401 401 401 405 405 401",
        "401 401 401 401 401 403 400 401",
    ),
    "api/v1/^memories$": (
        "/api/v1/memories",
        "401 401 401 401 401 200 200 401",
        "401 401 401 401 401 403 400 401",
    ),
    "api/v1/^memories/(?P<pk>[^/.]+)$": (
        "/api/v1/memories/{memory}",
        "401 401 401 401 401 200 200 401",
        "401 401 401 401 401 403 405 401",
    ),
    "api/v1/^memories/(?P<pk>[^/.]+)/corrections$": (
        "/api/v1/memories/{memory}/corrections",
        "401 401 401 401 401 405 405 401",
        "401 401 401 401 401 403 400 401",
    ),
    "api/v1/^memories/(?P<pk>[^/.]+)/history$": (
        "/api/v1/memories/{memory}/history",
        "401 401 401 401 401 200 200 401",
        "401 401 401 401 401 403 405 401",
    ),
    "api/v1/^memories/(?P<pk>[^/.]+)/retract$": (
        "/api/v1/memories/{memory}/retract",
        "401 401 401 401 401 405 405 401",
        "401 401 401 401 401 403 400 401",
    ),
    "api/v1/^subjects/(?P<ref>[^/]+)$": (
        "/api/v1/subjects/{ref}",
        "401 401 401 401 401 200 200 401",
        "401 401 401 401 401 403 405 401",
    ),
    "api/v1/memories/<uuid:pk>/recalls": (
        "/api/v1/memories/{memory}/recalls",
        "401 401 401 401 401 200 200 401",
        "401 401 401 401 401 403 405 401",
    ),
    "api/v1/imports": (
        "/api/v1/imports",
        "401 401 401 401 401 405 405 401",
        "401 401 401 401 401 403 400 401",
    ),
    "api/v1/retractions": (
        "/api/v1/retractions",
        "401 401 401 401 401 403 403 401",
        "401 401 401 401 401 403 403 401",
    ),
    "api/v1/retractions/<uuid:pk>": (
        "/api/v1/retractions/{batch}",
        "401 401 401 401 401 403 403 401",
        "401 401 401 401 401 403 403 401",
    ),
    "api/v1/retractions/<uuid:pk>/undo": (
        "/api/v1/retractions/{batch}/undo",
        "401 401 401 401 401 403 403 401",
        "401 401 401 401 401 403 403 401",
    ),
    "api/v1/runs/<str:ref>/journal": (
        "/api/v1/runs/{run}/journal",
        "401 401 401 401 401 405 405 401",
        "401 401 401 401 401 403 400 401",
    ),
    "api/v1/runs/<str:ref>/notes": (
        "/api/v1/runs/{run}/notes",
        "401 401 401 401 401 404 200 401",
        "401 401 401 401 401 403 405 401",
    ),
    "api/v1/runs/<str:ref>/notes/<str:key>": (
        "/api/v1/runs/{run}/notes/{note}",
        "401 401 401 401 401 405 405 401",
        "401 401 401 401 401 403 405 401",
    ),
    "api/v1/runs/<str:ref>/snapshots": (
        "/api/v1/runs/{run}/snapshots",
        "401 401 401 401 401 404 200 401",
        "401 401 401 401 401 403 400 401",
    ),
    "api/v1/runs/<str:ref>/snapshots/latest": (
        "/api/v1/runs/{run}/snapshots/latest",
        "401 401 401 401 401 404 200 401",
        "401 401 401 401 401 403 405 401",
    ),
    "api/v1/schemas/export": (
        "/api/v1/schemas/export",
        "200 200 200 200 200 200 200 200",
        "405 405 405 405 405 405 405 405",
    ),
    "api/v1/schemas/state-document": (
        "/api/v1/schemas/state-document",
        "200 200 200 200 200 200 200 200",
        "405 405 405 405 405 405 405 405",
    ),
    "api/v1/subjects/<str:ref>/ledger": (
        "/api/v1/subjects/{ref}/ledger",
        "401 401 401 401 401 200 200 401",
        "401 401 401 401 401 403 400 401",
    ),
    "api/v1/subjects/<str:ref>/recall": (
        "/api/v1/subjects/{ref}/recall",
        "401 401 401 401 401 200 200 401",
        "401 401 401 401 401 403 405 401",
    ),
    "api/v1/tools": (
        "/api/v1/tools",
        "401 401 401 401 401 200 200 401",
        "401 401 401 401 401 403 405 401",
    ),
    "audit/": ("/audit/", "302 404 404 404 200 302 302 302", "302 404 404 404 405 302 302 302"),
    # Admins only: the chain's status, polled while a verification runs; outside htmx, the
    # Audit page it is part of.
    "audit/chain/": (
        "/audit/chain/",
        "302 404 404 404 302 302 302 302",
        "302 404 404 404 405 302 302 302",
    ),
    # Admins only: queues one verification, then back to the Audit page.
    "audit/verify/": (
        "/audit/verify/",
        "302 404 404 404 405 302 302 302",
        "302 404 404 404 302 302 302 302",
    ),
    "audit/corrections/": (
        "/audit/corrections/",
        "302 404 404 404 200 302 302 302",
        "302 404 404 404 405 302 302 302",
    ),
    "audit/corrections/<uuid:pk>/": (
        "/audit/corrections/{correction}/",
        "302 404 404 404 200 302 302 302",
        "302 404 404 404 405 302 302 302",
    ),
    "audit/corrections/<uuid:pk>/revert/": (
        "/audit/corrections/{correction}/revert/",
        "302 404 404 404 405 302 302 302",
        "302 404 404 404 400 302 302 302",
    ),
    "audit/erasures/": (
        "/audit/erasures/",
        "302 404 404 404 200 302 302 302",
        "302 404 404 404 405 302 302 302",
    ),
    # Only admins decide support's erasure requests. An empty approval erases (and answers
    # with a redirect); an empty decline is refused: it must say why.
    "audit/erasure-requests/": (
        "/audit/erasure-requests/",
        "302 404 404 404 200 302 302 302",
        "302 404 404 404 405 302 302 302",
    ),
    "audit/erasure-requests/<int:pk>/approve/": (
        "/audit/erasure-requests/{erasure_request}/approve/",
        "302 404 404 404 405 302 302 302",
        "302 404 404 404 302 302 302 302",
    ),
    "audit/erasure-requests/<int:pk>/decline/": (
        "/audit/erasure-requests/{erasure_request}/decline/",
        "302 404 404 404 405 302 302 302",
        "302 404 404 404 400 302 302 302",
    ),
    "audit/export.csv": (
        "/audit/export.csv",
        "302 404 404 404 200 302 302 302",
        "302 404 404 404 405 302 302 302",
    ),
    "complaints/": (
        "/complaints/",
        "302 404 404 200 200 302 302 302",
        "302 404 404 405 405 302 302 302",
    ),
    "conflicts/<int:pk>/resolve/": (
        "/conflicts/{conflict}/resolve/",
        "302 405 405 405 405 302 302 302",
        "302 302 404 302 302 302 302 302",
    ),
    "conflicts/<int:pk>/dismiss/": (
        "/conflicts/{conflict}/dismiss/",
        "302 405 405 405 405 302 302 302",
        "302 302 404 302 302 302 302 302",
    ),
    "favicon.ico": (
        "/favicon.ico",
        "302 302 302 302 302 302 302 302",
        "302 302 302 302 302 302 302 302",
    ),
    "journal/<int:pk>/resolve/": (
        "/journal/{journal}/resolve/",
        "302 404 404 405 405 302 302 302",
        "302 404 404 400 400 302 302 302",
    ),
    "memories/<uuid:pk>/": (
        "/memories/{memory}/",
        "302 302 404 302 302 302 302 302",
        "302 405 405 405 405 302 302 302",
    ),
    "memories/<uuid:pk>/answer/": (
        "/memories/{memory}/answer/",
        "302 405 405 405 405 302 302 302",
        "302 400 404 400 400 302 302 302",
    ),
    "memories/<uuid:pk>/delete/": (
        "/memories/{memory}/delete/",
        "302 302 404 302 302 302 302 302",
        "302 302 404 400 400 302 302 302",
    ),
    "memories/<uuid:pk>/edit/": (
        "/memories/{memory}/edit/",
        "302 302 404 302 302 302 302 302",
        "302 400 404 400 400 302 302 302",
    ),
    "memories/<uuid:pk>/history/": (
        "/memories/{memory}/history/",
        "302 200 404 200 200 302 302 302",
        "302 405 405 405 405 302 302 302",
    ),
    "memories/<uuid:pk>/renew/": (
        "/memories/{memory}/renew/",
        "302 405 405 405 405 302 302 302",
        "302 400 404 400 400 302 302 302",
    ),
    "memories/<uuid:pk>/undo/": (
        "/memories/{memory}/undo/",
        "302 302 404 302 302 302 302 302",
        "302 409 404 409 409 302 302 302",
    ),
    "memories/<uuid:pk>/use/": (
        "/memories/{memory}/use/",
        "302 405 405 405 405 302 302 302",
        "302 400 404 400 400 302 302 302",
    ),
    "memories/<uuid:pk>/uses/": (
        "/memories/{memory}/uses/",
        "302 302 404 302 302 302 302 302",
        "302 405 405 405 405 302 302 302",
    ),
    "people/": ("/people/", "302 404 404 404 200 302 302 302", "302 404 404 404 405 302 302 302"),
    "people/<str:username>/": (
        "/people/{username}/",
        "302 404 404 404 200 302 302 302",
        "302 404 404 404 405 302 302 302",
    ),
    "people/addresses/lift/": (
        "/people/addresses/lift/",
        "302 404 404 404 405 302 302 302",
        "302 404 404 404 400 302 302 302",
    ),
    "people/<str:username>/lockout/lift/": (
        "/people/{username}/lockout/lift/",
        "302 404 404 404 405 302 302 302",
        "302 404 404 404 400 302 302 302",
    ),
    "people/<str:username>/disable/": (
        "/people/{username}/disable/",
        "302 404 404 404 405 302 302 302",
        "302 404 404 404 400 302 302 302",
    ),
    "people/<str:username>/enable/": (
        "/people/{username}/enable/",
        "302 404 404 404 405 302 302 302",
        "302 404 404 404 400 302 302 302",
    ),
    "people/<str:username>/role/": (
        "/people/{username}/role/",
        "302 404 404 404 405 302 302 302",
        "302 404 404 404 400 302 302 302",
    ),
    "people/<str:username>/set-password-link/": (
        "/people/{username}/set-password-link/",
        "302 404 404 404 405 302 302 302",
        "302 404 404 404 400 302 302 302",
    ),
    "people/<str:username>/subjects/": (
        "/people/{username}/subjects/",
        "302 404 404 404 405 302 302 302",
        "302 404 404 404 400 302 302 302",
    ),
    "people/<str:username>/subjects/unlink/": (
        "/people/{username}/subjects/unlink/",
        "302 404 404 404 405 302 302 302",
        "302 404 404 404 400 302 302 302",
    ),
    "people/new/": (
        "/people/new/",
        "302 404 404 404 200 302 302 302",
        "302 404 404 404 400 302 302 302",
    ),
    "permissions/": (
        "/permissions/",
        "302 404 404 200 200 302 302 302",
        "302 404 404 405 405 302 302 302",
    ),
    "policy/": ("/policy/", "302 404 404 404 200 302 302 302", "302 404 404 404 400 302 302 302"),
    "webhooks/": (
        "/webhooks/",
        "302 404 404 404 200 302 302 302",
        "302 404 404 404 400 302 302 302",
    ),
    "webhooks/<int:pk>/": (
        "/webhooks/{webhook}/",
        "302 404 404 404 200 302 302 302",
        "302 404 404 404 405 302 302 302",
    ),
    "webhooks/<int:pk>/active/": (
        "/webhooks/{webhook}/active/",
        "302 404 404 404 405 302 302 302",
        "302 404 404 404 302 302 302 302",
    ),
    "webhooks/<int:pk>/rotate/": (
        "/webhooks/{webhook}/rotate/",
        "302 404 404 404 405 302 302 302",
        # Rotated, then sent to the endpoint's page, which shows the new secret once.
        "302 404 404 404 302 302 302 302",
    ),
    "webhooks/<int:pk>/test/": (
        "/webhooks/{webhook}/test/",
        "302 404 404 404 405 302 302 302",
        "302 404 404 404 302 302 302 302",
    ),
    "webhooks/<int:pk>/delete/": (
        "/webhooks/{webhook}/delete/",
        "302 404 404 404 405 302 302 302",
        "302 404 404 404 400 302 302 302",
    ),
    "webhooks/<int:pk>/deliveries/<int:delivery>/retry/": (
        "/webhooks/{webhook}/deliveries/{delivery}/retry/",
        "302 404 404 404 405 302 302 302",
        "302 404 404 404 302 302 302 302",
    ),
    "queues/": ("/queues/", "302 404 404 200 200 302 302 302", "302 404 404 405 405 302 302 302"),
    "queues/<str:name>/": (
        "/queues/{queue}/",
        "302 404 404 200 200 302 302 302",
        "302 404 404 405 405 302 302 302",
    ),
    # Staff only. An empty POST hands the item to nobody: refused in words (giving it back
    # is its own button's ``give_back``).
    "queues/items/<str:kind>/<str:pk>/<str:what>/": (
        "/queues/items/memory/{memory}/assign/",
        "302 404 404 405 405 302 302 302",
        "302 404 404 400 400 302 302 302",
    ),
    # An empty POST selects nothing: refused in words.
    "queues/pending/confirm/": (
        "/queues/pending/confirm/",
        "302 404 404 405 405 302 302 302",
        "302 404 404 400 400 302 302 302",
    ),
    "recalls/<int:pk>/": (
        "/recalls/{recall}/",
        "302 404 404 200 200 302 302 302",
        "302 404 404 405 405 302 302 302",
    ),
    "reminders/": (
        "/reminders/",
        "302 200 200 200 200 302 302 302",
        "302 200 200 200 200 302 302 302",
    ),
    "reminders/<int:pk>/read/": (
        "/reminders/{reminder}/read/",
        "302 405 405 405 405 302 302 302",
        "302 302 404 404 404 302 302 302",
    ),
    "retractions/": (
        "/retractions/",
        "302 404 404 200 200 302 302 302",
        "302 404 404 405 405 302 302 302",
    ),
    "retractions/<uuid:pk>/": (
        "/retractions/{batch}/",
        "302 404 404 200 200 302 302 302",
        "302 404 404 405 405 302 302 302",
    ),
    "retractions/<uuid:pk>/undo/": (
        "/retractions/{batch}/undo/",
        "302 404 404 405 405 302 302 302",
        "302 404 404 400 400 302 302 302",
    ),
    "retractions/new/": (
        "/retractions/new/",
        "302 404 404 200 200 302 302 302",
        "302 404 404 400 400 302 302 302",
    ),
    "runs/<str:ref>/": (
        "/runs/{run}/",
        "302 404 404 200 200 302 302 302",
        "302 404 404 405 405 302 302 302",
    ),
    "runs/<str:ref>/journal/": (
        "/runs/{run}/journal/",
        "302 404 404 200 200 302 302 302",
        "302 404 404 200 200 302 302 302",
    ),
    "runs/<str:ref>/notes/": (
        "/runs/{run}/notes/",
        "302 404 404 200 200 302 302 302",
        "302 404 404 200 200 302 302 302",
    ),
    "runs/<str:ref>/snapshots/": (
        "/runs/{run}/snapshots/",
        "302 404 404 200 200 302 302 302",
        "302 404 404 200 200 302 302 302",
    ),
    "runs/<str:ref>/snapshots/diff/": (
        "/runs/{run}/snapshots/diff/",
        "302 404 404 200 200 302 302 302",
        "302 404 404 200 200 302 302 302",
    ),
    "sources/<path:ref>/": (
        "/sources/{source}/",
        "302 404 404 200 200 302 302 302",
        "302 404 404 405 405 302 302 302",
    ),
    "subjects/<str:ref>/": (
        "/subjects/{ref}/",
        "302 200 404 200 200 302 302 302",
        "302 405 405 405 405 302 302 302",
    ),
    "subjects/<str:ref>/as-of/": (
        "/subjects/{ref}/as-of/",
        "302 404 404 200 200 302 302 302",
        "302 404 404 405 405 302 302 302",
    ),
    "subjects/<str:ref>/erase/": (
        "/subjects/{ref}/erase/",
        "302 200 404 200 200 302 302 302",
        "302 400 404 400 400 302 302 302",
    ),
    "subjects/<str:ref>/export/": (
        "/subjects/{ref}/export/",
        "302 200 404 200 200 302 302 302",
        "302 405 405 405 405 302 302 302",
    ),
    "subjects/<str:ref>/ledger/": (
        "/subjects/{ref}/ledger/",
        "302 200 404 200 200 302 302 302",
        "302 200 404 200 200 302 302 302",
    ),
    "subjects/<str:ref>/pause/": (
        "/subjects/{ref}/pause/",
        "302 405 405 405 405 302 302 302",
        "302 302 404 302 302 302 302 302",
    ),
}

# The Django admin's own pages, outside any model.
ADMIN_SITE: dict[str, tuple[str, str, str]] = {
    "admin/": ("/admin/", "302 302 302 302 200 302 302 302", "302 302 302 302 200 302 302 302"),
    "admin/login/": (
        "/admin/login/",
        "200 200 200 200 302 200 200 200",
        "200 200 200 200 200 200 200 200",
    ),
    "admin/logout/": (
        "/admin/logout/",
        "302 302 302 302 405 302 302 302",
        "302 302 302 302 302 302 302 302",
    ),
    # The dashboard's change-password page, under the sign-in limits.
    "admin/password_change/": (
        "/admin/password_change/",
        "302 302 302 302 302 302 302 302",
        "302 302 302 302 302 302 302 302",
    ),
    "admin/password_change/done/": (
        "/admin/password_change/done/",
        "302 302 302 302 200 302 302 302",
        "302 302 302 302 405 302 302 302",
    ),
    "admin/autocomplete/": (
        "/admin/autocomplete/",
        "302 302 302 302 403 302 302 302",
        "302 302 302 302 405 302 302 302",
    ),
    "admin/jsi18n/": (
        "/admin/jsi18n/",
        "302 302 302 302 200 302 302 302",
        "302 302 302 302 405 302 302 302",
    ),
    "admin/r/<path:content_type_id>/<path:object_id>/": (
        "/admin/r/1/1/",
        "302 302 302 302 404 302 302 302",
        "302 302 302 302 404 302 302 302",
    ),
    "admin/^(?P<app_label>ledger|auth)/$": (
        "/admin/ledger/",
        "302 302 302 302 200 302 302 302",
        "302 302 302 302 200 302 302 302",
    ),
    "admin/(?P<url>.*)$": (
        "/admin/no-such-page/",
        "302 302 302 302 404 302 302 302",
        "302 302 302 302 404 302 302 302",
    ),
}

# Every model page of the Django admin, by the kind of page: only admins (staff) reach it,
# and it is read-only for them, so nothing can be added, changed or deleted there.
ADMIN_MODEL_PAGES: dict[str, tuple[str, str]] = {
    "changelist": ("302 302 302 302 200 302 302 302", "302 302 302 302 200 302 302 302"),
    "add": ("302 302 302 302 403 302 302 302", "302 302 302 302 403 302 302 302"),
    "change": ("302 302 302 302 200 302 302 302", "302 302 302 302 403 302 302 302"),
    "delete": ("302 302 302 302 403 302 302 302", "302 302 302 302 403 302 302 302"),
    "history": ("302 302 302 302 200 302 302 302", "302 302 302 302 200 302 302 302"),
    "simple_history": ("302 302 302 302 200 302 302 302", "302 302 302 302 403 302 302 302"),
    "object": ("302 302 302 302 302 302 302 302", "302 302 302 302 302 302 302 302"),
    "password_change": ("302 302 302 302 403 302 302 302", "302 302 302 302 403 302 302 302"),
}


def statuses(world: World, url: str, method: str) -> str:
    """The status each principal gets, in ``PRINCIPALS`` order, as one line."""
    codes = []
    for name in PRINCIPALS:
        client = world.clients[name]()
        response = client.get(url) if method == "GET" else client.post(url)
        codes.append(str(response.status_code))
    return " ".join(codes)


def model_pages() -> dict[str, tuple[type[Any], str]]:
    """Every URL pattern of a model page in the Django admin: its model and kind of page."""
    pages = {}
    for model, model_admin in admin.site._registry.items():
        prefix = f"admin/{model._meta.app_label}/{model._meta.model_name}/"
        for pattern in model_admin.get_urls():
            kind = (pattern.name or "object").removeprefix(
                f"{model._meta.app_label}_{model._meta.model_name}_"
            )
            pages[prefix + str(pattern.pattern)] = (model, kind)
    return pages


def test_every_url_pattern_is_in_the_matrix() -> None:
    routes = url_patterns()
    models = model_pages()
    missing = [
        route
        for route in routes
        if route not in MATRIX and route not in ADMIN_SITE and route not in models
    ]
    assert missing == [], "Add these to the permission matrix: " + ", ".join(missing)
    assert {kind for _, kind in models.values()} <= set(ADMIN_MODEL_PAGES)
    assert set(MATRIX) | set(ADMIN_SITE) <= set(routes), "The matrix names a URL that is gone."


@pytest.mark.parametrize("route", sorted(MATRIX))
def test_each_principal_gets_what_the_matrix_says(world: World, route: str) -> None:
    url, get, post = MATRIX[route]
    filled = url.format(**world.ids)
    assert (statuses(world, filled, "GET"), statuses(world, filled, "POST")) == (get, post)


@pytest.mark.parametrize("route", sorted(ADMIN_SITE))
def test_the_django_admin_site_pages(world: World, route: str) -> None:
    url, get, post = ADMIN_SITE[route]
    assert (statuses(world, url, "GET"), statuses(world, url, "POST")) == (get, post)


@pytest.mark.parametrize("route", sorted(model_pages()))
def test_the_django_admin_model_pages(world: World, route: str) -> None:
    model, kind = model_pages()[route]
    row = model._default_manager.order_by("pk").first()
    assert row is not None, f"The world has no {model.__name__} to open."
    first = row.history.order_by("history_id").first() if hasattr(row, "history") else None
    version = first.history_id if first else 0
    filled = "/" + (
        route.replace("^([^/]+)/history/([^/]+)/$", f"{row.pk}/history/{version}/")
        .replace("<path:object_id>", str(row.pk))
        .replace("<id>", str(row.pk))
    )
    get, post = ADMIN_MODEL_PAGES[kind]
    assert (statuses(world, filled, "GET"), statuses(world, filled, "POST")) == (get, post)
