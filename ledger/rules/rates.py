"""How an API rate limit is written ("600/min") and read. No Django here: the app checks
every limit with this at startup (``ledger.apps``), and the throttle reads it per request."""

from __future__ import annotations

from dataclasses import dataclass

PERIODS = {
    "s": 1,
    "sec": 1,
    "second": 1,
    "min": 60,
    "minute": 60,
    "h": 3600,
    "hour": 3600,
    "d": 86400,
    "day": 86400,
}

SWITCHED_OFF = {"", "0", "off", "none", "no", "false", "unlimited"}


@dataclass(frozen=True)
class Rate:
    requests: int
    seconds: int
    period: str

    def __str__(self) -> str:
        return f"{self.requests} per {self.period}"


def parse_rate(text: str) -> Rate:
    """``"600/min"`` → 600 requests a minute. Zero, "off" or no limit at all is refused: the
    limits hold everywhere, and a deployment that needs more raises them."""
    count, slash, period = text.strip().lower().partition("/")
    if count in SWITCHED_OFF or (count.isdigit() and int(count) < 1):
        raise ValueError(
            f"{text!r} would switch the limit off, and the API's limits cannot be: "
            "raise the number instead, e.g. '100000/min'."
        )
    if not slash or not count.isdigit() or period not in PERIODS:
        raise ValueError(
            f"{text!r} is not a rate: write requests per period, e.g. '600/min' "
            f"(periods: {', '.join(PERIODS)})."
        )
    name = {1: "second", 60: "minute", 3600: "hour", 86400: "day"}[PERIODS[period]]
    return Rate(requests=int(count), seconds=PERIODS[period], period=name)
