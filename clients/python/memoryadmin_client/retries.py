"""When to send a call again, and after how long: the one rule both clients follow.

Only what may succeed unchanged is retried: a 5xx, a 429 and a call that got no answer.
Every other 4xx is the request's own fault and would fail the same way again. A retry
resends the very same request, Idempotency-Key included, so the server writes it once."""

from __future__ import annotations

import random
from dataclasses import dataclass

import httpx

from memoryadmin_client.errors import retry_after

# No answer at all. An unsupported scheme or a bad proxy setting is a mistake, not bad luck.
NO_ANSWER = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


@dataclass(frozen=True)
class Backoff:
    retries: int = 3
    base: float = 0.5
    # The longest wait between two attempts; a Retry-After beyond it is not waited for.
    longest: float = 30.0

    def wait(self, attempt: int, answer: httpx.Response | None) -> float | None:
        """Seconds to wait before attempt ``attempt + 1`` (from 0), or None to stop.

        ``answer`` is what attempt ``attempt`` got back, None when it got nothing."""
        if attempt >= self.retries:
            return None
        if answer is not None and not retryable(answer.status_code):
            return None
        asked = retry_after(answer) if answer is not None else None
        if asked is not None:
            return asked if asked <= self.longest else None
        # Exponential with jitter, so many clients failing together do not retry together.
        ceiling = min(self.longest, self.base * 2**attempt)
        return random.uniform(ceiling / 2, ceiling)


def retryable(status: int) -> bool:
    return status == 429 or status >= 500
