"""Counts that add up across processes: a real gunicorn with several workers sharing
``PROMETHEUS_MULTIPROC_DIR``, and a real Celery worker serving its tasks' run times and
failures on its own metrics port (docs/observability.md)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import redis
from celery import Celery
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import TEST_REDIS_URL
from tests.servers import database_url, free_port, gunicorn

ROOT = Path(__file__).resolve().parent.parent


def samples(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def wait_for(condition: Callable[[], bool], what: str, log: Path, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            if condition():
                return
        except OSError:
            pass
        assert time.monotonic() < deadline, f"{what}; log:\n{log.read_text(errors='replace')}"
        time.sleep(0.3)


def login_pages(counts: Path) -> float:
    """The sign-in pages one process's file says it answered."""
    for metric in MultiProcessCollector.merge([str(counts)]):  # type: ignore[no-untyped-call]
        for sample in metric.samples:
            if (
                sample.name == "memoryadmin_http_requests_total"
                and sample.labels["route"] == "login"
            ):
                return float(sample.value)
    return 0.0


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_gunicorn_workers_counts_add_up_whichever_answers_the_scrape(
    transactional_db: None, tmp_path: Path
) -> None:
    folder = tmp_path / "prometheus"
    folder.mkdir()
    with gunicorn(
        "--workers=3",
        log=tmp_path / "gunicorn.log",
        env={"PROMETHEUS_MULTIPROC_DIR": str(folder)},
    ) as web:
        batch, requests = 48, 0

        def login_page(_: int) -> int:
            with urllib.request.urlopen(f"{web.base}/accounts/login/", timeout=30) as response:
                return int(response.status)

        # At once: while one sync worker answers, the next connection goes to another. A
        # warm worker answers in a millisecond and may take a whole batch alone: batches go
        # on until more than one worker answered, or the sum would prove nothing.
        answered: list[float] = []
        while len([n for n in answered if n]) < 2 and requests < 20 * batch:
            with ThreadPoolExecutor(max_workers=8) as pool:
                assert set(pool.map(login_page, range(batch))) == {200}
            requests += batch
            answered = [login_pages(path) for path in folder.glob("counter_*.db")]
        assert sum(answered) == requests and len([n for n in answered if n]) >= 2, answered
        key = (
            "memoryadmin_http_requests_total",
            frozenset({"route": "login", "method": "GET", "status": "200"}.items()),
        )
        # Each scrape is answered by whichever worker accepts it, and says the same total.
        for _ in range(4):
            assert samples(f"{web.base}/metrics")[key] == requests


@pytest.mark.worker
def test_a_worker_serves_its_tasks_run_times_and_failures_on_its_port(
    transactional_db: None, processes: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    folder = tmp_path / "prometheus"
    folder.mkdir()
    port = free_port()
    log = tmp_path / "worker.log"
    node = f"metrics-{os.getpid()}@memoryadmin-tests"
    redis.Redis.from_url(TEST_REDIS_URL).flushdb()
    env = os.environ | {
        "DATABASE_URL": database_url(),
        "DATABASE_POOL": "0",
        "DEBUG": "1",
        "CELERY_BROKER_URL": TEST_REDIS_URL,
        "PROMETHEUS_MULTIPROC_DIR": str(folder),
        "MEMORYADMIN_WORKER_METRICS": f"127.0.0.1:{port}",
    }
    env.pop("CELERY_TASK_ALWAYS_EAGER", None)
    processes.append(
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "memoryadmin",
                "worker",
                "--pool=prefork",
                "--concurrency=2",
                "--without-gossip",
                "--without-mingle",
                "-n",
                node,
            ],
            cwd=ROOT,
            env=env,
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
        )
    )
    sender = Celery("metrics-tests", broker=TEST_REDIS_URL)
    try:
        wait_for(
            lambda: bool(sender.control.ping(destination=[node], timeout=0.5)),
            "the worker answering a ping",
            log,
        )
        for _ in range(3):
            sender.send_task("ledger.tasks.seal_audit", task_id=str(uuid.uuid4()))
        # Called without the tables it needs: the run raises.
        sender.send_task("ledger.tasks.seal_written", task_id=str(uuid.uuid4()))
        runs = (
            "memoryadmin_task_duration_seconds_count",
            frozenset({("task", "ledger.tasks.seal_audit")}),
        )
        failed = (
            "memoryadmin_task_failures_total",
            frozenset({("task", "ledger.tasks.seal_written")}),
        )
        url = f"http://127.0.0.1:{port}/metrics"

        def counted(found: dict[Any, float]) -> bool:
            return found.get(runs) == 3 and found.get(failed) == 1

        wait_for(lambda: counted(samples(url)), "3 runs and 1 failure counted", log)
    finally:
        sender.close()
        redis.Redis.from_url(TEST_REDIS_URL).flushdb()
