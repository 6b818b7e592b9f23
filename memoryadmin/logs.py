"""Access logs without query strings, whichever server writes them.

A query string carries what people and agents ask: a recall's goal, a journal or note key,
support's search for a person's name. An access log keeps it far longer, and shows it to
far more people, than the records the product keeps on purpose (the recall log, with its
retention and erasure). So the paths are logged, and their queries never are: by
``runserver`` (``make run``: its ``django.server`` logger, filtered in settings) and by
gunicorn (``GunicornLogger``, set by the repository's ``gunicorn.conf.py``).
"""

from __future__ import annotations

import logging
import re
from datetime import timedelta
from typing import Any

from gunicorn.glogging import Logger  # type: ignore[import-untyped]  # no types shipped

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


class GunicornLogger(Logger):  # type: ignore[misc]  # its base is untyped
    """gunicorn's logger, its access log without query strings: the request line (``%(r)s``),
    the query (``%(q)s``) and the referring page (``%(f)s``, ``%({referer}i)s``)."""

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
