"""Webhooks: each event filed by its real action in the change's transaction, delivered
signed to a real receiver on loopback, retried after a failure, and sent once per event id;
the admin page for admins only.

The receiver is a threaded ``http.server`` in the test, on loopback: every test here allows
private addresses (``allow_private``) but those that check they are refused. Delivery runs
as the beat's pass and the task do (``ledger.delivery.webhooks.deliver``), in this process;
the same through a real Celery worker is ``test_webhooks_worker.py``. The race that matters,
two deliverers at one row, is run here with two threads on two database connections.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import time_machine
from celery import current_app
from django.conf import settings as django_settings
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from memoryadmin_client.signatures import sign, verify_signature
from rest_framework.test import APIClient

from ledger.actions.erasure import erase_subject
from ledger.actions.expiry import expire_due
from ledger.actions.journal import journal_intent, record_outcome
from ledger.actions.lifecycle import correct_memory, restore_memory, retract_memory
from ledger.actions.retractions import Selection, retract_batch, undo_batch
from ledger.actions.sources import SourceInput
from ledger.actions.webhooks import (
    register_endpoint,
    send_test_event,
    set_endpoint_active,
)
from ledger.actors import Actor
from ledger.dates import when
from ledger.delivery.webhooks import deliver, forget_settled
from ledger.models import Agent, Memory, Run, Subject, WebhookDelivery, WebhookEndpoint
from ledger.rules.webhooks import Event, refused_address
from tests.conftest import SUBJECT, agent_client, body, signed_in
from tests.test_snapshots_api import snapshot_body, without_last_open_item

SECRET_LEN = 40
ADMIN = Actor.system("test")


@dataclass
class Receiver:
    """Records each delivery; answers each request with the next of ``answers`` (then 200)."""

    url: str = ""
    answers: list[int] = field(default_factory=list)
    received: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Answer 200 with a body announced but never finished (until the block ends).
    stall: bool = False
    done: threading.Event = field(default_factory=threading.Event)

    def events(self) -> list[dict[str, Any]]:
        with self.lock:
            return [json.loads(raw) for _, raw in self.received]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with receiving() as got:
        yield got


@contextmanager
def receiving() -> Iterator[Receiver]:
    """A receiver listening on loopback until the block ends."""
    got = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers["Content-Length"]))
            with got.lock:
                got.received.append((dict(self.headers.items()), raw))
                status = got.answers.pop(0) if got.answers else 200
            self.send_response(status)
            if got.stall:
                self.send_header("Content-Length", "1000000")
                self.end_headers()
                self.wfile.write(b"x" * 10)
                self.wfile.flush()
                got.done.wait(10)
                return
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    got.url = f"http://127.0.0.1:{server.server_address[1]}/hooks"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield got
    finally:
        got.done.set()
        server.shutdown()
        server.server_close()


@pytest.fixture(autouse=True)
def allow_private(settings: Any) -> None:
    """The receivers are on loopback."""
    settings.MEMORYADMIN_WEBHOOK_ALLOW_PRIVATE = True


@pytest.fixture
def eager() -> Iterator[None]:
    """Deliveries run on commit in this process, as ``CELERY_TASK_ALWAYS_EAGER`` does."""
    before = current_app.conf.task_always_eager
    current_app.conf.task_always_eager = True
    yield
    current_app.conf.task_always_eager = before


@pytest.fixture
def quick_retries(settings: Any) -> None:
    settings.MEMORYADMIN_WEBHOOK_RETRY_SECONDS = [0, 0]


def wait_for(condition: Callable[[], Any], what: str, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"Timed out waiting for {what}.")


def endpoint(url: str = "http://127.0.0.1:9/hooks", events: list[str] | None = None) -> Any:
    return register_endpoint(
        url=url, events=events or Event.values, description="tests", actor=ADMIN
    )


def filed(event: str) -> list[WebhookDelivery]:
    return list(WebhookDelivery.objects.filter(event=event).order_by("id"))


# --- the signature recipe -----------------------------------------------------------------


def test_the_signature_verifies_and_fails_on_a_wrong_secret_body_or_old_time() -> None:
    raw = b'{"id":"e1","type":"memory.written"}'
    now = int(time.time())
    header = sign("whsec_right", raw, now)
    assert header.startswith(f"t={now},v1=")
    assert verify_signature("whsec_right", raw, header)
    assert not verify_signature("whsec_wrong", raw, header)
    assert not verify_signature("whsec_right", raw + b" ", header)
    old = sign("whsec_right", raw, now - 301)
    assert not verify_signature("whsec_right", raw, old)
    assert not verify_signature("whsec_right", raw, "v1=deadbeef")
    assert not verify_signature("whsec_right", raw, "")


# --- emission: each event from its real action --------------------------------------------


@pytest.mark.django_db
def test_each_event_is_filed_by_its_action(
    api: APIClient, agent: Agent, remember: Callable[..., Memory]
) -> None:
    hook = endpoint().endpoint
    written = api.post("/api/v1/memories", body(), format="json")
    assert written.status_code == 201
    (event,) = filed("memory.written")
    memory = event.payload["memory"]
    assert memory["statement"] == body()["statement"]
    assert (memory["subject"], event.payload["outcome"]) == (SUBJECT, "accepted")
    assert event.endpoint == hook

    pending = remember("Probably likes long calls.", basis="inferred")
    assert filed("memory.written")[-1].payload["outcome"] == "pending"

    other = api.post(
        "/api/v1/memories",
        body(statement="Prefers phone calls.", key="contact.channel"),
        format="json",
    )
    assert other.status_code == 201
    # The slot's conflict (the words may open a possible conflict beside it).
    (conflict,) = [e for e in filed("conflict.opened") if not e.payload["conflict"]["possible"]]
    assert conflict.payload["conflict"]["key"] == "contact.channel"
    assert len(conflict.payload["conflict"]["memories"]) == 2

    original = Memory.objects.get(pk=written.json()["memory"]["id"])
    new = correct_memory(
        memory=original, actor=ADMIN, statement="Prefers letters.", reason="Said so."
    )
    (corrected,) = filed("memory.corrected")
    assert corrected.payload["memory"]["id"] == str(new.pk)
    assert corrected.payload["corrects"] == str(original.pk)

    retract_memory(memory=pending, actor=ADMIN, reason="Wrong person.")
    (retracted,) = filed("memory.retracted")
    assert retracted.payload["memory"]["status"] == "retracted"

    run = Run.objects.get(ref="run_77")
    entry = journal_intent(
        agent=run.agent, run=run, idempotency_key="pay-1", action="refund", intent={"n": 1}
    ).entry
    record_outcome(agent=run.agent, idempotency_key="pay-1", state="unknown")
    (unknown,) = filed("journal.unknown")
    assert unknown.payload["journal_entry"]["id"] == entry.pk
    assert unknown.payload["journal_entry"]["previous_state"] == "intended"

    rejected = api.post(
        "/api/v1/runs/run_77/snapshots",
        snapshot_body(document=without_last_open_item()),
        format="json",
    )
    assert rejected.status_code == 422
    (snapshot,) = filed("snapshot.rejected")
    assert snapshot.payload["snapshot"]["problems"] == [{"check": "partition", "code": "missing"}]


@pytest.mark.django_db
def test_the_sweep_files_one_expired_event_per_memory(remember: Callable[..., Memory]) -> None:
    endpoint(events=["memory.expired"])
    now = timezone.now()
    with time_machine.travel(now - timedelta(days=2), tick=False):
        memories = [
            remember(
                f"Fact number {n}.", expires_at=now - timedelta(hours=1), expires_omitted=False
            )
            for n in range(3)
        ]
    assert expire_due().memories == 3
    events = filed("memory.expired")
    assert sorted(e.payload["memory"]["id"] for e in events) == sorted(str(m.pk) for m in memories)
    assert {e.payload["memory"]["status"] for e in events} == {"expired"}
    assert len({e.event_id for e in events}) == 3
    # Nothing subscribed to anything else: the writes themselves filed nothing.
    assert WebhookDelivery.objects.exclude(event="memory.expired").count() == 0


@pytest.mark.django_db
def test_an_endpoint_gets_only_what_it_subscribed_to_and_nothing_while_inactive(
    api: APIClient,
) -> None:
    endpoint(events=["memory.retracted"])
    assert api.post("/api/v1/memories", body(), format="json").status_code == 201
    assert WebhookDelivery.objects.count() == 0


@pytest.mark.django_db
def test_a_rolled_back_write_or_a_refused_one_files_nothing(
    api: APIClient, remember: Callable[..., Memory]
) -> None:
    endpoint()
    with pytest.raises(RuntimeError), transaction.atomic():
        remember("Lives in Porto.")
        assert WebhookDelivery.objects.count() == 1
        raise RuntimeError("the request failed after the write")
    assert WebhookDelivery.objects.count() == 0
    refused = api.post("/api/v1/memories", body(key="billing.email"), format="json")
    assert refused.status_code == 422
    assert WebhookDelivery.objects.count() == 0


@pytest.mark.django_db
def test_erasure_scrubs_earlier_events_and_its_own_says_nothing_personal(
    api: APIClient, make_person: Any
) -> None:
    endpoint()
    assert api.post("/api/v1/memories", body(), format="json").status_code == 201
    subject = Subject.objects.get(ref=SUBJECT)
    erase_subject(subject=subject, actor=ADMIN, requested_by="the person, by phone")
    (written,) = filed("memory.written")
    assert written.payload == {"erased": True}
    (erased,) = filed("subject.erased")
    text = json.dumps(erased.payload)
    assert erased.payload["erasure"]["subject"] == SUBJECT
    assert erased.payload["erasure"]["counts"]["memories"] == 1
    for personal in ("Prefers email", "billing", "phone", "msg_0192"):
        assert personal not in text


@pytest.mark.django_db
def test_a_batch_deletion_files_one_event_a_memory_in_one_statement_and_its_undo_tells_of_them(
    remember: Callable[..., Memory],
) -> None:
    poisoned = SourceInput(kind="user_message", ref="msg_0588")
    memories = [
        remember(statement, source=poisoned)
        for statement in ("Happy to be phoned.", "Best reached after 6 pm.", "Call on Sundays.")
    ]
    untouched = remember("Leave parcels at number 12.")
    endpoint(events=["memory.retracted", "memory.written"])

    with CaptureQueriesContext(connection) as queries:
        batch = retract_batch(
            selection=Selection(source_ref="msg_0588"), actor=ADMIN, reason="Misread."
        )
    filings = [q for q in queries if q["sql"].startswith("WITH ev (pk, event_id) AS (")]
    assert len(filings) == 1
    retracted = filed("memory.retracted")
    assert sorted(e.payload["memory"]["id"] for e in retracted) == sorted(
        str(m.pk) for m in memories
    )
    assert {e.payload["memory"]["status"] for e in retracted} == {"retracted"}
    assert len({e.event_id for e in retracted}) == 3
    assert str(untouched.pk) not in json.dumps([e.payload for e in retracted])
    assert filed("memory.written") == []

    # The undo puts them back: a receiver mirroring memories is told so, each as it now is.
    report = undo_batch(batch=batch, actor=ADMIN, reason="A mistake.")
    assert len(report.restored) == 3
    restored = filed("memory.written")
    assert sorted(e.payload["memory"]["id"] for e in restored) == sorted(
        str(m.pk) for m in memories
    )
    assert {(e.payload["outcome"], e.payload["memory"]["status"]) for e in restored} == {
        ("restored", "active")
    }
    assert len(filed("memory.retracted")) == 3


@pytest.mark.django_db
def test_a_person_s_undo_of_a_deletion_tells_a_mirror_the_memory_is_back(
    remember: Callable[..., Memory],
) -> None:
    memory = remember("Prefers email over telephone for billing questions.")
    endpoint(events=["memory.retracted", "memory.written"])
    dana = Actor.system("dana")
    retract_memory(memory=memory, actor=dana, reason="Not true.")

    restore_memory(memory=memory, actor=dana, within_seconds=30)

    (back,) = filed("memory.written")
    assert back.payload["outcome"] == "restored"
    assert back.payload["memory"]["id"] == str(memory.pk)
    assert back.payload["memory"]["status"] == "active"


@pytest.mark.django_db
def test_settled_deliveries_are_forgotten_after_the_retention_and_waiting_ones_kept(
    settings: Any,
) -> None:
    settings.MEMORYADMIN_WEBHOOK_RETENTION_DAYS = 30
    hook = endpoint().endpoint
    now = timezone.now()
    made = {
        (status, age): send_test_event(endpoint=hook, actor=ADMIN).pk
        for status in ("delivered", "failed", "pending")
        for age in (31, 29)
    }
    for (status, age), pk in made.items():
        WebhookDelivery.objects.filter(pk=pk).update(
            status=status, created_at=now - timedelta(days=age)
        )

    assert forget_settled(now=now) == 2

    kept = set(WebhookDelivery.objects.values_list("pk", flat=True))
    assert kept == {pk for (status, age), pk in made.items() if status == "pending" or age < 30}


# --- the payload reads the same on PostgreSQL and SQLite -----------------------------------

# A moment whose fraction ends in zeros (PostgreSQL's JSON would write ".25"), and an
# expiry on the second (isoformat then writes no fraction).
WRITTEN = datetime(2026, 1, 2, 3, 4, 5, 250000, tzinfo=UTC)
EXPIRES = datetime(2099, 3, 4, tzinfo=UTC)

# Run in a process of its own on a fresh SQLite database, as make run's is: migrate, write
# one memory with an endpoint listening, print the event's payload and the memory's id.
SQLITE_WRITE = """
import json, time_machine
from datetime import datetime
from django.core.management import call_command
call_command("migrate", verbosity=0)
from ledger.actions.agents import create_agent
from ledger.actions.gate import MemoryInput, write_memory
from ledger.actions.sources import SourceInput
from ledger.actions.webhooks import register_endpoint
from ledger.actors import Actor
from ledger.models import WebhookDelivery
actor = Actor.system("test")
register_endpoint(
    url="http://127.0.0.1:9/h", events=["memory.written"], description="", actor=actor
)
agent = create_agent(name="fixture-agent", scopes=["write"], actor=actor)[0]
with time_machine.travel(datetime.fromisoformat("{written}"), tick=False):
    memory = write_memory(agent=agent, data=MemoryInput(
        subject="{subject}", kind="preference", basis="stated", key="contact.channel",
        statement="Prefers email.", source=SourceInput(kind="user_message", ref="msg_1"),
        expires_at=datetime.fromisoformat("{expires}"), expires_omitted=False)).memory
print(json.dumps({{"id": str(memory.pk), "payload": WebhookDelivery.objects.get().payload}}))
"""


def write_the_memory(remember: Callable[..., Memory]) -> Memory:
    with time_machine.travel(WRITTEN, tick=False):
        return remember(
            "Prefers email.", key="contact.channel", expires_at=EXPIRES, expires_omitted=False
        )


@pytest.mark.django_db
def test_a_payload_has_a_dashed_id_and_times_as_isoformat_writes_them(
    remember: Callable[..., Memory],
) -> None:
    endpoint(events=["memory.written"])
    memory = write_the_memory(remember)
    (event,) = filed("memory.written")
    said = event.payload["memory"]
    assert said["id"] == str(memory.pk)
    assert said["written_at"] == "2026-01-02T03:04:05.250000+00:00" == WRITTEN.isoformat()
    assert said["expires_at"] == "2099-03-04T00:00:00+00:00"
    # The envelope's own time is written the same way.
    assert event.created_at.isoformat().endswith("+00:00")


@pytest.mark.django_db
def test_sqlite_writes_the_same_payload_as_postgresql(
    remember: Callable[..., Memory], tmp_path: Path
) -> None:
    endpoint(events=["memory.written"])
    memory = write_the_memory(remember)
    here = WebhookDelivery.objects.get().payload

    (tmp_path / "broker" / "queue").mkdir(parents=True)
    (tmp_path / "broker" / "control").mkdir()
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "CELERY_BROKER_DIR": str(tmp_path / "broker"),
        "DJANGO_SETTINGS_MODULE": "memoryadmin.settings",
        "DEBUG": "1",
        "MEMORYADMIN_WEBHOOK_ALLOW_PRIVATE": "1",
    }
    env.pop("CELERY_BROKER_URL", None)
    script = "import django; django.setup()\n" + SQLITE_WRITE.format(
        written=WRITTEN.isoformat(), expires=EXPIRES.isoformat(), subject=SUBJECT
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=django_settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    there = json.loads(done.stdout.strip().splitlines()[-1])
    assert there["payload"]["memory"]["id"] == there["id"]
    assert there["payload"]["memory"]["id"].count("-") == 4
    # Everything but the memory's own id is the same, byte for byte.
    for payload, pk in ((here, str(memory.pk)), (there["payload"], there["id"])):
        assert payload["memory"].pop("id") == pk
    assert there["payload"] == here


# --- delivery: signed, retried, once ------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_write_is_delivered_signed_and_retried_after_a_500(
    receiver: Receiver, eager: None, settings: Any
) -> None:
    settings.MEMORYADMIN_WEBHOOK_RETRY_SECONDS = [1]
    made = endpoint(url=receiver.url, events=["memory.written"])
    receiver.answers = [500]
    client, _ = agent_client("writer", ["read", "write"])
    assert client.post("/api/v1/memories", body(), format="json").status_code == 201
    # The first attempt ran on commit and got the 500; the beat's pass sends the retry.
    wait_for(lambda: len(receiver.received) >= 1, "the first attempt")
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("pending", 1, 500)
    # Not before its time: the retry waits its second.
    assert delivery.next_attempt_at is not None
    assert deliver().delivered == 0 or delivery.next_attempt_at <= timezone.now()
    wait_for(lambda: deliver().delivered, "the retry to be due and delivered")
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("delivered", 2)
    assert [a["status_code"] for a in delivery.attempt_log] == [500, 200]

    headers, raw = receiver.received[-1]
    assert headers["Memoryadmin-Event-Id"] == str(delivery.event_id)
    assert headers["Memoryadmin-Event"] == "memory.written"
    assert headers["Content-Type"] == "application/json"
    assert verify_signature(made.secret, raw, headers["Memoryadmin-Signature"])
    assert not verify_signature("whsec_other", raw, headers["Memoryadmin-Signature"])
    event = json.loads(raw)
    assert event["id"] == str(delivery.event_id)
    assert event["data"]["memory"]["statement"] == body()["statement"]
    # Both attempts were the same event: the receiver de-duplicates on its id.
    assert {json.loads(r)["id"] for _, r in receiver.received} == {str(delivery.event_id)}

    # Delivered is delivered: the pass and the task running again send nothing.
    deliver()
    deliver(event_id=str(delivery.event_id))
    assert len(receiver.received) == 2


@pytest.mark.django_db(transaction=True)
def test_two_deliverers_racing_send_an_event_once(receiver: Receiver) -> None:
    hook = endpoint(url=receiver.url).endpoint
    delivery = send_test_event(endpoint=hook, actor=ADMIN)
    barrier = threading.Barrier(2)
    failures: list[BaseException] = []

    def run() -> None:
        try:
            barrier.wait()
            deliver(event_id=str(delivery.event_id))
        except BaseException as error:  # noqa: BLE001 - reported by the test below
            failures.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert len(receiver.received) == 1
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("delivered", 1)


@pytest.mark.django_db(transaction=True)
def test_a_delivery_fails_after_its_last_attempt(receiver: Receiver, quick_retries: None) -> None:
    hook = endpoint(url=receiver.url).endpoint
    receiver.answers = [500, 503, 302]
    delivery = send_test_event(endpoint=hook, actor=ADMIN)
    for _ in range(4):
        deliver()
    delivery.refresh_from_db()
    assert delivery.status == "failed"
    # A redirect is not followed, and is not delivered.
    assert [a["status_code"] for a in delivery.attempt_log] == [500, 503, 302]
    assert len(receiver.received) == 3


# --- the admin page ------------------------------------------------------------------------


@pytest.fixture
def admin(make_person: Any) -> Client:
    return signed_in(make_person("ada", "admin"))


@pytest.mark.django_db
def test_only_admins_see_the_webhooks_page(make_person: Any) -> None:
    for role in ("user", "support"):
        page = signed_in(make_person(f"someone-{role}", role)).get(reverse("webhooks"))
        assert page.status_code == 404
    assert Client().get(reverse("webhooks")).status_code == 302


@pytest.mark.django_db
def test_registering_redirects_to_the_secret_shown_once_and_a_reload_registers_nothing(
    admin: Client,
) -> None:
    posted = admin.post(
        reverse("webhooks"),
        {"url": "https://hooks.example.com/in", "events": ["memory.written"], "description": "CRM"},
    )
    hook = WebhookEndpoint.objects.get()
    # Post/Redirect/Get: the secret is not in the POST's answer, which a reload would resend.
    assert posted.status_code == 302
    assert posted["Location"] == reverse("webhook", args=[hook.pk])
    assert hook.secret not in posted.content.decode()
    shown = admin.get(posted["Location"])
    assert shown.status_code == 200
    assert "no-store" in shown["Cache-Control"]
    assert hook.secret in shown.content.decode()
    assert hook.events == ["memory.written"]
    assert hook.history.get().history_actor == "user:ada"
    # The reload (the page the browser is on) shows it no more, and makes no endpoint.
    again = admin.get(posted["Location"])
    assert hook.secret not in again.content.decode()
    assert WebhookEndpoint.objects.count() == 1
    assert "https://hooks.example.com/in" in admin.get(reverse("webhooks")).content.decode()


@pytest.mark.django_db
def test_rotating_redirects_to_the_new_secret_shown_once(admin: Client) -> None:
    hook = endpoint(url="https://hooks.example.com/in").endpoint
    before = hook.secret
    posted = admin.post(reverse("webhook-rotate", args=[hook.pk]))
    assert posted.status_code == 302
    hook.refresh_from_db()
    assert hook.secret != before and hook.secret not in posted.content.decode()
    shown = admin.get(posted["Location"])
    assert hook.secret in shown.content.decode() and "no-store" in shown["Cache-Control"]
    assert hook.secret not in admin.get(posted["Location"]).content.decode()
    # Another endpoint's page never takes it: the value is for the one that was rotated.
    other = endpoint(url="https://other.example.com/in").endpoint
    admin.post(reverse("webhook-rotate", args=[hook.pk]))
    hook.refresh_from_db()
    assert hook.secret not in admin.get(reverse("webhook", args=[other.pk])).content.decode()
    assert hook.secret in admin.get(reverse("webhook", args=[hook.pk])).content.decode()
    assert hook.history.filter(history_change_reason="Secret rotated.").count() == 2


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
        ("http://localhost:5432/", "localhost (127.0.0.1) is a loopback address"),
        ("http://10.0.0.1/", "10.0.0.1 is a private address"),
        ("http://[::1]:8000/", "::1 is a loopback address"),
        ("http://2130706433/", "(127.0.0.1) is a loopback address"),
        ("http://0.0.0.0:80/", "0.0.0.0 is an unspecified address"),
    ],
)
def test_an_internal_address_is_refused_at_registration(
    admin: Client, settings: Any, url: str, words: str
) -> None:
    settings.MEMORYADMIN_WEBHOOK_ALLOW_PRIVATE = False
    response = admin.post(reverse("webhooks"), {"url": url, "events": ["memory.written"]})
    assert response.status_code == 400
    assert words in response.content.decode()
    assert "only to public addresses" in response.content.decode()
    assert not WebhookEndpoint.objects.exists()


# Every form an address takes to reach a host, with what the refusal calls it (None: public).
ADDRESSES = [
    ("93.184.215.14", None),
    ("2606:2800:21f:cb07:6820:80da:af6b:8b2c", None),
    ("127.0.0.1", "a loopback address"),
    ("192.168.1.20", "a private address"),
    ("fd00::1", "a private address"),
    ("fe80::1%eth0", "a link-local address"),
    # Multicast counts as "global" to ipaddress, and is refused all the same.
    ("224.0.0.1", "a multicast address"),
    ("ff0e::1", "a multicast address"),
    ("240.0.0.1", "a private address"),
    ("100.64.0.1", "a non-public address"),
    # IPv6 forms that lead to an IPv4 address are judged as the address they lead to.
    ("::ffff:127.0.0.1", "an IPv4-mapped address of 127.0.0.1, a loopback address"),
    ("::ffff:8.8.8.8", None),
    ("::ffff:0:7f00:1", "an IPv4-translated address of 127.0.0.1, a loopback address"),
    ("::ffff:0:808:808", None),
    ("64:ff9b::a9fe:a9fe", "a NAT64 address of 169.254.169.254, a link-local address"),
    ("64:ff9b::7f00:1", "a NAT64 address of 127.0.0.1, a loopback address"),
    ("64:ff9b::a00:1", "a NAT64 address of 10.0.0.1, a private address"),
    ("64:ff9b::808:808", None),
    # Forms that are never a public destination, whatever they carry.
    ("::127.0.0.1", "an IPv4-compatible address (carrying 127.0.0.1)"),
    ("::8.8.8.8", "an IPv4-compatible address (carrying 8.8.8.8)"),
    ("64:ff9b:1::808:808", "a local-use NAT64 address"),
    ("2002:a9fe:a9fe::1", "a 6to4 address (carrying 169.254.169.254)"),
    ("2002:808:808::1", "a 6to4 address (carrying 8.8.8.8)"),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "a Teredo address"),
    ("fec0::1", "a site-local address"),
    ("2001:db8::1", "a documentation address"),
    ("3fff::1", "a documentation address"),
]


@pytest.mark.parametrize(("address", "kind"), ADDRESSES)
def test_only_public_addresses_may_receive(address: str, kind: str | None) -> None:
    assert refused_address(address) == kind


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("host", "words"),
    [
        ("64:ff9b::7f00:1", "64:ff9b::7f00:1 is a NAT64 address of 127.0.0.1, a loopback"),
        ("::127.0.0.1", "::127.0.0.1 is an IPv4-compatible address (carrying 127.0.0.1)"),
        ("::ffff:0:a9fe:a9fe", "::ffff:0:a9fe:a9fe is an IPv4-translated address of 169."),
        ("2002:a00:1::1", "2002:a00:1::1 is a 6to4 address (carrying 10.0.0.1)"),
        ("fec0::1", "fec0::1 is a site-local address"),
    ],
)
def test_an_ipv6_form_of_an_internal_address_is_refused_at_registration(
    admin: Client, settings: Any, host: str, words: str
) -> None:
    settings.MEMORYADMIN_WEBHOOK_ALLOW_PRIVATE = False
    url = f"http://[{host}]/hooks"
    response = admin.post(reverse("webhooks"), {"url": url, "events": ["memory.written"]})
    assert response.status_code == 400
    assert words in response.content.decode()
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.django_db
def test_an_ipv6_form_of_an_internal_address_is_not_sent_to(settings: Any) -> None:
    # Registered while allowed (as a name that resolves elsewhere later would be).
    hook = endpoint(url="http://[64:ff9b::a9fe:a9fe]/latest/meta-data/").endpoint
    settings.MEMORYADMIN_WEBHOOK_ALLOW_PRIVATE = False
    delivery = send_test_event(endpoint=hook, actor=ADMIN)
    assert deliver().failed == 1
    delivery.refresh_from_db()
    assert delivery.last_error.startswith(
        "Not sent: 64:ff9b::a9fe:a9fe is a NAT64 address of 169.254.169.254, a link-local"
    )


@pytest.mark.django_db(transaction=True)
def test_an_address_refused_when_sending_is_a_failed_attempt_that_posts_nothing(
    receiver: Receiver, settings: Any
) -> None:
    # Registered while allowed; by the time it is sent, its host is one that is refused
    # (as a name that resolves elsewhere later would be).
    hook = endpoint(url=receiver.url).endpoint
    settings.MEMORYADMIN_WEBHOOK_ALLOW_PRIVATE = False
    delivery = send_test_event(endpoint=hook, actor=ADMIN)
    assert deliver().failed == 1
    delivery.refresh_from_db()
    assert receiver.received == []
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("pending", 1, None)
    assert delivery.last_error.startswith("Not sent: 127.0.0.1 is a loopback address")
    assert delivery.attempt_log[0]["status_code"] is None


@pytest.mark.django_db(transaction=True)
def test_a_receiver_s_body_is_never_read(receiver: Receiver, settings: Any) -> None:
    # It answers 200 and announces a megabyte it never sends: reading it would wait out
    # the timeout and fail the attempt.
    settings.MEMORYADMIN_WEBHOOK_TIMEOUT_SECONDS = 1
    receiver.stall = True
    delivery = send_test_event(endpoint=endpoint(url=receiver.url).endpoint, actor=ADMIN)
    started = time.monotonic()
    assert deliver().delivered == 1
    assert time.monotonic() - started < 1
    delivery.refresh_from_db()
    assert (delivery.status, delivery.last_status_code) == ("delivered", 200)


@pytest.mark.django_db(transaction=True)
def test_a_dead_endpoint_costs_a_pass_one_attempt_and_holds_up_no_other(
    receiver: Receiver, settings: Any
) -> None:
    settings.MEMORYADMIN_WEBHOOK_RETRY_SECONDS = [0, 0]
    with receiving() as dead:
        dead.answers = [500] * 30
        down = endpoint(url=dead.url).endpoint
        # More of its rows than a chunk, all older than the live endpoint's.
        for _ in range(25):
            send_test_event(endpoint=down, actor=ADMIN)
        up = send_test_event(endpoint=endpoint(url=receiver.url).endpoint, actor=ADMIN)
        sent = deliver()
        assert (sent.delivered, sent.failed) == (1, 1)
        assert len(dead.received) == 1
        assert len(receiver.received) == 1
        up.refresh_from_db()
        assert up.status == "delivered"
        # The rest wait, due, for the next pass, which again tries the endpoint once.
        waiting = WebhookDelivery.objects.filter(endpoint=down, attempts=0, status="pending")
        assert waiting.count() == 24
        assert deliver().failed == 1
        assert len(dead.received) == 2


@pytest.mark.django_db(transaction=True)
def test_a_pass_sends_a_live_endpoint_s_whole_backlog(receiver: Receiver) -> None:
    hook = endpoint(url=receiver.url).endpoint
    for _ in range(45):
        send_test_event(endpoint=hook, actor=ADMIN)
    assert deliver().delivered == 45
    assert len(receiver.received) == 45


@pytest.mark.django_db(transaction=True)
def test_retry_now_on_a_delivery_being_sent_says_so_at_once(admin: Client) -> None:
    hook = endpoint().endpoint
    delivery = send_test_event(endpoint=hook, actor=ADMIN)
    held, release = threading.Event(), threading.Event()

    def send_it() -> None:
        # As ``attempt`` does: the row locked through a POST that takes its time.
        try:
            with transaction.atomic():
                WebhookDelivery.objects.select_for_update().get(pk=delivery.pk)
                held.set()
                release.wait(5)
        finally:
            connection.close()

    sender = threading.Thread(target=send_it)
    sender.start()
    try:
        assert held.wait(5)
        started = time.monotonic()
        response = admin.post(reverse("webhook-retry", args=[hook.pk, delivery.pk]))
        took = time.monotonic() - started
    finally:
        release.set()
        sender.join()
    assert took < 2
    assert response.status_code == 409
    assert "being sent right now" in response.content.decode()


@pytest.mark.django_db
def test_a_test_event_or_a_retry_for_an_inactive_endpoint_says_it_waits(admin: Client) -> None:
    hook = endpoint().endpoint
    set_endpoint_active(endpoint=hook, active=False, actor=ADMIN)
    tested = admin.post(reverse("webhook-test", args=[hook.pk]), follow=True)
    assert "queued. The endpoint is inactive: it is sent once the endpoint is activated." in (
        tested.content.decode()
    )
    delivery = WebhookDelivery.objects.get()
    retried = admin.post(reverse("webhook-retry", args=[hook.pk, delivery.pk]), follow=True)
    assert "The endpoint is inactive" in retried.content.decode()
    set_endpoint_active(endpoint=hook, active=True, actor=ADMIN)
    active = admin.post(reverse("webhook-test", args=[hook.pk]), follow=True)
    assert "inactive" not in active.content.decode().split("</h1>", 1)[0]
    messages = [m.message for m in active.context["messages"]]
    assert len(messages) == 1 and messages[0].endswith("queued.")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("ftp://hooks.example.com/in", "Only http:// and https://"),
        ("javascript:alert(1)", "Only http:// and https://"),
        ("https://user:pw@hooks.example.com/", "Leave user names"),
        ("", "Give the address"),
    ],
)
def test_an_unsafe_address_is_refused_with_400(admin: Client, url: str, words: str) -> None:
    response = admin.post(reverse("webhooks"), {"url": url, "events": ["memory.written"]})
    assert response.status_code == 400
    assert words in response.content.decode()
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.django_db
def test_no_events_or_an_unknown_one_is_refused(admin: Client) -> None:
    none = admin.post(reverse("webhooks"), {"url": "https://h.example.com/"})
    assert none.status_code == 400 and "at least one event" in none.content.decode()
    bad = admin.post(reverse("webhooks"), {"url": "https://h.example.com/", "events": ["x.y"]})
    assert bad.status_code == 400 and "Unknown event" in bad.content.decode()
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.django_db
def test_forms_need_the_csrf_token(make_person: Any) -> None:
    make_person("ada", "admin")
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_person("bo", "admin"))
    response = client.post(
        reverse("webhooks"), {"url": "https://h.example.com/", "events": ["memory.written"]}
    )
    assert response.status_code == 403
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_the_page_lists_deliveries_with_attempts_and_retries_a_failed_one(
    admin: Client, receiver: Receiver, eager: None, settings: Any
) -> None:
    settings.MEMORYADMIN_WEBHOOK_RETRY_SECONDS = []
    hook = endpoint(url=receiver.url).endpoint
    receiver.answers = [500]
    assert admin.post(reverse("webhook-test", args=[hook.pk])).status_code == 302
    delivery = wait_for(
        lambda: WebhookDelivery.objects.filter(status="failed").first(), "the failed test event"
    )
    page = admin.get(reverse("webhook", args=[hook.pk])).content.decode()
    assert "webhook.test" in page and "HTTP 500" in page and "Retry now" in page
    assert str(delivery.event_id) in page
    assert admin.post(reverse("webhook-retry", args=[hook.pk, delivery.pk])).status_code == 302
    delivery.refresh_from_db()
    assert delivery.status == "delivered"
    page = admin.get(reverse("webhook", args=[hook.pk])).content.decode()
    assert "HTTP 200" in page
    # Each attempt's moment reads as every other date on the dashboard does.
    (first, _) = delivery.attempt_log
    assert f">{when(datetime.fromisoformat(first['at']))}</time>: HTTP 500" in page
    # Who asked for the test and the retry is in the endpoint's history.
    reasons = list(hook.history.values_list("history_change_reason", flat=True))
    assert any(r.startswith("Retry asked for") for r in reasons)
    assert any(r.startswith("Test event") for r in reasons)


@pytest.mark.django_db
def test_the_endpoint_page_costs_the_same_for_3_deliveries_or_30(admin: Client) -> None:
    few, many = endpoint().endpoint, endpoint().endpoint
    for hook, count in ((few, 3), (many, 30)):
        for _ in range(count):
            send_test_event(endpoint=hook, actor=ADMIN)
    costs = []
    for hook in (few, many):
        with CaptureQueriesContext(connection) as queries:
            assert admin.get(reverse("webhook", args=[hook.pk])).status_code == 200
        costs.append(len(queries))
    assert costs[0] == costs[1]
    with CaptureQueriesContext(connection) as listed:
        assert admin.get(reverse("webhooks")).status_code == 200
    endpoint()
    with CaptureQueriesContext(connection) as again:
        assert admin.get(reverse("webhooks")).status_code == 200
    assert len(listed) == len(again)
