"""What people and agents ask in a query string (a recall's goal, a note's key, a search
for a name) never reaches an access log: each server that writes one, started as it is
run, logs the path and drops the query."""

from __future__ import annotations

import contextlib
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.servers import database_url, gunicorn, serving

CANARY = "CANARY-7f3a9-goal"
ASKED = [
    f"/api/v1/subjects/acct_4b71c9e20d8af315/recall?goal={CANARY}&k=3",
    f"/api/v1/runs/run_1/journal?key={CANARY}",
    f"/queues/?q={CANARY}",
]

pytestmark = pytest.mark.django_db(transaction=True)


def asked(base: str) -> None:
    for path in ASKED:
        # Refused (no key, not signed in): logged all the same.
        with contextlib.suppress(urllib.error.HTTPError):
            urllib.request.urlopen(f"{base}{path}", timeout=30)


def test_runserver_logs_paths_without_their_queries(tmp_path: Path) -> None:
    # make run's web server (tools/devserver.py starts it so).
    with serving(
        [sys.executable, "manage.py", "runserver", "127.0.0.1:{port}", "--noreload"],
        log=tmp_path / "output.log",
        env={
            "DATABASE_URL": database_url(),
            "DATABASE_POOL": "0",
            "DEBUG": "0",
            "HTTPS": "0",
            "SECRET_KEY": "access-log-test-key-" + "x" * 40,
            "DJANGO_RUNSERVER_HIDE_WARNING": "true",
        },
    ) as server:
        asked(server.base)
        server.stop()
    written = server.output()
    assert '"GET /api/v1/subjects/acct_4b71c9e20d8af315/recall?[dropped] HTTP/1.1" 401' in written
    assert '"GET /queues/?[dropped] HTTP/1.1" 302' in written
    assert CANARY.lower() not in written.lower()


def test_gunicorn_logs_paths_without_their_queries(tmp_path: Path) -> None:
    # As docs/deploy.md runs it, from the repository's folder (gunicorn.conf.py).
    access = tmp_path / "access.log"
    with gunicorn(f"--access-logfile={access}", log=tmp_path / "output.log") as web:
        asked(web.base)
        web.stop()
    written = web.output() + access.read_text()
    assert '"GET /api/v1/subjects/acct_4b71c9e20d8af315/recall?[dropped] HTTP/1.1" 401' in written
    assert '"GET /queues/?[dropped] HTTP/1.1" 302' in written
    assert CANARY.lower() not in written.lower()
