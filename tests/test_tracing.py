"""Traces, as an operator's collector would receive them: a write and a recall through the
API each make a request span with the gate's or the recall's span beneath it and the SQL
beneath that, naming the agent, the run and the subject, and never what was written or
asked."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from opentelemetry import trace
from opentelemetry.instrumentation.django import DjangoInstrumentor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from rest_framework.test import APIClient

from ledger.actions.agents import create_agent
from ledger.actors import Actor
from memoryadmin import tracing
from tests.conftest import SUBJECT, body

STATEMENT = "Canary-span-statement-61d0 likes quiet trains."
EXCERPT = "canary-span-excerpt-93ab"
GOAL = "canaryspangoal4c2e"

_exporter = InMemorySpanExporter()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Every span this process ends while the test runs, kept in memory."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        # The global provider is set once a process; later tests of this worker reuse it.
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_exporter))
        trace.set_tracer_provider(provider)
    tracing.instrument()
    # Django's connection is opened again, through the instrumented psycopg.
    connection.close()
    _exporter.clear()
    yield _exporter
    tracing.uninstrument()
    connection.close()
    _exporter.clear()


def named(finished: tuple[ReadableSpan, ...], name: str) -> ReadableSpan:
    (span,) = [s for s in finished if s.name == name]
    return span


def parent_of(finished: tuple[ReadableSpan, ...], span: ReadableSpan) -> ReadableSpan:
    assert span.parent is not None
    (parent,) = [s for s in finished if s.context.span_id == span.parent.span_id]
    return parent


def children_of(finished: tuple[ReadableSpan, ...], span: ReadableSpan) -> list[ReadableSpan]:
    return [s for s in finished if s.parent and s.parent.span_id == span.context.span_id]


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def everything_in(finished: tuple[ReadableSpan, ...]) -> str:
    return repr(
        [(s.name, attributes(s), [(e.name, e.attributes) for e in s.events]) for s in finished]
    )


@pytest.mark.django_db(transaction=True)
def test_a_write_and_a_recall_are_traced_with_refs_and_never_their_words(
    spans: InMemorySpanExporter,
) -> None:
    _, key = create_agent(name="tracer", scopes=["read", "write"], actor=Actor.system("test"))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    source = body()["source"] | {"excerpt": EXCERPT, "run": "run_traced"}
    wrote = client.post("/api/v1/memories", body(statement=STATEMENT, source=source), format="json")
    assert wrote.status_code == 201
    read = client.get(
        f"/api/v1/subjects/{SUBJECT}/recall", {"goal": GOAL, "run": "run_traced", "k": "3"}
    )
    assert read.status_code == 200
    assert STATEMENT in read.json()["block"]
    finished = spans.get_finished_spans()

    write = named(finished, "memoryadmin.write")
    assert attributes(write) == {
        "memoryadmin.agent": "tracer",
        "memoryadmin.subject": SUBJECT,
        "memoryadmin.run": "run_traced",
        "memoryadmin.outcome": "accepted",
    }
    request = parent_of(finished, write)
    assert request.kind == SpanKind.SERVER
    assert request.name.startswith("POST api/v1/memories")
    sql = [
        s for s in children_of(finished, write) if attributes(s).get("db.system") == "postgresql"
    ]
    assert any("INSERT INTO" in str(attributes(s).get("db.statement")) for s in sql)

    recall = named(finished, "memoryadmin.recall")
    assert attributes(recall) == {
        "memoryadmin.agent": "tracer",
        "memoryadmin.subject": SUBJECT,
        "memoryadmin.run": "run_traced",
    }
    request = parent_of(finished, recall)
    assert request.kind == SpanKind.SERVER
    assert request.name.startswith("GET api/v1/subjects/")
    assert attributes(request).get("http.status_code") == 200
    (stored,) = [
        s
        for s in children_of(finished, recall)
        if "INSERT INTO" in str(attributes(s).get("db.statement"))
    ]
    # The SQL as written, its values bound apart: placeholders, not the goal or the block.
    assert "%(goal)s" in str(attributes(stored).get("db.statement"))

    # Nothing said, asked or quoted, and not the key, in any span: the request's URL lost
    # its query too.
    seen = everything_in(finished)
    for canary in (STATEMENT, "quiet trains", EXCERPT, GOAL, key):
        assert canary.lower() not in seen.lower()
    url = str(attributes(request).get("http.url"))
    assert url == "http://testserver/api/v1/subjects/<str:ref>/recall"


def test_tracing_is_off_unless_an_endpoint_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    assert tracing.configure() is False
    assert not DjangoInstrumentor().is_instrumented_by_opentelemetry
