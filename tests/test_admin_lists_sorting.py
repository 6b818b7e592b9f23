"""The admin's lists (agents, people, webhook endpoints) sorted by a clicked column header,
kept in the address; a column a list does not sort by is refused in words."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from ledger.actions.agents import create_agent
from ledger.actions.webhooks import register_endpoint
from ledger.actors import Actor
from ledger.models import AgentKey
from ledger.rules.webhooks import Event
from tests.conftest import signed_in

pytestmark = pytest.mark.django_db
SYSTEM = Actor.system("test")


@pytest.fixture
def ada(make_person: Callable[..., User]) -> Client:
    return signed_in(make_person("ada", role="admin"))


def names(html: str, link: str) -> list[str]:
    return re.findall(rf'<a href="/{link}/([^/"]+)/">', html)


def queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


def test_agents_sorted_by_when_their_keys_were_last_used(ada: Client) -> None:
    now = timezone.now()
    for name, used in (("alpha", 3), ("bravo", 1), ("charlie", None)):
        agent, _ = create_agent(name=name, scopes=["read"], actor=SYSTEM)
        if used is not None:
            AgentKey.objects.filter(agent=agent).update(last_used_at=now - timedelta(hours=used))
    assert names(ada.get("/agents/").content.decode(), "agents") == ["alpha", "bravo", "charlie"]
    html = ada.get("/agents/?sort=last-used").content.decode()
    # Oldest use first; never used last.
    assert names(html, "agents") == ["alpha", "bravo", "charlie"]
    html = ada.get("/agents/?sort=-created").content.decode()
    assert names(html, "agents") == ["charlie", "bravo", "alpha"]
    assert 'aria-sort="descending"><a href="?sort=created">Created' in html
    refused = ada.get("/agents/?sort=scopes")
    assert refused.status_code == 400
    assert "This list cannot be sorted by “scopes”" in refused.content.decode()
    # However many agents, the same queries.
    few = queries(ada, "/agents/?sort=-last-used")
    for n in range(4):
        create_agent(name=f"more-{n}", scopes=["read"], actor=SYSTEM)
    assert queries(ada, "/agents/?sort=-last-used") == few


def test_people_sorted_by_the_subjects_they_own_and_the_filter_kept(
    ada: Client, make_person: Callable[..., User]
) -> None:
    make_person("zoe", subject="acct_zoe")
    make_person("adam")
    make_person("sam", role="support")
    html = ada.get("/people/?sort=-subjects").content.decode()
    listed = names(html, "people")
    assert listed[0] == "zoe" and set(listed) == {"zoe", "adam", "sam", "ada"}
    assert 'aria-sort="descending"' in html
    # The role filter and the order go together, both in the address.
    html = ada.get("/people/?role=user&sort=-username").content.decode()
    assert names(html, "people") == ["zoe", "adam"]
    assert ada.get("/people/?sort=password").status_code == 400


def hosts(html: str) -> list[str]:
    return re.findall(r'href="/webhooks/\d+/">http://(\w)\.', html)


def test_webhook_endpoints_sorted_by_address(ada: Client, settings: Any) -> None:
    settings.MEMORYADMIN_WEBHOOK_ALLOW_PRIVATE = True
    for host in ("b", "c", "a"):
        register_endpoint(
            url=f"http://{host}.example.test/hooks",
            events=list(Event.values),
            description="",
            actor=SYSTEM,
        )
    assert hosts(ada.get("/webhooks/").content.decode()) == ["a", "c", "b"]  # newest first
    html = ada.get("/webhooks/?sort=address").content.decode()
    assert hosts(html) == ["a", "b", "c"]
    assert 'aria-sort="ascending"' in html
    assert ada.get("/webhooks/?sort=secret").status_code == 400
