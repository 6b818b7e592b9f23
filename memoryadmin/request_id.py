"""One id for each request, on every log line it causes, in its own process and in the
Celery tasks it queues; returned in the ``X-Request-ID`` header so that a person reporting a
problem can give it, and an operator find every line about it.

An id the caller sends is kept when it is short and plain (a proxy's or a client's own id),
so one id follows the request across machines; anything else is replaced, since it would
be written verbatim into every log line.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from django.http import HttpRequest, HttpResponse

HEADER = "X-Request-ID"
_META = "HTTP_X_REQUEST_ID"
# Letters, digits and a few separators, as uuids and most tracing ids are: no e-mail
# address, no spaces, nothing that could break a log line.
_WELL_FORMED = re.compile(r"[A-Za-z0-9._-]{8,64}")
# In a task's message headers: the id of the request that queued it.
TASK_HEADER = "memoryadmin_request_id"

current: ContextVar[str | None] = ContextVar("request_id", default=None)

requests = logging.getLogger("memoryadmin.requests")


def _incoming(request: HttpRequest) -> str:
    sent = request.headers.get(HEADER, "")
    return sent if _WELL_FORMED.fullmatch(sent) else str(uuid.uuid4())


def route(request: HttpRequest) -> str:
    """What a log says was asked: the URL pattern that answered, never the path's values,
    which can name a person (``/people/<str:username>/``); for a fixed path answered before
    the URLs are read (``answered_here``), that path."""
    match = request.resolver_match
    if match is None:
        return str(request.META.get(_ANSWERED_AT, "[no route]"))
    # The API's router writes its patterns as regular expressions, each ending in "$".
    return f"/{match.route.removesuffix('$')}"


_ANSWERED_AT = "memoryadmin.answered_at"


def answered_here(request: HttpRequest) -> None:
    """Said by a middleware that answers a fixed path itself (the probes, ``/metrics``), so
    that its request line names the path rather than no route: it holds no one's data."""
    request.META[_ANSWERED_AT] = request.path_info


def request_id_middleware(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    """Give each request its id, and log one line for it once answered: what was asked (the
    URL pattern, never the query or the values in the path), the answer and how long."""

    def middleware(request: HttpRequest) -> HttpResponse:
        given = _incoming(request)
        token = current.set(given)
        # For the lines Django writes about the request once this has returned (a 500's, a
        # CSRF refusal's): they carry the request, and the filter finds its id there.
        request.META[_META] = given
        started = time.perf_counter()
        try:
            response = get_response(request)
            response[HEADER] = given
            answered = {
                "method": request.method,
                "route": route(request),
                "status": response.status_code,
                "duration_ms": round((time.perf_counter() - started) * 1000, 1),
            }
            requests.info(
                "%(method)s %(route)s %(status)s %(duration_ms)s ms", answered, extra=answered
            )
            return response
        finally:
            current.reset(token)

    return middleware


class RequestIdFilter(logging.Filter):
    """Puts the current request's id (``-`` outside any request) on every log record."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        about = request.META.get(_META) if isinstance(request, HttpRequest) else None
        record.request_id = current.get() or about or "-"
        return True


# Celery signals, connected in memoryadmin.celery: the publishing process puts the id in
# the task's headers, the worker restores it while the task runs.


def into_task_headers(headers: dict[str, Any] | None = None, **_: Any) -> None:
    if headers is not None and current.get():
        headers[TASK_HEADER] = current.get()


def from_task_headers(task: Any = None, **_: Any) -> None:
    sent = task.request.get(TASK_HEADER) if task is not None else None
    current.set(sent if isinstance(sent, str) and _WELL_FORMED.fullmatch(sent) else None)


def after_task(**_: Any) -> None:
    current.set(None)
