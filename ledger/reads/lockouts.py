"""Who is locked out of signing in now, read from django-axes' records, in the words the
People page says it: "Locked out of sign-in until 17:42 UTC after 5 failed sign-ins".

Axes counts a username at an address, and an address, each on its own
(``AXES_LOCKOUT_PARAMETERS``, ``ledger.signin.SignInCounts``): its records are per username,
address and browser, and a username is locked out at an address while the failures of its
records there that have not expired reach ``AXES_FAILURE_LIMIT``; an address, whatever
usernames it tried, while they reach ``MEMORYADMIN_SIGNIN_ADDRESS_FAILURES``.
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


def _locked(attempts: QuerySet[Any], by: list[str], limit: int) -> QuerySet[Any]:
    """``attempts`` summed per ``by`` (username and address, or address), those that lock."""
    totals: QuerySet[Any] = (
        attempts.order_by()
        .values(*by)
        .annotate(failures=Sum("failures_since_start"), until=Max("expiration__expires_at"))
    )
    return totals.filter(failures__gte=limit)


def of_usernames(usernames: Iterable[str]) -> dict[str, Lockout]:
    """The lockouts of these usernames, at whichever addresses, by username (one query):
    the failures of every address where it is locked, until the last of them ends."""
    attempts = _in_force().filter(username__in=list(usernames))
    found: dict[str, Lockout] = {}
    for row in _locked(attempts, ["username", "ip_address"], settings.AXES_FAILURE_LIMIT):
        name, before = row["username"], found.get(row["username"])
        failures = row["failures"] + (before.failures if before else 0)
        until = max(row["until"], before.until) if before else row["until"]
        found[name] = Lockout(name, "", failures, until)
    return found


def of_addresses(addresses: Iterable[str] | None = None) -> list[Lockout]:
    """The addresses locked out now (of ``addresses``, when given), the latest to end first."""
    attempts = _in_force().exclude(ip_address=None)
    if addresses is not None:
        attempts = attempts.filter(ip_address__in=list(addresses))
    limit = settings.MEMORYADMIN_SIGNIN_ADDRESS_FAILURES
    rows = _locked(attempts, ["ip_address"], limit).order_by("-until", "ip_address")
    return [
        Lockout("", row["ip_address"], row["failures"], row["until"])
        for row in rows[:ADDRESSES_SHOWN]
    ]
