"""Per-agent limits on reads and writes, counted where every web process sees the same
number: Redis (``REDIS_URL``) when configured, else a row per window in the database.

Fixed windows: a counter per agent, kind and window, incremented in one atomic step, so
200 requests racing across processes against a limit of 50 let exactly 50 through.
"""

from __future__ import annotations

import math
import time
from functools import cache
from typing import TYPE_CHECKING

import redis
from django.conf import settings
from django.db import connection
from rest_framework import exceptions, permissions
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from ledger.models import Agent, RateCounter
from ledger.rates import Rate, parse_rate

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
        window_start = int(now // rate.seconds) * rate.seconds
        window_end = window_start + rate.seconds
        count = count_request(f"agent:{agent.pk}:{kind}", window_start, window_end)
        if count <= rate.requests:
            return True
        raise RateLimited(kind=kind, rate=rate, wait=max(1, math.ceil(window_end - now)))


def count_request(bucket: str, window_start: int, window_end: int) -> int:
    """This request's number in its bucket's window, counting it."""
    if settings.REDIS_URL:
        return _count_in_redis(f"memoryadmin:rate:{bucket}:{window_start}", window_end)
    return _count_in_database(bucket, window_start, window_end)


@cache
def _redis(url: str) -> redis.Redis:
    return redis.Redis.from_url(url)


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
