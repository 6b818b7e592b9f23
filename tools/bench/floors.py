"""Floors: the least the database must do for a path, done raw through psycopg.

The SQL a request ran is captured in-process (Django's client-side binding means each
statement's text already carries its parameters, exactly as the server received it) and
replayed on a connection of its own, in one transaction. A replay that writes is rolled
back rather than committed: its rows would collide with the original request's (a recall
item names the recall's id), so such a floor leaves out one commit.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg
from django.db import models

from ledger.models import Memory, Source
from tools.bench.builder import columns_of, history_model

_READS = ("SELECT", "SAVEPOINT", "RELEASE", "ROLLBACK TO", "SET", "SHOW")


@dataclass(frozen=True)
class Replay:
    statements: tuple[str, ...]

    @property
    def writes(self) -> bool:
        return any(not s.lstrip().upper().startswith(_READS) for s in self.statements)

    def run(self, conn: psycopg.Connection[Any]) -> float:
        """Seconds to run every statement and end the transaction."""
        started = time.perf_counter()
        with conn.transaction(force_rollback=self.writes), conn.cursor() as cursor:
            for statement in self.statements:
                cursor.execute(statement.encode())
                if cursor.description is not None:
                    cursor.fetchall()
        return time.perf_counter() - started


def ranking_statement(statements: tuple[str, ...]) -> Replay | None:
    """Recall's candidates SELECT (servable memories with their vectors) alone, if the
    request ran one."""
    for statement in statements:
        if statement.lstrip().upper().startswith("SELECT") and "ledger_memoryvector" in statement:
            return Replay((statement,))
    return None


def _history_insert(model: type[models.Model], where: str) -> str:
    """INSERT … SELECT of a '+' history row from the live row(s) ``where`` picks."""
    history = history_model(model)
    live = set(columns_of(model))
    columns = [c for c in columns_of(history) if c in live]
    names = ", ".join(f'"{c}"' for c in columns)
    return (
        f'INSERT INTO "{history._meta.db_table}" ({names}, history_date, history_type, '
        "history_actor, history_role, history_subject_id, history_change_reason) "
        f"SELECT {names}, now(), '+', %(actor)s, 'agent', subject_id, %(reason)s "
        f'FROM "{model._meta.db_table}" WHERE {where}'
    )


@dataclass(frozen=True)
class WriteInserts:
    """What a write cannot do without: the memory, its source and the history row, committed."""

    subject_id: int
    agent_id: int

    def run(self, conn: psycopg.Connection[Any]) -> float:
        memory = uuid.uuid4()
        now = datetime.now(UTC)
        statement = f"Bench floor write {memory.hex}."
        params = {
            "id": memory,
            "subject": self.subject_id,
            "agent": self.agent_id,
            "statement": statement,
            "normalized": statement.lower(),
            "now": now,
            "actor": "agent:bench-agent",
            "reason": "Accepted: stated preference.",
        }
        started = time.perf_counter()
        with conn.transaction(), conn.cursor() as cursor:
            cursor.execute(
                f'INSERT INTO "{Memory._meta.db_table}" (id, subject_id, kind, key, statement, '
                "normalized, basis, status, stated_by, written_at, expires_at, review_at, "
                "withheld, policy_version, agent_id, version) VALUES (%(id)s, %(subject)s, "
                "'preference', '', %(statement)s, %(normalized)s, 'stated', 'active', '', "
                "%(now)s, %(now)s + interval '365 days', %(now)s + interval '180 days', "
                "false, 1, %(agent)s, 1)",
                params,
            )
            cursor.execute(
                f'INSERT INTO "{Source._meta.db_table}" (kind, ref, turn, excerpt, received_at, '
                "memory_id) VALUES ('user_message', 'msg_floor_' || %(id)s::text, 1, "
                "%(normalized)s, %(now)s, %(id)s)",
                params,
            )
            cursor.execute(_history_insert(Memory, "id = %(id)s"), params)
        return time.perf_counter() - started


@dataclass(frozen=True)
class SweepFloor:
    """One UPDATE … RETURNING feeding one history INSERT … SELECT, a batch at a time: the
    set-based least an expiry sweep with history must do. Rolled back, like the sweep."""

    batch: int

    def statement(self) -> str:
        history = history_model(Memory)
        live = set(columns_of(Memory))
        columns = [c for c in columns_of(history) if c in live]
        names = ", ".join(f'"{c}"' for c in columns)
        table = Memory._meta.db_table
        return (
            f"WITH due AS (SELECT id FROM \"{table}\" WHERE status IN ('active', 'pending') "
            "AND expires_at <= %(now)s ORDER BY expires_at, id LIMIT %(batch)s "
            "FOR NO KEY UPDATE SKIP LOCKED), "
            f"done AS (UPDATE \"{table}\" m SET status = 'expired', status_changed_at = %(now)s, "
            "version = m.version + 1 FROM due WHERE m.id = due.id RETURNING m.*) "
            f'INSERT INTO "{history._meta.db_table}" ({names}, history_date, history_type, '
            "history_actor, history_role, history_subject_id, history_change_reason) "
            f"SELECT {names}, %(now)s, '~', 'system:expiry', 'system', subject_id, "
            "'Expired: its expiry has passed.' FROM done"
        )

    def run(self, conn: psycopg.Connection[Any], *, batches: int) -> tuple[int, float]:
        """Rows expired and the seconds it took, in one transaction rolled back."""
        rows = 0
        sql = self.statement().encode()
        started = time.perf_counter()
        with conn.transaction(force_rollback=True), conn.cursor() as cursor:
            for _ in range(batches):
                cursor.execute(sql, {"now": datetime.now(UTC), "batch": self.batch})
                rows += cursor.rowcount
                if cursor.rowcount < self.batch:
                    break
        return rows, time.perf_counter() - started
