"""``/healthz`` and ``/readyz``, for a load balancer, a container's health check or an
orchestrator (docs/deploy.md#health-and-readiness).

They are answered by ``AnswerProbes``, first in ``MIDDLEWARE``, before anything that would
turn a probe away: an orchestrator asks the pod by its IP, which ``ALLOWED_HOSTS`` does not
name (Django would answer 400), over plain http inside the network (``SECURE_SSL_REDIRECT``
would answer 301). Nor do they need a session, a sign-in or a rate limit. Never cached: a
proxy's stored "ready" must not stand for a process that is not.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from ledger.reads.readiness import readiness
from memoryadmin.request_id import answered_here


@never_cache
@require_safe
def healthz(request: HttpRequest) -> HttpResponse:
    """The process is up and answering: nothing else is asked, the database least of all,
    so a database outage never has the orchestrator restart every web process."""
    return JsonResponse({"status": "ok"})


@never_cache
@require_safe
def readyz(request: HttpRequest) -> HttpResponse:
    """Whether to send this process traffic: 503 naming each dependency that fails."""
    checks = readiness()
    ready = all(check.ready for check in checks.values())
    return JsonResponse(
        {
            "status": "ready" if ready else "unavailable",
            "checks": {name: check.says for name, check in checks.items()},
        },
        status=200 if ready else 503,
    )


PROBES: dict[str, Callable[[HttpRequest], HttpResponse]] = {
    "/healthz": healthz,
    "/readyz": readyz,
}


class AnswerProbes:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        probe = PROBES.get(request.path_info)
        if probe is None:
            return self.get_response(request)
        answered_here(request)
        return probe(request)
