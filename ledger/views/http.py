"""The request a dashboard view is given: signed in, and through django-htmx's middleware.

Every view sits behind ``login_required``, so ``request.user`` is a person, never an
anonymous one; saying so in the type spares each view a cast.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class SignedInRequest(HttpRequest):
    user: User
    htmx: HtmxDetails
