"""Forgetting on schedule: memories and ledger entries past their expiry become expired.

Work is done in bounded batches, each its own short transaction of the same three
statements whatever its size: one ``UPDATE … RETURNING`` that expires the batch, one
``INSERT … SELECT`` that writes its history rows, and one query that finds and locks the
open conflicts it touches (each of those, rarely more than a few, is then brought up to
date with ``refresh_conflict``).

The ``UPDATE`` takes its rows from a CTE that locks them with ``SELECT … FOR NO KEY UPDATE
SKIP LOCKED``: two workers running at once take disjoint rows, a row another run already
expired no longer matches, and a worker killed mid-batch leaves nothing behind because its
transaction rolls back. Running this any number of times therefore expires each row once
and writes one history row for it. (``NO KEY`` because a concurrent write may add the row
to a conflict, which only needs a key-share lock on it; a plain ``FOR UPDATE`` would make
that write wait for the batch.) The CTE is ``MATERIALIZED`` so that the locking select runs
exactly once: folded into the ``UPDATE`` as a subquery, it could be run again and skip, or
take, other rows.

Each batch of a run starts where the run's last batch ended (in the order of expiry, then
id), not at the earliest due row: the index entries of the rows it expired stay behind until
a vacuum, and a search from the start passed over all of them, so a run of a backlog cost
the square of its size (at a million memories, a batch passed over up to 200,000). A row
skipped there because another worker held it is that worker's, or, if it rolls back, the
next run's.

Each history row is the one ``save_tracked`` would have written through the ORM: every
column of the row as the ``UPDATE`` left it, copied in SQL, and the columns only history
has (``_history_values``), with the same actor, role, subject and reason, and the MAC the
ORM makes before it inserts (``ledger.models.audit``): made here in Python from the values
the ``UPDATE`` returns, and joined in with the reasons. Rows written in SQL send no
signal, so the batch asks for their sealing into the audit chain itself, as
``ledger.signals`` does for the ORM's. SQLite (``make run``) runs the same statements, with
the batch's reasons in a ``VALUES`` list rather than two arrays: it has ``UPDATE …
RETURNING`` and materialised CTEs, and no row locks, which its one worker does not need.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connections, models, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import OuterRef, Q, QuerySet, Subquery
from django.db.models.expressions import RawSQL
from django.utils import timezone

from ledger.actions import seals
from ledger.actions.slots import refresh_conflict, settle_possible_conflicts
from ledger.actions.webhooks import emit_memories
from ledger.actors import Actor
from ledger.dates import when
from ledger.metrics import EXPIRED_MEMORIES
from ledger.models import Conflict, LedgerEntry, Memory, WebhookEndpoint
from ledger.models.audit import make_mac
from ledger.rules import webhooks

logger = logging.getLogger(__name__)

EXPIRY = Actor.system("expiry")


@dataclass
class ExpiryRun:
    memories: int = 0
    ledger_entries: int = 0
    # False when the run stopped at its batch limit and more may be due.
    finished: bool = True

    def as_dict(self) -> dict[str, int | bool]:
        return asdict(self)


def expire_due(
    *,
    now: datetime | None = None,
    batch_size: int | None = None,
    max_batches: int | None = None,
) -> ExpiryRun:
    """Expire everything due at ``now``, batch by batch, up to ``max_batches`` batches."""
    now = now or timezone.now()
    size = batch_size or settings.MEMORYADMIN_EXPIRY_BATCH_SIZE
    limit = max_batches or settings.MEMORYADMIN_EXPIRY_MAX_BATCHES
    run = ExpiryRun()
    batches = 0
    for field, expire_batch in (
        ("memories", _expire_memory_batch),
        ("ledger_entries", _expire_ledger_batch),
    ):
        last: _Last = None
        while True:
            if batches >= limit:
                run.finished = False
                return run
            done, last = expire_batch(now=now, size=size, after=last)
            batches += 1
            setattr(run, field, getattr(run, field) + done)
            # A short batch means nothing unlocked is left: rows another worker holds
            # are that worker's to finish.
            if done < size:
                break
    if run.memories or run.ledger_entries:
        logger.info("Expired %d memories and %d ledger entries.", run.memories, run.ledger_entries)
    return run


# The last row a batch expired, by expiry then id: where the run's next batch starts.
_Last = tuple[datetime, Any] | None


def _expire_memory_batch(*, now: datetime, size: int, after: _Last) -> tuple[int, _Last]:
    with transaction.atomic():
        due = Memory.objects.due_to_expire(now)
        expired, last = _expire_batch(_after(due, after), now=now, size=size)
        if expired:
            # The batch's events: one more statement, set-based like the rest. Whether an
            # endpoint listens is asked first: a query on a handful of rows, where filing
            # nothing for 500 memories took 28 ms of every batch.
            event = webhooks.Event.MEMORY_EXPIRED
            listening = WebhookEndpoint.objects.subscribed_to(event).exists()
            emit_memories(event, expired, listening=listening)
            batch = _among(expired, due)
            # The conflicts an expired memory is a side of, and its slot's (the same, unless
            # a slot's conflict has fallen behind its memories): found from the batch's rows
            # through indexes, so the cost does not grow with the open conflicts.
            sides = Conflict.memories.through.objects.filter(memory__in=batch)
            slot = (
                Conflict.objects.open()
                .filter(possible=False, subject=OuterRef("subject"), key=OuterRef("key"))
                .order_by()
                .values("pk")[:1]
            )
            slots = Memory.objects.filter(pk__in=batch, key__gt="")
            touched = sides.values("conflict").union(slots.values(slot_conflict=Subquery(slot)))
            _settle(Conflict.objects.open().filter(pk__in=touched))
    # Counted once the batch's transaction is over: a batch rolled back expired nothing.
    EXPIRED_MEMORIES.inc(len(expired))
    return len(expired), last


def _expire_ledger_batch(*, now: datetime, size: int, after: _Last) -> tuple[int, _Last]:
    with transaction.atomic():
        due = LedgerEntry.objects.due_to_expire(now)
        expired, last = _expire_batch(_after(due, after), now=now, size=size)
        if expired:
            # A commitment no longer in force leaves its possible conflicts one-sided.
            batch = _among(expired, due)
            _settle(Conflict.objects.open().filter(possible=True, commitment__in=batch))
    return len(expired), last


def _after(due: QuerySet[Any], last: _Last) -> QuerySet[Any]:
    """The due rows after ``last`` in the sweep's order (all of them before the first batch)."""
    if last is None:
        return due
    expires_at, pk = last
    return due.filter(Q(expires_at__gte=expires_at) & ~Q(expires_at=expires_at, pk__lte=pk))


def _among(ids: list[Any], due: QuerySet[Any]) -> RawSQL:
    """A batch's ids, as the database returned them, as a subquery to match with ``__in``:
    one array parameter on PostgreSQL, a ``VALUES`` list elsewhere. The ORM would prepare
    a list of them again one id at a time, which at 500 ids takes longer than the query."""
    connection = connections[due.db]
    if connection.vendor == "postgresql":
        pk = _field(due.model, "pk")
        return RawSQL(f"SELECT unnest(%s::{pk.db_type(connection)}[])", [ids])
    return RawSQL(f"VALUES {', '.join(['(%s)'] * len(ids))}", ids)


def _settle(touched: QuerySet[Conflict]) -> None:
    """Bring the open conflicts a batch touched up to date, in one query for all of them.

    They are locked first, in id order: two workers expiring both sides of one conflict
    would otherwise each resolve it and write two history rows, and locking in different
    orders could deadlock. Closing a subject's one-sided possible conflicts is done once.
    """
    settled: set[int] = set()
    locked = touched.select_for_update(of=("self",)).select_related("subject").order_by("pk")
    for conflict in locked:
        if not conflict.possible:
            refresh_conflict(subject=conflict.subject, key=conflict.key, actor=EXPIRY)
        elif conflict.subject_id not in settled:
            settle_possible_conflicts(subject=conflict.subject, actor=EXPIRY)
        settled.add(conflict.subject_id)


def _expire_batch(due: QuerySet[Any], *, now: datetime, size: int) -> tuple[list[Any], _Last]:
    """Expire up to ``size`` due rows nobody else holds, with one history row each, in two
    statements; the ids of the rows expired, as the database returned them, and the last of
    them in the sweep's order."""
    model = due.model
    connection = connections[due.db]
    version = _column(_field(model, "version"), connection)
    # Every column as the UPDATE leaves it, read as the ORM would: what the MACs cover.
    fields = model._meta.concrete_fields
    readers = [_reader(field, connection) for field in fields]
    locked = due.select_for_update(skip_locked=True, no_key=True).order_by("expires_at", "pk")
    compiler = locked.values("pk")[:size].query.get_compiler(connection=connection)
    lock_sql, lock_params = compiler.as_sql()
    changes = [(_field(model, "status"), model.Status.EXPIRED)]
    if any(field.name == "status_changed_at" for field in model._meta.concrete_fields):
        changes.append((_field(model, "status_changed_at"), now))
    assignments = [f"{_column(field, connection)} = %s" for field, _ in changes]
    assignments.append(f"{version} = {version} + 1")
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH due (pk) AS MATERIALIZED ({lock_sql})"
            f" UPDATE {connection.ops.quote_name(model._meta.db_table)}"
            f" SET {', '.join(assignments)}"
            f" WHERE {_column(_field(model, 'pk'), connection)} IN (SELECT pk FROM due)"
            f" RETURNING {', '.join(_column(field, connection) for field in fields)}",
            [
                *lock_params,
                *(field.get_db_prep_save(value, connection) for field, value in changes),
            ],
        )
        returned = cursor.fetchall()
        if not returned:
            return [], None
        rows = [
            {
                field.attname: read(value)
                for field, read, value in zip(fields, readers, row, strict=True)
            }
            for row in returned
        ]
        stamped_at = timezone.now()
        expired = _history_rows(model, rows, stamped_at)
        cursor.execute(*_history_insert(model, expired, stamped_at, connection))
    seals.seal_after_commit(model.history.model._meta.db_table, due.db)
    # The ids as the database returned them (``_among`` binds them again; SQLite cannot
    # bind the UUIDs they were read as for the MACs).
    at = next(n for n, field in enumerate(fields) if field.primary_key)
    pk = model._meta.pk.attname
    last = max((row["expires_at"], row[pk]) for row in rows)
    return [row[at] for row in returned], last


def _history_rows(
    model: type[models.Model], rows: list[dict[str, Any]], stamped_at: datetime
) -> list[tuple[Any, str, str]]:
    """Each expired row's id, with the reason and the MAC of its history row."""
    history = model.history.model  # type: ignore[attr-defined]
    pk = model._meta.pk.attname
    whys = _reasons([row["expires_at"] for row in rows])
    stamped = _stamped(stamped_at)
    expired = []
    for row, why in zip(rows, whys, strict=True):
        version = {
            **row,
            **stamped,
            "history_subject_id": row["subject_id"],
            "history_change_reason": why,
        }
        expired.append((row[pk], why, make_mac(history, version)))
    return expired


def _history_insert(
    model: type[models.Model],
    expired: list[tuple[Any, str, str]],
    stamped_at: datetime,
    connection: BaseDatabaseWrapper,
) -> tuple[str, list[Any]]:
    """The expired rows' history as one ``INSERT … SELECT``, in the batch's order.

    Its columns come from the history model, so a column added to the model or to every
    history table is copied, or stops the sweep, rather than being left empty."""
    history = model.history.model  # type: ignore[attr-defined]
    copied = {field.attname: _column(field, connection) for field in model._meta.concrete_fields}
    own = _history_values(history, copied, connection, stamped_at)
    columns, values, params = [], [], []
    for field in history._meta.concrete_fields:
        if field.primary_key:
            continue  # history_id: the history table's own sequence
        columns.append(_column(field, connection))
        if field.attname in own:
            sql, value = own[field.attname]
            values.append(sql)
            params.extend(value)
        elif field.attname in copied:
            values.append(f"tracked.{copied[field.attname]}")
        else:
            raise ImproperlyConfigured(
                f"The expiry sweep does not know what {history.__name__}.{field.attname} holds."
            )
    pk, expires_at = _field(model, "pk"), _field(model, "expires_at")
    reasons, reason_params = _reason_table(pk, expired, connection)
    qn = connection.ops.quote_name
    return (
        f"WITH reason (pk, why, mac) AS ({reasons})"
        f" INSERT INTO {qn(history._meta.db_table)} ({', '.join(columns)})"
        f" SELECT {', '.join(values)} FROM {qn(model._meta.db_table)} tracked"
        f" JOIN reason ON tracked.{_column(pk, connection)} = reason.pk"
        f" ORDER BY tracked.{_column(expires_at, connection)}, tracked.{_column(pk, connection)}",
        [*reason_params, *params],
    )


def _stamped(stamped_at: datetime) -> dict[str, Any]:
    """The columns only history has that are the same for the whole batch: simple-history's
    own, and the actor and role ``ledger.signals`` stamps."""
    return {
        "history_date": stamped_at,
        "history_type": "~",
        "history_actor": EXPIRY.label,
        "history_role": EXPIRY.role,
    }


def _history_values(
    history: type[models.Model],
    copied: dict[str, str],
    connection: BaseDatabaseWrapper,
    stamped_at: datetime,
) -> dict[str, tuple[str, list[Any]]]:
    """What the ORM writes in the columns only history has, as SQL and its parameters: the
    batch's (``_stamped``, the values its MACs were made over), the subject from the row's
    ``copied`` columns, and each row's reason and MAC from the joined table."""
    stamped = _stamped(stamped_at)
    when = _field(history, "history_date").get_db_prep_value(stamped_at, connection)
    return {
        "history_date": ("%s", [when]),
        "history_type": ("%s", [stamped["history_type"]]),
        "history_actor": ("%s", [stamped["history_actor"]]),
        "history_role": ("%s", [stamped["history_role"]]),
        # The system is no user.
        "history_user_id": ("NULL", []),
        "history_subject_id": (f"tracked.{copied['subject_id']}", []),
        "history_change_reason": ("reason.why", []),
        "history_mac": ("reason.mac", []),
    }


def _reason_table(
    pk: models.Field[Any, Any],
    expired: list[tuple[Any, str, str]],
    connection: BaseDatabaseWrapper,
) -> tuple[str, list[Any]]:
    """Each expired row's id, reason and MAC, as a table to join: three array parameters on
    PostgreSQL, whatever the batch's size; a ``VALUES`` list elsewhere (SQLite)."""
    if connection.vendor == "postgresql":
        ids, whys, macs = (list(column) for column in zip(*expired, strict=True))
        return (
            f"SELECT * FROM unnest(%s::{pk.db_type(connection)}[], %s::text[], %s::text[])",
            [ids, whys, macs],
        )
    rows = ", ".join(["(%s, %s, %s)"] * len(expired))
    # Each id as the column holds it: the ids were read back as the ORM reads them (a UUID),
    # which SQLite cannot bind.
    return f"VALUES {rows}", [
        value
        for row_id, why, mac in expired
        for value in (pk.get_db_prep_value(row_id, connection), why, mac)
    ]


def _reasons(ends: list[datetime]) -> list[str]:
    """Each row's reason, which people read on the history page in their date format.

    ``when`` reads to the minute, so each minute is worded once: wording it is most of the
    sweep's own work otherwise, and a batch's rows share minutes (a sweep every minute
    meets one or two)."""
    zone = timezone.get_current_timezone()
    worded: dict[datetime, str] = {}
    reasons = []
    for end in ends:
        minute = end.astimezone(zone).replace(second=0, microsecond=0)
        if minute not in worded:
            worded[minute] = f"Expired: its expiry, {when(minute)}, has passed."
        reasons.append(worded[minute])
    return reasons


def _field(model: type[models.Model], name: str) -> models.Field[Any, Any]:
    field = model._meta.pk if name == "pk" else model._meta.get_field(name)
    assert isinstance(field, models.Field)
    return field


def _column(field: models.Field[Any, Any], connection: BaseDatabaseWrapper) -> str:
    assert field.column  # a concrete field's
    return connection.ops.quote_name(field.column)


def _reader(field: models.Field[Any, Any], connection: BaseDatabaseWrapper) -> Callable[[Any], Any]:
    """Reads a value of ``field`` from a raw cursor as the ORM would (SQLite returns text)."""
    column = field.get_col(field.model._meta.db_table)
    converters = [
        *connection.ops.get_db_converters(column),
        *column.get_db_converters(connection),
    ]

    def read(value: Any) -> Any:
        for convert in converters:
            value = convert(value, column, connection)
        return value

    return read
