"""Whether this process can serve now (``/readyz``): the database reachable and migrated,
Redis and the Celery broker reachable, the embedding backend answering when one is set.

Each check is bounded, so a stopped service turns the probe into a quick "no" rather than a
hung worker: Redis half a second, the broker the second its settings allow a write's queuing
(``CELERY_BROKER_CONNECTION_TIMEOUT``), the embedding endpoint its recall timeout
(``MEMORYADMIN_EMBEDDINGS_TIMEOUT_MS``), the database a second for a pooled connection
(a request would wait the pool's 30; a host that does not answer at all still holds a new
connection until ``connect_timeout`` in ``DATABASE_URL``). What a check says is a few fixed
words, never an address: a URL may hold a password.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import psycopg
import redis
from celery import current_app
from django.conf import settings
from django.db import DatabaseError, connection
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder
from kombu.exceptions import KombuError
from psycopg_pool import PoolTimeout

from ledger.embeddings import EmbeddingUnavailable, embedder

REDIS_TIMEOUT_SECONDS = 0.5
DATABASE_TIMEOUT_SECONDS = 1.0
NOT_CONFIGURED = "not configured"


@dataclass(frozen=True)
class Check:
    ready: bool
    says: str


OK = Check(True, "ok")


def readiness() -> dict[str, Check]:
    """Every check by name, in the order an operator would look into them."""
    database = _database()
    return {
        "database": database,
        # Unread without a database: the database's own check already says why.
        "migrations": _migrations() if database.ready else Check(False, "unknown"),
        "redis": _redis(),
        "broker": _broker(),
        "embeddings": _embeddings(),
    }


def _database() -> Check:
    return OK if database_answers() else Check(False, "unreachable")


def database_answers() -> bool:
    """Whether the database answers a ``SELECT 1`` now. With psycopg's pool, a connection
    not handed over within ``DATABASE_TIMEOUT_SECONDS`` is a no: a probe or a scrape must
    not hold a web worker for the pool's own wait while the database is down."""
    pool = getattr(connection, "pool", None)
    try:
        if pool is not None and connection.connection is None:
            pool.open()
            with pool.connection(timeout=DATABASE_TIMEOUT_SECONDS) as pooled:
                pooled.execute("SELECT 1")
        else:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
    except (DatabaseError, psycopg.Error, PoolTimeout):
        return False
    return True


@functools.cache
def _on_disk() -> dict[tuple[str, str], tuple[tuple[str, str], ...]]:
    """Each migration the code holds → the ones it replaces (a squash). The files do not
    change under a running process: read once."""
    graph = MigrationLoader(None, ignore_no_migrations=True).graph
    return {key: tuple(graph.nodes[key].replaces) for key in graph.nodes}


def _migrations() -> Check:
    try:
        applied = set(MigrationRecorder(connection).applied_migrations())
    except DatabaseError:
        return Check(False, "unknown")
    missing = [
        key
        for key, replaces in _on_disk().items()
        if key not in applied and not (replaces and set(replaces) <= applied)
    ]
    return Check(False, f"{len(missing)} unapplied") if missing else OK


def _redis() -> Check:
    if not settings.REDIS_URL:
        return Check(True, NOT_CONFIGURED)
    client = redis.Redis.from_url(
        settings.REDIS_URL,
        socket_connect_timeout=REDIS_TIMEOUT_SECONDS,
        socket_timeout=REDIS_TIMEOUT_SECONDS,
    )
    try:
        client.ping()
    except redis.TimeoutError:
        return Check(False, "timed out")
    except redis.AuthenticationError:
        return Check(False, "refused the password")
    except redis.RedisError:
        return Check(False, "unreachable")
    finally:
        client.close()
    return OK


def _broker() -> Check:
    try:
        with current_app.connection_for_write() as broker:
            broker.ensure_connection(max_retries=0)
    except (KombuError, OSError):
        return Check(False, "unreachable")
    return OK


def _embeddings() -> Check:
    if settings.MEMORYADMIN_EMBEDDINGS == "off":
        return Check(True, NOT_CONFIGURED)
    try:
        backend = embedder()
        # A model in this process answers once loaded (the first probe loads it); only an
        # endpoint elsewhere can stop answering, so only it is asked for a vector.
        if backend is not None and settings.MEMORYADMIN_EMBEDDINGS == "endpoint":
            backend.embed(["ready"])
    except EmbeddingUnavailable as error:
        return Check(False, str(error))
    return OK
