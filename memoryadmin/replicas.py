"""Reads served by PostgreSQL read replicas (docs/scale.md, "Primary and replicas").

With ``DATABASE_REPLICA_URLS`` set, settings add one database alias a replica
(``replica_1``, ``replica_2``…), this router and this middleware. The rules:

- every write goes to the primary (``default``), and so does every read after it in the same
  request, and every read inside a transaction on the primary: a request sees its own writes;
- a GET or HEAD request reads from one healthy replica until it writes; a browser that wrote
  in the last few seconds (a cookie) reads from the primary, so that the page it is sent to
  after a change shows the change;
- everything outside a request (Celery tasks, management commands, the shell) reads from
  the primary;
- who may do what is always read from the primary, whatever the request: sessions, people,
  sign-in limits, agents, their keys and the policy. A revoked key or a disabled person is
  refused at once, not once the replica has caught up;
- a replica further behind than ``MEMORYADMIN_REPLICA_MAX_LAG_SECONDS``, or unreachable, is
  skipped, and checked again after ``MEMORYADMIN_REPLICA_CHECK_SECONDS``. A replica that
  fails during a request that has not written is marked down and the request is answered
  again from the primary.

Migrations run on the primary only; the replicas receive them by replication.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import psycopg
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, OperationalError, connections
from django.db.models import Model
from django.http import HttpRequest, HttpResponse

logger = logging.getLogger(__name__)

REPLICA_PREFIX = "replica_"
# Set on the answer to a request that wrote: the browser's next requests, for as long as a
# replica may lag, read from the primary.
PRIMARY_COOKIE = "memoryadmin-primary"
READ_METHODS = frozenset({"GET", "HEAD"})

# Read from the primary in every request: access decisions must not lag behind a revocation.
PRIMARY_APPS = frozenset({"sessions", "auth", "axes"})
PRIMARY_MODELS = frozenset(
    {
        "ledger.agent",
        "ledger.agentkey",
        "ledger.policy",
        "ledger.idempotencyrecord",
        "ledger.signinidentity",
        "ledger.lockoutlift",
    }
)

# Caught up when it has replayed all it received and is still receiving (a replica cut off
# from its primary has replayed everything it got, and is behind all the same); otherwise
# the time since the last transaction it replayed, which is at least how far behind it is.
# pg_stat_wal_receiver shows its row (pid) to every role, its status only to privileged ones.
LAG_SQL = """
SELECT pg_is_in_recovery(),
       CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn()
                 AND EXISTS (SELECT FROM pg_stat_wal_receiver
                             WHERE coalesce(status, 'streaming') = 'streaming')
            THEN 0
            ELSE coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 'Infinity')
       END::float8
"""
# libpq's own: how long a check waits for a replica that does not answer.
CHECK_CONNECT_TIMEOUT_SECONDS = 1
# Keys of a Django PostgreSQL alias's OPTIONS that are Django's, not libpq's.
_DJANGO_OPTIONS = frozenset({"pool", "isolation_level", "assume_role", "server_side_binding"})


def replica_aliases() -> list[str]:
    return [alias for alias in settings.DATABASES if alias.startswith(REPLICA_PREFIX)]


@dataclass
class Health:
    """One replica as this process last saw it."""

    usable: bool = False
    checked_at: float = float("-inf")
    why: str = "not checked yet"


class Replicas:
    """Which replicas this process may read from now, each checked at most once a period.

    One thread checks at a time; the others go on with what was last seen (a replica never
    checked counts as unusable), so a slow check never holds more than one request."""

    def __init__(self) -> None:
        self.health: dict[str, Health] = {alias: Health() for alias in replica_aliases()}
        self.checking = threading.Lock()

    def usable(self) -> list[str]:
        period = settings.MEMORYADMIN_REPLICA_CHECK_SECONDS
        now = time.monotonic()
        due = [alias for alias, seen in self.health.items() if now - seen.checked_at >= period]
        if due and self.checking.acquire(blocking=False):
            try:
                for alias in due:
                    self.record(alias, *check(alias))
            finally:
                self.checking.release()
        return [alias for alias, seen in self.health.items() if seen.usable]

    def record(self, alias: str, usable: bool, why: str) -> None:
        seen = self.health[alias]
        if usable != seen.usable or seen.checked_at == float("-inf"):
            if usable:
                logger.info("Reading from %s: %s.", alias, why)
            else:
                logger.warning("Skipping %s, reads go to the primary: %s.", alias, why)
        seen.usable, seen.why, seen.checked_at = usable, why, time.monotonic()


def check(alias: str) -> tuple[bool, str]:
    """Whether ``alias`` answers, is a replica, and is no further behind than allowed."""
    db = settings.DATABASES[alias]
    options = {k: v for k, v in db.get("OPTIONS", {}).items() if k not in _DJANGO_OPTIONS}
    try:
        with psycopg.connect(
            dbname=db["NAME"],
            user=db["USER"],
            password=db["PASSWORD"],
            host=db["HOST"],
            port=db["PORT"],
            **(options | {"connect_timeout": CHECK_CONNECT_TIMEOUT_SECONDS}),
        ) as probe:
            row = probe.execute(LAG_SQL).fetchone()
    except psycopg.Error as error:
        return False, f"unreachable ({type(error).__name__})"
    assert row is not None
    in_recovery, lag = row
    allowed = settings.MEMORYADMIN_REPLICA_MAX_LAG_SECONDS
    if not in_recovery:
        return False, "not a replica (it is not in recovery)"
    if lag > allowed:
        return False, f"{lag:.1f} s behind the primary, more than the {allowed} s allowed"
    return True, f"{lag:.1f} s behind the primary"


_replicas: Replicas | None = None
_replicas_made = threading.Lock()


def replicas() -> Replicas:
    global _replicas
    with _replicas_made:
        if _replicas is None:
            _replicas = Replicas()
        return _replicas


@dataclass
class RequestReads:
    """The database choices of one request."""

    eligible: bool
    wrote: bool = False
    replica: str | None = None
    chosen: bool = False
    failed: set[str] = field(default_factory=set)

    def replica_to_read(self) -> str | None:
        if not self.chosen:
            usable = [alias for alias in replicas().usable() if alias not in self.failed]
            self.replica = random.choice(usable) if usable else None
            self.chosen = True
        return self.replica


_reads: ContextVar[RequestReads | None] = ContextVar("memoryadmin_replica_reads", default=None)


class ReplicaRouter:
    def db_for_read(self, model: type[Model], **hints: Any) -> str:
        reads = _reads.get()
        if reads is None or not reads.eligible or reads.wrote:
            return DEFAULT_DB_ALIAS
        if model._meta.app_label in PRIMARY_APPS or model._meta.label_lower in PRIMARY_MODELS:
            return DEFAULT_DB_ALIAS
        if connections[DEFAULT_DB_ALIAS].in_atomic_block:
            # What is read inside a transaction on the primary may be written back there.
            reads.wrote = True
            return DEFAULT_DB_ALIAS
        return reads.replica_to_read() or DEFAULT_DB_ALIAS

    def db_for_write(self, model: type[Model], **hints: Any) -> str:
        reads = _reads.get()
        if reads is not None:
            reads.wrote = True
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1: Model, obj2: Model, **hints: Any) -> bool:
        # Every alias holds the same data: a row read from a replica may point at one
        # read from the primary.
        return True

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        return db == DEFAULT_DB_ALIAS


class ReadFromReplicas:
    """Marks which requests may read from a replica, and answers again from the primary a
    request whose replica failed before it wrote anything."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        eligible = request.method in READ_METHODS and PRIMARY_COOKIE not in request.COOKIES
        reads = RequestReads(eligible=eligible)
        token = _reads.set(reads)
        try:
            response = self.get_response(request)
            if reads.failed and not reads.wrote:
                reads.chosen, reads.replica = False, None
                response = self.get_response(request)
        finally:
            _reads.reset(token)
        if reads.wrote:
            response.set_cookie(
                PRIMARY_COOKIE,
                "1",
                max_age=settings.MEMORYADMIN_REPLICA_MAX_LAG_SECONDS
                + settings.MEMORYADMIN_REPLICA_CHECK_SECONDS,
                secure=settings.SESSION_COOKIE_SECURE,
                httponly=True,
                samesite="Lax",
            )
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> None:
        reads = _reads.get()
        if reads is None or reads.replica is None or reads.wrote:
            return
        # The replica's own connection failed, not the primary's.
        if isinstance(exception, OperationalError) and connections[reads.replica].errors_occurred:
            failure = type(exception.__cause__ or exception).__name__
            replicas().record(reads.replica, False, f"failed during a request ({failure})")
            reads.failed.add(reads.replica)
