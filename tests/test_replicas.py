"""Reads from a real streaming replica (memoryadmin.replicas, docs/scale.md).

The machine's PostgreSQL allows no replication connections (pg_hba.conf), and a test does
not change the system's configuration; so this file makes its own pair in a temporary
folder: a primary (initdb), loaded with the test database's schema, and a replica of it made
with ``pg_basebackup -R``, streaming, each on a free port. gunicorn serves the app with
``DATABASE_URL`` on that primary and ``DATABASE_REPLICA_URLS`` on that replica. Replay on
the replica is paused (``pg_wal_replay_pause``) to make it fall behind, and the replica is
stopped to make it fail.
"""

from __future__ import annotations

import contextlib
import http.cookiejar
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from tests.conftest import PASSWORD, body
from tests.servers import free_port, gunicorn

ROOT = Path(__file__).resolve().parent.parent
SUBJECT = "acct_replica_test_0001"
PG_CONFIG = shutil.which("pg_config")

pytestmark = [
    pytest.mark.skipif(
        PG_CONFIG is None or connection.vendor != "postgresql",
        reason="needs PostgreSQL and its server programs (pg_config --bindir)",
    ),
    # pytest-django makes the test database (whose schema the pair's primary copies) only
    # for tests that ask for it.
    pytest.mark.django_db,
]


def as_postgres(*command: str) -> list[str]:
    """PostgreSQL's servers refuse to run as root: as root, run them as ``postgres``."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else list(command)


def client(bindir: Path, program: str, port: int) -> list[str]:
    """A PostgreSQL client program of the pair's version, for the server on ``port``."""
    return [str(bindir / program), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres"]


@dataclass
class Pair:
    folder: Path
    bin: Path
    name: str
    primary_port: int
    replica_port: int
    agent_key: str
    fresh_key: str

    def url(self, port: int) -> str:
        return f"postgres://postgres@127.0.0.1:{port}/{self.name}"

    def sql(self, port: int, query: str) -> str:
        return subprocess.run(
            client(self.bin, "psql", port)
            + ["-d", self.name, "-Atq", "-v", "ON_ERROR_STOP=1"]
            + ["-c", query],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()

    def start(self, role: str, port: int) -> None:
        subprocess.run(
            as_postgres(str(self.bin / "pg_ctl"), "-w", "-s", "-D", str(self.folder / role))
            + ["-l", str(self.folder / f"{role}.log"), "-o", server_options(self.folder, port)]
            + ["start"],
            check=True,
        )

    def stop(self, role: str, mode: str = "fast") -> None:
        subprocess.run(
            as_postgres(str(self.bin / "pg_ctl"), "-s", "-D", str(self.folder / role))
            + ["-m", mode, "stop"],
            check=False,
        )

    def caught_up(self) -> None:
        """Wait until the replica has replayed all the primary has written so far."""
        target = self.sql(self.primary_port, "SELECT pg_current_wal_lsn()")
        deadline = time.monotonic() + 30
        while self.sql(
            self.replica_port, f"SELECT pg_last_wal_replay_lsn() >= '{target}'::pg_lsn"
        ) != ("t"):
            assert time.monotonic() < deadline, "the replica did not catch up"
            time.sleep(0.05)

    def pause(self) -> None:
        self.caught_up()
        self.sql(self.replica_port, "SELECT pg_wal_replay_pause()")

    def resume(self) -> None:
        self.sql(self.replica_port, "SELECT pg_wal_replay_resume()")
        self.caught_up()


def server_options(folder: Path, port: int) -> str:
    # fsync off: a throwaway cluster, and the machine's disk is shared with other tests.
    settings = [f"port={port}", "listen_addresses=127.0.0.1", f"unix_socket_directories={folder}"]
    return " ".join(f"-c {setting}" for setting in [*settings, "fsync=off"])


@pytest.fixture(scope="module")
def pair(django_db_setup: None, django_db_blocker: Any) -> Iterator[Pair]:
    assert PG_CONFIG is not None
    bindir = Path(subprocess.check_output([PG_CONFIG, "--bindir"], text=True).strip())
    folder = Path(tempfile.mkdtemp(prefix="memoryadmin-replica-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    with django_db_blocker.unblock():
        test_db = connection.settings_dict
    name = str(test_db["NAME"])
    made = Pair(folder, bindir, name, free_port(), free_port(), "", "")
    try:
        subprocess.run(
            as_postgres(str(bindir / "initdb"), "-N", "-A", "trust", "-U", "postgres")
            + ["-D", str(folder / "primary")],
            check=True,
            capture_output=True,
        )
        made.start("primary", made.primary_port)
        subprocess.run(client(bindir, "createdb", made.primary_port) + [name], check=True)
        # The schema pytest-django migrated, copied as it is: no second run of the migrations.
        dump = subprocess.run(
            [str(bindir / "pg_dump"), "-h", str(test_db["HOST"]), "-p", str(test_db["PORT"])]
            + ["-U", str(test_db["USER"]), "--no-owner", "--schema-only", name],
            check=True,
            capture_output=True,
            env=os.environ | {"PGPASSWORD": str(test_db["PASSWORD"] or "")},
        ).stdout
        subprocess.run(
            client(bindir, "psql", made.primary_port) + ["-q", "-v", "ON_ERROR_STOP=1", name],
            input=dump,
            check=True,
            capture_output=True,
        )
        started = time.monotonic()
        subprocess.run(
            as_postgres(str(bindir / "pg_basebackup"), "-h", "127.0.0.1")
            + ["-p", str(made.primary_port), "-U", "postgres", "-D", str(folder / "replica")]
            + ["-R", "-X", "stream", "-c", "fast"],
            check=True,
        )
        print(f"pg_basebackup: {time.monotonic() - started:.2f} s")
        made.start("replica", made.replica_port)
        made.agent_key, made.fresh_key = people_and_agents(made.url(made.primary_port))
        made.caught_up()
        yield made
    finally:
        # Thrown away: no shutdown checkpoint to wait for.
        made.stop("replica", "immediate")
        made.stop("primary", "immediate")
        shutil.rmtree(folder, ignore_errors=True)


def people_and_agents(database_url: str) -> tuple[str, str]:
    """Made on the pair's primary: a support person, and two agents, whose keys are
    returned (the tests use the first; the second stays unused until one needs it)."""
    made = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", MAKE_PEOPLE_AND_AGENTS],
        cwd=ROOT,
        env=os.environ | {"DATABASE_URL": database_url, "DATABASE_POOL": "0", "DEBUG": "1"},
        check=True,
        capture_output=True,
        text=True,
    )
    first, second = made.stdout.split()[-2:]
    return first, second


MAKE_PEOPLE_AND_AGENTS = f"""
from ledger.actions.agents import create_agent
from ledger.actions.people import create_person
from ledger.actors import Actor
create_person(username="sam", role="support", password="{PASSWORD}", actor=Actor.system("test"))
for name in ("replica-reader", "replica-fresh"):
    print(create_agent(name=name, scopes=["read", "write"], actor=Actor.system("test"))[1])
"""


@dataclass
class Server:
    base: str
    log: Path
    # The last answer's Set-Cookie.
    cookie: str = ""

    def call(self, path: str, key: str, data: Any = None, cookie: str = "") -> tuple[int, Any]:
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        if cookie:
            headers["Cookie"] = cookie
        request = urllib.request.Request(
            f"{self.base}{path}",
            data=None if data is None else json.dumps(data).encode(),
            headers=headers,
            method="GET" if data is None else "POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                self.cookie = response.headers.get("Set-Cookie", "")
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as refused:
            return refused.code, refused.read()

    def recalled(self, key: str) -> set[str]:
        """The statements a recall of the subject serves (no goal: the newest)."""
        status, answer = self.call(f"/api/v1/subjects/{SUBJECT}/recall?k=20", key)
        assert status == 200, (status, self.log.read_text()[-3000:])
        return {memory["statement"] for memory in answer["memories"]}


@pytest.fixture(scope="module")
def serve(pair: Pair, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Server]]:
    """gunicorn (one process) reading from the pair, the replica's allowed lag given; one
    server for each lag, shared by the tests."""
    servers: dict[int, Server] = {}
    with contextlib.ExitStack() as running:

        def start(max_lag: int) -> Server:
            if max_lag not in servers:
                log = tmp_path_factory.mktemp("gunicorn") / "gunicorn.log"
                web = running.enter_context(
                    gunicorn(
                        "--workers=1",
                        "--threads=4",
                        log=log,
                        env={
                            "DATABASE_URL": pair.url(pair.primary_port),
                            "DATABASE_REPLICA_URLS": pair.url(pair.replica_port),
                            "MEMORYADMIN_REPLICA_MAX_LAG_SECONDS": str(max_lag),
                            "MEMORYADMIN_REPLICA_CHECK_SECONDS": "1",
                            "MEMORYADMIN_EMBEDDINGS": "off",
                            # As deployed: each process keeps a pool of connections to each
                            # database.
                            "DATABASE_POOL": "1",
                        },
                    )
                )
                servers[max_lag] = Server(web.base, log)
            return servers[max_lag]

        yield start


def remember(server: Server, key: str, statement: str) -> str:
    slot = "note." + "".join(c for c in statement.lower() if c.isalnum())[:40]
    status, answer = server.call(
        "/api/v1/memories", key, body(subject=SUBJECT, key=slot, statement=statement)
    )
    assert status == 201, answer
    return str(answer["memory"]["id"])


def test_a_recall_is_ranked_on_the_replica_and_recorded_on_the_primary(
    pair: Pair, serve: Callable[..., Server]
) -> None:
    server = serve(max_lag=3600)
    remember(server, pair.agent_key, "Likes the window seat on long flights.")
    pair.pause()
    try:
        later = remember(server, pair.agent_key, "Wants invoices sent on the first Monday.")
        time.sleep(1.2)  # the replica's lag checked again, now with WAL it has not replayed

        status, answer = server.call(f"/api/v1/subjects/{SUBJECT}/recall?k=20", pair.agent_key)
        assert status == 200
        served = {memory["statement"] for memory in answer["memories"]}
        # Within the allowed lag the replica's older state is what is ranked.
        assert "Likes the window seat on long flights." in served
        assert "Wants invoices sent on the first Monday." not in served
        assert server.call(f"/api/v1/memories/{later}", pair.agent_key)[0] == 404
        # The read's record was written to the primary, where the replica has not yet got it.
        recall = answer["recall"]
        counted = f"SELECT count(*) FROM ledger_recall WHERE id = {int(recall)}"
        assert pair.sql(pair.primary_port, counted) == "1"
        assert pair.sql(pair.replica_port, counted) == "0"
    finally:
        pair.resume()
    assert "Wants invoices sent on the first Monday." in server.recalled(pair.agent_key)


def test_a_request_that_writes_reads_its_own_writes_from_the_primary(
    pair: Pair, serve: Callable[..., Server]
) -> None:
    server = serve(max_lag=3600)
    remember(server, pair.agent_key, "Reads the statements on paper.")
    pair.pause()
    try:
        statement = "Asked to be called after six in the evening."
        remember(server, pair.agent_key, statement)
        # A browser that has just written is sent to the primary for a while (the cookie).
        assert server.cookie.startswith("memoryadmin-primary=1;")
        written = server.cookie.split(";")[0]
        time.sleep(1.2)
        assert statement not in server.recalled(pair.agent_key)
        status, answer = server.call(
            f"/api/v1/subjects/{SUBJECT}/recall?k=20", pair.agent_key, cookie=written
        )
        assert status == 200
        assert statement in {memory["statement"] for memory in answer["memories"]}
        # A key's first use stamps it, a write before the recall's reads: the same request
        # then reads from the primary. Its next recall, writing nothing first, does not.
        assert statement in server.recalled(pair.fresh_key)
        assert statement not in server.recalled(pair.fresh_key)
    finally:
        pair.resume()


def test_a_replica_further_behind_than_allowed_is_skipped(
    pair: Pair, serve: Callable[..., Server]
) -> None:
    server = serve(max_lag=1)
    remember(server, pair.agent_key, "Pays by bank transfer.")
    pair.pause()
    try:
        statement = "Moved to the Lisbon office in March."
        remember(server, pair.agent_key, statement)
        time.sleep(2.5)  # past the allowed second behind, and checked again
        assert statement in server.recalled(pair.agent_key)
    finally:
        pair.resume()
    log = server.log.read_text()
    assert "Skipping replica_1, reads go to the primary:" in log
    assert "more than the 1 s allowed" in log


def signed_in_session(server: Server) -> str:
    """Sign in as support through the form; the session cookie, alone."""
    jar = http.cookiejar.CookieJar()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    form = browser.open(f"{server.base}/accounts/login/").read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    assert token is not None
    fields = {"username": "sam", "password": PASSWORD, "csrfmiddlewaretoken": token[1]}
    browser.open(f"{server.base}/accounts/login/", urllib.parse.urlencode(fields).encode())
    # Signing in wrote, so the browser was also sent to the primary for a while: this is the
    # same browser once that has passed.
    cookies = {cookie.name: cookie.value for cookie in jar}
    assert "memoryadmin-primary" in cookies
    return f"sessionid={cookies['sessionid']}"


def page(server: Server, session: str) -> str:
    request = urllib.request.Request(
        f"{server.base}/subjects/{SUBJECT}/", headers={"Cookie": session}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.url.endswith(f"/subjects/{SUBJECT}/")  # not sent to sign in
        return str(response.read().decode())


def test_a_subject_page_is_read_from_the_replica_with_its_session_from_the_primary(
    pair: Pair, serve: Callable[..., Server]
) -> None:
    server = serve(max_lag=3600)
    remember(server, pair.agent_key, "Prefers paper statements.")
    pair.pause()
    try:
        # Signed in while the replica is paused: the session exists on the primary only.
        session = signed_in_session(server)
        statement = "Travels to Porto every spring."
        remember(server, pair.agent_key, statement)
        time.sleep(1.2)
        shown = page(server, session)
        assert "Prefers paper statements." in shown
        assert statement not in shown
        assert statement in page(server, f"{session}; memoryadmin-primary=1")
    finally:
        pair.resume()
    assert statement in page(server, session)


def test_a_stopped_replica_is_skipped_and_every_answer_stays_right(
    pair: Pair, serve: Callable[..., Server]
) -> None:
    server = serve(max_lag=3600)
    remember(server, pair.agent_key, "Keeps two cats.")
    time.sleep(1.2)
    assert "Keeps two cats." in server.recalled(pair.agent_key)  # pooled connections open
    pair.stop("replica")
    try:
        for n in range(5):
            statement = f"Changed the delivery address, time {n}."
            memory = remember(server, pair.agent_key, statement)
            assert statement in server.recalled(pair.agent_key)
            status, answer = server.call(f"/api/v1/memories/{memory}", pair.agent_key)
            assert status == 200, answer
            assert answer["statement"] == statement
    finally:
        pair.start("replica", pair.replica_port)
    assert "Skipping replica_1, reads go to the primary: " in server.log.read_text()
