"""Expiry and reminders through real Celery workers, against Redis and PostgreSQL.

Each test starts from rows that are already due; nothing waits for time to pass. Waiting
is polling with a deadline (worker ready, task finished, backend blocked), never a sleep
that hopes something happened. The workers read pytest-django's test database, so the
tests are transactional: what the test writes is committed and visible to them.
"""

from __future__ import annotations

import email
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
import redis
import time_machine
from celery import Celery
from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection
from django.utils import timezone

from ledger.models import Conflict, Memory, MemoryVector, Reminder
from tests.conftest import SUBJECT, TEST_REDIS_URL

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

BROKER = TEST_REDIS_URL
BATCH = 5
EXPIRE = "ledger.tasks.expire_due"
REMIND = "ledger.tasks.send_reminders"
OTHER = "acct_9d3e1a77c05b42e8"


def wait_for(condition: Callable[[], Any], what: str, timeout: float = 90.0) -> Any:
    # Polling returns as soon as the condition holds; the deadline is generous so that a busy
    # two-core machine (a worker's fork, a redelivery) never fails a behaviour that is right.
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"Timed out after {timeout:.0f}s waiting for {what}.")


@dataclass
class Worker:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def results(self, task_id: str) -> list[str]:
        """The return values logged for every successful run of one task message."""
        return re.findall(rf"\[{re.escape(task_id)}\] succeeded in [\d.]+s: (.*)", self.text())

    def pool_child(self) -> int:
        """The pid of the prefork child that runs tasks (concurrency is one)."""
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == self.process.pid:
                return int(stat.parent.name)
        raise AssertionError(f"{self.name} has no pool process.")

    def stop(self) -> None:
        if self.process.poll() is None:
            # Cold shutdown: every test has waited for its tasks, so nothing is in flight.
            self.process.send_signal(signal.SIGQUIT)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def database_url() -> str:
    db = connection.settings_dict
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    # PostgreSQL checks every 200 ms that a client is still there while it runs a query,
    # including while it waits for a lock: a killed worker's transaction is rolled back
    # and its row locks are released at once, not when that lock is granted.
    options = "options=-c%20client_connection_check_interval%3D200"
    return f"postgres://{auth}@{db['HOST']}:{db['PORT']}/{db['NAME']}?{options}"


@pytest.fixture(scope="module")
def sender() -> Iterator[Celery]:
    """A Celery client on the test broker, for sending messages and pinging workers."""
    redis.Redis.from_url(BROKER).flushdb()
    app = Celery("memoryadmin-tests", broker=BROKER)
    yield app
    app.close()
    redis.Redis.from_url(BROKER).flushdb()


@pytest.fixture(scope="module")
def mail_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mail")


@pytest.fixture(scope="module")
def start_worker(
    sender: Celery,
    mail_dir: Path,
    tmp_path_factory: pytest.TempPathFactory,
    django_db_setup: None,
) -> Iterator[Callable[..., Worker]]:
    workers: list[Worker] = []
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "DATABASE_POOL": "0",
        "DEBUG": "1",
        "CELERY_BROKER_URL": BROKER,
        "MEMORYADMIN_EXPIRY_BATCH_SIZE": str(BATCH),
        "EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend",
        "EMAIL_FILE_PATH": str(mail_dir),
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("CELERY_TASK_ALWAYS_EAGER", None)
    logs = tmp_path_factory.mktemp("workers")

    def start(name: str, **settings_env: str) -> Worker:
        """A worker named ``name``, with ``settings_env`` added to its environment."""
        node = f"{name}-{os.getpid()}@memoryadmin-tests"
        log = logs / f"{name}.log"
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "memoryadmin",
                "worker",
                "--loglevel=INFO",
                "--pool=prefork",
                "--concurrency=1",
                "--without-gossip",
                "--without-mingle",
                "-n",
                node,
            ],
            cwd=settings.BASE_DIR,
            env={**env, **settings_env},
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
        )
        worker = Worker(name=node, process=process, log=log)
        workers.append(worker)
        wait_for(
            lambda: process.poll() is None and sender.control.ping(destination=[node], timeout=0.5),
            f"{node} to answer a ping (log: {log})",
            timeout=45,
        )
        return worker

    yield start
    for worker in workers:
        worker.stop()


@pytest.fixture(scope="module")
def worker(start_worker: Callable[[str], Worker]) -> Worker:
    return start_worker("w1")


@pytest.fixture
def due(remember: Callable[..., Memory]) -> Callable[..., list[Memory]]:
    """Memories written two days ago that expired hours ago, oldest expiry first."""

    def write(count: int, prefix: str = "Fact", hours_ago: int = 1, **fields: Any) -> list[Memory]:
        now = timezone.now()
        with time_machine.travel(now - timedelta(days=2), tick=False):
            return [
                remember(
                    f"{prefix} number {n}.",
                    expires_at=now - timedelta(hours=hours_ago, minutes=count - n),
                    expires_omitted=False,
                    **fields,
                )
                for n in range(count)
            ]

    return write


def expired_once(memories: list[Memory]) -> bool:
    rows = Memory.objects.filter(pk__in=[m.pk for m in memories])
    return all(
        m.status == "expired" and m.history.filter(history_actor="system:expiry").count() == 1
        for m in rows
    ) and rows.count() == len(memories)


def expiry_history(memories: list[Memory]) -> int:
    return Memory.history.filter(
        id__in=[m.pk for m in memories], history_actor="system:expiry"
    ).count()


def send(sender: Celery, task: str, task_id: str | None = None) -> str:
    task_id = task_id or str(uuid.uuid4())
    sender.send_task(task, task_id=task_id)
    return task_id


def connect(autocommit: bool = False) -> psycopg.Connection[Any]:
    """A connection of the test's own to the test database, beside Django's."""
    db = connection.settings_dict
    return psycopg.connect(
        host=db["HOST"],
        port=db["PORT"],
        user=db["USER"],
        password=db["PASSWORD"] or None,
        dbname=db["NAME"],
        autocommit=autocommit,
    )


@pytest.fixture
def lock_holder() -> Iterator[psycopg.Connection[Any]]:
    """Holds a row lock in an open transaction until the test rolls it back."""
    holder = connect()
    yield holder
    holder.rollback()
    holder.close()


def waiting_on_a_lock() -> set[int]:
    """Backends of the test database blocked on a lock (the test's own never are)."""
    with connect(autocommit=True) as probe:
        rows = probe.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock'",
            [connection.settings_dict["NAME"]],
        ).fetchall()
    return {pid for (pid,) in rows}


def test_worker_expires_more_due_rows_than_one_batch(
    sender: Celery, worker: Worker, due: Callable[..., list[Memory]], remember: Any
) -> None:
    memories = due(3 * BATCH + 2)
    keeper = remember("Still true next year.")
    task_id = send(sender, EXPIRE)
    results = wait_for(lambda: worker.results(task_id), "the expiry run to finish")
    assert results == [f"{{'memories': {3 * BATCH + 2}, 'ledger_entries': 0, 'finished': True}}"]
    assert expired_once(memories)
    keeper.refresh_from_db()
    assert keeper.status == "active"


def test_duplicated_message_changes_nothing_more(
    sender: Celery, worker: Worker, due: Callable[..., list[Memory]]
) -> None:
    memories = due(BATCH + 1)
    task_id = str(uuid.uuid4())
    send(sender, EXPIRE, task_id)
    send(sender, EXPIRE, task_id)
    results = wait_for(
        lambda: len(worker.results(task_id)) == 2 and worker.results(task_id),
        "both deliveries of the message to finish",
    )
    assert sorted(results) == [
        "{'memories': 0, 'ledger_entries': 0, 'finished': True}",
        f"{{'memories': {BATCH + 1}, 'ledger_entries': 0, 'finished': True}}",
    ]
    assert expired_once(memories)
    assert {m.version for m in Memory.objects.filter(pk__in=[m.pk for m in memories])} == {2}


def test_two_workers_at_once_expire_each_row_once(
    sender: Celery,
    worker: Worker,
    start_worker: Callable[[str], Worker],
    due: Callable[..., list[Memory]],
    lock_holder: psycopg.Connection[Any],
) -> None:
    second = start_worker("w2")
    try:
        run_two_workers(sender, worker, second, due, lock_holder)
    finally:
        # Later tests expect one worker on the queue.
        second.stop()


def run_two_workers(
    sender: Celery,
    worker: Worker,
    second: Worker,
    due: Callable[..., list[Memory]],
    lock_holder: psycopg.Connection[Any],
) -> None:
    # The two oldest rows disagree in one slot: the first worker's first batch holds them
    # and then waits for the conflict row this test keeps locked.
    slot = due(2, prefix="Delivery window", hours_ago=3, key="delivery.window")
    rest = due(6 * BATCH, prefix="Fact")
    conflict = Conflict.objects.open().get()
    lock_holder.execute("SELECT id FROM ledger_conflict WHERE id = %s FOR UPDATE", [conflict.pk])

    first_id = send(sender, EXPIRE)
    wait_for(lambda: waiting_on_a_lock(), "the first worker to block on the conflict")
    second_id = send(sender, EXPIRE)
    # The second worker skips the rows the first one holds and expires all the others.
    finished = wait_for(
        lambda: worker.results(second_id) or second.results(second_id),
        "the second run to finish while the first is blocked",
    )
    assert finished == [f"{{'memories': {6 * BATCH - 3}, 'ledger_entries': 0, 'finished': True}}"]
    assert not worker.results(first_id) and not second.results(first_id)

    lock_holder.rollback()
    first = wait_for(
        lambda: worker.results(first_id) or second.results(first_id), "the first run to finish"
    )
    assert first == [f"{{'memories': {BATCH}, 'ledger_entries': 0, 'finished': True}}"]
    ran = {
        task: [w.name for w in (worker, second) if w.results(task)]
        for task in (first_id, second_id)
    }
    assert len(ran[first_id]) == len(ran[second_id]) == 1
    assert ran[first_id] != ran[second_id], "the blocked worker took only its own message"
    assert expired_once(slot + rest)
    assert expiry_history(slot + rest) == len(slot + rest)
    conflict.refresh_from_db()
    assert conflict.status == "resolved"
    assert conflict.history.filter(history_actor="system:expiry").count() == 1


def kill_pool_child(worker: Worker, *, backend: int) -> None:
    """SIGKILL the worker's pool child, and redeliver its message only once the child's
    database backend is gone.

    PostgreSQL ends a dead client's backend only at its next connection check (every 200 ms
    here), and a redelivered message can arrive sooner: it would skip the rows the dead
    backend still locks instead of waiting for them. So the worker's main process, which
    notices the death and redelivers, is frozen until the backend has ended, however long
    a busy machine takes over either step: the order is forced, not raced.
    """
    child = worker.pool_child()
    worker.process.send_signal(signal.SIGSTOP)
    try:
        os.kill(child, signal.SIGKILL)
        with connect(autocommit=True) as probe:
            # With a timeout, pg_terminate_backend returns once the backend has exited,
            # unless its connection check ended it first.
            alive = "FROM pg_stat_activity WHERE pid = %s"
            probe.execute(f"SELECT pg_terminate_backend(pid, 60000) {alive}", [backend])
            wait_for(
                lambda: not probe.execute(f"SELECT 1 {alive}", [backend]).fetchone(),
                f"the killed child's backend {backend} to end",
            )
    finally:
        worker.process.send_signal(signal.SIGCONT)


def test_worker_killed_mid_batch_leaves_nothing_half_done_and_the_rerun_finishes(
    sender: Celery,
    worker: Worker,
    due: Callable[..., list[Memory]],
    lock_holder: psycopg.Connection[Any],
) -> None:
    slot = due(2, prefix="Delivery window", hours_ago=3, key="delivery.window")
    rest = due(BATCH + 2, prefix="Fact")
    conflict = Conflict.objects.open().get()
    lock_holder.execute("SELECT id FROM ledger_conflict WHERE id = %s FOR UPDATE", [conflict.pk])

    task_id = send(sender, EXPIRE)
    # Blocked after expiring the batch's rows, inside the batch's open transaction.
    (blocked,) = wait_for(lambda: waiting_on_a_lock(), "the worker to block")
    kill_pool_child(worker, backend=blocked)

    # The message was rejected back to the queue and a fresh pool process took it up:
    # a different backend now waits on the same lock, and the killed one is gone.
    wait_for(
        lambda: (pids := waiting_on_a_lock()) and blocked not in pids,
        "the redelivered run to block in place of the killed one",
    )
    assert "SIGKILL" in worker.text()
    assert not Memory.objects.filter(pk__in=[m.pk for m in slot + rest], status="expired")
    assert expiry_history(slot + rest) == 0

    lock_holder.rollback()
    results = wait_for(lambda: worker.results(task_id), "the redelivered run to finish")
    assert results == [f"{{'memories': {BATCH + 4}, 'ledger_entries': 0, 'finished': True}}"]
    assert expired_once(slot + rest)
    conflict.refresh_from_db()
    assert conflict.status == "resolved"
    assert conflict.history.filter(history_actor="system:expiry").count() == 1


def test_reminders_created_once_and_sent_as_one_digest_per_recipient(
    sender: Celery,
    worker: Worker,
    mail_dir: Path,
    remember: Callable[..., Memory],
    make_person: Callable[..., User],
) -> None:
    for path in mail_dir.iterdir():
        path.unlink()
    for username, role, subject, address in [
        ("dana", "user", SUBJECT, "dana@example.com"),
        ("marco", "user", OTHER, ""),
        ("sam", "support", "", "sam@example.com"),
        ("kim", "support", "", "kim@example.com"),
    ]:
        person = make_person(username, role=role, subject=subject)
        person.email = address
        person.save(update_fields=["email"])
    # Written 200 days ago: the policy's 180-day review date has passed.
    with time_machine.travel(timezone.now() - timedelta(days=200), tick=False):
        remember("Prefers email over telephone.")
        remember("Deliveries should arrive before noon.")
        remember("Orders flour in 25 kg sacks.", subject=OTHER)

    task_id = send(sender, REMIND)
    send(sender, REMIND, task_id)
    results = wait_for(
        lambda: len(worker.results(task_id)) == 2 and worker.results(task_id),
        "both deliveries of the message to finish",
    )
    assert sorted(results) == [
        "{'memories_reminded': 0, 'digests_sent': 0}",
        "{'memories_reminded': 3, 'digests_sent': 3}",
    ]
    assert Reminder.objects.filter(kind="review").count() == 3 + 3
    assert not Reminder.objects.filter(sent_at__isnull=True, recipient__email__gt="")

    messages = [
        email.message_from_bytes(chunk.strip())
        for path in mail_dir.iterdir()
        for chunk in path.read_bytes().split(b"-" * 79)
        if chunk.strip()
    ]
    by_recipient = {m["To"]: m for m in messages}
    assert len(messages) == 3
    assert sorted(by_recipient) == ["dana@example.com", "kim@example.com", "sam@example.com"]
    assert by_recipient["dana@example.com"]["Subject"] == "2 memories to check on memoryadmin"
    assert by_recipient["sam@example.com"]["Subject"] == "3 memories to check on memoryadmin"
    kim = by_recipient["kim@example.com"].get_payload(decode=True).decode()
    assert "Orders flour in 25 kg sacks." in kim


def test_worker_embeds_each_new_memory_and_the_beat_pass_what_was_missed(
    worker: Worker, sender: Celery, remember: Callable[..., Memory]
) -> None:
    # A write's commit queues the task naming its new memory; the worker embeds it.
    written = [remember("Likes aisle seats on flights."), remember("Has a dog called Rex.")]
    wait_for(
        lambda: MemoryVector.objects.filter(memory__in=written).count() == 2,
        "each new memory's vector",
    )
    stored = MemoryVector.objects.get(memory=written[0])
    assert (stored.model, stored.dimensions, len(bytes(stored.vector))) == (
        "all-MiniLM-L6-v2",
        384,
        384 * 4,
    )
    # What no task embedded (a broker outage, the backend down): the beat's pass does.
    MemoryVector.objects.filter(memory=written[1]).delete()
    send(sender, "ledger.tasks.embed_missing")
    wait_for(lambda: MemoryVector.objects.filter(memory=written[1]).exists(), "the missed vector")
