"""What a recall and the plainest API read cost in queries, in production's configuration
(rate limits counted in Redis): a fixed number, whatever the subject holds or k asks for.

A recall is the key (with the policy), the ranking (with the subject, and whether it has
open conflicts), those conflicts when it has any, and the record of what was served.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from ledger.actions.policy import change_policy
from ledger.actors import Actor
from ledger.models import AgentKey, Memory, Recall, Run, Subject
from tests.conftest import SUBJECT, TEST_REDIS_URL, agent_client, body

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="counted on PostgreSQL, where a recall is recorded in one statement",
    ),
]
RECALL = f"/api/v1/subjects/{SUBJECT}/recall"
SUBJECT_URL = f"/api/v1/subjects/{SUBJECT}"
# Mid-minute, so that a test's requests share one rate window and one stamp minute.
NOON = datetime(2026, 11, 2, 12, 0, 10, tzinfo=UTC)


@pytest.fixture(autouse=True)
def rates_in_redis(settings: Any) -> None:
    settings.REDIS_URL = TEST_REDIS_URL


@pytest.fixture
def agent_api() -> APIClient:
    api = agent_client("cost-agent", ["read", "write"])[0]
    # The key's first use is stamped (the keys page shows it): not part of any count here.
    assert api.get("/api/v1/tools").status_code == 200
    return api


def fill(remember: Callable[..., Memory], memories: int) -> Subject:
    """A subject with ``memories`` servable memories: three through the gate, the rest in
    one INSERT (as many gated writes would take seconds, and a count needs none of it)."""
    for n in range(min(memories, 3)):
        remember(f"Asked about refund number {n}.")
    subject = Subject.objects.get(ref=SUBJECT)
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO ledger_memory (id, subject_id, kind, key, statement, normalized,
                basis, status, stated_by, written_at, expires_at, version, withheld)
            SELECT gen_random_uuid(), %s, 'episode', '', 'Asked about refund order ' || g,
                'asked about refund order ' || g, 'stated', 'active', '',
                now() - g * interval '1 minute', now() + interval '30 days', 1, false
            FROM generate_series(1, %s) g
            """,
            [subject.pk, memories - 3],
        )
    return subject


def conflicted(api: APIClient, remember: Callable[..., Memory]) -> None:
    """An open slot conflict, and a possible conflict with a ledger commitment."""
    remember("Prefers email.", key="contact.channel")
    remember("Prefers telephone.", key="contact.channel")
    committed = api.post(
        f"/api/v1/subjects/{SUBJECT}/ledger",
        {
            "fact": "Never telephone about billing",
            "kind": "commitment",
            "source": {"kind": "user_message", "ref": "msg_commit"},
        },
        format="json",
    )
    assert committed.status_code == 201, committed.json()
    written = api.post(
        "/api/v1/memories",
        body(statement="Happy to be phoned about billing at any time", key=""),
        format="json",
    )
    assert written.status_code == 201, written.json()


def queries_of(api: APIClient, url: str, params: dict[str, Any] | None = None) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        response = api.get(url, params or {})
    assert response.status_code == 200, response.content
    return [q["sql"] for q in queries.captured_queries]


@pytest.mark.parametrize("memories", [3, 300])
def test_a_recall_costs_three_queries_whatever_the_subject_holds_or_k_is(
    agent_api: APIClient, remember: Callable[..., Memory], memories: int
) -> None:
    fill(remember, memories)
    for k in (1, 20):
        for goal in ("refund order", ""):
            # The key and the policy; the ranking and the subject; the recall with its items.
            assert len(queries_of(agent_api, RECALL, {"goal": goal, "k": k})) == 3
    assert Recall.objects.count() == 4


@pytest.mark.parametrize("memories", [3, 300])
def test_open_conflicts_add_one_query_whatever_they_hold(
    agent_api: APIClient, remember: Callable[..., Memory], memories: int
) -> None:
    # The conflicts first: the gate would refuse a write past the subject's cap of 200.
    conflicted(agent_api, remember)
    fill(remember, memories)
    for k in (1, 20):
        response = agent_api.get(RECALL, {"goal": "refund", "k": k})
        assert "UNRESOLVED CONFLICT" in response.json()["block"]
        assert "ledger commitment" in response.json()["block"]
        # The conflicts with their statements and commitments: one query more.
        assert len(queries_of(agent_api, RECALL, {"goal": "refund", "k": k})) == 4


def test_reading_within_a_known_run_costs_nothing_more(
    agent_api: APIClient, remember: Callable[..., Memory]
) -> None:
    fill(remember, 3)
    # A new run is started, with its history row, in one transaction with the read.
    first = queries_of(agent_api, RECALL, {"goal": "refund", "run": "run_cost", "turn": 1})
    assert any('INSERT INTO "ledger_historicalrun"' in sql for sql in first)
    # Then the run is found by the statement that stores the recall.
    assert len(queries_of(agent_api, RECALL, {"goal": "refund", "run": "run_cost", "turn": 2})) == 3
    run = Run.objects.get(ref="run_cost")
    assert list(Recall.objects.filter(run=run).order_by("turn").values_list("turn", flat=True)) == [
        1,
        2,
    ]


def test_a_recall_with_another_agents_run_is_refused_and_stores_nothing(
    agent_api: APIClient, remember: Callable[..., Memory]
) -> None:
    fill(remember, 3)
    other = agent_client("other-agent", ["read"])[0]
    assert other.get(RECALL, {"run": "run_theirs"}).status_code == 200
    before = Recall.objects.count()
    response = agent_api.get(RECALL, {"run": "run_theirs"})
    assert response.status_code == 409
    assert response.json()["code"] == "run_of_another_agent"
    assert Recall.objects.count() == before


def test_the_recorded_recall_is_the_one_served(
    agent_api: APIClient, remember: Callable[..., Memory]
) -> None:
    fill(remember, 3)
    conflicted(agent_api, remember)
    response = agent_api.get(RECALL, {"goal": "refund", "k": 2, "run": "run_kept", "turn": 3})
    stored = Recall.objects.get(pk=response["X-Recall-Id"])
    assert stored.block == response.json()["block"]
    assert (stored.run.ref, stored.turn, stored.k, stored.goal) == ("run_kept", 3, 2, "refund")
    served = [m["id"] for m in response.json()["memories"]]
    contenders = {s["memory"] for c in response.json()["conflicts"] for s in c["statements"]}
    items = list(stored.items.order_by("position"))
    assert [str(i.memory_id) for i in items[:2]] == served
    assert {str(i.memory_id) for i in items[2:]} == contenders - set(served)
    assert [i.position for i in items] == list(range(1, len(items) + 1))
    assert {(i.subject_id, i.recalled_at) for i in items} == {
        (stored.subject_id, stored.recalled_at)
    }


@pytest.mark.parametrize("memories", [3, 300])
def test_the_subject_endpoint_costs_two_queries(
    agent_api: APIClient, remember: Callable[..., Memory], memories: int
) -> None:
    fill(remember, memories)
    # The key and the policy; the subject with its counts.
    assert len(queries_of(agent_api, SUBJECT_URL)) == 2
    assert agent_api.get(SUBJECT_URL).json()["counts"]["active"] == memories


def test_a_policy_change_applies_to_the_next_request(agent_api: APIClient) -> None:
    assert agent_api.get(RECALL, {"k": 7}).status_code == 404  # no such subject yet: k passed
    change_policy(actor=Actor.system("test"), reason="smaller blocks", recall_cap=5)
    refused = agent_api.get(RECALL, {"k": 7})
    assert refused.status_code == 400
    assert "5, the policy's recall cap" in refused.json()["k"][0]
    tools = agent_api.get("/api/v1/tools").json()["tools"]
    (recall_tool,) = [t for t in tools if t["name"] == "recall"]
    assert recall_tool["parameters"]["properties"]["k"]["maximum"] == 5


@pytest.fixture
def at_noon(clock: Callable[[datetime], None]) -> Iterator[Callable[[datetime], None]]:
    clock(NOON)
    yield clock


def stamps(sql: list[str]) -> int:
    return sum(q.startswith('UPDATE "ledger_agentkey"') for q in sql)


def test_the_keys_last_use_is_written_at_most_once_a_minute(
    at_noon: Callable[[datetime], None],
) -> None:
    api, agent = agent_client("stamped-agent", ["read"])
    key = AgentKey.objects.get(agent=agent)
    assert stamps(queries_of(api, "/api/v1/tools")) == 1
    at_noon(NOON + timedelta(seconds=40))
    assert stamps(queries_of(api, "/api/v1/tools")) == 0
    key.refresh_from_db()
    assert key.last_used_at == NOON
    at_noon(NOON + timedelta(seconds=61))
    assert stamps(queries_of(api, "/api/v1/tools")) == 1
    key.refresh_from_db()
    assert key.last_used_at == NOON + timedelta(seconds=61)


def test_without_redis_the_rate_limits_cost_no_query(
    at_noon: Any, agent_api: APIClient, remember: Callable[..., Memory], settings: Any
) -> None:
    fill(remember, 3)
    in_redis = queries_of(agent_api, RECALL)
    settings.REDIS_URL = ""
    # Counted in the process's memory, as in Redis: nothing in the database.
    assert len(queries_of(agent_api, RECALL)) == len(in_redis) == 3
