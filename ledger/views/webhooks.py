"""Admins' pages for webhooks: the endpoints, registering one (its secret shown once), and
one endpoint's deliveries with every attempt, a page at a time.

Every form answers with a redirect to the endpoint's page (Post/Redirect/Get: a reload
sends nothing again, so it neither registers a second endpoint nor rotates twice); a
refusal re-renders the page with the error and changes nothing. A new secret rides that
redirect in the session, popped by the page that shows it, which is sent with
``Cache-Control: no-store``: shown once, never again, and reloading it shows it no more.
Every change goes through ``ledger.actions.webhooks``, which records who did it.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from ledger.actions.webhooks import (
    NewSecret,
    delete_endpoint,
    register_endpoint,
    retry_delivery,
    rotate_endpoint_secret,
    send_test_event,
    set_endpoint_active,
)
from ledger.actors import Actor
from ledger.models import WebhookDelivery, WebhookEndpoint
from ledger.reads.names import Names
from ledger.rules import webhooks
from ledger.views.answers import answer
from ledger.views.http import SignedInRequest, admin_only
from ledger.views.paging import BadCursor, keyset_page, next_query
from ledger.views.sorting import BadSort, Sortable

TEMPLATE = "ledger/webhooks.html"
# The endpoints list's columns that sort it, and a page of it.
ENDPOINT_SORTS = Sortable(
    columns={
        "address": "url",
        "registered": "created_at",
        "waiting": "pending",
        "failed": "failed",
    },
    default="-registered",
)
ENDPOINTS_SHOWN = 100
PAGE_SIZE = 25
# The session's one-time value: a new secret on its way to the endpoint's page.
SHOWN_SECRET = "webhook_secret"
# Said when an inactive endpoint is given something to send.
WAITS = " The endpoint is inactive: it is sent once the endpoint is activated."


def _events(chosen: list[str]) -> list[tuple[str, str, bool]]:
    return [(value, label, value in chosen) for value, label in webhooks.Event.choices]


@admin_only
@require_http_methods(["GET", "POST"])
def webhook_list(request: SignedInRequest) -> HttpResponse:
    """GET: every endpoint with what waits and what failed, and the form. POST: register."""
    if request.method == "POST":
        return _register(request)
    return _list(request, {}, url="", description="", chosen=[], status=200)


def _list(
    request: SignedInRequest,
    errors: dict[str, str],
    *,
    url: str,
    description: str,
    chosen: list[str],
    status: int,
) -> HttpResponse:
    # A registration the form refused answers with the first page, newest first.
    data = request.GET if request.method == "GET" else QueryDict()
    try:
        sort = ENDPOINT_SORTS.chosen(data)
        page = sort.page(
            WebhookEndpoint.objects.with_counts(),
            cursor=data.get("after", ""),
            size=ENDPOINTS_SHOWN,
        )
    except (BadSort, BadCursor) as refused:
        return render(request, TEMPLATE, {"list_error": str(refused), "events": []}, status=400)
    context = {
        "endpoints": page.rows,
        "sort": sort,
        "next": next_query(data, page.next_cursor),
        "errors": errors,
        "url": url,
        "description": description,
        "events": _events(chosen),
    }
    return render(request, TEMPLATE, context, status=status)


def _register(request: SignedInRequest) -> HttpResponse:
    url = request.POST.get("url", "")
    description = request.POST.get("description", "")
    chosen = request.POST.getlist("events")
    try:
        made = register_endpoint(
            url=url, events=chosen, description=description, actor=Actor.for_user(request.user)
        )
    except webhooks.BadEndpoint as error:
        return _list(
            request,
            {error.field: error.message},
            url=url,
            description=description,
            chosen=chosen,
            status=400,
        )
    return _show_once(request, made)


def _show_once(request: SignedInRequest, made: NewSecret) -> HttpResponse:
    """Redirect to the endpoint's page, which shows ``made``'s secret the one time."""
    request.session[SHOWN_SECRET] = {"endpoint": made.endpoint.pk, "secret": made.secret}
    return _back(request, made.endpoint)


def _popped_secret(request: SignedInRequest, endpoint: WebhookEndpoint) -> str:
    """The secret waiting in the session for this endpoint's page, taken out of it."""
    waiting = request.session.get(SHOWN_SECRET)
    if not isinstance(waiting, dict) or waiting.get("endpoint") != endpoint.pk:
        return ""
    del request.session[SHOWN_SECRET]
    return str(waiting.get("secret", ""))


@admin_only
@require_GET
def webhook_page(request: SignedInRequest, pk: int) -> HttpResponse:
    endpoint = get_object_or_404(WebhookEndpoint, pk=pk)
    # An htmx fragment (older deliveries) never takes the secret meant for the full page.
    secret = "" if request.htmx else _popped_secret(request, endpoint)
    return _endpoint_page(request, endpoint, secret=secret)


def _endpoint_page(
    request: SignedInRequest,
    endpoint: WebhookEndpoint,
    *,
    secret: str = "",
    errors: dict[str, str] | None = None,
    status: int = 200,
) -> HttpResponse:
    try:
        page = keyset_page(
            WebhookDelivery.objects.filter(endpoint=endpoint),
            field="created_at",
            cursor=request.GET.get("after", ""),
            size=PAGE_SIZE,
            newest_first=True,
        )
    except BadCursor as error:
        return HttpResponse(str(error), status=400, content_type="text/plain; charset=utf-8")
    context: dict[str, Any] = {
        "endpoint": endpoint,
        "page": page,
        "secret": secret,
        "errors": errors or {},
        "first_page": not request.GET.get("after"),
        "event_words": dict(webhooks.Event.choices),
        "registered_by": Names.for_labels(request.user, [endpoint.created_by]).who(
            endpoint.created_by
        ),
    }
    if request.htmx and not secret:
        return render(request, f"{TEMPLATE}#deliveries", context, status=status)
    response = render(request, TEMPLATE, context, status=status)
    if secret:
        add_never_cache_headers(response)
        response["Cache-Control"] = "no-store"
    return response


def _back(request: SignedInRequest, endpoint: WebhookEndpoint, message: str = "") -> HttpResponse:
    """The endpoint's page, redirected to (a reload sends nothing again)."""
    return answer(request, redirect_to=reverse("webhook", args=[endpoint.pk]), message=message)


@admin_only
@require_POST
def webhook_active(request: SignedInRequest, pk: int) -> HttpResponse:
    endpoint = get_object_or_404(WebhookEndpoint, pk=pk)
    active = request.POST.get("active") == "1"
    try:
        set_endpoint_active(
            endpoint=endpoint,
            active=active,
            actor=Actor.for_user(request.user),
            reason=request.POST.get("reason", ""),
        )
    except webhooks.BadEndpoint as error:
        return _endpoint_page(request, endpoint, errors={error.field: error.message}, status=409)
    return _back(
        request, endpoint, message="Activated." if active else "Deactivated: nothing is sent to it."
    )


@admin_only
@require_POST
def webhook_rotate(request: SignedInRequest, pk: int) -> HttpResponse:
    endpoint = get_object_or_404(WebhookEndpoint, pk=pk)
    made = rotate_endpoint_secret(
        endpoint=endpoint, actor=Actor.for_user(request.user), reason=request.POST.get("reason", "")
    )
    return _show_once(request, made)


@admin_only
@require_POST
def webhook_test(request: SignedInRequest, pk: int) -> HttpResponse:
    endpoint = get_object_or_404(WebhookEndpoint, pk=pk)
    delivery = send_test_event(endpoint=endpoint, actor=Actor.for_user(request.user))
    waits = "" if delivery.endpoint.active else WAITS
    return _back(request, endpoint, message=f"Test event {delivery.event_id} queued.{waits}")


@admin_only
@require_POST
def webhook_delete(request: SignedInRequest, pk: int) -> HttpResponse:
    endpoint = get_object_or_404(WebhookEndpoint, pk=pk)
    if request.POST.get("confirm") != "1":
        errors = {"delete": "Tick the box to confirm: its deliveries are deleted with it."}
        return _endpoint_page(request, endpoint, errors=errors, status=400)
    delete_endpoint(
        endpoint=endpoint, actor=Actor.for_user(request.user), reason=request.POST.get("reason", "")
    )
    return answer(
        request,
        redirect_to=reverse("webhooks"),
        message=f"Endpoint {endpoint.url} deleted, with its deliveries.",
    )


@admin_only
@require_POST
def webhook_retry(request: SignedInRequest, pk: int, delivery: int) -> HttpResponse:
    endpoint = get_object_or_404(WebhookEndpoint, pk=pk)
    row = get_object_or_404(WebhookDelivery, pk=delivery, endpoint=endpoint)
    try:
        retried = retry_delivery(delivery=row, actor=Actor.for_user(request.user))
    except webhooks.BadEndpoint as error:
        return _endpoint_page(request, endpoint, errors={error.field: error.message}, status=409)
    waits = "" if retried.endpoint.active else WAITS
    return _back(request, endpoint, message=f"Retry of {row.event_id} queued.{waits}")
