"""Per-agent limits on reads and writes, and per-address limits on keys that do not work,
counted where every web process sees the same number: Redis (``REDIS_URL``) when
configured, else a row per window in the database.

Fixed windows: a counter per agent, kind and window, incremented in one atomic step, so
200 requests racing across processes against a limit of 50 let exactly 50 through.
A request that costs more than one (an import of N memories) is ``charge``d the rest in
one step that adds all of it or, over the limit, nothing.
"""

from __future__ import annotations

import math
import threading
import time
from typing import TYPE_CHECKING

import redis
from django.conf import settings
from django.db import connection
from rest_framework import exceptions, permissions
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from ledger.models import Agent, RateCounter
from ledger.rules.rates import Rate, parse_rate

if TYPE_CHECKING:
    from rest_framework.views import APIView

LIMITS = {"reads": "MEMORYADMIN_RATE_READS", "writes": "MEMORYADMIN_RATE_WRITES"}


class RateLimited(exceptions.Throttled):
    default_code = "rate_limited"

    def __init__(self, *, kind: str, rate: Rate, wait: int) -> None:
        # Throttled's own message would repeat the wait; this one says it once, with the limit.
        exceptions.APIException.__init__(
            self,
            f"Too many {kind}: this agent may make {rate} ({LIMITS[kind]}). "
            f"Try again in {wait} seconds.",
            self.default_code,
        )
        self.wait = wait


class AgentRateThrottle(BaseThrottle):
    def allow_request(self, request: Request, view: APIView) -> bool:
        agent = request.auth
        if not isinstance(agent, Agent):
            return True  # The schema and its docs: public, and no agent to count.
        # What a request does, not the scope it needs: reading a staff resource is a read.
        kind = "reads" if request.method in permissions.SAFE_METHODS else "writes"
        rate = parse_rate(getattr(settings, LIMITS[kind]))
        now = time.time()
        window_start, window_end = _window(rate, now)
        count = count_request(_bucket(agent, kind), window_start, window_end)
        if count <= rate.requests:
            return True
        raise RateLimited(kind=kind, rate=rate, wait=max(1, math.ceil(window_end - now)))


def charge(agent: Agent, kind: str, n: int) -> None:
    """Count ``n`` more of ``kind`` against the agent's limit, in one atomic step and only
    if the window's total stays within it; else ``RateLimited``, having counted nothing, so
    a refused import leaves the agent its next write.

    Call it outside any transaction: the database's counter row stays locked until commit,
    and every other request of the agent's waits on it."""
    if n <= 0:
        return
    rate = parse_rate(getattr(settings, LIMITS[kind]))
    now = time.time()
    window_start, window_end = _window(rate, now)
    if n > rate.requests or not _add_within(
        _bucket(agent, kind), n, rate.requests, window_start, window_end
    ):
        raise RateLimited(kind=kind, rate=rate, wait=max(1, math.ceil(window_end - now)))


FAILED_KEYS = "MEMORYADMIN_RATE_FAILED_KEYS"


class FailedKeysLimited(exceptions.Throttled):
    default_code = "rate_limited"

    def __init__(self, *, rate: Rate, wait: int) -> None:
        exceptions.APIException.__init__(
            self,
            f"Too many requests with an API key that does not work: this address may make "
            f"{rate} ({FAILED_KEYS}). Nothing was checked or changed. Try again in {wait} "
            "seconds.",
            self.default_code,
        )
        self.wait = wait


def refuse_failing_address(address: str) -> None:
    """``FailedKeysLimited`` when ``address`` has used up its failed keys this window: its
    next key is not even looked at, so guessing keys stops at the limit (a working key
    from the same address waits too; an agent's own limits count the rest)."""
    rate = parse_rate(settings.MEMORYADMIN_RATE_FAILED_KEYS)
    now = time.time()
    window_start, window_end = _window(rate, now)
    if _count_so_far(_failures_bucket(address), window_start) >= rate.requests:
        raise FailedKeysLimited(rate=rate, wait=max(1, math.ceil(window_end - now)))


def count_failed_key(address: str) -> None:
    """Count one refused key from ``address``; ``FailedKeysLimited`` if it is one too many,
    for the caller to answer instead of its 401."""
    rate = parse_rate(settings.MEMORYADMIN_RATE_FAILED_KEYS)
    now = time.time()
    window_start, window_end = _window(rate, now)
    if count_request(_failures_bucket(address), window_start, window_end) > rate.requests:
        raise FailedKeysLimited(rate=rate, wait=max(1, math.ceil(window_end - now)))


def _failures_bucket(address: str) -> str:
    return f"address:{address}:failed-keys"


def _count_so_far(bucket: str, window_start: int) -> int:
    """The bucket's count in its window, counting nothing."""
    if settings.REDIS_URL:
        return int(_redis(settings.REDIS_URL).get(_redis_key(bucket, window_start)) or 0)
    count = (
        RateCounter.objects.filter(bucket=bucket, window_start=window_start)
        .values_list("count", flat=True)
        .first()
    )
    return count or 0


def _bucket(agent: Agent, kind: str) -> str:
    """The one name of an agent's counter: the throttle and ``charge`` must share it."""
    return f"agent:{agent.pk}:{kind}"


def _window(rate: Rate, now: float) -> tuple[int, int]:
    start = int(now // rate.seconds) * rate.seconds
    return start, start + rate.seconds


def _redis_key(bucket: str, window_start: int) -> str:
    return f"memoryadmin:rate:{bucket}:{window_start}"


def count_request(bucket: str, window_start: int, window_end: int) -> int:
    """This request's number in its bucket's window, counting it."""
    if settings.REDIS_URL:
        return _count_in_redis(_redis_key(bucket, window_start), window_end)
    return _count_in_database(bucket, window_start, window_end)


_clients: dict[str, redis.Redis] = {}
_clients_lock = threading.Lock()


def _redis(url: str) -> redis.Redis:
    """The process's one client for ``url``, shared by its threads (the pool is thread-safe).

    Built under a lock, not by ``functools.cache``: that lets the threads of a fresh worker
    each build a client and keeps only the last, and a ``from_url`` client, when dropped,
    closes its pool, sockets in use by another thread's pipeline included."""
    client = _clients.get(url)
    if client is None:
        with _clients_lock:
            client = _clients.get(url)
            if client is None:
                client = _clients[url] = redis.Redis.from_url(url)
    return client


def _count_in_redis(key: str, window_end: int) -> int:
    pipe = _redis(settings.REDIS_URL).pipeline()
    pipe.incr(key)
    pipe.expireat(key, window_end + 1)
    count, _ = pipe.execute()
    return int(count)


def _count_in_database(bucket: str, window_start: int, window_end: int) -> int:
    """``INSERT … ON CONFLICT DO UPDATE … RETURNING``: one statement, atomic on PostgreSQL
    and SQLite alike. A bucket's first request of a window clears every window now over,
    so the table holds about one row per busy agent and kind."""
    table = connection.ops.quote_name(RateCounter._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (bucket, window_start, expires_at, count) "
            "VALUES (%s, %s, %s, 1) ON CONFLICT (bucket, window_start) "
            f"DO UPDATE SET count = {table}.count + 1 RETURNING count",
            [bucket, window_start, window_end],
        )
        row = cursor.fetchone()
        assert row is not None
        count = int(row[0])
        if count == 1:
            cursor.execute(f"DELETE FROM {table} WHERE expires_at <= %s", [window_start])
    return count


# Read, compare and add in one script: Redis runs it whole, with no other command between.
_ADD_WITHIN = """
local total = tonumber(redis.call('GET', KEYS[1]) or '0') + tonumber(ARGV[1])
if total > tonumber(ARGV[2]) then
  return 0
end
redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('EXPIREAT', KEYS[1], ARGV[3])
return 1
"""


def _add_within(bucket: str, n: int, limit: int, window_start: int, window_end: int) -> bool:
    """Add ``n`` to the bucket's window if its total stays at most ``limit``; whether it did."""
    if settings.REDIS_URL:
        add = _redis(settings.REDIS_URL).register_script(_ADD_WITHIN)
        return bool(add(keys=[_redis_key(bucket, window_start)], args=[n, limit, window_end + 1]))
    # One statement: the row is created, or added to only while the sum is within the limit
    # (a conflict whose WHERE fails updates nothing and returns no row). ``n <= limit`` was
    # checked first, so a new row is within it too.
    table = connection.ops.quote_name(RateCounter._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (bucket, window_start, expires_at, count) "
            "VALUES (%s, %s, %s, %s) ON CONFLICT (bucket, window_start) "
            f"DO UPDATE SET count = {table}.count + EXCLUDED.count "
            f"WHERE {table}.count + EXCLUDED.count <= %s RETURNING count",
            [bucket, window_start, window_end, n, limit],
        )
        return cursor.fetchone() is not None
