"""Who is locked out of signing in now, read from django-axes' records, in the words the
People page says it: "Locked out of sign-in until 17:42 UTC after 5 failed sign-ins".

Axes counts a username and an address each on its own (``AXES_LOCKOUT_PARAMETERS``): its
records are per username, address and browser, and a username (or an address) is locked
out while the failures of its records that have not expired reach ``AXES_FAILURE_LIMIT``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Max, QuerySet, Sum
from django.utils import timezone
from django.utils.dateformat import format as format_date

# Lockouts last minutes to an hour: the time of day says when one ends.
UNTIL_FORMAT = "H:i T"
ADDRESSES_SHOWN = 100


@dataclass(frozen=True)
class Lockout:
    """A username's lockout (``address`` empty) or an address's (``username`` empty)."""

    username: str
    address: str
    failures: int
    until: datetime

    @property
    def words(self) -> str:
        until = format_date(timezone.localtime(self.until), UNTIL_FORMAT)
        return f"Locked out of sign-in until {until} after {self.failures} failed sign-ins"


def _in_force() -> QuerySet[Any]:
    # Axes ships no types: its rows are ``Any`` to mypy.
    attempts: QuerySet[Any] = AccessAttempt.objects.filter(
        expiration__expires_at__gt=timezone.now()
    )
    return attempts


def _locked(attempts: QuerySet[Any], by: str) -> QuerySet[Any]:
    """``attempts`` summed per username or per address (``by``), those that lock."""
    totals: QuerySet[Any] = (
        attempts.order_by()
        .values(by)
        .annotate(failures=Sum("failures_since_start"), until=Max("expiration__expires_at"))
    )
    return totals.filter(failures__gte=settings.AXES_FAILURE_LIMIT)


def of_usernames(usernames: Iterable[str]) -> dict[str, Lockout]:
    """The lockouts of these usernames, by username (one query)."""
    rows = _locked(_in_force().filter(username__in=list(usernames)), "username")
    return {
        row["username"]: Lockout(row["username"], "", row["failures"], row["until"]) for row in rows
    }


def of_addresses(addresses: Iterable[str] | None = None) -> list[Lockout]:
    """The addresses locked out now (of ``addresses``, when given), the latest to end first."""
    attempts = _in_force().exclude(ip_address=None)
    if addresses is not None:
        attempts = attempts.filter(ip_address__in=list(addresses))
    rows = _locked(attempts, "ip_address").order_by("-until", "ip_address")
    return [
        Lockout("", row["ip_address"], row["failures"], row["until"])
        for row in rows[:ADDRESSES_SHOWN]
    ]
