"""Per-agent limits on the API's reads and writes: a 429 naming the limit, with Retry-After,
counted atomically across web processes in Redis or in the database."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
import time_machine
from django.db import connection
from rest_framework.test import APIClient

from ledger.actions.agents import create_agent
from ledger.actors import Actor
from ledger.models import Memory, RateCounter
from tests.conftest import SUBJECT, TEST_REDIS_URL, agent_client, body

ROOT = Path(__file__).resolve().parent.parent
URL = "/api/v1/memories"
RECALL = f"/api/v1/subjects/{SUBJECT}/recall"
TOOLS = "/api/v1/tools"
TEST_REDIS = TEST_REDIS_URL
# Mid-window, so no test straddles two windows.
NOON = datetime(2026, 11, 2, 12, 0, 10, tzinfo=UTC)


def note(n: int) -> dict[str, Any]:
    """A memory write of its own: no slot, so none of them conflicts with another."""
    return body(
        key=...,
        kind="episode",
        statement=f"Asked about invoice number {n}.",
        source={"kind": "user_message", "ref": f"msg_{n}"},
    )


@pytest.fixture
def limited(settings: Any) -> None:
    settings.MEMORYADMIN_RATE_WRITES = "3/min"
    settings.MEMORYADMIN_RATE_READS = "5/min"


@pytest.mark.django_db
def test_a_write_over_the_limit_is_429_naming_the_limit_and_writes_nothing(
    limited: None,
) -> None:
    client, _ = agent_client("busy", ["read", "write"])
    with time_machine.travel(NOON, tick=False):
        accepted = [client.post(URL, note(n), format="json").status_code for n in range(3)]
        over = client.post(URL, note(3), format="json")
    assert accepted == [201, 201, 201]
    assert over.status_code == 429
    assert over["Retry-After"] == "50"
    assert over.json() == {
        "detail": "Too many writes: this agent may make 3 per minute "
        "(MEMORYADMIN_RATE_WRITES). Try again in 50 seconds.",
        "code": "rate_limited",
    }
    assert Memory.objects.count() == 3


@pytest.mark.django_db
def test_reads_and_writes_are_limited_apart(limited: None) -> None:
    client, _ = agent_client("busy", ["read", "write"])
    with time_machine.travel(NOON, tick=False):
        for n in range(4):
            client.post(URL, note(n), format="json")
        reads = [client.get(RECALL).status_code for _ in range(6)]
    assert reads == [200] * 5 + [429]


@pytest.mark.django_db
def test_reading_a_staff_resource_counts_as_a_read_not_a_write(limited: None) -> None:
    # The staff scope guards the retractions; reading one is still a read.
    client, _ = agent_client("support-tool", ["read", "staff"])
    batch = f"/api/v1/retractions/{uuid.uuid4()}"
    with time_machine.travel(NOON, tick=False):
        reads = [client.get(batch) for _ in range(6)]
        preview = client.post(
            "/api/v1/retractions", {"run": "run_1", "dry_run": True}, format="json"
        )
    assert [read.status_code for read in reads] == [404] * 5 + [429]
    assert reads[-1].json()["detail"].startswith("Too many reads")
    assert preview.status_code == 200


@pytest.mark.django_db
def test_one_agent_over_its_limit_leaves_another_agent_alone(limited: None) -> None:
    busy, _ = agent_client("busy", ["write"])
    calm, _ = agent_client("calm", ["write"])
    with time_machine.travel(NOON, tick=False):
        for n in range(4):
            busy.post(URL, note(n), format="json")
        assert calm.post(URL, note(9), format="json").status_code == 201


@pytest.mark.django_db
def test_the_next_window_accepts_again_and_clears_the_old_counters(limited: None) -> None:
    client, _ = agent_client("busy", ["write"])
    with time_machine.travel(NOON, tick=False):
        for n in range(4):
            client.post(URL, note(n), format="json")
    with time_machine.travel(NOON + timedelta(minutes=1), tick=False):
        assert client.post(URL, note(4), format="json").status_code == 201
    assert [counter.count for counter in RateCounter.objects.all()] == [1]


@pytest.mark.django_db
def test_the_limits_are_counted_in_redis_when_it_is_configured(
    limited: None, settings: Any
) -> None:
    settings.REDIS_URL = TEST_REDIS
    # A day's window on the real clock: Redis expires keys by its own clock, not the test's.
    settings.MEMORYADMIN_RATE_WRITES = "3/day"
    client, agent = agent_client("busy", ["write"])
    store = redis.Redis.from_url(TEST_REDIS)
    for key in store.scan_iter(f"memoryadmin:rate:agent:{agent.pk}:*"):
        store.delete(key)
    codes = [client.post(URL, note(n), format="json").status_code for n in range(4)]
    assert codes == [201, 201, 201, 429]
    assert not RateCounter.objects.exists()
    window = int(time.time()) // 86400 * 86400
    assert store.get(f"memoryadmin:rate:agent:{agent.pk}:writes:{window}") == b"4"
    assert 0 < store.ttl(f"memoryadmin:rate:agent:{agent.pk}:writes:{window}") <= 86401


@pytest.mark.parametrize("value", ["0", "off", "0/min", "unlimited"])
def test_a_limit_cannot_be_switched_off(value: str) -> None:
    ran = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=os.environ | {"DEBUG": "1", "MEMORYADMIN_RATE_WRITES": value},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode != 0
    assert "MEMORYADMIN_RATE_WRITES" in ran.stderr
    assert "cannot be: raise the number instead, e.g. '100000/min'" in ran.stderr


# 200 writes at once against a limit of 50, across the processes of a real gunicorn.


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def database_url() -> str:
    db = connection.settings_dict
    return f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


@pytest.fixture
def gunicorn(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """Start gunicorn (2 worker processes) against the test database with ``env`` added."""
    started: list[subprocess.Popen[bytes]] = []

    def start(env: dict[str, str]) -> str:
        port = free_port()
        log = (tmp_path / "gunicorn.log").open("wb")
        server = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("gunicorn")),
                "memoryadmin.wsgi",
                "--workers=2",
                "--threads=8",
                f"--bind=127.0.0.1:{port}",
            ],
            cwd=ROOT,
            env=os.environ
            | {
                "DATABASE_URL": database_url(),
                "DATABASE_POOL": "0",
                "DEBUG": "0",
                "HTTPS": "0",
                "SECRET_KEY": "rate-limit-test-key-" + "x" * 40,
            }
            | env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        started.append(server)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/schema/", timeout=2)
                return base
            except OSError:
                assert time.monotonic() < deadline, (tmp_path / "gunicorn.log").read_text()
                time.sleep(0.3)

    yield start
    for server in started:
        server.terminate()
        server.wait(timeout=30)


def post(base: str, key: str, n: int) -> tuple[int, str | None]:
    call = urllib.request.Request(
        f"{base}{URL}",
        data=json.dumps(note(n)).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(call, timeout=120) as response:
            return response.status, None
    except urllib.error.HTTPError as refused:
        return refused.code, refused.headers.get("Retry-After")


@pytest.mark.parametrize("backend", ["database", "redis"])
def test_200_concurrent_writes_against_a_limit_of_50_accept_at_most_50(
    transactional_db: None, gunicorn: Any, backend: str, tmp_path: Path
) -> None:
    agent, key = create_agent(name="flood", scopes=["write"], actor=Actor.system("test"))
    env = {"MEMORYADMIN_RATE_WRITES": "50/day"}
    if backend == "redis":
        env["REDIS_URL"] = TEST_REDIS
        store = redis.Redis.from_url(TEST_REDIS)
        for stale in store.scan_iter(f"memoryadmin:rate:agent:{agent.pk}:*"):
            store.delete(stale)
    base = gunicorn(env)

    with ThreadPoolExecutor(max_workers=40) as pool:
        answers = list(pool.map(lambda n: post(base, key, n), range(200)))

    codes = Counter(code for code, _ in answers)
    print(f"{backend}: {dict(codes)}")
    assert set(codes) <= {201, 429}, (tmp_path / "gunicorn.log").read_text()[-5000:]
    assert 0 < codes[201] <= 50
    assert codes[201] + codes[429] == 200
    assert all(int(wait) > 0 for code, wait in answers if code == 429 and wait is not None)
    assert all(wait is not None for code, wait in answers if code == 429)
    assert Memory.objects.count() == codes[201]


@pytest.mark.django_db
def test_keys_that_do_not_work_are_limited_per_address(settings: Any) -> None:
    settings.MEMORYADMIN_RATE_FAILED_KEYS = "20/min"
    _, key = create_agent(name="real", scopes=["read"], actor=Actor.system("test"))
    guesser = APIClient(REMOTE_ADDR="198.51.100.9")
    neighbour = APIClient(REMOTE_ADDR="203.0.113.50")
    with time_machine.travel(NOON, tick=False):
        guesses = [
            guesser.get(TOOLS, HTTP_AUTHORIZATION=f"Bearer ma_guess{n}_x").status_code
            for n in range(20)
        ]
        over = guesser.get(TOOLS, HTTP_AUTHORIZATION="Bearer ma_guess20_x")
        # Past the limit the address's keys are not looked at, a working one included.
        blocked = guesser.get(TOOLS, HTTP_AUTHORIZATION=f"Bearer {key}")
        # Another address is not held back by this one's guesses.
        elsewhere = neighbour.get(TOOLS, HTTP_AUTHORIZATION=f"Bearer {key}")
    assert guesses == [401] * 20
    assert over.status_code == 429 and blocked.status_code == 429
    assert over["Retry-After"] == "50"
    assert over.json() == {
        "detail": "Too many requests with an API key that does not work: this address may "
        "make 20 per minute (MEMORYADMIN_RATE_FAILED_KEYS). Nothing was checked or changed. "
        "Try again in 50 seconds.",
        "code": "rate_limited",
    }
    assert elsewhere.status_code == 200
    with time_machine.travel(NOON + timedelta(minutes=1), tick=False):
        assert guesser.get(TOOLS, HTTP_AUTHORIZATION=f"Bearer {key}").status_code == 200


@pytest.mark.django_db
def test_failed_keys_are_counted_in_redis_when_it_is_configured(settings: Any) -> None:
    settings.REDIS_URL = TEST_REDIS
    # A day's window on the real clock: Redis expires keys by its own clock, not the test's.
    settings.MEMORYADMIN_RATE_FAILED_KEYS = "3/day"
    store = redis.Redis.from_url(TEST_REDIS)
    for stale in store.scan_iter("memoryadmin:rate:address:198.51.100.9:*"):
        store.delete(stale)
    client = APIClient(REMOTE_ADDR="198.51.100.9")
    codes = [client.get(TOOLS, HTTP_AUTHORIZATION="Bearer ma_x_y").status_code for _ in range(4)]
    assert codes == [401, 401, 401, 429]
    assert not RateCounter.objects.exists()
    window = int(time.time()) // 86400 * 86400
    assert store.get(f"memoryadmin:rate:address:198.51.100.9:failed-keys:{window}") == b"3"


@pytest.mark.django_db
def test_a_malformed_authorization_header_counts_as_a_failed_key(settings: Any) -> None:
    settings.MEMORYADMIN_RATE_FAILED_KEYS = "2/min"
    client = APIClient(REMOTE_ADDR="198.51.100.9")
    with time_machine.travel(NOON, tick=False):
        codes = [client.get(TOOLS, HTTP_AUTHORIZATION="Basic x").status_code for _ in range(3)]
    assert codes == [401, 401, 429]
