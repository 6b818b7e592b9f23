"""``/metrics`` for Prometheus, and the request counts and latencies it reports
(docs/observability.md).

``AnswerScrapes`` answers ``/metrics`` before the host check and the HTTPS redirect, as the
probes are answered (``ledger.views.probes``): Prometheus scrapes each process by its IP,
over plain http inside the network. Only allowed addresses
(``MEMORYADMIN_METRICS_ALLOWED_IPS``) or a bearer of ``MEMORYADMIN_METRICS_TOKEN`` are
answered; anyone else gets a 403 and not one number. Never cached, no session.

Under gunicorn's several processes (``PROMETHEUS_MULTIPROC_DIR`` set), a scrape reads every
process's counts from that folder and sums them, whichever process answers it.
"""

from __future__ import annotations

import hmac
import ipaddress
import time
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from ledger.metrics import HTTP_DURATION, HTTP_REQUESTS, counted
from ledger.reads.scraped import ScrapedState
from ledger.signin import client_ip
from memoryadmin.request_id import answered_here

PATH = "/metrics"
# Any other method is counted as "other": the label's values stay a fixed, small set.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


@never_cache
@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    if not may_scrape(request):
        return HttpResponse(
            "Metrics are for the addresses in MEMORYADMIN_METRICS_ALLOWED_IPS or the bearer "
            "of MEMORYADMIN_METRICS_TOKEN.\n",
            status=403,
            content_type="text/plain; charset=utf-8",
        )
    body = generate_latest(counted()) + generate_latest(ScrapedState())
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)


def may_scrape(request: HttpRequest) -> bool:
    token = settings.MEMORYADMIN_METRICS_TOKEN
    offered = request.headers.get("Authorization", "")
    if token and hmac.compare_digest(offered.encode(), f"Bearer {token}".encode()):
        return True
    # Behind a proxy, the address the proxy saw (as the sign-in limits count it).
    address = client_ip(request) if settings.BEHIND_PROXY else request.META.get("REMOTE_ADDR")
    try:
        client = ipaddress.ip_address(address or "")
    except ValueError:
        return False
    # A dual-stack socket reports an IPv4 client as ::ffff:a.b.c.d.
    if isinstance(client, ipaddress.IPv6Address) and client.ipv4_mapped:
        client = client.ipv4_mapped
    return any(client in network for network in settings.MEMORYADMIN_METRICS_ALLOWED_IPS)


class AnswerScrapes:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info == PATH:
            answered_here(request)
            return metrics(request)
        return self.get_response(request)


class MeasureRequests:
    """Count and time every request after the probes and scrapes, by the URL pattern it
    matched (never its path: one label value per page, not per subject)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        elapsed = time.perf_counter() - started
        route = _route(request)
        method = request.method if request.method in METHODS else "other"
        HTTP_REQUESTS.labels(route=route, method=method, status=str(response.status_code)).inc()
        HTTP_DURATION.labels(route=route, method=method).observe(elapsed)
        return response


def _route(request: HttpRequest) -> str:
    """The pattern's name (namespaced, as ``reverse`` takes it), else its template; for a
    request that matched no pattern (a 404, a refusal before the URLs), "unmatched"."""
    match = request.resolver_match
    if match is None:
        return "unmatched"
    return match.view_name if match.url_name else match.route
