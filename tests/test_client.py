"""The Python client against a live server: every call, every refusal as its exception, and
retries that resend the same Idempotency-Key through a real proxy on loopback."""

from __future__ import annotations

import copy
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.core.wsgi import get_wsgi_application
from memoryadmin_client import (
    AuthenticationFailed,
    BadRequest,
    ConnectionFailed,
    MemoryClient,
    MemoryPaused,
    NotFound,
    NotYourWrite,
    PermissionDenied,
    RateLimited,
    ServerError,
    SnapshotRejected,
    StaleVersion,
    SystemOfRecord,
)

from ledger.actions.agents import create_agent
from ledger.actions.policy import change_policy
from ledger.actions.subjects import set_memory_paused
from ledger.actors import Actor
from ledger.models import IdempotencyRecord, JournalEntry, LedgerEntry, Memory, Recall, Subject
from tests.test_snapshot_checks import DOCUMENT

ROOT = Path(__file__).resolve().parent.parent
SUBJECT = "acct_4b71c9e20d8af315"
SOURCE = {"kind": "user_message", "ref": "msg_0420", "run": "run_77", "turn": 6}

pytestmark = pytest.mark.usefixtures("transactional_db")


def remember_pdf(client: MemoryClient, **overrides: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "subject": SUBJECT,
        "kind": "preference",
        "key": "invoice.format",
        "statement": "Wants invoices as PDF attachments, not links.",
        "basis": "stated",
        "source": SOURCE,
        "expires_at": "2099-06-30T00:00:00Z",
        **overrides,
    }
    return client.remember(**fields)


@pytest.fixture
def key() -> str:
    return create_agent(name="client-agent", scopes=["read", "write"], actor=Actor.system("t"))[1]


@pytest.fixture
def client(live_server: Any, key: str) -> Iterator[MemoryClient]:
    with MemoryClient(live_server.url, key, retries=0) as made:
        yield made


# Writing and reading memories.


def test_remember_is_accepted_and_read_back(client: MemoryClient) -> None:
    written = remember_pdf(client)
    assert written["decision"]["outcome"] == "accepted"
    memory = client.memory(written["memory"]["id"])
    assert memory["statement"] == "Wants invoices as PDF attachments, not links."
    assert [s["ref"] for s in memory["sources"]] == ["msg_0420"]


def test_a_system_of_record_key_is_refused_with_its_exception(client: MemoryClient) -> None:
    change_policy(
        actor=Actor.system("t"),
        reason="The CRM owns the account manager.",
        system_of_record_keys=["crm.owner"],
    )
    with pytest.raises(SystemOfRecord) as refused:
        remember_pdf(client, key="crm.owner", statement="Their account manager is Ana.")
    assert refused.value.status == 422
    assert refused.value.code == "system_of_record"
    assert "crm.owner" in refused.value.detail
    assert not Memory.objects.exists()


def test_bad_input_is_bad_request_naming_the_field(client: MemoryClient) -> None:
    with pytest.raises(BadRequest) as refused:
        remember_pdf(client, statement="x" * 201)
    assert refused.value.status == 400
    assert list(refused.value.errors) == ["statement"]
    assert "200 characters" in refused.value.errors["statement"][0]
    assert not Memory.objects.exists()


def test_memory_paused_by_the_person_is_memory_paused(client: MemoryClient) -> None:
    remember_pdf(client)
    set_memory_paused(
        subject=Subject.objects.get(ref=SUBJECT), actor=Actor.system("t"), paused=True
    )
    with pytest.raises(MemoryPaused) as refused:
        remember_pdf(client, key="contact.channel", statement="Prefers email.")
    assert (refused.value.status, refused.value.code) == (423, "memory_paused")
    assert Memory.objects.count() == 1


def test_memories_follows_the_cursor_across_pages(client: MemoryClient) -> None:
    for n in range(5):
        remember_pdf(client, key="", kind="episode", statement=f"Asked about invoice number {n}.")
    listed = list(client.memories(subject=SUBJECT, kind="episode", page_size=2))
    assert sorted(m["statement"] for m in listed) == sorted(
        f"Asked about invoice number {n}." for n in range(5)
    )


def test_a_missing_memory_is_not_found(client: MemoryClient) -> None:
    with pytest.raises(NotFound) as refused:
        client.memory("5b0c0000-0000-4000-8000-000000000000")
    assert refused.value.status == 404


def test_a_wrong_key_is_authentication_failed(live_server: Any) -> None:
    with (
        MemoryClient(live_server.url, "ma_nope_nope", retries=0) as stranger,
        pytest.raises(AuthenticationFailed) as refused,
    ):
        stranger.memory("5b0c0000-0000-4000-8000-000000000000")
    assert refused.value.status == 401


def test_a_read_only_key_cannot_write(live_server: Any) -> None:
    read_only = create_agent(name="reader", scopes=["read"], actor=Actor.system("t"))[1]
    with (
        MemoryClient(live_server.url, read_only, retries=0) as reader,
        pytest.raises(PermissionDenied) as refused,
    ):
        remember_pdf(reader)
    assert refused.value.status == 403
    assert not Memory.objects.exists()


def test_another_agents_memory_is_not_your_write(client: MemoryClient, live_server: Any) -> None:
    written = remember_pdf(client)["memory"]
    other = create_agent(name="other-agent", scopes=["read", "write"], actor=Actor.system("t"))
    with (
        MemoryClient(live_server.url, other[1], retries=0) as stranger,
        pytest.raises(NotYourWrite) as refused,
    ):
        stranger.retract(written["id"], reason="Not mine to keep.", if_match=written["version"])
    assert (refused.value.status, refused.value.code) == (403, "not_your_write")
    assert isinstance(refused.value, PermissionDenied)
    assert Memory.objects.get(pk=written["id"]).status == "active"


# Recall.


def test_recall_returns_the_block_and_memories_and_is_recorded(client: MemoryClient) -> None:
    written = remember_pdf(client)
    recall = client.recall(SUBJECT, goal="invoice format", k=3, run="run_78", turn=2)
    assert [m["id"] for m in recall.memories] == [written["memory"]["id"]]
    assert "Wants invoices as PDF attachments, not links." in recall.block
    assert recall.conflicts == []
    record = Recall.objects.get(pk=recall.id)
    assert (record.run.ref if record.run else None, record.turn, record.k) == ("run_78", 2, 3)
    assert record.block == recall.block


# Corrections and retractions.


def test_correct_and_retract_with_a_stale_version_are_stale_version(
    client: MemoryClient,
) -> None:
    original = remember_pdf(client)["memory"]
    with pytest.raises(StaleVersion) as stale:
        client.correct(original["id"], statement="Wants links.", reason="Said so.", if_match=7)
    assert (stale.value.status, stale.value.etag, stale.value.version) == (412, '"1"', 1)

    corrected = client.correct(
        original["id"],
        statement="Wants invoices as links, not attachments.",
        reason="The person changed their mind.",
        source={"kind": "user_message", "ref": "msg_0431"},
        if_match=original["version"],
    )
    assert corrected["supersedes"] == original["id"]
    with pytest.raises(StaleVersion):
        client.retract(corrected["id"], reason="Wrong.", if_match='"9"')
    retracted = client.retract(corrected["id"], reason="Wrong subject.", if_match=1)
    assert retracted["status"] == "retracted"
    assert client.recall(SUBJECT).memories == []


# The ledger, the journal, notes and snapshots.


def test_ledger_add_then_in_force(client: MemoryClient) -> None:
    remember_pdf(client)
    added = client.ledger_add(
        SUBJECT,
        fact="Do not email the supplier Acme before 1 July.",
        kind="commitment",
        source={"kind": "user_message", "ref": "msg_0500"},
    )
    assert added["entry"]["fact"] == "Do not email the supplier Acme before 1 July."
    in_force = client.ledger_in_force(SUBJECT, kind="commitment")
    assert [e["fact"] for e in in_force] == ["Do not email the supplier Acme before 1 July."]
    assert client.ledger_in_force(SUBJECT, kind="proposal") == []
    assert LedgerEntry.objects.count() == 1


def test_ledger_add_about_an_unknown_subject_is_not_found(client: MemoryClient) -> None:
    with pytest.raises(NotFound):
        client.ledger_add("acct_nobody", fact="x", kind="established", source=SOURCE)


def test_journal_intent_result_and_resume(client: MemoryClient) -> None:
    intent = client.journal_intent(
        "run_77", action="issue refund", intent={"invoice": "INV-2291", "amount": "49.00"}
    )
    journal_key = intent["entry"]["idempotency_key"]
    assert journal_key.startswith("issue-refund-")
    assert intent["existing"] is False
    again = client.journal_intent(
        "run_77", action="issue refund", intent={"invoice": "INV-2291"}, idempotency_key=journal_key
    )
    assert again["existing"] is True and again["attempt_may_exist"] is True

    client.journal_result(journal_key, state="unknown", effect={"http": "timeout"})
    assert [e["idempotency_key"] for e in client.resume()] == [journal_key]
    done = client.journal_result(
        journal_key, state="done", verification={"refund": "RF-1", "status": "settled"}
    )
    assert done["state"] == "done"
    assert client.resume() == []
    assert JournalEntry.objects.get().state == "done"


def test_notes_put_and_read(client: MemoryClient) -> None:
    assert client.note_put("run_77", "plan", "Refund INV-2291, then email.")["value"] == (
        "Refund INV-2291, then email."
    )
    client.note_put("run_77", "plan", "Refund done; email next.")
    notes = client.notes("run_77")
    assert [(n["key"], n["value"]) for n in notes["notes"]] == [
        ("plan", "Refund done; email next.")
    ]


def test_a_rejected_snapshot_raises_with_its_problems(client: MemoryClient) -> None:
    accepted = client.snapshot_post("run_90", DOCUMENT, tokens_before=9000, tokens_after=1200)
    assert (accepted["status"], accepted["generation"]) == ("accepted", 1)
    lost = copy.deepcopy(DOCUMENT)
    lost["open"].pop()
    with pytest.raises(SnapshotRejected) as rejected:
        client.snapshot_post("run_90", lost, tokens_before=9000, tokens_after=1100)
    assert rejected.value.status == 422
    assert [p["check"] for p in rejected.value.problems] == ["partition"]
    assert rejected.value.body["status"] == "rejected"


# Rate limits.


def test_over_the_limit_is_rate_limited_with_the_wait(client: MemoryClient, settings: Any) -> None:
    settings.MEMORYADMIN_RATE_READS = "2/hour"
    client.tools()
    client.tools()
    with pytest.raises(RateLimited) as limited:
        client.tools()
    assert limited.value.code == "rate_limited"
    assert 0 < limited.value.retry_after <= 3600


# Tools.


def test_call_tool_goes_by_the_endpoint_table(client: MemoryClient) -> None:
    written = client.call_tool(
        "remember",
        {
            "subject": SUBJECT,
            "kind": "preference",
            "statement": "Prefers email over telephone.",
            "basis": "stated",
            "source": {"kind": "user_message", "ref": "msg_0192"},
        },
    )
    assert written["decision"]["outcome"] == "accepted"
    recalled = client.call_tool("recall", {"subject": SUBJECT, "goal": "contact"})
    assert "Prefers email over telephone." in recalled["block"]
    client.call_tool("write_note", {"run": "run_5", "key": "next", "value": "Call back."})
    assert client.call_tool("read_notes", {"run": "run_5"})["notes"][0]["value"] == "Call back."
    with pytest.raises(ValueError, match="No tool named 'forget'"):
        client.call_tool("forget", {})
    with pytest.raises(BadRequest) as refused:
        client.call_tool("recall", {"subject": SUBJECT, "k": 0})
    assert list(refused.value.errors) == ["k"]


def test_in_process_through_a_wsgi_transport(key: str) -> None:
    transport = httpx.WSGITransport(app=get_wsgi_application())
    with MemoryClient("http://localhost", key, transport=transport, retries=0) as in_process:
        written = remember_pdf(in_process)
        assert written["decision"]["outcome"] == "accepted"
        assert len(in_process.recall(SUBJECT).memories) == 1


# Retries, through a real proxy that fails on purpose.


@dataclass
class Proxy:
    """A loopback HTTP proxy to the live server: the first ``failures`` requests get
    ``status`` instead of the server's answer (and, with ``lose_answers``, reach the server
    all the same); every request's method, path and Idempotency-Key is kept."""

    upstream: str
    failures: int = 0
    status: int = 503
    retry_after: str | None = None
    # Forward a failed request all the same: the write happens, its answer is lost.
    lose_answers: bool = False
    seen: list[tuple[str, str, str | None]] = field(default_factory=list)
    # For each request forwarded: whether the server replayed a kept answer.
    replayed: list[bool] = field(default_factory=list)
    url: str = ""

    def handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                proxy.seen.append((self.command, self.path, self.headers.get("Idempotency-Key")))
                failing = len(proxy.seen) <= proxy.failures
                answer = self._forward(body) if not failing or proxy.lose_answers else None
                if failing or answer is None:
                    self.send_response(proxy.status)
                    if proxy.retry_after is not None:
                        self.send_header("Retry-After", proxy.retry_after)
                    page = b"<h1>Down for maintenance</h1>"
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", str(len(page)))
                    self.end_headers()
                    self.wfile.write(page)
                    return
                self.send_response(answer.status_code)
                for name in ("Content-Type", "ETag", "Retry-After", "Idempotent-Replayed"):
                    if name in answer.headers:
                        self.send_header(name, answer.headers[name])
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

            def _forward(self, body: bytes) -> httpx.Response:
                skip = ("host", "connection")
                headers = {k: v for k, v in self.headers.items() if k.lower() not in skip}
                answer = httpx.request(
                    self.command, proxy.upstream + self.path, headers=headers, content=body
                )
                proxy.replayed.append(answer.headers.get("Idempotent-Replayed") == "true")
                return answer

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any

        return Handler


@pytest.fixture
def proxy(live_server: Any) -> Iterator[Proxy]:
    made = Proxy(upstream=live_server.url)
    server = ThreadingHTTPServer(("127.0.0.1", 0), made.handler())
    made.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield made
    server.shutdown()
    server.server_close()


def test_a_503_is_retried_with_the_same_idempotency_key_and_written_once(
    proxy: Proxy, key: str
) -> None:
    proxy.failures = 2
    with MemoryClient(proxy.url, key, retries=3, backoff=0.05) as client:
        written = remember_pdf(client)
    assert written["decision"]["outcome"] == "accepted"
    assert len(proxy.seen) == 3
    keys = {seen_key for _, _, seen_key in proxy.seen}
    assert len(keys) == 1 and None not in keys
    assert Memory.objects.count() == 1
    assert IdempotencyRecord.objects.get().key == keys.pop()


def test_a_write_whose_answer_was_lost_is_replayed_not_written_again(
    proxy: Proxy, key: str
) -> None:
    proxy.failures, proxy.lose_answers = 1, True
    with MemoryClient(proxy.url, key, retries=2, backoff=0.05) as client:
        written = remember_pdf(client)
    assert written["decision"]["outcome"] == "accepted"
    assert proxy.replayed == [False, True]
    assert len({seen_key for _, _, seen_key in proxy.seen}) == 1
    assert Memory.objects.count() == 1


def test_a_429_waits_for_retry_after(proxy: Proxy, key: str) -> None:
    proxy.failures, proxy.status, proxy.retry_after = 1, 429, "1"
    started = time.monotonic()
    with MemoryClient(proxy.url, key, retries=2, backoff=0.05) as client:
        assert client.tools()["endpoints"]["recall"]["method"] == "GET"
    assert time.monotonic() - started >= 1.0
    assert len(proxy.seen) == 2


def test_when_retries_run_out_the_server_error_is_raised(proxy: Proxy, key: str) -> None:
    proxy.failures = 10
    with (
        MemoryClient(proxy.url, key, retries=2, backoff=0.05) as client,
        pytest.raises(ServerError) as failed,
    ):
        remember_pdf(client)
    assert failed.value.status == 503
    assert len(proxy.seen) == 3
    assert not Memory.objects.exists()


def test_a_400_is_not_retried(proxy: Proxy, key: str) -> None:
    with MemoryClient(proxy.url, key, retries=3, backoff=0.05) as client, pytest.raises(BadRequest):
        remember_pdf(client, basis="overheard")
    assert len(proxy.seen) == 1


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_a_refused_connection_is_retried_with_backoff_then_raised(key: str) -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    started = time.monotonic()
    with (
        MemoryClient(url, key, retries=3, backoff=0.2) as client,
        pytest.raises(ConnectionFailed) as failed,
    ):
        client.tools()
    # Three waits of at least half of 0.2, 0.4 and 0.8 seconds.
    assert time.monotonic() - started >= 0.7
    assert failed.value.status == 0
    assert isinstance(failed.value.__cause__, httpx.ConnectError)


def test_a_dropped_connection_is_retried(key: str) -> None:
    attempts: list[int] = []
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def drop_each() -> None:
        while len(attempts) < 3:
            conn, _ = listener.accept()
            attempts.append(1)
            conn.recv(65536)
            conn.close()

    dropper = threading.Thread(target=drop_each, daemon=True)
    dropper.start()
    with (
        MemoryClient(f"http://127.0.0.1:{port}", key, retries=2, backoff=0.05) as client,
        pytest.raises(ConnectionFailed),
    ):
        client.tools()
    dropper.join(timeout=5)
    listener.close()
    assert len(attempts) == 3


# Installed with only httpx.


def test_the_client_imports_without_django() -> None:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    probe = "import sys, memoryadmin_client; print('django' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"
