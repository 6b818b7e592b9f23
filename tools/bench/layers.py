"""Where an in-process request's time goes, so that a regression points at its layer:

- SQL: every statement's time on every database connection, from the ORM's call to the rows;
- rendering: Django templates (pages, fragments, the admin) and the REST framework's
  renderer (the JSON body), less the SQL run while rendering (a lazy queryset a template
  iterates is SQL, not rendering);
- Python: the rest of the request (middleware, views, serializers, building the queries).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any
from unittest import mock

from django.db import connections
from django.template.backends.django import Template
from rest_framework.response import Response

LAYERS = ("sql", "python", "rendering")


@dataclass
class Layers:
    """Seconds summed over the requests timed."""

    total: float = 0.0
    sql: float = 0.0
    rendering: float = 0.0
    requests: int = 0

    @property
    def python(self) -> float:
        return self.total - self.sql - self.rendering

    def ms_per_request(self) -> float | None:
        return round(self.total / self.requests * 1000, 3) if self.requests else None

    def shares(self) -> dict[str, float]:
        """Each layer's percentage of the time; empty before any request was timed."""
        if not self.total:
            return {}
        return {layer: round(getattr(self, layer) / self.total * 100, 1) for layer in LAYERS}


class _Clock:
    def __init__(self, layers: Layers) -> None:
        self.layers = layers
        self.rendering = False

    def sql(self, execute: Callable[..., Any], *args: Any) -> Any:
        started = time.perf_counter()
        try:
            return execute(*args)
        finally:
            self.layers.sql += time.perf_counter() - started

    def render(self, original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            # A template the renderer renders (the browsable API's) is timed once, outermost.
            if self.rendering:
                return original(*args, **kwargs)
            self.rendering = True
            sql_before = self.layers.sql
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.rendering = False
                spent = time.perf_counter() - started
                self.layers.rendering += spent - (self.layers.sql - sql_before)

        return timed


@contextmanager
def timed_request(layers: Layers) -> Iterator[None]:
    """Time what runs inside as one request, its SQL and its rendering added to ``layers``."""
    clock = _Clock(layers)
    with ExitStack() as stack:
        for connection in connections.all():
            stack.enter_context(connection.execute_wrapper(clock.sql))
        stack.enter_context(mock.patch.object(Template, "render", clock.render(Template.render)))
        rendered = property(clock.render(Response.rendered_content.fget))  # type: ignore[attr-defined]
        stack.enter_context(mock.patch.object(Response, "rendered_content", rendered))
        started = time.perf_counter()
        try:
            yield
        finally:
            layers.total += time.perf_counter() - started
            layers.requests += 1
