"""The expiry sweep's speed beside its floor: a measurement, run by hand.

``EXPIRY_SPEED_ROWS=50000 pytest tests/test_expiry_speed.py -s`` builds that many due
memories among five times as many and, in each of ``EXPIRY_SPEED_ROUNDS`` rounds (3), times
the floor (one UPDATE of them all feeding one history INSERT … SELECT, rolled back), the
same a batch at a time under the sweep's lock, and the sweep itself (``expire_due`` with
the configured batch size: its batches, history and conflict queries, the audit's sealer
queued on commit), in alternating order on the same rows, and prints the medians and where
the sweep's time went. Without the variable it is skipped: timings on a shared machine are
a figure to read, not a behaviour to assert. Set ``CELERY_BROKER_URL`` to a scratch Redis
database, so that the sealers the sweep queues do not land in the embedded broker's folder.
"""

from __future__ import annotations

import os
import statistics
import time
import uuid
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from ledger.actions import seals
from ledger.actions.expiry import expire_due
from ledger.models import Memory, Subject
from ledger.reads import audit_chain

ROWS = int(os.environ.get("EXPIRY_SPEED_ROWS", "0"))
ROUNDS = int(os.environ.get("EXPIRY_SPEED_ROUNDS", "3"))

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not ROWS, reason="a measurement: set EXPIRY_SPEED_ROWS to run it"),
]


def due_memories(count: int) -> None:
    """``count`` due memories among four times as many (a fifth due, as in the benchmark's
    data, so that the table is large enough for its indexes to carry the sweep), over a
    subject per ten memories, a third of them in a keyed slot."""
    now = timezone.now()
    total = 5 * count
    subjects = Subject.objects.bulk_create(
        Subject(ref=f"acct_speed_{n:06d}") for n in range(total // 10 + 1)
    )
    Memory.objects.bulk_create(
        (
            Memory(
                id=uuid.uuid4(),
                subject=subjects[n // 10],
                kind="preference",
                key=f"slot.{n % 10}" if n % 3 == 0 else "",
                statement=f"Fact number {n}.",
                normalized=f"fact number {n}.",
                basis="stated",
                written_at=now - timedelta(days=30),
                # Every fifth memory is due, the others live for a year yet.
                expires_at=now - timedelta(seconds=n + 1)
                if n % 5 == 0
                else now + timedelta(days=365),
            )
            for n in range(total)
        ),
        batch_size=5000,
    )


def sql(*statements: str) -> None:
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def history_table() -> str:
    return str(Memory.history.model._meta.db_table)


def fresh() -> None:
    """Every memory due again and no history, with the dead rows vacuumed away, so that
    each timing starts from the same table."""
    sql(
        "UPDATE ledger_memory SET status = 'active', status_changed_at = NULL, version = 1"
        " WHERE version = 2",
        f"DELETE FROM {history_table()}",
        "DELETE FROM ledger_auditseal",
        "VACUUM ANALYZE ledger_memory",
        f"VACUUM ANALYZE {history_table()}",
    )


def floor_seconds(batch: int | None = None) -> float:
    """One UPDATE of the due rows feeding one INSERT … SELECT of their history, rolled back:
    the least any sweep with history must do. Of every due row at once (no locks, no
    reasons); or, given ``batch``, of that many at a time taken with the sweep's own lock,
    the least a sweep in bounded batches must do."""
    history = Memory.history.model
    tracked = {field.attname for field in Memory._meta.concrete_fields}
    copied = ", ".join(
        field.column
        for field in history._meta.concrete_fields
        if field.attname in tracked and not field.primary_key
    )
    due = "status IN ('active', 'pending') AND expires_at <= %(now)s"
    rows = (
        f"WHERE {due}"
        if batch is None
        else f"FROM (SELECT id FROM ledger_memory WHERE {due} ORDER BY expires_at, id"
        f" LIMIT {batch} FOR NO KEY UPDATE SKIP LOCKED) due WHERE ledger_memory.id = due.id"
    )
    statement = (
        "WITH done AS (UPDATE ledger_memory SET status = 'expired',"
        f" status_changed_at = %(now)s, version = version + 1 {rows} RETURNING ledger_memory.*)"
        f" INSERT INTO {history._meta.db_table} ({copied}, history_date, history_type,"
        " history_actor, history_role, history_subject_id, history_change_reason)"
        f" SELECT {copied}, %(now)s, '~', 'system:expiry', 'system', subject_id, 'Expired.'"
        " FROM done"
    )
    done = 0
    start = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        while done < ROWS:
            cursor.execute(statement, {"now": timezone.now()})
            done += cursor.rowcount
        elapsed = time.perf_counter() - start
        transaction.set_rollback(True)
    assert done == ROWS
    return elapsed


def sweep_seconds(spent: Counter[str]) -> float:
    """The sweep's time; ``spent`` adds up its statements' times, by their first words."""

    def timed(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            spent[" ".join(sql.split()[:4])[:50]] += time.perf_counter() - start

    start = time.perf_counter()
    with connection.execute_wrapper(timed):
        run = expire_due(max_batches=10**6)
    elapsed = time.perf_counter() - start
    assert run.memories == ROWS
    return elapsed


def test_sweep_beside_its_floor() -> None:
    due_memories(ROWS)
    timings: dict[str, list[float]] = {"floor": [], "batched floor": [], "sweep": []}
    spent: Counter[str] = Counter()
    measure = {
        "floor": floor_seconds,
        "batched floor": lambda: floor_seconds(settings.MEMORYADMIN_EXPIRY_BATCH_SIZE),
        "sweep": lambda: sweep_seconds(spent),
    }
    for round_ in range(ROUNDS):
        for name in list(measure)[:: 1 if round_ % 2 == 0 else -1]:
            fresh()
            timings[name].append(measure[name]())
    rates = {name: ROWS / statistics.median(seconds) for name, seconds in timings.items()}
    print(f"\n{ROWS} due rows, {ROUNDS} rounds, medians:")
    for name, rate in rates.items():
        runs = ", ".join(f"{seconds:.2f}" for seconds in timings[name])
        print(f"  {name}: {rate:,.0f} rows/s ({runs} s)")
    print(
        f"  the sweep runs at {rates['sweep'] / rates['floor']:.0%} of the floor, "
        f"{rates['sweep'] / rates['batched floor']:.0%} of the batched floor"
    )
    for statement, seconds in spent.most_common():
        print(f"  {seconds / sum(timings['sweep']):4.0%} of the sweep in {statement} …")
    assert Memory.history.filter(history_actor="system:expiry").count() == ROWS
    seals.seal_pending(full=True)
    assert all(check.finding is None for check in audit_chain.verify())
