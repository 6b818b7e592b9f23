"""With the broker down, a write answers at once: its follow-up tasks (the audit sealer,
the embedder, the webhook deliveries) fail to queue within about a second, are logged in a
line that names no one, and are done by their beat passes instead."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from celery import Celery, current_app

from ledger.actions import seals
from ledger.actions.vectors import EMBED_TASK
from ledger.actions.webhooks import register_endpoint
from ledger.actors import Actor
from ledger.delivery.webhooks import DELIVER_TASK
from ledger.models import Memory, WebhookDelivery
from ledger.reads import audit_chain
from tests.conftest import agent_client, body

# Nothing listens on port 1: a broker that is down.
CLOSED = ["redis://127.0.0.1:1/0", "amqp://guest:guest@127.0.0.1:1//"]
STATEMENT = "Prefers email over telephone for billing questions."


@pytest.fixture(params=CLOSED)
def broker_down(request: pytest.FixtureRequest) -> Iterator[str]:
    """The project's Celery settings (its timeouts among them), with the broker at a port
    where nothing listens, as the current app for the test."""
    previous = current_app._get_current_object()
    down = Celery("memoryadmin-tests", set_as_current=False)
    down.config_from_object("django.conf:settings", namespace="CELERY")
    down.conf.broker_url = request.param
    down.conf.task_always_eager = False
    down.set_current()
    seals._queued_until.clear()
    try:
        yield request.param
    finally:
        previous.set_current()
        down.close()
        seals._queued_until.clear()


@pytest.mark.django_db(transaction=True)
def test_a_write_answers_at_once_with_the_broker_down_and_the_beat_does_the_rest(
    broker_down: str, caplog: pytest.LogCaptureFixture, settings: Any
) -> None:
    register_endpoint(
        url="https://hooks.example.com/in",
        events=["memory.written"],
        description="",
        actor=Actor.system("test"),
    )
    api = agent_client("writer", ["read", "write"])[0]
    caplog.clear()

    started = time.monotonic()
    answer = api.post("/api/v1/memories", body(statement=STATEMENT), format="json")
    took = time.monotonic() - started

    assert answer.status_code == 201
    assert took < 2.0, f"the write took {took:.1f} s"
    assert Memory.objects.filter(statement=STATEMENT).exists()

    lines = [r.getMessage() for r in caplog.records if r.name == "ledger.delivery.broker"]
    tasks = sorted(line.split(" ", 1)[0] for line in lines)
    assert tasks == [DELIVER_TASK, EMBED_TASK, seals.SEAL_TASK]
    assert all(" could not be queued (" in line for line in lines)
    said = " ".join(lines)
    assert "the beat's pass seals the new rows of ledger_historicalmemory" in said
    assert "the beat's pass embeds them" in said
    assert "the beat's pass sends what is due" in said
    # The line names the task and the broker's error, never what was written.
    assert all(STATEMENT not in line and "acct_" not in line for line in lines)

    # What the messages would have asked, the beat's passes do.
    assert seals.seal_pending() > 0
    assert sum(check.unsealed for check in audit_chain.verify()) == 0
    waiting = WebhookDelivery.objects.get()
    assert (waiting.status, waiting.attempts) == ("pending", 0)
