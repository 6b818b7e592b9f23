"""Per-agent limits on reads and writes, and per-address limits on keys that do not work,
counted by the ``limits`` library in a moving window: in Redis (``REDIS_URL``), where every
web process sees the same count, else in the process's memory (one process: ``make run``;
``manage.py check --deploy`` warns a deployment without Redis).

Each hit is one atomic step in the store (a Lua script in Redis), so 200 requests racing
across processes against a limit of 50 let exactly 50 through. A request that costs more
than one (an import of N memories) is ``charge``d the rest in one hit that adds all of it
or, over the limit, nothing.

The limits protect the service; they are not its record. When Redis does not answer, a
request is let through (fail open), the store error is counted in
``memoryadmin_rate_limit_store_errors`` and a warning logged, at most once a minute.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from typing import TYPE_CHECKING

import redis
from django.conf import settings
from limits import RateLimitItem, parse
from limits.errors import StorageError
from limits.storage import MemoryStorage, RedisStorage
from limits.strategies import MovingWindowRateLimiter
from redis.backoff import NoBackoff
from redis.retry import Retry
from rest_framework import exceptions, permissions
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from ledger.metrics import RATE_LIMIT_REFUSALS, RATE_LIMIT_STORE_ERRORS
from ledger.models import Agent
from ledger.rules.rates import Rate, parse_rate

if TYPE_CHECKING:
    from rest_framework.views import APIView

log = logging.getLogger(__name__)

LIMITS = {"reads": "MEMORYADMIN_RATE_READS", "writes": "MEMORYADMIN_RATE_WRITES"}
FAILED_KEYS = "MEMORYADMIN_RATE_FAILED_KEYS"

# A Redis that is down or unreachable must cost a request a fraction of a second, not the
# client's default of several retries: one retry, at once, mends a pooled connection that
# a restarted Redis closed.
CONNECT_TIMEOUT = 0.5
READ_TIMEOUT = 1.0
RETRY = Retry(NoBackoff(), 1)
# A dead Redis fails every request: one warning a minute per process says so.
WARN_EVERY = 60.0


class RateLimited(exceptions.Throttled):
    default_code = "rate_limited"

    def __init__(self, *, kind: str, rate: Rate, wait: int) -> None:
        # Throttled's own message would repeat the wait; this one says it once, with the limit.
        exceptions.APIException.__init__(
            self,
            f"Too many {kind}: this agent may make {rate} ({LIMITS[kind]}). "
            f"Try again in {_seconds(wait)}.",
            self.default_code,
        )
        self.wait = wait


class FailedKeysLimited(exceptions.Throttled):
    default_code = "rate_limited"

    def __init__(self, *, rate: Rate, wait: int) -> None:
        exceptions.APIException.__init__(
            self,
            f"Too many requests with an API key that does not work: this address may make "
            f"{rate} ({FAILED_KEYS}). Nothing was checked or changed. Try again in "
            f"{_seconds(wait)}.",
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
        charge(agent, kind, 1)
        return True


def charge(agent: Agent, kind: str, n: int) -> None:
    """Count ``n`` more of ``kind`` against the agent's limit, in one atomic step and only
    if the window's total stays within it; else ``RateLimited``, having counted nothing, so
    a refused import leaves the agent its next write."""
    if n <= 0:
        return
    rate = parse_rate(getattr(settings, LIMITS[kind]))
    wait = _refused(rate, n, "agent", str(agent.pk), kind)
    if wait is not None:
        RATE_LIMIT_REFUSALS.labels(kind=kind).inc()
        raise RateLimited(kind=kind, rate=rate, wait=wait)


def refuse_failing_address(address: str) -> None:
    """``FailedKeysLimited`` when ``address`` has used up its failed keys this window: its
    next key is not even looked at, so guessing keys stops at the limit (a working key
    from the same address waits too; an agent's own limits count the rest)."""
    rate = parse_rate(settings.MEMORYADMIN_RATE_FAILED_KEYS)
    item = _item(rate)
    try:
        limiter = limiter_for(settings.REDIS_URL)
        if limiter.test(item, "address", address, "failed-keys"):
            return
        wait = _wait(limiter, item, "address", address, "failed-keys")
    except StorageError as error:
        _store_failed(error)
        return
    RATE_LIMIT_REFUSALS.labels(kind="failed_keys").inc()
    raise FailedKeysLimited(rate=rate, wait=wait)


def count_failed_key(address: str) -> None:
    """Count one refused key from ``address``; ``FailedKeysLimited`` if it is one too many,
    for the caller to answer instead of its 401."""
    rate = parse_rate(settings.MEMORYADMIN_RATE_FAILED_KEYS)
    wait = _refused(rate, 1, "address", address, "failed-keys")
    if wait is not None:
        RATE_LIMIT_REFUSALS.labels(kind="failed_keys").inc()
        raise FailedKeysLimited(rate=rate, wait=wait)


def _refused(rate: Rate, cost: int, *identifiers: str) -> int | None:
    """Hit the limit with ``cost``: None when it was counted (or the store did not answer),
    else the seconds until the window has room again."""
    item = _item(rate)
    try:
        limiter = limiter_for(settings.REDIS_URL)
        if limiter.hit(item, *identifiers, cost=cost):
            return None
        return _wait(limiter, item, *identifiers)
    except StorageError as error:
        _store_failed(error)
        return None


def _seconds(n: int) -> str:
    return "1 second" if n == 1 else f"{n} seconds"


def _item(rate: Rate) -> RateLimitItem:
    return parse(f"{rate.requests}/{rate.period}")


def _wait(limiter: MovingWindowRateLimiter, item: RateLimitItem, *identifiers: str) -> int:
    """Whole seconds until the oldest request in the window leaves it."""
    reset = limiter.get_window_stats(item, *identifiers).reset_time
    return max(1, math.ceil(reset - time.time()))


_limiters: dict[str, MovingWindowRateLimiter] = {}
_limiters_lock = threading.Lock()


def limiter_for(url: str) -> MovingWindowRateLimiter:
    """The process's one limiter for ``url`` (memory when empty), shared by its threads.

    Built under a lock so that the threads of a fresh worker share one connection pool.
    redis-py's pool is thread-safe and, seeing another process id after a fork, starts
    afresh instead of using its parent's sockets."""
    limiter = _limiters.get(url)
    if limiter is None:
        with _limiters_lock:
            limiter = _limiters.get(url)
            if limiter is None:
                limiter = _limiters[url] = MovingWindowRateLimiter(_store(url))
    return limiter


def _store(url: str) -> MemoryStorage | RedisStorage:
    if not url:
        return MemoryStorage(wrap_exceptions=True)
    pool = redis.ConnectionPool.from_url(
        url, socket_connect_timeout=CONNECT_TIMEOUT, socket_timeout=READ_TIMEOUT, retry=RETRY
    )
    return RedisStorage(
        url, connection_pool=pool, key_prefix="memoryadmin:rate", wrap_exceptions=True
    )


_last_warning = -math.inf
_warning_lock = threading.Lock()


def _store_failed(error: StorageError) -> None:
    """Count the failure; log it, at most once a minute, by its kind only: Redis's message
    may name its address, and the request's agent or address is not for the log."""
    global _last_warning
    RATE_LIMIT_STORE_ERRORS.inc()
    now = time.monotonic()
    with _warning_lock:
        if now - _last_warning < WARN_EVERY:
            return
        _last_warning = now
    log.warning(
        "Rate limits not checked: their store (REDIS_URL) did not answer (%s). Requests are "
        "let through until it does.",
        type(error.storage_error).__name__,
    )
