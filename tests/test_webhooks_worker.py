"""Webhook deliveries through a real Celery worker and the Redis test broker.

A write through the API commits, its delivery task goes to the broker, and the worker
(a process of its own, on the test database) POSTs it to a receiver on loopback that
answers 500 first: the worker queues its own retry for the schedule's next time and
delivers it. Waiting is polling with a deadline, never a sleep. The receiver is on loopback,
so both this process and the worker allow private addresses.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from celery import Celery, current_app
from memoryadmin_client.signatures import verify_signature

from ledger.actions.webhooks import register_endpoint
from ledger.actors import Actor
from ledger.delivery.webhooks import DELIVER_TASK
from ledger.models import WebhookDelivery
from tests import test_worker
from tests.conftest import TEST_REDIS_URL, agent_client, body
from tests.test_webhooks import Receiver, receiving
from tests.test_worker import Worker, send, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

# tests/test_worker.py's broker client and worker starter, as this module's own fixtures.
sender = test_worker.sender
mail_dir = test_worker.mail_dir
start_worker = test_worker.start_worker

RAN = re.compile(rf"{re.escape(DELIVER_TASK)}\[[^\]]+\] succeeded in [\d.]+s: (.*)")


@pytest.fixture(scope="module")
def worker(start_worker: Callable[..., Worker]) -> Worker:
    # One retry, a second after the first failure: the whole schedule runs within the test.
    return start_worker(
        "hooks", MEMORYADMIN_WEBHOOK_RETRY_SECONDS="1", MEMORYADMIN_WEBHOOK_ALLOW_PRIVATE="1"
    )


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with receiving() as got:
        yield got


def runs(worker: Worker) -> list[str]:
    """What each run of the delivery task in the worker returned, in order."""
    return RAN.findall(worker.text())


def test_the_worker_delivers_signed_retries_after_a_500_and_sends_once(
    sender: Celery, worker: Worker, receiver: Receiver, settings: Any
) -> None:
    settings.MEMORYADMIN_WEBHOOK_ALLOW_PRIVATE = True
    # The write's on_commit queues on the current app: the test broker's client.
    assert current_app.conf.broker_url == TEST_REDIS_URL
    assert not current_app.conf.task_always_eager
    made = register_endpoint(
        url=receiver.url, events=["memory.written"], description="", actor=Actor.system("test")
    )
    receiver.answers = [500]
    client, _ = agent_client("writer", ["read", "write"])
    assert client.post("/api/v1/memories", body(), format="json").status_code == 201

    delivered = wait_for(
        lambda: WebhookDelivery.objects.filter(status="delivered").first(),
        "the worker to deliver the retry",
        timeout=30,
    )
    assert delivered.attempts == 2
    assert [a["status_code"] for a in delivered.attempt_log] == [500, 200]
    assert len(receiver.received) == 2
    (_, first), (_, raw) = receiver.received
    # The same event both times, byte for byte, each signed with the endpoint's secret.
    assert first == raw
    for sent_headers, sent in receiver.received:
        assert sent_headers["Memoryadmin-Event-Id"] == str(delivered.event_id)
        assert verify_signature(made.secret, sent, sent_headers["Memoryadmin-Signature"])
    event = json.loads(raw)
    assert (event["id"], event["type"]) == (str(delivered.event_id), "memory.written")
    assert event["data"]["memory"]["statement"] == body()["statement"]

    # The worker ran it twice: the failure, which queued the retry, and the retry.
    wait_for(lambda: len(runs(worker)) >= 2, "the worker to log both runs")
    first_run, second_run = runs(worker)[:2]
    assert first_run.startswith("{'delivered': 0, 'failed': 1, 'retry_in': ")
    assert second_run == "{'delivered': 1, 'failed': 0, 'retry_in': None}"

    # Nothing more: the beat's pass finds nothing due, and no third POST arrives; it forgets
    # nothing either (the delivery is younger than the retention).
    task_id = send(sender, DELIVER_TASK)
    (result,) = wait_for(lambda: worker.results(task_id), "the beat's pass to finish")
    assert result == "{'delivered': 0, 'failed': 0, 'retry_in': None, 'forgotten': 0}"
    assert len(runs(worker)) == 3
    assert len(receiver.received) == 2
    delivered.refresh_from_db()
    assert (delivered.status, delivered.attempts) == ("delivered", 2)
