"""What people and agents ask in a query string (a recall's goal, a note's key, a search
for a name) never reaches an access log: each server that writes one, started as it is
run, logs the path and drops the query."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection

from tests.servers import free_port

ROOT = Path(__file__).resolve().parent.parent
CANARY = "CANARY-7f3a9-goal"
ASKED = [
    f"/api/v1/subjects/acct_4b71c9e20d8af315/recall?goal={CANARY}&k=3",
    f"/api/v1/runs/run_1/journal?key={CANARY}",
    f"/queues/?q={CANARY}",
]

pytestmark = pytest.mark.django_db(transaction=True)


def environment() -> dict[str, str]:
    db = connection.settings_dict
    url = f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    return os.environ | {
        "DATABASE_URL": url,
        "DATABASE_POOL": "0",
        "DEBUG": "0",
        "HTTPS": "0",
        "SECRET_KEY": "access-log-test-key-" + "x" * 40,
        "DJANGO_RUNSERVER_HIDE_WARNING": "true",
    }


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[object]:
    """Start a server command (its ``{port}`` filled in) with its output in a file; asks
    each of ``ASKED`` once it answers, and returns everything it wrote."""
    started: list[subprocess.Popen[bytes]] = []

    def run(command: list[str], log: Path) -> str:
        port = free_port()
        with (tmp_path / "output.log").open("wb") as output:
            server = subprocess.Popen(
                [part.format(port=port) for part in command],
                cwd=ROOT,
                env=environment(),
                stdout=output,
                stderr=subprocess.STDOUT,
            )
            started.append(server)
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60
            while True:
                try:
                    urllib.request.urlopen(f"{base}/api/schema/", timeout=2)
                    break
                except OSError:
                    assert time.monotonic() < deadline, (tmp_path / "output.log").read_text()
                    time.sleep(0.3)
            for path in ASKED:
                # Refused (no key, not signed in): logged all the same.
                with contextlib.suppress(urllib.error.HTTPError):
                    urllib.request.urlopen(f"{base}{path}", timeout=30)
            server.terminate()
            server.wait(timeout=30)
        return (tmp_path / "output.log").read_text() + (log.read_text() if log.exists() else "")

    yield run
    for server in started:
        if server.poll() is None:
            server.kill()


def test_runserver_logs_paths_without_their_queries(serve, tmp_path: Path) -> None:
    # make run's web server (tools/devserver.py starts it so).
    written = serve(
        [sys.executable, "manage.py", "runserver", "127.0.0.1:{port}", "--noreload"],
        tmp_path / "none",
    )
    assert '"GET /api/v1/subjects/acct_4b71c9e20d8af315/recall?[dropped] HTTP/1.1" 401' in written
    assert '"GET /queues/?[dropped] HTTP/1.1" 302' in written
    assert CANARY.lower() not in written.lower()


def test_gunicorn_logs_paths_without_their_queries(serve, tmp_path: Path) -> None:
    # As docs/deploy.md runs it, from the repository's folder (gunicorn.conf.py).
    access = tmp_path / "access.log"
    written = serve(
        [
            str(Path(sys.executable).with_name("gunicorn")),
            "memoryadmin.wsgi",
            "--bind=127.0.0.1:{port}",
            f"--access-logfile={access}",
        ],
        access,
    )
    assert '"GET /api/v1/subjects/acct_4b71c9e20d8af315/recall?[dropped] HTTP/1.1" 401' in written
    assert '"GET /queues/?[dropped] HTTP/1.1" 302' in written
    assert CANARY.lower() not in written.lower()
