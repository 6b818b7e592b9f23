"""Keeping the recall log: the next months' partitions made ahead of time, and months past
the retention (``MEMORYADMIN_RECALL_RETENTION_DAYS``) dropped whole.

Beat runs it every hour (``ledger.tasks.keep_recall_log``), and ``manage.py
keep_recall_log`` runs it by hand. Each run can be repeated, or overlap another, safely:

- PostgreSQL. A month is made, or dropped, for both tables in one short transaction that
  first takes a transaction-level advisory lock, so two runs at once (two beats by mistake)
  take turns, and then reads the catalog again: the second finds the work done and does
  nothing. A month is made as a table of its own (``LIKE`` the parent), which takes the rows
  of that month already waiting in the default partition, then attached: recalls before
  items, since items point at recalls. It is dropped by detaching and dropping it, items
  first; no row is deleted one by one. Detaching takes a brief exclusive lock on the parent,
  and ``lock_timeout`` keeps a busy table from queueing every recall behind it: a month
  that could not get its lock is left for the next run.
- Rows in the default partition are there because no month covered them when they were
  written: a far-off clock, or reads imported from elsewhere. Their month is made for
  those within the retention, and they move into it; those past it are deleted in bounded
  batches (the one delete of single rows here, on a partition empty in normal running).
- SQLite keeps plain tables: old rows are deleted in the same bounded batches.

Only the tables' owner may make and drop partitions. Connected as an application role
that may not (``audit_grants``), a run does nothing and says so in the log: the owner runs
``keep_recall_log`` instead, from cron like ``migrate``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from django.db import OperationalError, connection, transaction
from django.db.backends.utils import CursorWrapper
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL
from django.utils import timezone

from ledger.models import Recall
from ledger.reads import recall_log
from ledger.reads.recall_log import ITEMS, RECALLS, TABLES, Month

logger = logging.getLogger(__name__)

# Recalls (with their items) deleted in one transaction, and transactions in one run.
DELETE_BATCH = 1000
DELETE_BATCHES = 20
# How long a change to a partition waits for a table's lock before it gives up until the
# next run: recalls waiting behind it wait no longer than this.
LOCK_TIMEOUT = "2s"


@dataclass
class Upkeep:
    """What one run did: months made and dropped, recalls deleted one by one."""

    made: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    deleted: int = 0
    # False when something was left for the next run: a lock not taken, or more to delete.
    finished: bool = True
    # Why nothing was done, when nothing could be.
    skipped: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


NOT_OWNER = (
    "the recall log's partitions are not kept: this database role does not own "
    f"{RECALLS}. Run `manage.py keep_recall_log` as the tables' owner, e.g. daily from cron."
)


def keep_recall_log(*, now: datetime | None = None) -> Upkeep:
    """Make this month's partitions and the next ones' (and those of any month whose reads
    wait in the default partition), drop the months past the retention, and delete the few
    reads past it that no month holds."""
    now = now or timezone.now()
    upkeep = Upkeep()
    old = Recall.objects.filter(recalled_at__lt=recall_log.retention_cutoff(now))
    if recall_log.partitioned():
        if not recall_log.may_keep_partitions():
            logger.warning("Recall log: %s", NOT_OWNER)
            return Upkeep(finished=False, skipped=NOT_OWNER)
        have = set(recall_log.months())
        for month in sorted({*recall_log.ahead(now), *recall_log.waiting(now)} - have):
            _attempt(upkeep, upkeep.made, month, _make)
        for month in sorted(have):
            if recall_log.expired(month, now):
                _attempt(upkeep, upkeep.dropped, month, _drop)
        waiting = f'SELECT id FROM "{recall_log.default_partition(RECALLS)}"'
        old = old.filter(pk__in=RawSQL(waiting, []))
    _delete(upkeep, old)
    return upkeep


def _attempt(
    upkeep: Upkeep, done: list[str], month: Month, change: Callable[[Month], bool]
) -> None:
    try:
        if change(month):
            done.append(str(month))
    except OperationalError as problem:
        # A lock not taken in time: the next run tries again.
        logger.warning("Recall log: %s left for the next run: %s", month, problem)
        upkeep.finished = False


def _locked(cursor: CursorWrapper) -> None:
    """Wait for any other run, then let no lock on a table be waited for long."""
    cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [__name__])
    cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")


def _make(month: Month) -> bool:
    """Partitions of both tables for ``month``, holding its rows that were waiting in the
    default partitions; False if another run made them first."""
    bounds = f"FROM ('{month.start.isoformat()}') TO ('{month.end.isoformat()}')"
    with transaction.atomic(), connection.cursor() as cursor:
        _locked(cursor)
        if month in recall_log.months():
            return False
        # Nothing lands in the default partitions while their rows of the month move out,
        # or the attach would find one there. Reads of other months go on meanwhile.
        defaults = ", ".join(f'"{recall_log.default_partition(table)}"' for table in TABLES)
        cursor.execute(f"LOCK TABLE {defaults} IN EXCLUSIVE MODE")
        # Items leave the default partition first: a recall deleted from it would take its
        # items there with it (ON DELETE CASCADE).
        for table in (ITEMS, RECALLS):
            partition = month.partition(table)
            cursor.execute(
                f'CREATE TABLE "{partition}" '
                f'(LIKE "{table}" INCLUDING DEFAULTS INCLUDING CONSTRAINTS)'
            )
            cursor.execute(
                f'WITH moved AS (DELETE FROM "{recall_log.default_partition(table)}" '
                "WHERE recalled_at >= %s AND recalled_at < %s RETURNING *) "
                f'INSERT INTO "{partition}" SELECT * FROM moved',
                [month.start, month.end],
            )
        for table in TABLES:
            cursor.execute(
                f'ALTER TABLE "{table}" ATTACH PARTITION "{month.partition(table)}" '
                f"FOR VALUES {bounds}"
            )
    return True


def _drop(month: Month) -> bool:
    """Drop ``month``'s partitions with every read in them; False if already gone."""
    with transaction.atomic(), connection.cursor() as cursor:
        _locked(cursor)
        if month not in recall_log.months():
            return False
        for table in reversed(TABLES):
            partition = month.partition(table)
            cursor.execute(f'ALTER TABLE "{table}" DETACH PARTITION "{partition}"')
            cursor.execute(f'DROP TABLE "{partition}"')
    return True


def _delete(upkeep: Upkeep, old: QuerySet[Recall]) -> None:
    """Delete ``old`` recalls with their items, a bounded batch per transaction."""
    for _ in range(DELETE_BATCHES):
        with transaction.atomic():
            batch = list(
                old.order_by("recalled_at", "pk").values_list("pk", flat=True)[:DELETE_BATCH]
            )
            if not batch:
                return
            Recall.objects.filter(pk__in=batch).delete()
        upkeep.deleted += len(batch)
    upkeep.finished = upkeep.finished and not old.exists()
