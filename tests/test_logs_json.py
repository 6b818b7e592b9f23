"""What production writes to its logs, read back line by line: gunicorn and a Celery worker
run as deployed (DEBUG off, tracing on), and the things people and agents say, ask, type
and hold (a statement, an excerpt, a recall's goal, a name, an e-mail address, a password,
an API key) are sent through writes, recalls, refusals, sign-ins and an erasure. Every line
is one JSON object, every request has its line and its id, a task logs with the id of the
request that queued it, and not one of those words is in any line, or in any span exported.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from celery import Celery
from django.conf import global_settings
from django.db import connection

from ledger.actions.agents import create_agent
from ledger.actions.people import create_person
from ledger.actors import Actor
from tests import test_worker
from tests.conftest import PASSWORD, SUBJECT, TEST_REDIS_URL, body
from tests.servers import ROOT, Running, environment, gunicorn
from tests.test_worker import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

sender = test_worker.sender

STATEMENT = "Canary-log-statement-3e9f keeps bees on the roof."
EXCERPT = "canary-log-excerpt-b41d"
GOAL = "canaryloggoal77c1"
NAME = "Adelheid Canarysdottir"
USERNAME = "adacanary7e1"
EMAIL = "ada.canary7e1@example.org"
WRONG_PASSWORD = "canary-wrong-password-5a2"
BAD_KEY = "mak_canarybadkey0d6e9f1a2b3c4d5e6f7a8b9c"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def written_by(server: Running) -> list[str]:
    return [line for line in server.output().splitlines() if line.strip()]


class Collector(ThreadingHTTPServer):
    """An OTLP/HTTP endpoint that keeps what it is sent."""

    received: list[bytes]


class _Export(BaseHTTPRequestHandler):
    server: Collector

    def do_POST(self) -> None:
        self.server.received.append(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[Collector]:
    server = Collector(("127.0.0.1", 0), _Export)
    server.received = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def production(collector: Collector) -> dict[str, str | None]:
    db = connection.settings_dict
    # The worker as deployed too, with the web's secret key (the audit's MACs are made with it).
    env: dict[str, str | None] = {
        "DATABASE_URL": test_worker.database_url(),
        "DATABASE_POOL": "0",
        "DEBUG": "0",
        "HTTPS": "0",
        "SECRET_KEY": "logs-test-key-" + "x" * 50,
        "CELERY_BROKER_URL": TEST_REDIS_URL,
        "MEMORYADMIN_RATE_FAILED_KEYS": "3/min",
        "MEMORYADMIN_EMBEDDINGS": "off",
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{collector.server_port}",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        "PYTHONUNBUFFERED": "1",
        "LOG_FORMAT": None,
        "CELERY_TASK_ALWAYS_EAGER": None,
    }
    assert db["NAME"] in str(env["DATABASE_URL"])
    return env


@pytest.fixture
def deployed(
    collector: Collector, sender: Celery, tmp_path: Path
) -> Iterator[tuple[str, Running, Running]]:
    """gunicorn as docs/deploy.md runs it, and a quiet Celery worker (no start-up banner)."""
    node, env = f"logs-{os.getpid()}@memoryadmin-tests", production(collector)
    output = tmp_path / "worker.log"
    worker = Running(
        subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "memoryadmin", "--quiet", "worker",
             "--loglevel=INFO", "--pool=prefork", "--concurrency=1", "--without-gossip",
             "--without-mingle", "-n", node],
            cwd=ROOT,
            env=environment(env),
            stdout=output.open("wb"),
            stderr=subprocess.STDOUT,
        ),
        output,
    )  # fmt: skip
    try:
        # The worker starts while gunicorn does.
        with gunicorn(log=tmp_path / "web.log", env=env) as web:
            wait_for(lambda: sender.control.ping(destination=[node], timeout=0.5), "the worker", 45)
            yield web.base, web, worker
    finally:
        worker.stop()


def sign_in(client: httpx.Client, username: str, password: str) -> httpx.Response:
    page = client.get("/accounts/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token
    fields = {"username": username, "password": password, "csrfmiddlewaretoken": token[1]}
    return client.post("/accounts/login/", data=fields)


def test_production_logs_are_json_lines_with_request_ids_and_no_personal_data(
    deployed: tuple[str, Running, Running], collector: Collector, settings: Any
) -> None:
    base, web, worker = deployed
    _, key = create_agent(name="logger", scopes=["read", "write"], actor=Actor.system("test"))
    agent = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=30)
    source = body()["source"] | {"excerpt": EXCERPT}

    wrote = agent.post("/api/v1/memories", json=body(statement=STATEMENT, source=source))
    assert wrote.status_code == 201
    written_as = wrote.headers["X-Request-ID"]
    assert UUID.fullmatch(written_as)
    recalled = agent.get(f"/api/v1/subjects/{SUBJECT}/recall", params={"goal": GOAL})
    assert recalled.status_code == 200 and STATEMENT in recalled.text
    # A caller's own well-formed id is kept; one that is not (here an address) is replaced.
    kept = agent.get(f"/api/v1/subjects/{SUBJECT}/recall", headers={"X-Request-ID": "trace-0042"})
    assert kept.headers["X-Request-ID"] == "trace-0042"
    replaced = agent.get(f"/api/v1/subjects/{SUBJECT}/recall", headers={"X-Request-ID": EMAIL})
    assert UUID.fullmatch(replaced.headers["X-Request-ID"])
    bad = agent.post("/api/v1/memories", json=body(statement=STATEMENT, kind="feeling"))
    assert bad.status_code == 400
    missing = agent.get("/api/v1/subjects/acct_nobody/recall", params={"goal": GOAL})
    assert missing.status_code == 404
    strangers = [
        httpx.get(f"{base}/api/v1/memories", headers={"Authorization": f"Bearer {BAD_KEY}"})
        for _ in range(5)
    ]
    assert {r.status_code for r in strangers} == {401, 429}

    # Hashed as the server checks it, not with the tests' faster hasher.
    settings.PASSWORD_HASHERS = global_settings.PASSWORD_HASHERS
    create_person(
        username=USERNAME,
        password=PASSWORD,
        role="user",
        subject_ref=SUBJECT,
        subject_name=NAME,
        email=EMAIL,
        actor=Actor.system("test"),
    )
    person = httpx.Client(base_url=base, timeout=30)
    assert sign_in(person, USERNAME, WRONG_PASSWORD).status_code == 200
    assert sign_in(person, EMAIL, WRONG_PASSWORD).status_code == 200
    assert sign_in(person, USERNAME, PASSWORD).status_code == 302
    # Another person's page, by a name in the path: refused, and logged by its pattern.
    assert person.get(f"/people/{EMAIL}/").status_code in (403, 404)
    erased = person.post(
        f"/subjects/{SUBJECT}/erase/",
        data={"confirm_name": NAME, "csrfmiddlewaretoken": person.cookies["csrftoken"]},
    )
    assert erased.status_code == 302

    # The write queued its audit seal; the worker ran it under the write's request id.
    def sealed() -> list[dict[str, Any]]:
        return [
            line
            for line in map(json.loads, (t for t in written_by(worker) if t.startswith("{")))
            if "seal_written" in line["message"] and "succeeded" in line["message"]
        ]

    assert written_as in {line["request_id"] for line in wait_for(sealed, "the seal to run")}
    web.stop()
    worker.stop()

    # Celery writes two things to the console itself, not through logging: a warning before
    # logging starts when run as root (as in this test's container), and its shutdown.
    said = written_by(worker)
    started = next(n for n, text in enumerate(said) if text.startswith("{"))
    plain = [text for text in said[started:] if not text.startswith("{")]
    assert plain == ["worker: Warm shutdown (MainProcess)"]
    lines = written_by(web) + [text for text in said[started:] if text not in plain]
    logged = [json.loads(text) for text in lines]
    assert all(isinstance(line, dict) and "request_id" in line for line in logged)
    requests = [line for line in logged if line["logger"] == "memoryadmin.requests"]
    assert {(r["method"], r["route"], r["status"]) for r in requests} >= {
        ("POST", "/api/v1/memories", 201),
        ("GET", "/api/v1/subjects/<str:ref>/recall", 200),
        ("POST", "/api/v1/memories", 400),
        ("GET", "/api/v1/subjects/<str:ref>/recall", 404),
        ("GET", "/api/v1/memories", 429),
        ("POST", "/accounts/login/", 200),
        ("POST", "/subjects/<str:ref>/erase/", 302),
    }
    assert "/people/<str:username>/" in {r["route"] for r in requests}
    assert all(UUID.fullmatch(r["request_id"]) or r["request_id"] == "trace-0042" for r in requests)
    assert all(isinstance(r["duration_ms"], float) for r in requests)
    # Everything written while a request was handled carries its id (a failed sign-in's
    # line, here).
    during = [line for line in logged if line["logger"].startswith("axes")]
    assert during and {r["request_id"] for r in during} <= {r["request_id"] for r in requests}

    everything = "\n".join(written_by(web) + said).lower()
    exported = b"".join(collector.received).lower()
    assert b"memoryadmin.write" in exported and b"memoryadmin.recall" in exported
    canaries = [STATEMENT, "bees on the roof", EXCERPT, GOAL, NAME, USERNAME, EMAIL]
    for canary in [*canaries, WRONG_PASSWORD, PASSWORD, key, BAD_KEY]:
        assert canary.lower() not in everything, canary
        assert canary.lower().encode() not in exported, canary
