"""The SQL that fills the benchmark's tables: one INSERT … SELECT (or a temporary plan
table) a step, the rows' text composed in SQL from ``vocabulary``'s word lists. ``data.build``
runs it inside its transaction, with the secondary indexes dropped."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.contrib.auth.hashers import make_password
from django.db import models
from django.db.backends.utils import CursorWrapper

from ledger.access import Role
from ledger.keys import known_key, new_key
from ledger.models import (
    Agent,
    AgentKey,
    Conflict,
    LedgerEntry,
    Memory,
    Recall,
    RecallItem,
    Run,
    Source,
    Subject,
    WriteDecision,
)
from tools.bench.vocabulary import (
    AGENTS,
    BENCH_AGENT,
    BENCH_KEY,
    BENCH_PASSWORD,
    DUE_SHARE,
    HISTORY_RECALLS,
    HISTORY_VERSIONS,
    ITEMS_PER_RECALL,
    KEYS,
    RECALL_DAYS,
    RECALLS_PER_MEMORY,
    SUPPORT,
    WORDS,
    subject_sizes,
)


def timed_step(say: Callable[[str], None], label: str, work: Callable[[], object]) -> None:
    started = time.monotonic()
    work()
    say(f"  {label} ({time.monotonic() - started:.1f} s)")


def _q(column: str) -> str:
    return f'"{column}"'


def _pick(name: str) -> str:
    """A random word of the list ``name``, in SQL (the lists are one row of ``bp_words``)."""
    return f"w.{name}[1 + floor(random() * cardinality(w.{name}))::int]"


def columns_of(model: type[models.Model]) -> list[str]:
    return [f.column for f in model._meta.concrete_fields if f.column]


def history_model(model: type[models.Model]) -> type[models.Model]:
    history: type[models.Model] = model.history.model  # type: ignore[attr-defined]
    return history


class Builder:
    """The steps, in order; each one INSERT … SELECT (or a temporary plan table)."""

    def __init__(
        self,
        cursor: CursorWrapper,
        *,
        scale: int,
        now: datetime,
        rng: random.Random,
        seed: int,
        say: Callable[[str], None],
    ) -> None:
        self.cursor = cursor
        self.scale = scale
        self.now = now
        self.rng = rng
        self.seed = seed
        self.say = say
        self.sizes = subject_sizes(scale, rng)

    # --- what it fills ---------------------------------------------------------------------

    @staticmethod
    def tables() -> list[str]:
        models_filled: list[type[models.Model]] = [
            Subject,
            Agent,
            AgentKey,
            Run,
            Memory,
            Source,
            WriteDecision,
            Conflict,
            LedgerEntry,
            Recall,
            RecallItem,
        ]
        tables = [m._meta.db_table for m in models_filled]
        tables += [history_model(m)._meta.db_table for m in models_filled if hasattr(m, "history")]
        tables.append(Conflict.memories.through._meta.db_table)
        return [*tables, "auth_user", "auth_user_groups"]

    def fill(self) -> None:
        self._sql("SET LOCAL work_mem = '256MB'")
        # Compiling each big statement costs more than it saves here.
        self._sql("SET LOCAL jit = off")
        self._sql("SET LOCAL synchronous_commit = off")
        self._sql("SELECT setseed(%(seed)s)", seed=(self.seed % 1000) / 1000)
        for label, step in (
            ("plan", self._plan),
            ("people", self._people),
            ("subjects", self._subjects),
            ("agents and keys", self._agents),
            ("runs", self._runs),
            ("memories", self._memories),
            ("sources and write decisions", self._sources),
            ("memory history", self._memory_history),
            ("conflicts", self._conflicts),
            ("ledger commitments", self._ledger),
            ("recalls and recall items", self._recalls),
            ("history of the rest", self._other_history),
        ):
            timed_step(self.say, label, step)

    def big_subject_ref(self) -> str:
        return str(self._one("SELECT ref FROM bp_subject WHERE i = 1"))

    def history_memory_id(self) -> str:
        return str(self._one("SELECT id FROM bp_mem WHERE target"))

    # --- helpers ---------------------------------------------------------------------------

    def _sql(self, sql: str, **params: Any) -> None:
        self.cursor.execute(sql, params or None)

    def _one(self, sql: str, **params: Any) -> Any:
        self.cursor.execute(sql, params or None)
        return self.cursor.fetchone()[0]

    def _history(
        self,
        model: type[models.Model],
        *,
        source: str,
        alias: str,
        date: str,
        who: tuple[str, str],
        subject: str,
        reason: str,
        kind: str = "'+'",
        user: str = "NULL",
        overrides: dict[str, str] | None = None,
        order: str = "",
    ) -> None:
        """One history row per row of ``source``: the tracked columns as they are (or as
        ``overrides`` says), with who (the actor and their role), when and why."""
        history = history_model(model)
        live = set(columns_of(model))
        columns = [c for c in columns_of(history) if c in live]
        values = [(overrides or {}).get(c, f"{alias}.{_q(c)}") for c in columns]
        bookkeeping = {
            "history_date": date,
            "history_type": kind,
            "history_actor": who[0],
            "history_role": who[1],
            "history_subject_id": subject,
            "history_change_reason": reason,
            "history_user_id": user,
        }
        names = ", ".join(_q(c) for c in [*columns, *bookkeeping])
        self._sql(
            f"INSERT INTO {history._meta.db_table} ({names}) "
            f"SELECT {', '.join([*values, *bookkeeping.values()])} FROM {source} {order}",
            now=self.now,
        )

    # --- the steps -------------------------------------------------------------------------

    def _plan(self) -> None:
        self._sql(
            "CREATE TEMP TABLE bp_words ON COMMIT DROP AS SELECT "
            + ", ".join(f"%({name})s::text[] AS {name}" for name in WORDS),
            **{name: list(words) for name, words in WORDS.items()},
        )
        self._sql("ANALYZE bp_words")
        self._sql(
            "CREATE TEMP TABLE bp_subject ON COMMIT DROP AS "
            "SELECT i::int AS i, size::int AS size, greatest(1, size / 5) AS runs, "
            "'acct_' || substr(md5('bench-subject-' || i), 1, 16) AS ref, "
            "NULL::bigint AS subject_id, NULL::int AS owner_id "
            "FROM unnest(%(sizes)s::int[]) WITH ORDINALITY AS p(size, i)",
            sizes=self.sizes,
        )

    def _people(self) -> None:
        password = make_password(BENCH_PASSWORD)
        # One in ten subjects is a person who signs in to see their own memories.
        self._sql(
            "INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, "
            "email, is_staff, is_active, date_joined) "
            "SELECT %(password)s, false, 'person_' || i, "
            "w.first[1 + mod(i, cardinality(w.first))], "
            "w.last[1 + mod(i / 7, cardinality(w.last))], "
            "'person_' || i || '@example.com', false, true, %(now)s - interval '700 days' "
            "FROM bp_subject, bp_words w WHERE mod(i, 10) = 3",
            password=password,
            now=self.now,
        )
        self._sql(
            "UPDATE bp_subject p SET owner_id = u.id FROM auth_user u "
            "WHERE u.username = 'person_' || p.i"
        )
        staff = [(f"support_{n}", Role.SUPPORT) for n in (1, 2, 3)]
        staff += [(f"admin_{n}", Role.ADMIN) for n in (1, 2)]
        for username, role in staff:
            self._sql(
                "INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, "
                "email, is_staff, is_active, date_joined) VALUES (%(password)s, false, "
                "%(username)s, '', '', %(username)s || '@example.com', %(is_staff)s, true, "
                "%(now)s - interval '800 days')",
                password=password,
                username=username,
                is_staff=role == Role.ADMIN,
                now=self.now,
            )
            self._sql(
                "INSERT INTO auth_user_groups (user_id, group_id) SELECT u.id, g.id "
                "FROM auth_user u, auth_group g WHERE u.username = %(username)s "
                "AND g.name = %(role)s",
                username=username,
                role=str(role),
            )

    def _subjects(self) -> None:
        # One in two hundred has paused memory; most have a name.
        self._sql(
            "INSERT INTO ledger_subject (ref, display_name, owner_id, memory_paused, created_at) "
            "SELECT ref, CASE WHEN mod(i, 10) < 7 THEN w.first[1 + mod(i, cardinality(w.first))] "
            "|| ' ' || w.last[1 + mod(i / 7, cardinality(w.last))] ELSE '' END, owner_id, "
            "mod(i, 200) = 11, %(now)s - interval '720 days' + mod(i, 60) * interval '1 day' "
            "FROM bp_subject, bp_words w ORDER BY i",
            now=self.now,
        )
        self._sql(
            "UPDATE bp_subject p SET subject_id = s.id FROM ledger_subject s WHERE s.ref = p.ref"
        )
        self._sql("CREATE INDEX ON bp_subject (subject_id)")
        self._sql("ANALYZE bp_subject")

    def _agents(self) -> None:
        keys = [new_key() for _ in AGENTS] + [known_key(BENCH_KEY)]
        self._sql(
            "INSERT INTO ledger_agent (name, scopes, is_active, created_at, "
            "writes_paused_because, quarantined_because, stated_untrusted_because) "
            "SELECT name, '[\"read\", \"write\"]'::jsonb, true, %(now)s - interval '800 days', "
            "'', '', '' FROM unnest(%(names)s::text[]) AS name",
            names=[*AGENTS, BENCH_AGENT],
            now=self.now,
        )
        self._sql(
            "INSERT INTO ledger_agentkey (agent_id, prefix, hash, created_at) "
            "SELECT a.id, k.prefix, k.hash, %(now)s - interval '800 days' FROM "
            "unnest(%(names)s::text[], %(prefixes)s::text[], %(hashes)s::text[]) "
            "AS k(name, prefix, hash) JOIN ledger_agent a ON a.name = k.name",
            names=[*AGENTS, BENCH_AGENT],
            prefixes=[k.prefix for k in keys],
            hashes=[k.hash for k in keys],
            now=self.now,
        )

    def _runs(self) -> None:
        # A run reads and writes about one subject; about one run for five memories.
        self._sql(
            "CREATE TEMP TABLE bp_run ON COMMIT DROP AS "
            "SELECT p.subject_id, j, "
            "'run_' || substr(md5('bench-run-' || p.i || '-' || j), 1, 16) AS ref, "
            "a.ids[1 + mod(p.i + j, cardinality(a.ids))] AS agent_id, NULL::bigint AS run_id "
            "FROM bp_subject p CROSS JOIN generate_series(0, p.runs - 1) j, "
            "(SELECT array_agg(id ORDER BY id) AS ids FROM ledger_agent WHERE name <> %(bench)s) a",
            bench=BENCH_AGENT,
        )
        self._sql(
            "INSERT INTO ledger_run (ref, agent_id, subject_id, started_at) "
            "SELECT ref, agent_id, subject_id, %(now)s - random() * interval '700 days' "
            "FROM bp_run ORDER BY random()",
            now=self.now,
        )
        self._sql("UPDATE bp_run b SET run_id = r.id FROM ledger_run r WHERE r.ref = b.ref")
        self._sql("CREATE INDEX ON bp_run (subject_id, j)")
        self._sql("ANALYZE bp_run")

    def _memories(self) -> None:
        heavy = min(1.0, 10 / max(1, self.scale // 1000))
        target_versions = HISTORY_VERSIONS if self.scale >= 10_000 else 40
        # Random draws, then the status band (20 % due), basis, expiry and writing time, each
        # from the one before; the subject of i = 1 is the big one, its first memory the one
        # with the long history; one subject in a hundred has two memories in one slot.
        self._sql(
            """
            CREATE TEMP TABLE bp_draft ON COMMIT DROP AS
            WITH r AS (
                SELECT p.subject_id, p.i, p.size, p.runs, g AS idx,
                       random() AS u_status, random() AS u_kind, random() AS u_basis,
                       random() AS u_time, random() AS u_exp, random() AS u_ver,
                       random() AS u_key, random() AS u_heavy,
                       (mod(p.i, 100) = 7 AND g < 2 AND p.size >= 2) AS forced,
                       (p.i = 1 AND g = 0) AS target
                FROM bp_subject p CROSS JOIN generate_series(0, p.size - 1) g
            ), s AS (
                SELECT r.*,
                    CASE WHEN forced OR target OR u_kind < 0.45 THEN 'preference'
                         WHEN u_kind < 0.75 THEN 'account_fact' ELSE 'episode' END AS kind,
                    CASE WHEN forced OR target THEN 'live'
                         WHEN u_status < %(due)s THEN 'due'
                         WHEN u_status < 0.64 THEN 'live'
                         WHEN u_status < 0.68 THEN 'pending'
                         WHEN u_status < 0.80 THEN 'superseded'
                         WHEN u_status < 0.86 THEN 'retracted'
                         ELSE 'expired' END AS band
                FROM r
            ), t AS (
                SELECT s.*,
                    CASE WHEN band = 'pending' OR (band = 'due' AND u_basis < 0.05) THEN 'pending'
                         WHEN band IN ('due', 'live') THEN 'active' ELSE band END AS status,
                    CASE WHEN band = 'pending' OR (band = 'due' AND u_basis < 0.05)
                           OR (NOT forced AND NOT target AND u_basis < 0.25) THEN 'inferred'
                         ELSE 'stated' END AS basis
                FROM s
            ), e AS (
                SELECT t.*,
                    CASE WHEN band = 'due'
                           THEN %(now)s - interval '1 minute' - u_exp * interval '30 days'
                         WHEN band = 'expired'
                           THEN %(now)s - interval '1 day' - u_exp * interval '300 days'
                         WHEN basis = 'inferred'
                           THEN %(now)s + interval '1 hour' + u_exp * interval '29 days'
                         WHEN kind = 'account_fact' AND status = 'active' AND u_exp < 0.1
                           THEN NULL
                         ELSE %(now)s + interval '1 day' + u_exp * interval '364 days' END
                      AS expires_at
                FROM t
            )
            SELECT e.*,
                least(%(now)s - interval '1 hour', coalesce(expires_at, %(now)s) -
                      CASE WHEN basis = 'inferred'
                           THEN interval '1 hour' + u_time * interval '28 days'
                           ELSE interval '1 day' + u_time * interval '600 days' END)
                  AS written_at,
                greatest(
                    CASE WHEN status IN ('active', 'pending') THEN 1 ELSE 2 END,
                    CASE WHEN target THEN %(target_versions)s
                         WHEN u_heavy < %(heavy)s THEN 100 + floor(u_ver * 300)::int
                         ELSE least(80, 1 + floor(-ln(1 - u_ver) * 9.5)::int) END) AS versions
            FROM e
            """,
            due=DUE_SHARE,
            now=self.now,
            heavy=heavy / 1000,
            target_versions=target_versions,
        )
        statement = (
            f"CASE d.kind WHEN 'preference' THEN {_pick('pref_verb')} || ' ' || "
            f"{_pick('pref_object')} || ' ' || {_pick('qualifier')} "
            f"WHEN 'account_fact' THEN {_pick('fact_subject')} || ' ' || {_pick('fact_verb')} "
            f"|| ' ' || {_pick('fact_object')} || ' ' || {_pick('fact_tail')} "
            f"ELSE {_pick('episode_verb')} || ' ' || {_pick('episode_object')} || ' ' || "
            f"{_pick('episode_tail')} END || CASE WHEN random() < 0.3 THEN ' (ref ' || "
            "(1000 + floor(random() * 90000))::int || ')' ELSE '' END || '.'"
        )
        # A slot (key) for most preferences and facts: distinct among a subject's first 24
        # memories, so live memories share one only where a conflict is meant.
        key = (
            "CASE WHEN d.kind <> 'episode' AND (d.forced OR d.target OR d.u_key < 0.7) "
            "AND (d.idx < %(keys)s OR d.status NOT IN ('active', 'pending')) "
            "THEN (%(key_names)s::text[])[1 + mod(CASE WHEN d.forced THEN 0 ELSE d.idx END, "
            "%(keys)s)] ELSE '' END"
        )
        self._sql(
            f"""
            CREATE TEMP TABLE bp_mem ON COMMIT DROP AS
            SELECT gen_random_uuid() AS id, d.subject_id, d.i, d.size, d.idx, d.kind, d.status,
                   d.basis, d.target, d.versions, d.written_at, d.expires_at,
                   {key} AS key, {statement} AS statement,
                   CASE d.status WHEN 'expired' THEN d.expires_at
                        WHEN 'superseded' THEN d.written_at + (%(now)s - d.written_at) * d.u_time
                        WHEN 'retracted' THEN d.written_at + (%(now)s - d.written_at) * d.u_time
                        END AS status_changed_at,
                   CASE WHEN d.basis = 'stated' AND d.u_time < 0.05 THEN 'confirmation'
                        ELSE '' END AS stated_by,
                   d.status = 'active' AND d.u_exp > 0.995 AS withheld,
                   b.run_id, b.agent_id
            FROM bp_draft d, bp_words w, bp_run b
            WHERE b.subject_id = d.subject_id AND b.j = mod(d.idx, d.runs)
            """,
            now=self.now,
            keys=len(KEYS),
            key_names=list(KEYS),
        )
        self._sql("CREATE INDEX ON bp_mem (subject_id, idx)")
        self._sql("CREATE INDEX ON bp_mem (id)")
        self._sql("ANALYZE bp_mem")
        self._sql(
            "INSERT INTO ledger_memory (id, subject_id, kind, key, statement, normalized, basis, "
            "status, stated_by, written_at, confirmed_at, expires_at, review_at, "
            "status_changed_at, withheld, policy_version, agent_id, run_id, version) "
            "SELECT id, subject_id, kind, key, statement, lower(statement), basis, status, "
            "stated_by, written_at, CASE WHEN stated_by <> '' THEN written_at + interval '1 day' "
            "END, expires_at, written_at + CASE kind WHEN 'preference' THEN interval '180 days' "
            "WHEN 'account_fact' THEN interval '90 days' ELSE interval '60 days' END, "
            "status_changed_at, withheld, 1, agent_id, run_id, versions "
            "FROM bp_mem ORDER BY written_at"
        )

    def _sources(self) -> None:
        # Every memory has its source; an inferred one that is live has a second, from
        # another run (the independent sources the gate asked for).
        self._sql(
            "INSERT INTO ledger_source (kind, ref, run_id, turn, excerpt, received_at, memory_id) "
            "SELECT CASE WHEN m.basis = 'stated' THEN 'user_message' ELSE 'tool_result' END, "
            "CASE WHEN m.basis = 'stated' THEN 'msg_' ELSE 'tool_' END "
            "|| substr(md5(m.id::text), 1, 12), m.run_id, 1 + mod(m.idx, 40), "
            "CASE WHEN m.basis = 'stated' THEN 'the person wrote: ' || lower(m.statement) "
            "ELSE '' END, m.written_at, m.id FROM bp_mem m ORDER BY m.written_at"
        )
        self._sql(
            "INSERT INTO ledger_source (kind, ref, run_id, turn, excerpt, received_at, memory_id) "
            "SELECT 'tool_result', 'tool_' || substr(md5(m.id::text || '-2'), 1, 12), "
            "b.run_id, 2 + mod(m.idx, 40), '', m.written_at + interval '1 hour', m.id "
            "FROM bp_mem m JOIN bp_subject p ON p.subject_id = m.subject_id "
            "JOIN bp_run b ON b.subject_id = m.subject_id AND b.j = mod(m.idx + 1, p.runs) "
            "WHERE m.basis = 'inferred' AND m.status = 'active'"
        )
        self._sql(
            "INSERT INTO ledger_writedecision (agent_id, subject_id, memory_id, source_id, "
            "outcome, code, reason, decided_at) "
            "SELECT m.agent_id, m.subject_id, m.id, s.id, "
            "CASE WHEN m.status = 'pending' THEN 'pending' ELSE 'accepted' END, '', "
            "CASE WHEN m.status = 'pending' THEN 'Pending: an inferred memory needs another "
            "agent''s source.' ELSE 'Accepted: ' || m.basis || ' ' || "
            "replace(m.kind, '_', ' ') || '.' END, m.written_at "
            "FROM bp_mem m JOIN ledger_source s ON s.memory_id = m.id "
            "AND s.received_at = m.written_at ORDER BY m.written_at"
        )

    def _memory_history(self) -> None:
        support_id = self._one("SELECT id FROM auth_user WHERE username = %(u)s", u=SUPPORT)
        at = (
            "m.written_at + (coalesce(m.status_changed_at, %(now)s - interval '1 minute') - "
            "m.written_at) * ((g - 1)::float8 / greatest(b.versions - 1, 1))"
        )
        last = "g = b.versions AND g > 1"
        by_support = f"(({last} AND m.status IN ('retracted', 'superseded')) OR mod(g, 7) = 0)"
        expiry = f"({last} AND m.status = 'expired')"
        self._history(
            Memory,
            source=(
                "ledger_memory m JOIN bp_mem b ON b.id = m.id "
                "JOIN ledger_agent a ON a.id = m.agent_id "
                "CROSS JOIN LATERAL generate_series(1, b.versions) g"
            ),
            alias="m",
            date=at,
            kind="CASE WHEN g = 1 THEN '+' ELSE '~' END",
            who=(
                f"CASE WHEN {expiry} THEN 'system:expiry' "
                f"WHEN {by_support} THEN 'user:{SUPPORT}' ELSE 'agent:' || a.name END",
                f"CASE WHEN {expiry} THEN 'system' WHEN {by_support} THEN 'support' "
                "ELSE 'agent' END",
            ),
            user=f"CASE WHEN {by_support} AND NOT {expiry} THEN {int(support_id)} END",
            subject="m.subject_id",
            reason=(
                f"CASE WHEN g = 1 AND m.basis = 'inferred' THEN 'Pending: an inferred memory "
                "needs another agent''s source.' WHEN g = 1 THEN 'Accepted: stated ' || "
                f"replace(m.kind, '_', ' ') || '.' WHEN {expiry} THEN 'Expired: its expiry "
                f"has passed.' WHEN {last} AND m.status = 'retracted' THEN 'Deleted: the "
                f"person asked support to.' WHEN {last} AND m.status = 'superseded' THEN "
                "'Replaced by a correction.' WHEN mod(g, 7) = 0 THEN 'Renewed by support.' "
                "ELSE 'Seen again: the same statement from another turn.' END"
            ),
            overrides={
                "status": (
                    "CASE WHEN g = b.versions THEN m.status WHEN m.status = 'pending' OR "
                    "(m.basis = 'inferred' AND g = 1) THEN 'pending' ELSE 'active' END"
                ),
                "version": "g",
                "status_changed_at": f"CASE WHEN g > 1 THEN {at} END",
            },
            order=f"ORDER BY {at}",
        )

    def _conflicts(self) -> None:
        self._sql(
            """
            WITH c AS (
                INSERT INTO ledger_conflict (subject_id, key, possible, status, opened_at,
                                             resolution)
                SELECT subject_id, key, false, 'open', max(written_at), '' FROM bp_mem
                WHERE key <> '' AND status IN ('active', 'pending')
                GROUP BY subject_id, key HAVING count(*) > 1
                RETURNING id, subject_id, key
            )
            INSERT INTO ledger_conflict_memories (conflict_id, memory_id)
            SELECT c.id, m.id FROM c JOIN bp_mem m ON m.subject_id = c.subject_id
            AND m.key = c.key AND m.status IN ('active', 'pending')
            """
        )

    def _ledger(self) -> None:
        # One subject in five has a commitment in force, with its own source.
        self._sql(
            "INSERT INTO ledger_source (kind, ref, run_id, turn, excerpt, received_at) "
            "SELECT 'user_message', 'msg_' || substr(md5('bench-ledger-' || p.i), 1, 12), "
            "b.run_id, 1, 'please do not email us about ' || w.goal_topic[1 + mod(p.i, "
            "cardinality(w.goal_topic))], %(now)s - interval '200 days' "
            "FROM bp_subject p JOIN bp_run b ON b.subject_id = p.subject_id AND b.j = 0, "
            "bp_words w WHERE mod(p.i, 5) = 0",
            now=self.now,
        )
        self._sql(
            "INSERT INTO ledger_ledgerentry (id, subject_id, run_id, agent_id, key, fact, kind, "
            "source_id, status, immutable, expires_at, recorded_at, version) "
            "SELECT gen_random_uuid(), p.subject_id, b.run_id, b.agent_id, '', "
            "'Do not email this customer about ' || w.goal_topic[1 + mod(p.i, "
            "cardinality(w.goal_topic))] || '.', 'commitment', s.id, 'active', false, "
            "%(now)s + interval '300 days', %(now)s - interval '200 days', 1 "
            "FROM bp_subject p JOIN bp_run b ON b.subject_id = p.subject_id AND b.j = 0 "
            "JOIN ledger_source s ON s.ref = 'msg_' || substr(md5('bench-ledger-' || p.i), 1, 12) "
            "AND s.memory_id IS NULL, bp_words w WHERE mod(p.i, 5) = 0",
            now=self.now,
        )

    def _recalls(self) -> None:
        goal = f"{_pick('goal_verb')} || ' ' || {_pick('goal_topic')}"
        block = (
            "'Memories about this subject (at most 5), for: ' || q.goal || E'\\n- [stated "
            f"preference] ' || {_pick('pref_verb')} || ' ' || {_pick('pref_object')} || "
            f"E'.\\n- [stated account fact] ' || {_pick('fact_subject')} || ' ' || "
            f"{_pick('fact_verb')} || ' ' || {_pick('fact_object')} || E'.\\n- [inferred, "
            f"unconfirmed] ' || {_pick('episode_verb')} || ' ' || {_pick('episode_object')} || '.'"
        )
        # Two and a half reads a memory, by the runs about its subject; the long-history
        # memory's subject is read many more times, each read serving that memory first.
        target_recalls = min(HISTORY_RECALLS, self.scale * 3)
        self._sql(
            f"""
            CREATE TEMP TABLE bp_reads ON COMMIT DROP AS
            SELECT b.agent_id, b.run_id, 1 + mod(g, 40) AS turn, p.subject_id, false AS target,
                   %(now)s - random() * interval '{RECALL_DAYS} days' AS recalled_at
            FROM bp_subject p
            CROSS JOIN generate_series(1, greatest(1, round(p.size * %(per)s)::int)) g
            JOIN bp_run b ON b.subject_id = p.subject_id AND b.j = mod(g, p.runs)
            UNION ALL
            SELECT b.agent_id, b.run_id, 1 + mod(g, 40), p.subject_id, true,
                   %(now)s - random() * interval '{RECALL_DAYS} days'
            FROM bp_subject p CROSS JOIN generate_series(1, %(count)s) g
            JOIN bp_run b ON b.subject_id = p.subject_id AND b.j = mod(g, p.runs)
            WHERE p.i = 1
            """,
            now=self.now,
            per=RECALLS_PER_MEMORY,
            count=target_recalls,
        )
        self._sql("ANALYZE bp_reads")
        self._sql(
            "INSERT INTO ledger_recall (agent_id, run_id, turn, subject_id, goal, k, block, "
            f"recalled_at) SELECT q.agent_id, q.run_id, q.turn, q.subject_id, q.goal, 5, {block}, "
            f"q.recalled_at FROM (SELECT r.*, {goal} AS goal FROM bp_reads r, bp_words w) q, "
            "bp_words w ORDER BY q.recalled_at"
        )
        # The recall log holds only these rows (the database was empty): read their ids back,
        # with whether each is one of the long-history memory's reads (same subject and time).
        self._sql(
            "CREATE TEMP TABLE bp_recall ON COMMIT DROP AS "
            "SELECT r.id, r.subject_id, r.recalled_at, p.size, coalesce(t.target, false) AS target "
            "FROM ledger_recall r JOIN bp_subject p ON p.subject_id = r.subject_id "
            "LEFT JOIN (SELECT DISTINCT subject_id, recalled_at, target FROM bp_reads "
            "WHERE target) t ON t.subject_id = r.subject_id AND t.recalled_at = r.recalled_at"
        )
        self._sql("ANALYZE bp_recall")
        # Items pick distinct memories of the recall's subject, from an offset its id gives;
        # the long-history memory (the big subject's first) comes first in its reads.
        self._sql(
            "INSERT INTO ledger_recallitem (recall_id, memory_id, position, rank, subject_id, "
            "recalled_at) SELECT r.id, m.id, j + 1, random() / (j + 1), r.subject_id, "
            "r.recalled_at FROM bp_recall r CROSS JOIN generate_series(0, %(items)s - 1) j "
            "JOIN bp_mem m ON m.subject_id = r.subject_id AND m.idx = CASE "
            "WHEN NOT r.target THEN mod(r.id + j, r.size) WHEN j = 0 THEN 0 "
            "ELSE 1 + mod(r.id + j, r.size - 1) END "
            "WHERE j < r.size ORDER BY r.recalled_at, j",
            items=ITEMS_PER_RECALL,
        )

    def _other_history(self) -> None:
        system = ("'system:bench_data'", "'system'")
        self._history(
            Subject,
            source="ledger_subject s",
            alias="s",
            date="s.created_at",
            subject="s.id",
            reason="'Subject created.'",
            who=system,
        )
        for model, date in ((Agent, "t.created_at"), (AgentKey, "t.created_at")):
            self._history(
                model,
                source=f"{model._meta.db_table} t",
                alias="t",
                date=date,
                subject="NULL",
                reason="'Created from the command line.'",
                who=system,
            )
        by_agent = ("'agent:' || a.name", "'agent'")
        self._history(
            Run,
            source="ledger_run t JOIN ledger_agent a ON a.id = t.agent_id",
            alias="t",
            date="t.started_at",
            subject="t.subject_id",
            reason="'Run started.'",
            order="ORDER BY t.started_at",
            who=by_agent,
        )
        self._history(
            Source,
            source=(
                "ledger_source t JOIN ledger_run r ON r.id = t.run_id "
                "JOIN ledger_agent a ON a.id = r.agent_id "
                "LEFT JOIN ledger_memory m ON m.id = t.memory_id "
                "LEFT JOIN ledger_ledgerentry l ON l.source_id = t.id"
            ),
            alias="t",
            date="t.received_at",
            subject="coalesce(m.subject_id, l.subject_id)",
            reason="'Source recorded.'",
            order="ORDER BY t.received_at",
            who=by_agent,
        )
        self._history(
            LedgerEntry,
            source="ledger_ledgerentry t JOIN ledger_agent a ON a.id = t.agent_id",
            alias="t",
            date="t.recorded_at",
            subject="t.subject_id",
            reason="'Recorded: a commitment.'",
            who=by_agent,
        )
        self._history(
            Conflict,
            source="ledger_conflict t",
            alias="t",
            date="t.opened_at",
            subject="t.subject_id",
            reason="'Opened: two live memories in one slot disagree.'",
            who=system,
        )
