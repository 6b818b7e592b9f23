"""The one shape of a dashboard view's answer, whoever asked and however it went.

htmx asked: the fragment that takes the place of what was clicked (``"ledger/x.html#name"``),
or, when there is no fragment to swap (the change moved what was shown elsewhere), a
client-side redirect. A plain form or link (no JavaScript): a redirect to the page, so a
reload sends nothing again, or the page itself. A refusal: the same, in the refusal's words
and with its 4xx status, and nothing changed.

A context may be given as a function: only the answer that is sent is ever built, so a
plain request that is redirected never pays for the fragment it does not get.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.contrib import messages
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.utils.cache import patch_vary_headers
from django_htmx.http import HttpResponseClientRedirect, reswap, retarget

from ledger.rules.refusals import Refusal
from ledger.views.http import SignedInRequest

type Context = Mapping[str, Any] | Callable[[], Mapping[str, Any]]


def _built(context: Context | None) -> Mapping[str, Any]:
    if context is None:
        return {}
    return context() if callable(context) else context


def answer(
    request: SignedInRequest,
    *,
    fragment: str = "",
    context: Context | None = None,
    page: str = "",
    page_context: Context | None = None,
    redirect_to: str = "",
    message: str = "",
    level: int = messages.SUCCESS,
    status: int = 200,
    redirect_status: int = 302,
    swap_into: str = "",
) -> HttpResponse:
    """htmx gets ``fragment`` rendered with ``context``. Anyone else, or htmx when there is
    no fragment: ``page`` rendered with ``page_context`` (else ``context``), or with no page
    a redirect to ``redirect_to`` (a client-side one for htmx).

    ``message`` is said at the top of the page the person lands on (at ``level``), never
    with a fragment: a fragment says its own words. ``status`` is a rendered answer's;
    ``redirect_status`` a plain redirect's. ``swap_into`` (``"#conflict-7"``) puts the
    fragment in place of that element instead of the one the form aimed at.
    """
    response: HttpResponse
    if request.htmx and fragment:
        response = render(request, fragment, _built(context), status=status)
        if swap_into:
            response = reswap(retarget(response, swap_into), "outerHTML")
    else:
        if message:
            messages.add_message(request, level, message)
        if page:
            shown = page_context if page_context is not None else context
            response = render(request, page, _built(shown), status=status)
        elif request.htmx:
            response = HttpResponseClientRedirect(redirect_to)
        else:
            response = HttpResponseRedirect(redirect_to, status=redirect_status)
    # One address, two bodies (the fragment, the page): caches key on who asked.
    patch_vary_headers(response, ("HX-Request",))
    return response


def refused(
    request: SignedInRequest,
    refusal: Refusal,
    *,
    fragment: str = "",
    context: Context | None = None,
    page: str = "",
    page_context: Context | None = None,
    redirect_to: str = "",
    swap_into: str = "",
) -> HttpResponse:
    """``answer`` for a refusal, with its status: its words are ``error`` in the fragment's
    context, and in the page's when the page is rendered from that same context; said at
    the top of the page otherwise (a page of its own, or the one redirected to)."""

    def said() -> Mapping[str, Any]:
        return {**_built(context), "error": refusal.detail}

    in_page = bool(page) and page_context is None
    return answer(
        request,
        fragment=fragment,
        context=said,
        page=page,
        page_context=page_context,
        redirect_to=redirect_to,
        message="" if in_page else refusal.detail,
        level=messages.ERROR,
        status=refusal.status,
        swap_into=swap_into,
    )
