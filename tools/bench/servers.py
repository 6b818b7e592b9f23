"""The processes a benchmark runs against: gunicorn and a Celery worker, as in production;
their peak memory; and the databases (made if missing, copied for the sweep, dropped)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent.parent
LARGE_DATABASE = 1 << 30


@dataclass(frozen=True)
class Database:
    """A PostgreSQL database named by a ``DATABASE_URL``-style address."""

    url: str

    @property
    def name(self) -> str:
        return urlsplit(self.url).path.lstrip("/")

    def sibling(self, name: str) -> Database:
        """The same server, another database: an address Django and psycopg both read."""
        return Database(urlunsplit(urlsplit(self.url)._replace(path=f"/{name}")))

    def connect(self, **kwargs: Any) -> psycopg.Connection[Any]:
        return psycopg.connect(self.url, **kwargs)

    def _server(self) -> psycopg.Connection[Any]:
        return self.sibling("postgres").connect(autocommit=True)

    def exists(self) -> bool:
        with self._server() as server:
            found = server.execute("SELECT 1 FROM pg_database WHERE datname = %s", [self.name])
            return found.fetchone() is not None

    def create(self, template: Database | None = None) -> None:
        with self._server() as server:
            if template is None:
                server.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.name)))
                return
            # A large database is copied file by file (after a checkpoint), far quicker than
            # through the WAL; a small one through the WAL, which waits for no checkpoint.
            size = server.execute("SELECT pg_database_size(%s)", [template.name]).fetchone()
            strategy = "FILE_COPY" if size and size[0] > LARGE_DATABASE else "WAL_LOG"
            server.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {} STRATEGY {}").format(
                    sql.Identifier(self.name), sql.Identifier(template.name), sql.SQL(strategy)
                )
            )

    def drop(self) -> None:
        with self._server() as server:
            server.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(self.name))
            )


def peak_rss_kib(pid: int) -> int:
    """The most resident memory the process ever had (``VmHWM``), in KiB; 0 if gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The name (field 2) is in parentheses and may hold spaces; the parent follows it.
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {process.returncode} before it listened.")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"gunicorn did not listen on port {port} within {timeout:.0f} s.")


def _stop(process: subprocess.Popen[bytes], quick: signal.Signals) -> None:
    """Stopped at once: its figures are read, and nothing it holds is worth waiting for."""
    if process.poll() is None:
        process.send_signal(quick)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class Web:
    port: int
    process: subprocess.Popen[bytes]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def worker_peak_rss_kib(self) -> int:
        return max((peak_rss_kib(pid) for pid in children(self.process.pid)), default=0)


@contextmanager
def gunicorn(env: Mapping[str, str], *, workers: int, log: Path) -> Iterator[Web]:
    """gunicorn with sync workers on a free loopback port, stopped on the way out."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "memoryadmin.wsgi",
        "--workers",
        str(workers),
        "--worker-class",
        "sync",
        "--bind",
        f"127.0.0.1:{port}",
        "--timeout",
        "120",
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=dict(env), stdout=out, stderr=out)
        try:
            _wait_for_port(port, process, timeout=60)
            yield Web(port, process)
        finally:
            # gunicorn's quick shutdown.
            _stop(process, signal.SIGINT)


@dataclass
class Worker:
    process: subprocess.Popen[bytes]

    def peak_rss_kib(self) -> int:
        # The solo pool runs tasks in the worker process itself.
        return peak_rss_kib(self.process.pid)


@contextmanager
def celery_worker(env: Mapping[str, str], *, log: Path) -> Iterator[Worker]:
    """One Celery worker (the solo pool: the task runs in the process measured)."""
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "memoryadmin",
        "worker",
        "--pool",
        "solo",
        "--loglevel",
        "INFO",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        # What the benchmark's commits queued (the audit's sealer) is not the sweep's work.
        "--purge",
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=dict(env), stdout=out, stderr=out)
        try:
            _wait_for_log(log, "ready", process, timeout=60)
            yield Worker(process)
        finally:
            # Celery's cold shutdown: the sweep is over, no task is running.
            _stop(process, signal.SIGQUIT)


def _wait_for_log(log: Path, word: str, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"The Celery worker exited with {process.returncode}; see {log}.")
        if word in log.read_text(errors="replace"):
            return
        time.sleep(0.1)
    raise RuntimeError(f"The Celery worker was not ready within {timeout:.0f} s; see {log}.")


def ensure_database(url: str) -> None:
    """``make bench-data``: the benchmark's database, made if missing."""
    database = Database(url)
    if not database.exists():
        database.create()
        print(f"Created the database {database.name}.")


if __name__ == "__main__":
    ensure_database(sys.argv[1] if len(sys.argv) > 1 else os.environ["DATABASE_URL"])
