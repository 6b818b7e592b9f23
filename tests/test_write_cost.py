"""What a write through the gate costs: a fixed number of queries for each kind of write,
whatever the subject already holds, at most 10 for a plain one; its audit seal queued for a
Celery worker, never run by the request.

Counted as a production web process makes them: the rate limits in Redis (``REDIS_URL``,
the tests' own database), the key's last use already stamped this minute.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from celery import Celery, current_app
from django.db import connection
from django.test.utils import CaptureQueriesContext
from kombu.simple import SimpleQueue
from rest_framework.test import APIClient

from ledger.actions import seals
from ledger.actions.policy import change_policy
from ledger.actions.vectors import EMBED_TASK
from ledger.actors import Actor
from ledger.models import AuditSeal, Memory, Source, Subject, WriteDecision
from ledger.reads import audit_chain
from ledger.tasks import seal_written
from tests.conftest import TEST_REDIS_URL, agent_client, body

URL = "/api/v1/memories"
EMAIL = "Prefers email over telephone for billing questions."


@dataclass(frozen=True)
class Kind:
    """One kind of write: what the subject holds first, then the write measured, and the
    most queries it may cost (the figures in docs/agents.md#cost-of-a-write)."""

    write: dict[str, Any]
    outcome: str
    queries: int
    status: int = 201
    seeds: tuple[tuple[str, str], ...] = ()
    idempotent: bool = False


KINDS = {
    "stated": Kind({"statement": "Prefers tea to coffee."}, "accepted", 10),
    "inferred": Kind({"statement": "Probably prefers tea.", "basis": "inferred"}, "pending", 10),
    "idempotent": Kind({"statement": "Prefers tea to coffee."}, "accepted", 14, idempotent=True),
    "repeat": Kind({"statement": EMAIL}, "merged", 14, status=200, seeds=((EMAIL, ""),)),
    "slot conflict": Kind(
        {"statement": "Prefers phone calls.", "key": "contact.channel"},
        "conflict",
        14,
        seeds=(("Prefers letters.", "contact.channel"),),
    ),
    "possible conflict": Kind(
        {"statement": "Never email me about invoices."}, "conflict", 14, seeds=((EMAIL, ""),)
    ),
    "system of record": Kind(
        {"statement": "Writes from ada@example.com.", "key": "billing.email"},
        "refused",
        3,
        status=422,
    ),
}


@pytest.fixture(autouse=True)
def rates_in_redis(settings: Any) -> None:
    settings.REDIS_URL = TEST_REDIS_URL


def holding(api: APIClient, kind: Kind, ref: str, memories: int) -> None:
    """The subject ``ref`` holding ``memories`` live memories: one about where they live and
    the kind's own, written through the gate (in the run the measured write names), then
    others about something else, stored directly: what is measured is the write that
    follows, not these."""
    seeds = (("Lives in Lisbon.", ""), *kind.seeds)
    for statement, key in seeds:
        response = api.post(URL, body(subject=ref, statement=statement, key=key), format="json")
        assert response.status_code == 201, response.json()
    subject = Subject.objects.get(ref=ref)
    Memory.objects.bulk_create(
        Memory(
            subject=subject,
            kind="preference",
            key=f"garden.{n % 10}" if n % 3 == 0 else "",
            statement=f"Grows tomato variety {n} in the greenhouse.",
            normalized=f"grows tomato variety {n} in the greenhouse.",
            basis="stated",
            written_at=subject.created_at,
        )
        for n in range(memories - len(seeds))
    )


def cost(api: APIClient, kind: Kind, ref: str) -> list[str]:
    headers = {"Idempotency-Key": f"write-{ref}"} if kind.idempotent else {}
    with CaptureQueriesContext(connection) as queries:
        response = api.post(URL, body(subject=ref, **kind.write), format="json", headers=headers)
    assert response.status_code == kind.status, response.json()
    assert response.json()["decision"]["outcome"] == kind.outcome
    return [query["sql"] for query in queries.captured_queries]


@pytest.mark.django_db
@pytest.mark.parametrize("name", list(KINDS))
def test_each_kind_of_write_costs_the_same_beside_3_memories_or_300(name: str) -> None:
    kind = KINDS[name]
    change_policy(actor=Actor.system("test"), reason="Room for 300.", subject_active_cap=1000)
    api = agent_client("writer", ["read", "write"])[0]
    # Its first request stamps the key's last use, as one request a minute does.
    holding(api, kind, "acct_few", 3)
    holding(api, kind, "acct_many", 300)
    few, many = cost(api, kind, "acct_few"), cost(api, kind, "acct_many")
    assert len(few) == len(many) <= kind.queries, "\n".join(many)


@pytest.mark.django_db
def test_the_answer_to_a_new_memory_is_what_was_written(api: APIClient) -> None:
    """Shown from what the gate holds, not read back: the same as reading it afterwards."""
    answer = api.post(URL, body(), format="json").json()["memory"]
    assert answer == api.get(f"{URL}/{answer['id']}").json()
    conflicting = api.post(
        URL, body(statement="Prefers phone calls for billing questions."), format="json"
    ).json()
    assert conflicting["conflict"]["id"] in conflicting["memory"]["open_conflicts"]
    assert conflicting["memory"] == api.get(f"{URL}/{conflicting['memory']['id']}").json()


# --- the audit seal, queued -----------------------------------------------------------


@pytest.fixture
def broker() -> Iterator[Celery]:
    """For one test, the app sends its messages to the tests' Redis, where they are read."""
    previous = current_app._get_current_object()
    app = Celery("memoryadmin-tests", broker=TEST_REDIS_URL, set_as_current=False)
    app.set_current()
    seals._queued_until.clear()
    queued(app)
    try:
        yield app
    finally:
        queued(app)
        previous.set_current()
        app.close()


def queued(app: Celery) -> list[tuple[str, list[Any]]]:
    """Every message waiting in the default queue (taken off it): task name, arguments."""
    found = []
    with app.connection_for_read() as conn:
        queue = SimpleQueue(conn, "celery")
        while True:
            try:
                message = queue.get(block=False)
            except queue.Empty:
                break
            found.append((message.headers["task"], message.payload[0]))
            message.ack()
        queue.close()
    return found


@pytest.mark.django_db(transaction=True)
def test_a_burst_of_writes_queues_one_sealer_a_second_which_seals_them_all(
    broker: Celery,
) -> None:
    api = agent_client("writer", ["read", "write"])[0]
    started = time.monotonic()
    costs = []
    for n in range(20):
        # Each commits, and runs what waits for its commit, inside the request.
        with CaptureQueriesContext(connection) as queries:
            response = api.post(URL, body(statement=f"Fact number {n}.", key=""), format="json")
        assert response.status_code == 201
        costs.append([query["sql"] for query in queries.captured_queries])
    elapsed = time.monotonic() - started
    # The first starts the subject and the run; none seals anything itself.
    assert max(len(sqls) for sqls in costs[1:]) <= 10
    assert not any("auditseal" in sql or "advisory" in sql for sqls in costs for sql in sqls)
    messages = queued(broker)
    # Each write also queues its new memory's embedding, naming that memory alone, and
    # embeds nothing in the request.
    embeddings = [args for name, args in messages if name == EMBED_TASK]
    assert sorted(memory for ids, _ in embeddings for memory in ids) == sorted(
        str(pk) for pk in Memory.objects.values_list("pk", flat=True)
    )
    assert not any("memoryvector" in sql for sqls in costs for sql in sqls)
    messages = [(name, args) for name, args in messages if name != EMBED_TASK]
    assert {name for name, _ in messages} == {seals.SEAL_TASK}
    # The agent's creation, then the writes: each queues only what no queued run covers.
    assert len(messages) <= 2 + 2 * int(elapsed), (elapsed, messages)
    assert not AuditSeal.objects.exists()
    for _, args in messages:
        seal_written(*args)
    for model in (Memory, Source, Subject):
        chain = audit_chain.chain_for(model.history.model._meta.db_table)
        assert not audit_chain.unsealed(chain).exists()
    checks = audit_chain.verify()
    assert [check.finding for check in checks] == [None] * len(checks)
    assert sum(check.unsealed for check in checks) == 0


@pytest.mark.django_db(transaction=True)
def test_a_write_succeeds_when_its_sealer_cannot_be_queued_and_the_beat_seals_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    previous = current_app._get_current_object()
    # A broker folder that is not there: nothing can be queued.
    gone = str(tmp_path / "gone")
    down = Celery("memoryadmin-tests", broker="filesystem://localhost/", set_as_current=False)
    down.conf.broker_transport_options = {
        "data_folder_in": gone,
        "data_folder_out": gone,
        "control_folder": gone,
    }
    down.set_current()
    seals._queued_until.clear()
    try:
        api = agent_client("writer", ["read", "write"])[0]
        answers = [
            api.post(URL, body(statement=statement, key=""), format="json").status_code
            for statement in ("Prefers email.", "Prefers tea to coffee.")
        ]
    finally:
        previous.set_current()
        down.close()
    assert answers == [201, 201]
    assert WriteDecision.objects.filter(outcome="accepted").count() == 2
    # Tried once: the process leaves the next commits to the beat for a while.
    tried = [r for r in caplog.records if "ledger_historicalmemory" in r.getMessage()]
    assert len(tried) == 1 and "could not be queued" in tried[0].getMessage()
    assert not AuditSeal.objects.exists()
    assert seals.seal_pending() > 0
    checks = audit_chain.verify()
    assert sum(check.unsealed for check in checks) == 0
