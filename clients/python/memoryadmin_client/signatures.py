"""Signing and checking memoryadmin's webhook deliveries: one recipe, used on both sides.

memoryadmin signs each delivery's exact body with the endpoint's secret and sends
``Memoryadmin-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>``.
A receiver recomputes the HMAC over the raw body it read (before parsing it), compares in
constant time, and refuses a timestamp outside its tolerance, so that a captured delivery
cannot be replayed later. Standard library only: a receiver needs nothing of Django.
"""

from __future__ import annotations

import hashlib
import hmac
import time

SIGNATURE_HEADER = "Memoryadmin-Signature"
EVENT_ID_HEADER = "Memoryadmin-Event-Id"
EVENT_HEADER = "Memoryadmin-Event"
SCHEME = "v1"
# Five minutes either way: room for a retry's queueing and for clocks that disagree a little.
TOLERANCE_SECONDS = 300


def sign(secret: str, body: bytes, timestamp: int) -> str:
    """The signature header's value for ``body`` sent at ``timestamp`` (unix seconds)."""
    return f"t={timestamp},{SCHEME}={_digest(secret, body, timestamp)}"


def verify_signature(
    secret: str,
    body: bytes,
    header: str,
    tolerance: int = TOLERANCE_SECONDS,
    *,
    now: float | None = None,
) -> bool:
    """Whether ``header`` signs ``body`` with ``secret``, at a time within ``tolerance``
    seconds of ``now`` (the present by default). Any ``v1`` value may match, so a sender
    may list a signature by an old secret and a new one while a rotation settles."""
    timestamp, candidates = _parse(header)
    if timestamp is None or not candidates:
        return False
    moment = time.time() if now is None else now
    if abs(moment - timestamp) > tolerance:
        return False
    expected = _digest(secret, body, timestamp)
    # Every candidate is compared, matched or not: the time taken says nothing of which.
    matches = [hmac.compare_digest(expected, candidate) for candidate in candidates]
    return any(matches)


def _digest(secret: str, body: bytes, timestamp: int) -> str:
    signed = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def _parse(header: str) -> tuple[int | None, list[str]]:
    timestamp: int | None = None
    candidates: list[str] = []
    for part in header.split(","):
        name, _, value = part.strip().partition("=")
        if name == "t" and value.isdigit():
            timestamp = int(value)
        elif name == SCHEME and value:
            candidates.append(value)
    return timestamp, candidates
