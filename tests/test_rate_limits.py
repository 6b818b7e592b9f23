"""Per-agent limits on the API's reads and writes, and per-address limits on keys that do
not work: a 429 naming the limit, with Retry-After, counted in a moving window by the
``limits`` library, in Redis across web processes; with Redis down the API still answers."""

from __future__ import annotations

import json
import logging
import os
import shutil
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
from prometheus_client import REGISTRY
from rest_framework.test import APIClient

from ledger.actions.agents import create_agent
from ledger.actors import Actor
from ledger.api.throttling import limiter_for
from ledger.models import Memory
from tests.conftest import SUBJECT, TEST_REDIS_URL, agent_client, body
from tests.servers import free_port, gunicorn
from tests.test_production_settings import check_deploy

# Minutes long: started first (tests/conftest.py), so it never ends the run alone.
pytestmark = pytest.mark.long

ROOT = Path(__file__).resolve().parent.parent
URL = "/api/v1/memories"
RECALL = f"/api/v1/subjects/{SUBJECT}/recall"
TOOLS = "/api/v1/tools"
TEST_REDIS = TEST_REDIS_URL
NOON = datetime(2026, 11, 2, 12, 0, 10, tzinfo=UTC)


def note(n: int) -> dict[str, Any]:
    """A memory write of its own: no slot, so none of them conflicts with another."""
    return body(
        key=...,
        kind="episode",
        statement=f"Asked about invoice number {n}.",
        source={"kind": "user_message", "ref": f"msg_{n}"},
    )


def metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.fixture
def limited(settings: Any) -> None:
    settings.MEMORYADMIN_RATE_WRITES = "3/min"
    settings.MEMORYADMIN_RATE_READS = "5/min"


@pytest.fixture
def in_redis(settings: Any) -> Iterator[redis.Redis]:
    """The limits counted in the test's Redis, from zero."""
    settings.REDIS_URL = TEST_REDIS
    limiter_for(TEST_REDIS).storage.reset()
    yield redis.Redis.from_url(TEST_REDIS)
    limiter_for(TEST_REDIS).storage.reset()


@pytest.mark.django_db
def test_a_write_over_the_limit_is_429_naming_the_limit_and_writes_nothing(
    limited: None,
) -> None:
    client, _ = agent_client("busy", ["read", "write"])
    refusals = metric("memoryadmin_rate_limit_refusals_total", kind="writes")
    with time_machine.travel(NOON, tick=False) as clock:
        accepted = []
        for n in range(3):
            accepted.append(client.post(URL, note(n), format="json").status_code)
            clock.shift(10)
        over = client.post(URL, note(3), format="json")
    assert accepted == [201, 201, 201]
    assert over.status_code == 429
    # A moving window: the first write, 30 seconds ago, leaves it in 30 seconds.
    assert over["Retry-After"] == "30"
    assert over.json() == {
        "detail": "Too many writes: this agent may make 3 per minute "
        "(MEMORYADMIN_RATE_WRITES). Try again in 30 seconds.",
        "code": "rate_limited",
    }
    assert Memory.objects.count() == 3
    assert metric("memoryadmin_rate_limit_refusals_total", kind="writes") == refusals + 1


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
def test_room_comes_back_as_each_write_leaves_the_last_minute_not_at_the_clock_minute(
    limited: None,
) -> None:
    client, _ = agent_client("busy", ["write"])
    with time_machine.travel(NOON, tick=False) as clock:
        for n in range(3):  # at :10, :30 and :50
            assert client.post(URL, note(n), format="json").status_code == 201
            clock.shift(20)
        # 12:01:10, past the clock minute: the last minute still holds two of them, and
        # the first is exactly a minute old.
        clock.move_to(NOON + timedelta(seconds=60))
        assert client.post(URL, note(3), format="json").status_code == 429
        clock.move_to(NOON + timedelta(seconds=61))
        assert client.post(URL, note(4), format="json").status_code == 201
        again = client.post(URL, note(5), format="json")
    assert again.status_code == 429
    assert again["Retry-After"] == "19"  # it is 12:01:11; the :30 write leaves at 12:01:30


@pytest.mark.django_db
def test_the_limits_are_counted_in_redis_when_it_is_configured(
    limited: None, in_redis: redis.Redis
) -> None:
    client, _ = agent_client("busy", ["write"])
    codes = [client.post(URL, note(n), format="json").status_code for n in range(4)]
    assert codes == [201, 201, 201, 429]
    [key] = in_redis.scan_iter("memoryadmin:rate:*")
    assert in_redis.llen(key) == 3
    assert 0 < in_redis.ttl(key) <= 60


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


def post(base: str, key: str, n: int, subject: str) -> tuple[int, str | None]:
    call = urllib.request.Request(
        f"{base}{URL}",
        data=json.dumps(note(n) | {"subject": subject}).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(call, timeout=120) as response:
            return response.status, None
    except urllib.error.HTTPError as refused:
        return refused.code, refused.headers.get("Retry-After")


ROUNDS = int(os.environ.get("XROUNDS", "20"))


def test_200_concurrent_writes_against_a_limit_of_50_accept_exactly_50_every_time(
    transactional_db: None, tmp_path: Path
) -> None:
    """Twenty rounds, each a fresh agent: 200 writes at once through 2 gunicorn processes of
    8 threads, sharing one count in Redis."""
    limiter_for(TEST_REDIS).storage.reset()
    rounds = []
    with (
        gunicorn(
            "--workers=2",
            "--threads=8",
            log=tmp_path / "gunicorn.log",
            env={
                "MEMORYADMIN_RATE_WRITES": "50/min",
                "REDIS_URL": TEST_REDIS,
                # What is measured is the count: a database connection opened for each of
                # the 4,000 requests (a deployment pools them), the writes' meaning and
                # their log lines only cost time on the test machine.
                "DATABASE_POOL": "1",
                "MEMORYADMIN_EMBEDDINGS": "off",
                "LOG_LEVEL": "WARNING",
            },
        ) as web,
        ThreadPoolExecutor(max_workers=200) as pool,
    ):
        for number in range(ROUNDS):
            _, key = create_agent(
                name=f"flood-{number}", scopes=["write"], actor=Actor.system("test")
            )
            # Each write about a subject of its own: writes about one subject wait for each
            # other (its lock), which would queue the accepted ones, not test the limit.
            subjects = [f"acct_flood{number}_{n}" for n in range(200)]
            answers = list(pool.map(post, [web.base] * 200, [key] * 200, range(200), subjects))
            rounds.append(Counter(code for code, _ in answers))
            assert all(wait is not None and int(wait) > 0 for code, wait in answers if code == 429)
    log = web.output()[-5000:]
    assert all(set(codes) <= {201, 429} for codes in rounds), ([dict(c) for c in rounds], log)
    assert [codes[201] for codes in rounds] == [50] * ROUNDS, log
    assert Memory.objects.count() == 50 * ROUNDS


@pytest.mark.django_db
def test_keys_that_do_not_work_are_limited_per_address(settings: Any) -> None:
    settings.MEMORYADMIN_RATE_FAILED_KEYS = "20/min"
    _, key = create_agent(name="real", scopes=["read"], actor=Actor.system("test"))
    guesser = APIClient(REMOTE_ADDR="198.51.100.9")
    neighbour = APIClient(REMOTE_ADDR="203.0.113.50")
    refusals = metric("memoryadmin_rate_limit_refusals_total", kind="failed_keys")
    with time_machine.travel(NOON, tick=False) as clock:
        guesses = [
            guesser.get(TOOLS, HTTP_AUTHORIZATION=f"Bearer ma_guess{n}_x").status_code
            for n in range(20)
        ]
        clock.shift(10)
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
    assert metric("memoryadmin_rate_limit_refusals_total", kind="failed_keys") == refusals + 2
    with time_machine.travel(NOON + timedelta(seconds=61), tick=False):
        assert guesser.get(TOOLS, HTTP_AUTHORIZATION=f"Bearer {key}").status_code == 200


@pytest.mark.django_db
def test_failed_keys_are_counted_in_redis_when_it_is_configured(
    settings: Any, in_redis: redis.Redis
) -> None:
    settings.MEMORYADMIN_RATE_FAILED_KEYS = "3/min"
    client = APIClient(REMOTE_ADDR="198.51.100.9")
    codes = [client.get(TOOLS, HTTP_AUTHORIZATION="Bearer ma_x_y").status_code for _ in range(4)]
    assert codes == [401, 401, 401, 429]
    [key] = in_redis.scan_iter("memoryadmin:rate:*198.51.100.9*")
    assert in_redis.llen(key) == 3


@pytest.mark.django_db
def test_a_malformed_authorization_header_counts_as_a_failed_key(settings: Any) -> None:
    settings.MEMORYADMIN_RATE_FAILED_KEYS = "2/min"
    client = APIClient(REMOTE_ADDR="198.51.100.9")
    with time_machine.travel(NOON, tick=False):
        codes = [client.get(TOOLS, HTTP_AUTHORIZATION="Basic x").status_code for _ in range(3)]
    assert codes == [401, 401, 429]


# Redis stopped: the API answers, unlimited, and says so once in the log and in the metrics.


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[tuple[str, Any]]:
    """A redis-server of the test's own on a free port: its URL, and a way to stop and
    start it again on the same port."""
    port = free_port()
    server: list[subprocess.Popen[bytes]] = []

    def start() -> None:
        server.append(
            subprocess.Popen(
                [
                    shutil.which("redis-server") or "redis-server",
                    "--port",
                    str(port),
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--dir",
                    str(tmp_path),
                ],
                stdout=subprocess.DEVNULL,
            )
        )
        client = redis.Redis(port=port)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                return
            except redis.ConnectionError:
                assert time.monotonic() < deadline
                time.sleep(0.05)

    def stop() -> None:
        server[-1].terminate()
        server[-1].wait(timeout=10)

    start()
    yield f"redis://127.0.0.1:{port}/0", (start, stop)
    if server[-1].poll() is None:
        stop()


@pytest.mark.django_db
def test_with_redis_stopped_the_api_answers_unlimited_and_says_so_once(
    settings: Any, own_redis: tuple[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    url, (start, stop) = own_redis
    settings.REDIS_URL = url
    settings.MEMORYADMIN_RATE_WRITES = "2/min"
    settings.MEMORYADMIN_RATE_FAILED_KEYS = "1/min"
    client, _ = agent_client("steady", ["write"])
    assert [client.post(URL, note(n), format="json").status_code for n in range(3)] == [
        201,
        201,
        429,
    ]
    errors = metric("memoryadmin_rate_limit_store_errors_total")

    stop()
    began = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="ledger.api.throttling"):
        writes = [client.post(URL, note(n), format="json").status_code for n in range(3, 7)]
        stranger = APIClient(REMOTE_ADDR="198.51.100.7")
        guesses = [
            stranger.get(TOOLS, HTTP_AUTHORIZATION="Bearer ma_x_y").status_code for _ in range(3)
        ]
    took = time.monotonic() - began

    assert writes == [201] * 4  # over the limit of 2: let through, not refused, not a 500
    assert guesses == [401] * 3  # the key is still checked; the address is not limited
    assert took < 5, f"a stopped Redis stalled the requests: {took:.1f} s"
    # Each request asked twice: is its address over its failed keys, then its own count
    # (the agent's writes, the guesser's failure).
    assert metric("memoryadmin_rate_limit_store_errors_total") == errors + 7 * 2
    warnings = [r for r in caplog.records if r.name == "ledger.api.throttling"]
    assert [r.getMessage() for r in warnings] == [
        "Rate limits not checked: their store (REDIS_URL) did not answer (ConnectionError). "
        "Requests are let through until it does."
    ]
    assert Memory.objects.count() == 6

    # Back (empty, as a restarted Redis without persistence is): counted again at once.
    start()
    codes = [client.post(URL, note(n), format="json").status_code for n in range(7, 10)]
    assert codes == [201, 201, 429]


def test_a_deployment_without_redis_is_warned_that_its_processes_count_apart() -> None:
    without = check_deploy(REDIS_URL=None)
    assert without.returncode != 0
    assert "(memoryadmin.W001) REDIS_URL is not set" in without.stderr
    assert "memoryadmin.W001" not in check_deploy().stderr  # its REDIS_URL: no warning
