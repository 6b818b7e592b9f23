"""Limits on signing in, kept by django-axes: a username or an address that keeps failing
is slowed (a short cool-off), then locked out for longer. Each is counted on its own, so
one address guessing many names and many addresses guessing one name are both stopped."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from axes.backends import AxesStandaloneBackend
from axes.models import AccessAttempt, AccessFailureLog
from django.conf import settings
from django.db.models import Max, Q
from django.http import HttpRequest
from django.utils import timezone

# How far back failures count towards the longer lockout.
LOCKOUT_MEMORY = timedelta(days=1)


def cool_off_after(failures: int) -> timedelta:
    """How long a sign-in stays refused after the failure that locked it, given how many
    failures its username or address had in the last day."""
    if failures >= settings.MEMORYADMIN_SIGNIN_LOCKOUT_FAILURES:
        return timedelta(minutes=settings.MEMORYADMIN_SIGNIN_LOCKOUT_MINUTES)
    return timedelta(minutes=settings.MEMORYADMIN_SIGNIN_COOLOFF_MINUTES)


# The username ``authenticate`` was given, as axes records it: the form's cleaned value
# (stripped, NFKC), not what was typed, or spellings of one name would each count apart.
TRIED_USERNAME = "signin_username"


def _tried_by(request: HttpRequest | None) -> Q:
    """The records of the username being tried, or of the address trying it."""
    if request is None:
        return Q(pk__in=[])
    matches = Q(ip_address=getattr(request, "axes_ip_address", None))
    if username := getattr(request, TRIED_USERNAME, None):
        matches |= Q(username=username)
    return matches


def cool_off(request: HttpRequest | None) -> timedelta:
    """``AXES_COOLOFF_TIME``: the cool-off for this request's username and address. Axes
    asks while recording a failure, before it logs it: that failure counts too."""
    since = timezone.now() - LOCKOUT_MEMORY
    failures = AccessFailureLog.objects.filter(_tried_by(request), attempt_time__gte=since)
    return cool_off_after(failures.count() + 1)


def locked_until(request: HttpRequest) -> datetime | None:
    """When the lockout on this request's username or address ends."""
    attempts = AccessAttempt.objects.filter(_tried_by(request))
    ends: datetime | None = attempts.aggregate(end=Max("expiration__expires_at"))["end"]
    return ends


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
