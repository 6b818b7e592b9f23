"""Limits on signing in, kept by django-axes. A username that keeps failing from one
address is slowed (a short cool-off), then locked out for longer, at that address only: one
person's typos lock neither the others behind the same address (an office, a phone
network's NAT) nor, from elsewhere, the owner of the name. An address is counted too, with
a limit far higher, so one guesser trying many names is stopped as well."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from axes.backends import AxesStandaloneBackend
from axes.handlers.database import AxesDatabaseHandler
from axes.models import AccessAttempt, AccessFailureLog
from django.conf import settings
from django.db.models import Max, Q, QuerySet, Sum
from django.http import HttpRequest
from django.utils import timezone

# How far back failures count towards the longer lockout.
LOCKOUT_MEMORY = timedelta(days=1)


def cool_off_after(failures: int) -> timedelta:
    """How long a sign-in stays refused after the failure that locked it, given how many
    failures its username had at its address in the last day. An address is refused while
    its failures not yet expired reach its limit: each expires by its own username's rule."""
    if failures >= settings.MEMORYADMIN_SIGNIN_LOCKOUT_FAILURES:
        return timedelta(minutes=settings.MEMORYADMIN_SIGNIN_LOCKOUT_MINUTES)
    return timedelta(minutes=settings.MEMORYADMIN_SIGNIN_COOLOFF_MINUTES)


# The username ``authenticate`` was given, as axes records it: the form's cleaned value
# (stripped, NFKC), not what was typed, or spellings of one name would each count apart.
TRIED_USERNAME = "signin_username"


def _address(request: HttpRequest | None) -> Q:
    """The records of the address trying."""
    if request is None:
        return Q(pk__in=[])
    return Q(ip_address=getattr(request, "axes_ip_address", None))


def _tried_by(request: HttpRequest | None) -> Q:
    """The records of the username being tried, at the address trying it."""
    username = getattr(request, TRIED_USERNAME, None)
    return _address(request) & Q(username=username) if username else Q(pk__in=[])


def cool_off(request: HttpRequest | None) -> timedelta:
    """``AXES_COOLOFF_TIME``: the cool-off for this request's username and address. Axes
    asks while recording a failure, before it logs it: that failure counts too."""
    since = timezone.now() - LOCKOUT_MEMORY
    failures = AccessFailureLog.objects.filter(_tried_by(request), attempt_time__gte=since)
    return cool_off_after(failures.count() + 1)


def _failures(attempts: QuerySet[Any]) -> int:
    return int(attempts.aggregate(n=Sum("failures_since_start"))["n"] or 0)


def locked_until(request: HttpRequest) -> datetime | None:
    """When the lockout on this request's username at its address, or on its address, ends."""
    locked = _tried_by(request)
    if _failures(AccessAttempt.objects.filter(_address(request))) >= (
        settings.MEMORYADMIN_SIGNIN_ADDRESS_FAILURES
    ):
        locked |= _address(request)
    attempts = AccessAttempt.objects.filter(locked)
    ends: datetime | None = attempts.aggregate(end=Max("expiration__expires_at"))["end"]
    return ends


# django-axes ships no type information.
class SignInCounts(AxesDatabaseHandler):  # type: ignore[misc]
    """``AXES_HANDLER``: axes' records, each thing it counts (``AXES_LOCKOUT_PARAMETERS``: a
    username at an address, then the address) against a limit of its own. Axes compares
    one number with one limit (``AXES_FAILURE_LIMIT``, the username's), so an address past
    its own, higher limit is said to have reached that one."""

    def get_failures(self, request: HttpRequest, credentials: dict[str, Any] | None = None) -> int:
        username_here, address = (
            _failures(attempts) for attempts in self.get_user_attempts(request, credentials)
        )
        if address >= settings.MEMORYADMIN_SIGNIN_ADDRESS_FAILURES:
            return max(username_here, settings.AXES_FAILURE_LIMIT)
        return username_here

    def user_login_failed(
        self, sender: Any, credentials: dict[str, Any], request: Any = None, **kwargs: Any
    ) -> None:
        """A sign-in that names no username is the identity provider's (its callback: a
        person cancelled, or the provider could not be reached): the provider limits its own
        guesses, and counting them here would lock the break-glass password out with it."""
        if not credentials.get("username"):
            return
        super().user_login_failed(sender, credentials, request, **kwargs)


def client_ip(request: HttpRequest) -> str | None:
    """``AXES_CLIENT_IP_CALLABLE`` behind a proxy (``BEHIND_PROXY``): the address the proxy
    saw, the last in X-Forwarded-For; anything before it the client may have written."""
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    last = forwarded.rsplit(",", 1)[-1].strip()
    return last or request.META.get("REMOTE_ADDR")


# django-axes ships no type information.
class SignInLimits(AxesStandaloneBackend):  # type: ignore[misc]
    """Axes' backend, for sign-ins through a form. ``authenticate`` called without a
    request (a command, a test's ``Client.login``) comes from no address to limit."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> None:
        if request is None:
            return None
        # Axes asks ``cool_off`` with the request alone, before and after this failure.
        setattr(request, TRIED_USERNAME, username)
        super().authenticate(request, username, password, **kwargs)
        return None
