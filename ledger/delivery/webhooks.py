"""Delivering webhooks: each event signed, POSTed to a public address, retried when it fails.

Delivery takes the row with ``SELECT … FOR UPDATE SKIP LOCKED`` and sends only a pending,
due row, holding the lock through the POST: two workers (or a task run twice) never send
one event twice to one endpoint, and a delivered row is never sent again. A worker killed
after the receiver answered but before its commit sends it once more, which is why every
delivery carries its event id for the receiver to de-duplicate on. A pass tries no more
of an endpoint's rows once one of them fails: a dead endpoint costs a pass one timeout,
not one per waiting event, and never starves the others.

Webhooks go only to public addresses (``webhooks.refused_address``): the host is resolved
and checked when the endpoint is registered and again before every POST, since a name can
resolve elsewhere later. An attempt to a refused address is a failed attempt, sent nothing.
Called by the tasks (and the address check by registration), never by a page.
"""

from __future__ import annotations

import socket
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx
from celery import current_app
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from memoryadmin_client.signatures import EVENT_HEADER, EVENT_ID_HEADER, SIGNATURE_HEADER, sign

from ledger.delivery import broker
from ledger.models import WebhookDelivery
from ledger.rules import webhooks

Status = webhooks.DeliveryStatus

DELIVER_TASK = "ledger.tasks.deliver_webhooks"
USER_AGENT = "memoryadmin-webhooks/1"
# How many due rows a pass fetches at a time: fetched again after each chunk, without the
# endpoints that failed in it, so a dead endpoint's backlog never fills a pass.
CHUNK = 20


def queue(event_id: uuid.UUID | None, countdown: float = 0) -> None:
    argument = str(event_id) if event_id else None
    if current_app.conf.task_always_eager:
        if not countdown:
            deliver(event_id=argument)
        return
    broker.send(
        DELIVER_TASK, (argument,), countdown=countdown, instead="the beat's pass sends what is due"
    )


@dataclass
class Sent:
    delivered: int = 0
    failed: int = 0
    # The soonest a retry of what failed is due, in seconds; None if nothing is retried.
    retry_in: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"delivered": self.delivered, "failed": self.failed, "retry_in": self.retry_in}


def deliver(*, event_id: str | None = None, limit: int = 100) -> Sent:
    """Send what is due: one event's deliveries, or (``event_id`` None) whatever is due
    for every active endpoint, oldest first, up to ``limit`` attempts. Once an endpoint
    fails an attempt its other due rows wait for the next pass (each is retried on its own
    schedule from there): an attempt holds its row through a POST of up to the timeout,
    and one dead endpoint must cost a pass one timeout, not one per waiting event, nor
    starve the endpoints whose rows come after its backlog. Queues itself again for the
    soonest retry, so a short schedule needs no beat."""
    due = WebhookDelivery.objects.due(timezone.now()).filter(endpoint__active=True)
    if event_id is not None:
        due = due.filter(event_id=event_id)
    sent = Sent()
    failing: set[int] = set()
    # Rows this pass has taken up, tried or not: one another worker holds stays due, and
    # must not be fetched again.
    seen: set[int] = set()
    tried = 0
    while tried < limit:
        rows = list(
            due.exclude(endpoint_id__in=failing)
            .exclude(pk__in=seen)
            .order_by("next_attempt_at", "id")
            .values_list("pk", "endpoint_id")[: min(CHUNK, limit - tried)]
        )
        if not rows:
            break
        for pk, endpoint_id in rows:
            seen.add(pk)
            if endpoint_id in failing:
                continue
            tried += 1
            outcome = attempt(pk)
            if outcome is None:
                continue
            if outcome.status == Status.DELIVERED:
                sent.delivered += 1
            else:
                sent.failed += 1
                failing.add(endpoint_id)
            if outcome.status == Status.PENDING and outcome.next_attempt_at is not None:
                wait = max((outcome.next_attempt_at - timezone.now()).total_seconds(), 0.0)
                sent.retry_in = wait if sent.retry_in is None else min(sent.retry_in, wait)
    if sent.retry_in is not None:
        queue(uuid.UUID(event_id) if event_id else None, countdown=sent.retry_in)
    return sent


def forget_settled(*, now: datetime | None = None, batch: int = 1000) -> int:
    """Delete up to ``batch`` delivered or failed deliveries older than the retention,
    oldest first, in one statement; how many. Waiting ones stay, however old."""
    cutoff = (now or timezone.now()) - timedelta(days=settings.MEMORYADMIN_WEBHOOK_RETENTION_DAYS)
    oldest = WebhookDelivery.objects.settled_before(cutoff).order_by("created_at")[:batch]
    deleted, _ = WebhookDelivery.objects.filter(
        pk__in=list(oldest.values_list("pk", flat=True))
    ).delete()
    return deleted


def attempt(delivery_id: int) -> WebhookDelivery | None:
    """One attempt at one delivery, if it is still pending and due and nobody else holds
    it; the row as the attempt left it, or None when it was not this call's to send."""
    with transaction.atomic():
        delivery = (
            WebhookDelivery.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("endpoint")
            .filter(pk=delivery_id, status=Status.PENDING, next_attempt_at__lte=timezone.now())
            .first()
        )
        if delivery is None or not delivery.endpoint.active:
            return None
        code, error, duration = _post(delivery)
        now = timezone.now()
        delivery.attempts += 1
        delivery.last_status_code = code
        delivery.last_error = webhooks.short_error(error)
        delivery.attempt_log = [
            *delivery.attempt_log,
            {
                "at": now.isoformat(),
                "status_code": code,
                "duration_ms": duration,
                "error": delivery.last_error,
            },
        ]
        if not error:
            delivery.status = Status.DELIVERED
            delivery.delivered_at = now
            delivery.next_attempt_at = None
        else:
            wait = webhooks.retry_after(
                delivery.attempts, settings.MEMORYADMIN_WEBHOOK_RETRY_SECONDS
            )
            delivery.status = Status.FAILED if wait is None else Status.PENDING
            delivery.next_attempt_at = None if wait is None else now + wait
        delivery.save(
            update_fields=[
                "attempts",
                "last_status_code",
                "last_error",
                "attempt_log",
                "status",
                "delivered_at",
                "next_attempt_at",
            ]
        )
    return delivery


def checked_destination(url: str) -> None:
    """Refuse (``BadEndpoint``) an address whose host resolves to a loopback, private,
    link-local, multicast or reserved address, unless ``MEMORYADMIN_WEBHOOK_ALLOW_PRIVATE``;
    ``OSError`` when the name does not resolve. Every address the name has is checked."""
    if settings.MEMORYADMIN_WEBHOOK_ALLOW_PRIVATE:
        return
    host = urlsplit(url).hostname or ""
    found = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    webhooks.checked_addresses(host, [str(info[4][0]) for info in found])


def _post(delivery: WebhookDelivery) -> tuple[int | None, str, int]:
    """POST the signed event: (status code, error or "", milliseconds). A 2xx is delivered;
    any other answer, a redirect included (never followed), or no answer is an error. The
    answer's body is never read: a receiver cannot fill the worker's memory, or hold it
    past its status line."""
    started = time.monotonic()
    try:
        checked_destination(delivery.endpoint.url)
    except webhooks.BadEndpoint as refused:
        return None, f"Not sent: {refused.message}", _ms(started)
    except OSError as error:
        host = urlsplit(delivery.endpoint.url).hostname
        return None, f"Not sent: {host} does not resolve ({error}).", _ms(started)
    data = webhooks.body(
        event_id=str(delivery.event_id),
        event=delivery.event,
        created_at=delivery.created_at,
        data=delivery.payload,
    )
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        EVENT_ID_HEADER: str(delivery.event_id),
        EVENT_HEADER: delivery.event,
        SIGNATURE_HEADER: sign(delivery.endpoint.secret, data, int(time.time())),
    }
    # The name is resolved again to connect, so a DNS answer that changes between the check
    # and the connection (rebinding) is not caught: docs/webhooks.md, "Security".
    try:
        with (
            httpx.Client(
                timeout=settings.MEMORYADMIN_WEBHOOK_TIMEOUT_SECONDS, follow_redirects=False
            ) as client,
            client.stream("POST", delivery.endpoint.url, content=data, headers=headers) as response,
        ):
            code, reason = response.status_code, response.reason_phrase
    except httpx.HTTPError as error:
        return None, f"{type(error).__name__}: {error}", _ms(started)
    took = _ms(started)
    if 200 <= code < 300:
        return code, "", took
    return code, f"HTTP {code} {reason}", took


def _ms(started: float) -> int:
    return round((time.monotonic() - started) * 1000)
