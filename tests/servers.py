"""What the tests that start servers in other processes (gunicorn, make run, a replica)
share: a free port to give them, the test database's URL for them to read, and gunicorn
started, waited for and stopped in one place."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from django.db import connection

ROOT = Path(__file__).resolve().parent.parent
GUNICORN = str(Path(sys.executable).with_name("gunicorn"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def database_url() -> str:
    """This test process's database, for a server in another process to use."""
    db = connection.settings_dict
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


def environment(env: Mapping[str, str | None]) -> dict[str, str]:
    """This process's environment with ``env`` over it; ``None`` unsets a variable."""
    merged = {**os.environ, **env}
    return {name: value for name, value in merged.items() if value is not None}


@dataclass
class Running:
    """A process started for a test (a server by ``serving``): what it wrote to ``log``, and
    where it answers, if it is a server."""

    process: subprocess.Popen[bytes]
    log: Path
    base: str = ""

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        """Stopped as its process manager would (SIGTERM), killed if it will not go."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@contextmanager
def serving(command: list[str], *, log: Path, env: Mapping[str, str | None]) -> Iterator[Running]:
    """Run ``command`` (``{port}`` in it filled in with a free port) from the repository's
    folder, with ``env`` over this process's environment (``None`` unsets a variable) and
    its output in ``log``; hand it over once it answers (``/healthz``, which needs no
    database), and stop it afterwards."""
    port = free_port()
    with log.open("wb") as output:
        process = subprocess.Popen(
            [part.format(port=port) for part in command],
            cwd=ROOT,
            env=environment(env),
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    running = Running(process, log, f"http://127.0.0.1:{port}")
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{running.base}/healthz", timeout=2).close()
                break
            except OSError:
                assert process.poll() is None, f"{command[0]} exited:\n{running.output()}"
                assert time.monotonic() < deadline, (
                    f"{command[0]} never answered:\n{running.output()}"
                )
                time.sleep(0.1)
        yield running
    finally:
        running.stop()


def gunicorn(
    *options: str, log: Path, env: Mapping[str, str | None] | None = None
) -> AbstractContextManager[Running]:
    """gunicorn serving the app as deployed (DEBUG and HTTPS off, a secret key of its own)
    on the test database, with ``options`` and ``env`` added: ``with gunicorn(...) as web``
    answers at ``web.base``, and ``web.output()`` is everything it wrote."""
    deployed: dict[str, str | None] = {
        "DATABASE_URL": database_url(),
        "DATABASE_POOL": "0",
        "DEBUG": "0",
        "HTTPS": "0",
        "SECRET_KEY": "test-servers-key-" + "x" * 40,
    }
    command = [GUNICORN, "memoryadmin.wsgi", "--bind=127.0.0.1:{port}", *options]
    return serving(command, log=log, env=deployed | dict(env or {}))
