"""The benchmark's dataset, built on PostgreSQL with set-based SQL (no ORM saves).

``SCALE`` is the number of memories. Subjects are skewed: one with 600 memories (the
subject page's benchmark), ten with hundreds, and the rest with a handful (1 to 36, ten on
average). The statements are composed from word lists, so full-text ranking has real work;
kinds, bases, statuses, keys and sources come in the mix the gate produces; about 10
history versions a memory (a few with hundreds, and one with 800 and about 9,000 recalls
for the history page); 2.5 recalls and about 10 recall items a memory; 20 % of memories
due for expiry; open conflicts wherever two live memories share a slot; end users who own
subjects, support staff and admins.

It runs as one transaction, so a failure leaves the database as it was. Secondary indexes
and foreign keys of the tables it fills are dropped first and made again at the end (one
sorted build and one validating join each, instead of ten million index insertions and
deferred checks), then everything is vacuumed and analysed. The recall log is written
through its parent tables, so rows land in whatever partitions the schema has.

The audit chain: history rows written here are not sealed one by one (at 1M that is ten
million hashes in Python); the newest row of each chained table carries a real seal, so a
commit's sealer (which looks above the highest sealed row) finds only what the benchmark
itself writes, as it would in a production database whose older rows are all sealed.
``manage.py verify_audit`` would seal the rest first, which takes long at scale.

The names, proportions and word lists are ``vocabulary``'s; the SQL of each step is
``builder``'s; this module runs the steps and keeps the dataset's description.
"""

from __future__ import annotations

import dataclasses
import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from django.db import connection, models, transaction
from django.db.backends.utils import CursorWrapper
from django.utils import timezone

from ledger.actions.recall_log import keep_recall_log
from ledger.models import (
    Conflict,
    Memory,
    Recall,
    RecallItem,
    Run,
    Source,
    Subject,
)
from ledger.reads import audit_chain
from tools.bench.builder import Builder, history_model, timed_step
from tools.bench.vocabulary import ADMIN, BENCH_KEY, SUPPORT

# What the harness needs to know about a dataset, kept beside it (not a model: no app reads it).
INFO_TABLE = "bench_info"


@dataclass(frozen=True)
class Info:
    """What ``make bench`` reads back about a dataset: its size and its named rows."""

    scale: int
    built_at: str
    build_seconds: float
    big_subject: str
    history_memory: str
    key: str = BENCH_KEY
    support: str = SUPPORT
    admin: str = ADMIN
    counts: dict[str, int] = field(default_factory=dict)


class NotPostgres(RuntimeError):
    """The dataset's SQL (generate_series, gen_random_uuid, dropped indexes) is PostgreSQL's."""


class NotBenchData(RuntimeError):
    """The database holds data that this builder did not make: it is never replaced."""


def read_info() -> Info | None:
    """The dataset's description, or None when this database holds no benchmark data."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [INFO_TABLE])
        if not cursor.fetchone()[0]:
            return None
        cursor.execute(f"SELECT value FROM {INFO_TABLE} WHERE name = 'info'")
        row = cursor.fetchone()
    if row is None:
        return None
    value = row[0] if isinstance(row[0], dict) else json.loads(row[0])
    return Info(**value)


def build(
    *, scale: int, replace: bool = False, seed: int = 14, say: Callable[[str], None] = print
) -> Info:
    """Fill the database with a dataset of ``scale`` memories; how it went."""
    if connection.vendor != "postgresql":
        raise NotPostgres(
            "The benchmark's dataset needs PostgreSQL (generate_series, gen_random_uuid); set "
            "DATABASE_URL to a PostgreSQL database, e.g. "
            "postgres://postgres@127.0.0.1:5432/memoryadmin_bench."
        )
    if scale < 50:
        raise ValueError("SCALE must be at least 50 memories.")
    started = time.monotonic()
    now = timezone.now()
    rng = random.Random(seed)
    with transaction.atomic(), connection.cursor() as cursor:
        _refuse_foreign_data(cursor, replace=replace)
        if replace:
            _empty(cursor)
        # The recall log's monthly partitions, as beat keeps them: the reads written below
        # land in their months, not in the default partition.
        keep_recall_log(now=now)
        builder = Builder(cursor, scale=scale, now=now, rng=rng, seed=seed, say=say)
        dropped = _drop_secondary(cursor, builder.tables())
        say(f"Dropped {len(dropped)} indexes and foreign keys for the load.")
        builder.fill()
        timed_step(say, "indexes and foreign keys made again", lambda: _restore(cursor, dropped))
        timed_step(say, "newest history rows sealed", _seal_newest)
        counts = _counts(cursor)
        info = Info(
            scale=scale,
            built_at=now.isoformat(timespec="seconds"),
            build_seconds=0.0,
            big_subject=builder.big_subject_ref(),
            history_memory=builder.history_memory_id(),
            counts=counts,
        )
        _store_info(cursor, info)
    timed_step(say, "vacuumed and analysed", lambda: _vacuum(builder.tables()))
    info = dataclasses.replace(info, build_seconds=round(time.monotonic() - started, 1))
    with connection.cursor() as cursor:
        _store_info(cursor, info)
    return info


def _refuse_foreign_data(cursor: CursorWrapper, *, replace: bool) -> None:
    cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [INFO_TABLE])
    ours = cursor.fetchone()[0]
    cursor.execute("SELECT EXISTS (SELECT 1 FROM ledger_memory)")
    has_memories = cursor.fetchone()[0]
    if has_memories and not ours:
        raise NotBenchData(
            "This database holds memories that the benchmark did not make; it never replaces "
            "them. Point DATABASE_URL at a database of its own (make bench-data does)."
        )
    if has_memories and not replace:
        raise NotBenchData(
            "This database already holds benchmark data; pass --replace to build it anew."
        )


def _empty(cursor: CursorWrapper) -> None:
    """Everything ``build`` writes, and what the benchmark itself left (sessions, rate
    counters, lockouts); the policy, groups and permissions that migrate made stay."""
    cursor.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND ("
        "tablename LIKE 'ledger\\_%%' OR tablename LIKE 'axes\\_%%' OR tablename IN "
        "('auth_user', 'auth_user_groups', 'auth_user_user_permissions', 'django_session', "
        "'django_admin_log')) AND tablename NOT IN ('ledger_policy', 'ledger_historicalpolicy')"
    )
    tables = [row[0] for row in cursor.fetchall()]
    # Partitions are emptied through their parent.
    cursor.execute("SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid")
    partitions = {row[0] for row in cursor.fetchall()}
    names = ", ".join(f'"{t}"' for t in tables if t not in partitions)
    cursor.execute(f"TRUNCATE {names} RESTART IDENTITY CASCADE")
    cursor.execute(f"DROP TABLE IF EXISTS {INFO_TABLE}")


@dataclass
class _Dropped:
    indexes: list[str]
    constraints: list[tuple[str, str, str]]

    def __len__(self) -> int:
        return len(self.indexes) + len(self.constraints)


def _drop_secondary(cursor: CursorWrapper, tables: Sequence[str]) -> _Dropped:
    """Drop the indexes no constraint owns, and the foreign keys, of ``tables``; their
    definitions, to make them again. On a partitioned table, the parent's (which carry
    the partitions' with them)."""
    cursor.execute(
        "SELECT i.relname, pg_get_indexdef(i.oid) FROM pg_index x "
        "JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid "
        "WHERE t.relname = ANY(%s) AND t.relnamespace = current_schema()::regnamespace "
        "AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid) "
        "AND NOT EXISTS (SELECT 1 FROM pg_inherits h WHERE h.inhrelid = x.indexrelid)",
        [list(tables)],
    )
    indexes = cursor.fetchall()
    cursor.execute(
        "SELECT t.relname, c.conname, pg_get_constraintdef(c.oid) FROM pg_constraint c "
        "JOIN pg_class t ON t.oid = c.conrelid WHERE t.relname = ANY(%s) "
        "AND t.relnamespace = current_schema()::regnamespace "
        "AND c.contype = 'f' AND c.conparentid = 0",
        [list(tables)],
    )
    constraints = cursor.fetchall()
    for table, name, _ in constraints:
        cursor.execute(f'ALTER TABLE "{table}" DROP CONSTRAINT "{name}"')
    for name, _ in indexes:
        cursor.execute(f'DROP INDEX "{name}"')
    # pg_get_indexdef says ON ONLY for a partitioned parent; made again, the index must
    # reach the partitions too.
    return _Dropped(
        indexes=[definition.replace(" ON ONLY ", " ON ") for _, definition in indexes],
        constraints=constraints,
    )


def _restore(cursor: CursorWrapper, dropped: _Dropped) -> None:
    cursor.execute("SET LOCAL maintenance_work_mem = '1GB'")
    for definition in dropped.indexes:
        cursor.execute(definition)
    for table, name, definition in dropped.constraints:
        cursor.execute(f'ALTER TABLE "{table}" ADD CONSTRAINT "{name}" {definition}')


def _seal_newest() -> None:
    """A real seal on the newest row of each chained table (see the module's docstring)."""
    for chain in audit_chain.chains():
        row = chain.rows().order_by(f"-{chain.row_id}").values(*chain.columns).first()
        if row is None:
            continue
        digest = audit_chain.digest_of(chain, row)
        with connection.cursor() as cursor:
            cursor.execute(
                'INSERT INTO ledger_auditseal ("table", row_id, seq, digest, hash, sealed_at) '
                "VALUES (%s, %s, 1, %s, %s, now())",
                [
                    chain.table,
                    row[chain.row_id],
                    digest,
                    audit_chain.hash_of(chain, "", row, digest),
                ],
            )


def _counts(cursor: CursorWrapper) -> dict[str, int]:
    counted: dict[str, type[models.Model]] = {
        "subjects": Subject,
        "memories": Memory,
        "memory history": history_model(Memory),
        "sources": Source,
        "recalls": Recall,
        "recall items": RecallItem,
        "conflicts": Conflict,
        "runs": Run,
    }
    counts = {}
    for label, model in counted.items():
        cursor.execute(f"SELECT count(*) FROM {model._meta.db_table}")
        counts[label] = int(cursor.fetchone()[0])
    cursor.execute(
        "SELECT count(*) FROM ledger_memory WHERE status IN ('active', 'pending') "
        "AND expires_at <= now()"
    )
    counts["due for expiry"] = int(cursor.fetchone()[0])
    return counts


def _store_info(cursor: CursorWrapper, info: Info) -> None:
    cursor.execute(f"CREATE TABLE IF NOT EXISTS {INFO_TABLE} (name text PRIMARY KEY, value jsonb)")
    cursor.execute(
        f"INSERT INTO {INFO_TABLE} (name, value) VALUES ('info', %s) "
        "ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
        [json.dumps(info.__dict__)],
    )


def _vacuum(tables: Sequence[str]) -> None:
    # Outside the transaction: VACUUM cannot run in one. It also sets the visibility map, so
    # index-only scans work as they do on a production database that autovacuum keeps.
    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(f'VACUUM (ANALYZE) "{table}"')
