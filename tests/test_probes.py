"""/healthz and /readyz as an orchestrator asks them: by the pod's IP over plain http, with
no session; readiness against the real PostgreSQL, Redis and broker, and each failing
dependency named, quickly, without the address or password it was given."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from celery import Celery, current_app
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder
from django.test import Client

from tests.conftest import TEST_REDIS_URL

# Nothing listens on port 1; the password must never be repeated back.
CLOSED_REDIS = "redis://:probe-s3cret@127.0.0.1:1/0"
POD = "10.42.0.17:8000"


@contextmanager
def celery_broker(url: str) -> Iterator[None]:
    """The project's Celery settings (its timeouts among them) with the broker at ``url``,
    as the current app."""
    previous = current_app._get_current_object()
    app = Celery("memoryadmin-probes", set_as_current=False)
    app.config_from_object("django.conf:settings", namespace="CELERY")
    app.conf.broker_url = url
    app.set_current()
    try:
        yield
    finally:
        previous.set_current()
        app.close()


@pytest.fixture
def services(settings: Any) -> Iterator[None]:
    """Everything readiness asks for, up: the test database, Redis, Redis as the broker."""
    settings.REDIS_URL = TEST_REDIS_URL
    settings.MEMORYADMIN_EMBEDDINGS = "off"
    with celery_broker(TEST_REDIS_URL):
        yield


def probe(path: str) -> tuple[Any, float]:
    started = time.perf_counter()
    answer = Client().get(path, HTTP_HOST=POD)
    return answer, (time.perf_counter() - started) * 1000


def assert_never_cached_and_sessionless(answer: Any) -> None:
    assert "no-store" in answer["Cache-Control"] and "max-age=0" in answer["Cache-Control"]
    assert "Set-Cookie" not in answer
    assert "Cookie" not in answer.get("Vary", "")


def test_healthz_answers_without_the_database() -> None:
    # No database for this test: a query would be refused, and the probe would fail.
    answer, took = probe("/healthz")
    print(f"/healthz answered in {took:.1f} ms")
    assert answer.status_code == 200
    assert answer.json() == {"status": "ok"}
    assert_never_cached_and_sessionless(answer)


def test_a_probe_s_request_line_names_its_path(caplog: pytest.LogCaptureFixture) -> None:
    """Probes are answered before the URLs are read: their line says which probe it was,
    not "no route", so a probe every ten seconds is told from a 404."""
    with caplog.at_level(logging.INFO, logger="memoryadmin.requests"):
        assert probe("/healthz")[0].status_code == 200
    lines = [r for r in caplog.records if r.name == "memoryadmin.requests"]
    assert [(r.__dict__["route"], r.__dict__["status"]) for r in lines] == [("/healthz", 200)]


@pytest.mark.django_db
def test_a_pod_probed_by_its_ip_over_plain_http_is_answered_not_refused(
    settings: Any, services: None
) -> None:
    settings.ALLOWED_HOSTS = ["memory.example.com"]
    settings.SECURE_SSL_REDIRECT = True
    for path in ("/healthz", "/readyz"):
        answer, _ = probe(path)
        assert answer.status_code == 200, (path, answer.content)
    # The same request to a page is refused: the probes' place first is what lets them by.
    assert probe("/accounts/login/")[0].status_code == 400
    login = Client().get("/accounts/login/", HTTP_HOST="memory.example.com")
    assert login.status_code == 301 and login["Location"].startswith("https://")


@pytest.mark.django_db
def test_readyz_is_ready_with_postgresql_redis_and_the_broker(services: None) -> None:
    probe("/readyz")  # the first asks for the migration files once per process
    answer, took = probe("/readyz")
    print(f"/readyz answered in {took:.1f} ms")
    assert answer.status_code == 200
    assert answer.json() == {
        "status": "ready",
        "checks": {
            "database": "ok",
            "migrations": "ok",
            "redis": "ok",
            "broker": "ok",
            "embeddings": "not configured",
        },
    }
    assert_never_cached_and_sessionless(answer)


@pytest.mark.django_db
def test_readyz_names_a_stopped_redis_and_broker_at_once_without_their_password(
    settings: Any,
) -> None:
    settings.REDIS_URL = CLOSED_REDIS
    settings.MEMORYADMIN_EMBEDDINGS = "off"
    with celery_broker(CLOSED_REDIS):
        answer, took = probe("/readyz")
    print(f"/readyz with Redis and the broker down answered in {took:.1f} ms")
    assert answer.status_code == 503
    assert answer.json()["status"] == "unavailable"
    assert answer.json()["checks"] == {
        "database": "ok",
        "migrations": "ok",
        "redis": "unreachable",
        "broker": "unreachable",
        "embeddings": "not configured",
    }
    assert b"s3cret" not in answer.content and b"127.0.0.1" not in answer.content
    assert took < 3000


@pytest.mark.django_db
def test_readyz_gives_up_on_a_redis_that_never_answers_within_a_second(
    settings: Any, services: None
) -> None:
    # A server that takes the connection and says nothing: a hung Redis.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        settings.REDIS_URL = f"redis://127.0.0.1:{silent.getsockname()[1]}/0"
        answer, took = probe("/readyz")
    print(f"/readyz with a silent Redis answered in {took:.1f} ms")
    assert answer.status_code == 503
    assert answer.json()["checks"]["redis"] == "timed out"
    assert took < 1500


@pytest.mark.django_db
def test_readyz_counts_the_migrations_not_applied(services: None) -> None:
    newest = max(
        name for app, name in MigrationRecorder(connection).applied_migrations() if app == "ledger"
    )
    MigrationRecorder(connection).record_unapplied("ledger", newest)
    answer, _ = probe("/readyz")
    assert answer.status_code == 503
    assert answer.json()["checks"]["migrations"] == "1 unapplied"
    assert answer.json()["checks"]["database"] == "ok"


@pytest.mark.django_db
def test_readyz_names_an_embedding_endpoint_that_does_not_answer(
    settings: Any, services: None
) -> None:
    settings.MEMORYADMIN_EMBEDDINGS = "endpoint"
    settings.MEMORYADMIN_EMBEDDINGS_URL = "http://127.0.0.1:1/v1"
    settings.MEMORYADMIN_EMBEDDINGS_MODEL = "nomic-embed-text"
    settings.MEMORYADMIN_EMBEDDINGS_TIMEOUT_MS = 500
    answer, _ = probe("/readyz")
    assert answer.status_code == 503
    assert answer.json()["checks"]["embeddings"].startswith(
        "the embeddings endpoint is unreachable"
    )
    assert b"127.0.0.1" not in answer.content


def test_probes_only_answer_reads() -> None:
    for path in ("/healthz", "/readyz"):
        answer = Client().post(path, HTTP_HOST=POD)
        assert answer.status_code == 405
        assert answer["Allow"] == "GET, HEAD"


@pytest.mark.parametrize("pool", ["0", "1"], ids=["without-pool", "with-pool"])
def test_with_the_database_down_the_process_is_alive_and_not_ready_at_once(pool: str) -> None:
    """With psycopg's pool on (production's default) a request would wait the pool's 30
    seconds for a connection; the probe gives up after one."""
    # A process of its own: this one's database connection is the test database's.
    script = (
        "import django, json, time; django.setup()\n"
        "from django.test import Client\n"
        "for path in ('/healthz', '/readyz'):\n"
        "    started = time.perf_counter()\n"
        "    answer = Client().get(path)\n"
        "    took = time.perf_counter() - started\n"
        "    print(json.dumps([path, answer.status_code, answer.json(), took]))\n"
    )
    environment = {key: os.environ[key] for key in ("PATH", "HOME", "LANG") if key in os.environ}
    ran = subprocess.run(
        [sys.executable, "-c", script],
        cwd=Path(__file__).resolve().parent.parent,
        env=environment
        | {
            "DJANGO_SETTINGS_MODULE": "memoryadmin.settings",
            "DEBUG": "1",
            "DATABASE_URL": "postgres://memoryadmin:db-s3cret@127.0.0.1:1/memoryadmin",
            "DATABASE_POOL": pool,
            "MEMORYADMIN_EMBEDDINGS": "off",
            "LOG_LEVEL": "ERROR",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    answers = [json.loads(line) for line in ran.stdout.splitlines() if line.startswith("[")]
    assert answers[0][:3] == ["/healthz", 200, {"status": "ok"}], ran.stderr
    assert answers[1][:2] == ["/readyz", 503]
    assert answers[1][3] < 5, f"/readyz took {answers[1][3]:.1f} s with the database down"
    ready = answers[1][2]
    assert ready["checks"]["database"] == "unreachable"
    assert ready["checks"]["migrations"] == "unknown"
    assert "s3cret" not in ran.stdout
