"""Access logs without query strings, whichever server writes them.

A query string carries what people and agents ask: a recall's goal, a journal or note key,
support's search for a person's name. An access log keeps it far longer, and shows it to
far more people, than the records the product keeps on purpose (the recall log, with its
retention and erasure). So the paths are logged, and their queries never are: by
``runserver`` (``make run``: its ``django.server`` logger, filtered in settings) and by
gunicorn (``GunicornLogger``, set by the repository's ``gunicorn.conf.py``).

In production every line is a JSON object (``JsonLines``, docs/logs-and-traces.md), gunicorn's
own error log included, each carrying the id of the request it belongs to.
"""

from __future__ import annotations

import logging
import os
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from gunicorn.glogging import Logger  # type: ignore[import-untyped]  # no types shipped
from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter

from memoryadmin.request_id import RequestIdFilter, route

_QUERY = re.compile(r"\?[^\s\"]*")
# What stands for a dropped query, so a reader knows there was one.
DROPPED = "?[dropped]"


def without_query(text: str) -> str:
    """``text`` (a request line, a URL) with each query string replaced by ``DROPPED``."""
    return _QUERY.sub(DROPPED, text)


class DropQueryStrings(logging.Filter):
    """For ``django.server``: its request lines, and the bad ones it reports, with no query."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                without_query(arg) if isinstance(arg, str) else arg for arg in record.args
            )
        return True


class RoutesNotPaths(logging.Filter):
    """Django's own line for a refused or failed request (``Not Found: /people/ada/``) names
    the URL pattern instead of the path, which can name a person, and drops the request
    object the line carries, which a JSON line would print whole."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = record.__dict__.pop("request", None)
        if isinstance(request, HttpRequest) and isinstance(record.args, tuple):
            shown = route(request)
            record.args = tuple(shown if arg == request.path else arg for arg in record.args)
        return True


class JsonLines(JsonFormatter):
    """One JSON object a line: time, level, logger, message, request id, and whatever the
    call passed in ``extra`` (a request line's method, route, status and duration)."""

    def __init__(self) -> None:
        super().__init__(
            ["asctime", "levelname", "name", "message", "request_id"],
            rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
            # Celery's ``data``: a task's arguments, which are not for the log; its message
            # names the task, its id and its result.
            reserved_attrs=[*RESERVED_ATTRS, "data"],
        )

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        # ISO 8601 in UTC, whatever the machine's zone, so that machines' lines sort together.
        return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")


class GunicornLogger(Logger):  # type: ignore[misc]  # its base is untyped
    """gunicorn's logger, its access log without query strings: the request line (``%(r)s``),
    the query (``%(q)s``) and the referring page (``%(f)s``, ``%({referer}i)s``); its error
    log in JSON lines when the application's are (the access log, asked for with
    ``--access-logfile``, keeps its ``access_log_format``)."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
        # The settings decide the format, for the app and for gunicorn alike.
        if settings.LOG_FORMAT == "json":
            for handler in self.error_log.handlers:
                handler.setFormatter(JsonLines())
                handler.addFilter(RequestIdFilter())

    def atoms(
        self, resp: Any, req: Any, environ: dict[str, Any], request_time: timedelta
    ) -> dict[str, Any]:
        atoms: dict[str, Any] = super().atoms(resp, req, environ, request_time)
        atoms["r"] = without_query(atoms["r"])
        atoms["q"] = DROPPED if atoms.get("q") else ""
        for referer in ("f", "{referer}i"):
            if isinstance(atoms.get(referer), str):
                atoms[referer] = without_query(atoms[referer])
        return atoms
