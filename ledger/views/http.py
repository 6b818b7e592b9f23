"""The request a dashboard view is given, and the guards on support's and admins' pages.

Every view sits behind ``login_required``, so ``request.user`` is a person, never an
anonymous one; saying so in the type spares each view a cast.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase
from django_htmx.middleware import HtmxDetails

from ledger import access


class SignedInRequest(HttpRequest):
    user: User
    htmx: HtmxDetails


def support_only(
    view: Callable[..., HttpResponse],
) -> Callable[..., HttpResponse]:
    """Signed in, and support or an admin; anyone else gets a 404, as if the page did not
    exist (an end user must not learn what support can see)."""

    @wraps(view)
    def guarded(request: SignedInRequest, *args: object, **kwargs: object) -> HttpResponse:
        if not access.may_use_support_tools(request.user):
            raise Http404
        return view(request, *args, **kwargs)

    return login_required(guarded)


def admin_only[R: HttpResponseBase](
    view: Callable[..., R],
) -> Callable[..., R]:
    """Signed in, and an admin; anyone else gets a 404, as ``support_only`` does. Any kind
    of response: the audit's export streams."""

    @wraps(view)
    def guarded(request: SignedInRequest, *args: object, **kwargs: object) -> R:
        if not access.may_administer(request.user):
            raise Http404
        return view(request, *args, **kwargs)

    return login_required(guarded)
