"""The recall log over time (which months it holds, which it should, which are past the
retention), and the reads of one memory in it, bounded however many there are.

Every read an agent makes is recorded (``Recall`` and its ``RecallItem`` rows), so the log
grows with every agent turn and soon outgrows everything else. On PostgreSQL both tables
are partitioned by the month of ``recalled_at`` (ledger 0010): for each month one partition
of each table, with the same bounds, named ``<table>_pYYYY_MM``, and a default partition
for a moment no month covers. A recall and its items share their ``recalled_at``, so they
always sit in the same month. Keeping the months (made ahead, dropped whole once past the
retention) is ``ledger.actions.recall_log``'s; this module only reads. SQLite keeps plain
tables.

The catalog is read only where the log is partitioned; a memory's reads are read the
PostgreSQL way (a limit per part of a UNION, ``unnest``) with the plain path beside each.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import Count, F, Q, Window
from django.db.models.functions import RowNumber

from ledger.models import Recall, RecallItem

RECALLS = "ledger_recall"
ITEMS = "ledger_recallitem"
# Items point at their recall: a month's recall partition is made before its item
# partition and dropped after it.
TABLES = (RECALLS, ITEMS)
# Months made ahead of the current one, so that a new month's reads never begin in the
# default partition, even if beat stops for a while.
MONTHS_AHEAD = 3
_PARTITION = re.compile(rf"{RECALLS}_p(\d{{4}})_(\d{{2}})")


@dataclass(frozen=True, order=True)
class Month:
    """A calendar month in UTC: the span of one partition."""

    year: int
    month: int

    @classmethod
    def of(cls, moment: datetime) -> Month:
        utc = moment.astimezone(UTC)
        return cls(utc.year, utc.month)

    def next(self) -> Month:
        return Month(self.year + self.month // 12, self.month % 12 + 1)

    @property
    def start(self) -> datetime:
        return datetime(self.year, self.month, 1, tzinfo=UTC)

    @property
    def end(self) -> datetime:
        return self.next().start

    def partition(self, table: str) -> str:
        return f"{table}_p{self.year:04d}_{self.month:02d}"

    def __str__(self) -> str:
        return f"{self.year:04d}-{self.month:02d}"


def default_partition(table: str) -> str:
    """Where a row goes when no month's partition covers its time."""
    return f"{table}_default"


def retention_cutoff(now: datetime) -> datetime:
    """Reads older than this are past the retention (``MEMORYADMIN_RECALL_RETENTION_DAYS``)."""
    return now - timedelta(days=settings.MEMORYADMIN_RECALL_RETENTION_DAYS)


def expired(month: Month, now: datetime) -> bool:
    """Every moment of ``month`` is past the retention: its partitions may go whole."""
    return month.end <= retention_cutoff(now)


def ahead(now: datetime) -> list[Month]:
    """The current month and the ``MONTHS_AHEAD`` after it: each should have partitions
    before its first read."""
    months = [Month.of(now)]
    for _ in range(MONTHS_AHEAD):
        months.append(months[-1].next())
    return months


def waiting(now: datetime, using: str = DEFAULT_DB_ALIAS) -> list[Month]:
    """The months, still within the retention, of the reads that wait in the default
    partition for their month to be made (PostgreSQL). In normal running there are none,
    and the default partition is empty, so this costs nothing."""
    with connections[using].cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT extract(year FROM recalled_at AT TIME ZONE 'UTC')::int, "
            "extract(month FROM recalled_at AT TIME ZONE 'UTC')::int "
            f'FROM "{default_partition(RECALLS)}" WHERE recalled_at >= %s',
            [Month.of(retention_cutoff(now)).start],
        )
        return sorted(Month(year, month) for year, month in cursor.fetchall())


def partitioned(using: str = DEFAULT_DB_ALIAS) -> bool:
    """Whether the recall log is partitioned here: PostgreSQL after ledger 0010."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT relkind = 'p' FROM pg_class WHERE oid = to_regclass(%s)", [RECALLS])
        row = cursor.fetchone()
    return bool(row and row[0])


def months(using: str = DEFAULT_DB_ALIAS) -> list[Month]:
    """The months the recall log has partitions for, oldest first (PostgreSQL)."""
    with connections[using].cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = %s::regclass",
            [RECALLS],
        )
        names = [name for (name,) in cursor.fetchall()]
    return sorted(
        Month(int(found[1]), int(found[2]))
        for name in names
        if (found := _PARTITION.fullmatch(name))
    )


def may_keep_partitions(using: str = DEFAULT_DB_ALIAS) -> bool:
    """Whether this connection's role may make and drop partitions: only the tables' owner
    (or a member of its role) may. An application role kept away from rewriting the audit
    (``audit_grants``) is not one, and leaves the work to the owner."""
    with connections[using].cursor() as cursor:
        cursor.execute(
            "SELECT pg_has_role(current_user, relowner, 'USAGE') FROM pg_class "
            "WHERE oid = %s::regclass",
            [RECALLS],
        )
        row = cursor.fetchone()
    return bool(row and row[0])


# A memory's reads, as its history page lists them: the latest few of each version and how
# many there were, each read from the index of a recall item's memory and time, so the page
# costs the same whatever the number of reads.


@dataclass(frozen=True)
class ServedRead:
    """One recall that served a memory: where the memory stood in it, and who read it."""

    memory_id: uuid.UUID
    recall_id: int
    recalled_at: datetime
    position: int
    rank: float
    # How it was chosen (``ledger.rules.ranking.Why.via``); "" before it was recorded.
    via: str
    k: int
    goal: str
    turn: int | None
    agent: str
    run: str | None


_NEWEST = (F("recalled_at").desc(), F("recall_id").desc())
_ITEM_FIELDS = ("memory_id", "recall_id", "recalled_at", "position", "rank", "via")


def latest_reads(memory_ids: Sequence[uuid.UUID], per_memory: int) -> list[ServedRead]:
    """The latest ``per_memory`` reads of each of these memories, newest first, in two
    queries: the items, then their recalls.

    Where a database can limit each part of a UNION (PostgreSQL), each memory's part walks
    its index entries from the newest and stops after ``per_memory``; the memory is named in
    its own part, so the planner sees from its statistics when one has been read thousands
    of times and walks rather than sorts them all. Elsewhere a window over all of them does
    the same the long way. The recalls are then found by id and time, so PostgreSQL reads
    only the months they are in."""
    if not memory_ids:
        return []
    if connection.features.supports_slicing_ordering_in_compound:
        parts = [
            RecallItem.objects.filter(memory_id=pk)
            .order_by(*_NEWEST)
            .values_list(*_ITEM_FIELDS)[:per_memory]
            for pk in memory_ids
        ]
        rows = list(parts[0].union(*parts[1:], all=True))
    else:
        rows = list(
            RecallItem.objects.filter(memory__in=memory_ids)
            .annotate(row=Window(RowNumber(), partition_by=[F("memory_id")], order_by=_NEWEST))
            .filter(row__lte=per_memory)
            .values_list(*_ITEM_FIELDS)
        )
    recalls = {
        recall.pk: recall
        for recall in Recall.objects.filter(
            pk__in={row[1] for row in rows}, recalled_at__in={row[2] for row in rows}
        )
        .select_related("agent", "run")
        .defer("block")
    }
    place = {pk: index for index, pk in enumerate(memory_ids)}
    rows.sort(key=lambda row: (place[row[0]], -row[2].timestamp(), -row[1]))
    reads = []
    for memory_id, recall_id, recalled_at, position, rank, via in rows:
        recall = recalls[recall_id]
        reads.append(
            ServedRead(
                memory_id=memory_id,
                recall_id=recall_id,
                recalled_at=recalled_at,
                position=position,
                rank=rank,
                via=via,
                k=recall.k,
                goal=recall.goal,
                turn=recall.turn,
                agent=recall.agent.name,
                run=recall.run.ref if recall.run else None,
            )
        )
    return reads


_READS_COUNTED = f"""
SELECT m.id,
       (SELECT count(*) FROM (SELECT FROM {ITEMS} i WHERE i.memory_id = m.id LIMIT %s) t),
       (SELECT count(*) FROM (SELECT FROM {ITEMS} i
                              WHERE i.memory_id = m.id AND i.recalled_at >= m.since LIMIT %s) t)
FROM unnest(%s::uuid[], %s::timestamptz[]) AS m(id, since)
"""


def reads_counted(
    since: Mapping[uuid.UUID, datetime | None], most: int
) -> dict[uuid.UUID, tuple[int, int]]:
    """For each memory in ``since``: how many reads served it in all, and at or after its
    moment, each counted up to ``most + 1`` (more than ``most`` is all a page says), in one
    query. On PostgreSQL the counting stops there; SQLite's small tables count them all."""
    ids = list(since)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_READS_COUNTED, [most + 1, most + 1, ids, [since[pk] for pk in ids]])
            return {pk: (total, after) for pk, total, after in cursor.fetchall()}
    after = Q(pk__in=[])
    for pk, moment in since.items():
        if moment is not None:
            after |= Q(memory_id=pk, recalled_at__gte=moment)
    rows = (
        RecallItem.objects.filter(memory__in=ids)
        .order_by()
        .values("memory_id")
        .annotate(total=Count("pk"), after=Count("pk", filter=after))
    )
    counted = {row["memory_id"]: (row["total"], row["after"]) for row in rows}
    capped: dict[uuid.UUID, tuple[int, int]] = {}
    for pk in ids:
        total, after_it = counted.get(pk, (0, 0))
        capped[pk] = (min(total, most + 1), min(after_it, most + 1))
    return capped
