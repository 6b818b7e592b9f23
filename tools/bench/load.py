"""The load generator: a bounded async HTTP client (aiohttp) on loopback, and the medians.

One client at a time measures latency (a request's own time, nothing queued before it);
a burst with a bounded number of requests in flight measures throughput.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import aiohttp

from tools.bench.paths import Ask


@dataclass
class Samples:
    seconds: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def add(self, other: Samples) -> None:
        self.seconds += other.seconds
        self.failures += other.failures

    def p50(self) -> float | None:
        return statistics.median(self.seconds) if self.seconds else None

    def p99(self) -> float | None:
        return quantile(self.seconds, 0.99)


def quantile(values: Sequence[float], q: float) -> float | None:
    """The nearest-rank quantile: with few samples, the largest rather than a guess past it."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


class Client:
    """One aiohttp session for the whole run; each request says who it is with headers."""

    def __init__(self, base: str, *, limit: int) -> None:
        self.base = base
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=limit),
            timeout=aiohttp.ClientTimeout(total=120),
        )

    async def close(self) -> None:
        await self.session.close()

    async def one(self, ask: Ask, headers: dict[str, str], status: int) -> tuple[float, str]:
        """Seconds for one request read to its end; and what went wrong, or ""."""
        started = time.perf_counter()
        async with self.session.request(
            ask.method, self.base + ask.url, json=ask.body, headers=headers, allow_redirects=False
        ) as response:
            body = await response.read()
        elapsed = time.perf_counter() - started
        if response.status != status:
            return elapsed, f"{ask.method} {ask.url}: {response.status} {body[:200]!r}"
        return elapsed, ""

    async def sequence(self, asks: Sequence[Ask], headers: dict[str, str], status: int) -> Samples:
        samples = Samples()
        for ask in asks:
            seconds, failure = await self.one(ask, headers, status)
            samples.seconds.append(seconds)
            if failure:
                samples.failures.append(failure)
        return samples

    async def burst(
        self, asks: Sequence[Ask], headers: dict[str, str], status: int, *, concurrency: int
    ) -> tuple[float, Samples]:
        """Wall seconds for all of ``asks`` with at most ``concurrency`` in flight."""
        gate = asyncio.Semaphore(concurrency)
        samples = Samples()

        async def go(ask: Ask) -> None:
            async with gate:
                seconds, failure = await self.one(ask, headers, status)
            samples.seconds.append(seconds)
            if failure:
                samples.failures.append(failure)

        started = time.perf_counter()
        await asyncio.gather(*(go(ask) for ask in asks))
        return time.perf_counter() - started, samples
