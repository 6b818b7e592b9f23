"""OpenTelemetry traces, off unless ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set
(docs/logs-and-traces.md).

Each process that serves or works calls ``configure`` once, before it handles anything:
``wsgi.py`` (gunicorn, and runserver, which loads it too), ``asgi.py`` and each Celery worker
process. The exporter is OTLP over HTTP, configured by the standard ``OTEL_*`` variables.

What a span may carry is what a log line may: ids and refs, SQL with its placeholders, never
a statement, a goal, an e-mail address or a key. A request's span names its URL pattern
rather than its path, and never its query (which holds a recall's goal), as its log line does.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from django.http import HttpRequest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.celery import CeleryInstrumentor
from opentelemetry.instrumentation.django import DjangoInstrumentor
from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
from opentelemetry.instrumentation.redis import RedisInstrumentor
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from memoryadmin.logs import DROPPED
from memoryadmin.request_id import route

# The request attributes that hold its path and query, under the old and the new HTTP
# semantic conventions.
_TARGETS = ("http.target", "url.path")
_URLS = ("http.url", "url.full")
_QUERY = "url.query"


def configure(*, worker: bool = False) -> bool:
    """Export this process's spans when an OTLP endpoint is set; True if it does. A Celery
    worker's process (``worker``) traces each task it runs too."""
    if not os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return False
    name = os.environ.get("OTEL_SERVICE_NAME", "memoryadmin")
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    instrument()
    if worker:
        # Only where tasks run: the instrumentation also traces sending a task, and ends that
        # span when the broker has taken it, so a send the broker refuses (the broker down)
        # would leave it open and current, every later request of the thread beneath it.
        CeleryInstrumentor().instrument()  # type: ignore[no-untyped-call]
    return True


def instrument() -> None:
    """Spans for requests, SQL and Redis commands, on the global provider."""
    DjangoInstrumentor().instrument(response_hook=_routes_not_paths)
    # No sqlcommenter: the SQL stays as Django wrote it, its values bound apart.
    PsycopgInstrumentor().instrument(enable_commenter=False)
    RedisInstrumentor().instrument()


def uninstrument() -> None:
    """Undo ``instrument`` (a test's, which has its own provider)."""
    for instrumentor in (DjangoInstrumentor(), PsycopgInstrumentor(), RedisInstrumentor()):
        instrumentor.uninstrument()


def _routes_not_paths(span: Any, request: HttpRequest, response: Any) -> None:
    """A request's span names its URL pattern, as its log line does: its path can name a
    person (``/people/<str:username>/``), its query holds a recall's goal."""
    attributes = getattr(span, "attributes", None) or {}
    shown = route(request)
    for key in _TARGETS:
        if key in attributes:
            span.set_attribute(key, shown)
    for key in _URLS:
        if isinstance(attributes.get(key), str):
            url = urlsplit(attributes[key])._replace(path=shown, query="", fragment="")
            span.set_attribute(key, urlunsplit(url))
    if attributes.get(_QUERY):
        span.set_attribute(_QUERY, DROPPED.removeprefix("?"))
