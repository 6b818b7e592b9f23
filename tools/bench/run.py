"""`make bench`: every path of ``paths.PATHS`` over HTTP beside its floors, and the sweep.

Order of a run:

1. In-process, with Django's test client against the benchmark database: each path's
   queries per request (``CaptureQueriesContext``, after warm-up requests) and the SQL its
   floors replay; then a batch of requests timed by layer (``layers``: SQL, Python,
   rendering), so that a regression points at its layer.
2. gunicorn (sync workers, DEBUG off, the connection pool on, Redis for the rate limits)
   on loopback, and rounds: in each, every path's batch of requests then each of its
   floors' batch, so that noise on this machine hits a path and its floor alike. Then a
   burst per path with a bounded number of requests in flight: requests per second.
3. The expiry sweep in-process, rounds of the sweep and of its floor alternating, each in a
   transaction rolled back (the due rows stay due for the next round and the next run).
0. Retrieval in-process (``retrieval.measure``): backfill, embedding, ranking with and
   without meaning, and the model's memory; it embeds the subjects the recalls ask about.
4. A Celery worker sent the sweep task on a copy of the database, which it really expires:
   the worker's rows per second, committed and sealed, and its peak memory.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import os
import platform
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from celery import Celery
from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection, connections, transaction
from django.db.models import Count
from django.test import Client as DjangoClient
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from ledger.actions.expiry import expire_due
from ledger.models import Agent, Subject
from memoryadmin.celery import app as celery_app
from tools.bench import data, report, retrieval, vocabulary
from tools.bench.floors import Replay, SweepFloor, WriteInserts, ranking_statement
from tools.bench.layers import Layers, timed_request
from tools.bench.load import Client, Samples
from tools.bench.paths import PATHS, Ask, BenchPath, Fixture
from tools.bench.retrieval import RetrievalResult
from tools.bench.servers import Database, celery_worker, gunicorn

# High enough never to refuse a benchmark's request; a deployment keeps its own.
UNLIMITED = "1000000/min"
SWEEP_BATCH = 500


@dataclass(frozen=True)
class Options:
    output: Path
    redis_url: str
    rounds: int = 5
    batch: int = 20
    warmup: int = 3
    burst: int = 100
    concurrency: int = 4
    workers: int = 2
    sweep_rounds: int = 3
    sweep_batches: int = 4
    worker_sweep: bool = True
    # The worker expires this database's due rows for real, with no copy: for a database
    # that is thrown away afterwards (the smoke test's).
    sweep_in_place: bool = False
    logs: Path = Path("/tmp")


@dataclass
class FloorResult:
    name: str
    p50_ms: float | None
    ratio: float | None


@dataclass
class PathResult:
    name: str
    p50_ms: float | None = None
    p99_ms: float | None = None
    rps: float | None = None
    queries: int | None = None
    kib: float | None = None
    # In-process (the test client): a request's time, and the percentage of it spent in
    # each layer (``layers.LAYERS``).
    in_process_ms: float | None = None
    shares: dict[str, float] = field(default_factory=dict)
    floors: list[FloorResult] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


@dataclass
class SweepResult:
    rows_per_s: float | None = None
    floor_rows_per_s: float | None = None
    share: float | None = None
    queries_per_batch: float | None = None
    rows: int = 0
    worker_rows: int = 0
    worker_seconds: float | None = None
    worker_rows_per_s: float | None = None
    worker_peak_mib: float | None = None
    failures: list[str] = field(default_factory=list)


@dataclass
class Results:
    scale: int
    date: str
    machine: dict[str, str]
    dataset: dict[str, Any]
    options: dict[str, Any]
    paths: list[PathResult]
    sweep: SweepResult
    retrieval: RetrievalResult = field(default_factory=RetrievalResult)
    web_worker_peak_mib: float | None = None
    seconds: float = 0.0


class NoBenchData(RuntimeError):
    pass


def ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 3)


def ratio(value: float | None, floor: float | None) -> float | None:
    if value is None or not floor:
        return None
    return round(value / floor, 2)


def run(options: Options, *, say: Callable[[str], None] = print) -> Results:
    started = time.monotonic()
    load_before = os.getloadavg()[0]
    options.logs.mkdir(parents=True, exist_ok=True)
    info = data.read_info()
    if info is None:
        raise NoBenchData(
            "This database holds no benchmark data: run `make bench-data` (SCALE=N) first, "
            "with the same DATABASE_URL."
        )
    fixture = _fixture(info)
    headers = _headers(info)
    # This process's own requests queue the sealer too: on the same broker as gunicorn's.
    celery_app.conf.broker_url = options.redis_url
    say(f"Benchmark of {info.scale:,} memories, {len(PATHS)} paths and the expiry sweep.")
    found = retrieval.measure(fixture, say)
    captured = {path.name: _capture(path, fixture, headers, options) for path in PATHS}
    results = {path.name: captured[path.name][0] for path in PATHS}
    database = Database(_database_url())
    env = _production_env(options, database)
    # The ORM stays out of the event loop: the floors' rows are looked up here.
    inserts = WriteInserts(
        subject_id=Subject.objects.get(ref=fixture.subject(0)).pk,
        agent_id=Agent.objects.get(name=vocabulary.BENCH_AGENT).pk,
    )
    web_rss = asyncio.run(
        _over_http(options, fixture, headers, captured, results, inserts, env, say)
    )
    sweep = _sweep(options, database, env, say)
    machine = _machine()
    machine["load average"] = f"{load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    outcome = Results(
        scale=info.scale,
        date=datetime.now(UTC).isoformat(timespec="seconds"),
        machine=machine,
        dataset={"built_at": info.built_at, "build_seconds": info.build_seconds, **info.counts},
        options={
            "rounds": options.rounds,
            "batch": options.batch,
            "burst": options.burst,
            "concurrency": options.concurrency,
            "workers": options.workers,
        },
        paths=list(results.values()),
        sweep=sweep,
        retrieval=found,
        web_worker_peak_mib=web_rss,
        seconds=round(time.monotonic() - started, 1),
    )
    report.write(options.output, asdict(outcome))
    say(f"Wrote {options.output} ({outcome.seconds:.0f} s).")
    return outcome


# --- what the requests need -----------------------------------------------------------------


def _fixture(info: data.Info) -> Fixture:
    # Subjects of a handful of memories, memory not paused: the agent's everyday calls (not
    # one of the few with hundreds, which the writes would push past the policy's cap).
    subjects = list(
        Subject.objects.filter(memory_paused=False)
        .annotate(held=Count("memories"))
        .filter(held__lte=max(vocabulary.SMALL_SIZES))
        .order_by("?")
        .values_list("ref", flat=True)[:200]
    )
    return Fixture(
        big_subject=info.big_subject, history_memory=info.history_memory, subjects=subjects
    )


def _headers(info: data.Info) -> dict[str, dict[str, str]]:
    """Who asks: the bench agent's key, and a support and an admin person's sessions."""
    sessions = {}
    for who, username in (("support", info.support), ("admin", info.admin)):
        client = DjangoClient()
        client.force_login(User.objects.get(username=username))
        sessions[who] = client.cookies[settings.SESSION_COOKIE_NAME].value
    cookie = settings.SESSION_COOKIE_NAME
    return {
        "agent": {"Authorization": f"Bearer {info.key}"},
        "support": {"Cookie": f"{cookie}={sessions['support']}"},
        "admin": {"Cookie": f"{cookie}={sessions['admin']}"},
    }


def _django_client(headers: dict[str, str]) -> DjangoClient:
    extra = {"HTTP_HOST": "127.0.0.1"}
    if "Authorization" in headers:
        extra["HTTP_AUTHORIZATION"] = headers["Authorization"]
    # A view that fails is a finding of the run, reported beside its path, not a crash.
    client = DjangoClient(raise_request_exception=False, **extra)  # type: ignore[arg-type]
    if "Cookie" in headers:
        name, _, value = headers["Cookie"].partition("=")
        client.cookies[name] = value
    return client


def _request(client: DjangoClient, ask: Ask) -> Any:
    if ask.method == "POST":
        return client.post(
            ask.url, data=json.dumps(ask.body), content_type="application/json", secure=True
        )
    return client.get(ask.url, secure=True)


# Numbers of requests made in-process, out of the way of the HTTP run's.
_IN_PROCESS = itertools.count(10_000_000)


def _capture(
    path: BenchPath, fixture: Fixture, headers: dict[str, dict[str, str]], options: Options
) -> tuple[PathResult, tuple[str, ...]]:
    """Queries per request and the SQL of one request, with the settings gunicorn runs
    under (Redis for the rate limits, so no query counts a request); then a batch of
    requests timed by layer, apart from the capture, which costs time of its own."""
    result = PathResult(path.name)
    client = _django_client(headers[path.who])
    layers = Layers()
    with override_settings(
        REDIS_URL=options.redis_url,
        MEMORYADMIN_RATE_READS=UNLIMITED,
        MEMORYADMIN_RATE_WRITES=UNLIMITED,
    ):
        for _ in range(options.warmup):
            _request(client, path.ask(fixture, next(_IN_PROCESS)))
        with CaptureQueriesContext(connection) as queries:
            response = _request(client, path.ask(fixture, next(_IN_PROCESS)))
        # Read before the next request, whose start empties the queries' log.
        statements = tuple(q["sql"] for q in queries.captured_queries)
        for _ in range(options.batch):
            ask = path.ask(fixture, next(_IN_PROCESS))
            with timed_request(layers):
                _request(client, ask)
    if response.status_code != path.status:
        result.failures.append(f"in-process: {response.status_code} {response.content[:200]!r}")
    result.queries = len(statements)
    result.kib = round(len(response.content) / 1024, 1)
    result.in_process_ms = layers.ms_per_request()
    result.shares = layers.shares()
    return result, statements


# --- over HTTP ------------------------------------------------------------------------------


def _database_url() -> str:
    return str(os.environ.get("DATABASE_URL", ""))


def _production_env(options: Options, database: Database) -> dict[str, str]:
    # Tasks go to the broker, as in production, never run inline.
    inherited = {k: v for k, v in os.environ.items() if k != "CELERY_TASK_ALWAYS_EAGER"}
    return {
        **inherited,
        "DATABASE_URL": database.url,
        "DATABASE_POOL": "1",
        "DEBUG": "0",
        "HTTPS": "0",
        # The same key as this process: the sessions made here must be valid there.
        "SECRET_KEY": settings.SECRET_KEY,
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "REDIS_URL": options.redis_url,
        # Commits queue the audit's sealer; the sweep's worker starts by purging them.
        "CELERY_BROKER_URL": options.redis_url,
        "MEMORYADMIN_RATE_READS": UNLIMITED,
        "MEMORYADMIN_RATE_WRITES": UNLIMITED,
        "MEMORYADMIN_EMAIL": "0",
        "LOG_LEVEL": "WARNING",
    }


@dataclass
class _Runner:
    """What one path's round needs: its requests, and its floors ready to run."""

    path: BenchPath
    asks: Iterator[Ask]
    floors: dict[str, Callable[[], Any]]
    samples: Samples = field(default_factory=Samples)
    floor_samples: dict[str, Samples] = field(default_factory=dict)


async def _over_http(
    options: Options,
    fixture: Fixture,
    headers: dict[str, dict[str, str]],
    captured: dict[str, tuple[PathResult, tuple[str, ...]]],
    results: dict[str, PathResult],
    inserts: WriteInserts,
    env: dict[str, str],
    say: Callable[[str], None],
) -> float | None:
    with ExitStack() as stack:
        web = stack.enter_context(
            gunicorn(env, workers=options.workers, log=options.logs / "bench-gunicorn.log")
        )
        # The floors' statements run with the session settings the application's run with.
        raw = stack.enter_context(
            psycopg.connect(env["DATABASE_URL"], autocommit=True, options=settings.POSTGRES_SESSION)
        )
        client = Client(web.base, limit=options.concurrency)
        try:
            runners = [
                _runner(path, fixture, captured[path.name][1], inserts, raw) for path in PATHS
            ]
            trivial = next(r for r in runners if r.path.name.startswith("trivial"))
            say(f"gunicorn with {options.workers} sync workers on {web.base}; warming up.")
            for runner in runners:
                await client.sequence(
                    [next(runner.asks) for _ in range(options.warmup)],
                    headers[runner.path.who],
                    runner.path.status,
                )
            for number in range(options.rounds):
                for runner in runners:
                    await _round(client, runner, trivial, headers, options.batch)
                say(f"  round {number + 1} of {options.rounds} done")
            for runner in runners:
                result = results[runner.path.name]
                asks = [next(runner.asks) for _ in range(options.burst)]
                wall, burst = await client.burst(
                    asks,
                    headers[runner.path.who],
                    runner.path.status,
                    concurrency=options.concurrency,
                )
                result.rps = round(options.burst / wall, 1)
                result.failures += burst.failures[:3]
                _summarise(runner, result)
            say("  bursts done")
            return round(web.worker_peak_rss_kib() / 1024, 1)
        finally:
            await client.close()


def _runner(
    path: BenchPath,
    fixture: Fixture,
    statements: tuple[str, ...],
    inserts: WriteInserts,
    raw: psycopg.Connection[Any],
) -> _Runner:
    counter = itertools.count()
    asks = (path.ask(fixture, next(counter)) for _ in itertools.count())
    floors: dict[str, Callable[[], Any]] = {}
    ranking = ranking_statement(statements)
    for name in path.floors:
        if name == "replay" and statements:
            floors[name] = functools.partial(Replay(statements).run, raw)
        elif name == "ranking" and ranking is not None:
            floors[name] = functools.partial(ranking.run, raw)
        elif name == "inserts":
            floors[name] = functools.partial(inserts.run, raw)
        elif name == "trivial":
            # Over HTTP, like the path: _round sends it.
            floors[name] = functools.partial(float, 0)
    return _Runner(path, asks, floors)


async def _round(
    client: Client,
    runner: _Runner,
    trivial: _Runner,
    headers: dict[str, dict[str, str]],
    batch: int,
) -> None:
    path = runner.path
    asks = [next(runner.asks) for _ in range(batch)]
    runner.samples.add(await client.sequence(asks, headers[path.who], path.status))
    for name, floor in runner.floors.items():
        samples = runner.floor_samples.setdefault(name, Samples())
        if name == "trivial":
            asks = [next(trivial.asks) for _ in range(batch)]
            samples.add(await client.sequence(asks, headers[trivial.path.who], 200))
            continue
        samples.seconds += [floor() for _ in range(batch)]


def _summarise(runner: _Runner, result: PathResult) -> None:
    result.p50_ms = ms(runner.samples.p50())
    result.p99_ms = ms(runner.samples.p99())
    result.failures += runner.samples.failures[:3]
    for name in runner.path.floors:
        samples = runner.floor_samples.get(name)
        p50 = samples.p50() if samples else None
        result.floors.append(FloorResult(name, ms(p50), ratio(runner.samples.p50(), p50)))


# --- the sweep ------------------------------------------------------------------------------


def _sweep(
    options: Options, database: Database, env: dict[str, str], say: Callable[[str], None]
) -> SweepResult:
    result = SweepResult()
    floor = SweepFloor(SWEEP_BATCH)
    rows = seconds = floor_rows = floor_seconds = 0.0
    queries = 0
    with psycopg.connect(database.url, autocommit=True, options=settings.POSTGRES_SESSION) as raw:
        for _ in range(options.sweep_rounds):
            done, spent, asked = _sweep_round(options.sweep_batches)
            rows, seconds, queries = rows + done, seconds + spent, queries + asked
            done_floor, spent_floor = floor.run(raw, batches=options.sweep_batches)
            floor_rows, floor_seconds = floor_rows + done_floor, floor_seconds + spent_floor
    result.rows = int(rows)
    if rows and seconds:
        result.rows_per_s = round(rows / seconds)
        result.queries_per_batch = round(queries / (rows / SWEEP_BATCH), 1)
    if floor_rows and floor_seconds:
        result.floor_rows_per_s = round(floor_rows / floor_seconds)
    if result.rows_per_s and result.floor_rows_per_s:
        result.share = round(result.rows_per_s / result.floor_rows_per_s, 3)
    say(f"Sweep in-process: {result.rows_per_s} rows/s; floor {result.floor_rows_per_s} rows/s.")
    if options.worker_sweep:
        _worker_sweep(options, database, env, result, say)
    return result


def _sweep_round(batches: int) -> tuple[int, float, int]:
    """Rows the sweep expired, its seconds and its queries, in a transaction rolled back."""
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        done = expire_due(batch_size=SWEEP_BATCH, max_batches=batches)
        spent = time.perf_counter() - started
        transaction.set_rollback(True)
    return done.memories + done.ledger_entries, spent, len(queries.captured_queries)


DUE = "FROM ledger_memory WHERE status IN ('active', 'pending') AND expires_at <= now()"
# The history tables the sweep writes to: it is done when each is sealed up to its last row.
SWEPT_HISTORY = ("ledger_historicalmemory", "ledger_historicalledgerentry")
UNSEALED = " OR ".join(
    f"EXISTS (SELECT 1 FROM {table} WHERE history_id > COALESCE((SELECT max(row_id) FROM "
    f"ledger_auditseal WHERE \"table\" = '{table}'), 0))"
    for table in SWEPT_HISTORY
)


def _due(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        found = conn.execute(f"SELECT count(*) {DUE}").fetchone()
    return int(found[0]) if found else 0


def _busy(conn: psycopg.Connection[Any]) -> bool:
    """Whether any row is still due or any history row unsealed: two index probes, so the
    poll costs the same at any scale (a count of the due rows, every 0.2 s, took half a
    core from the worker it measured at 1,000,000)."""
    found = conn.execute(f"SELECT EXISTS (SELECT 1 {DUE}) OR {UNSEALED}").fetchone()
    return bool(found and found[0])


def _worker_sweep(
    options: Options,
    database: Database,
    env: dict[str, str],
    result: SweepResult,
    say: Callable[[str], None],
) -> None:
    if options.sweep_in_place:
        _sweep_in_worker(database, options, env, result)
    else:
        copy = database.sibling(f"{database.name}_sweep")
        copy.drop()
        for conn in connections.all():
            conn.close()
        _copy(copy, database)
        try:
            _sweep_in_worker(copy, options, env, result)
        finally:
            copy.drop()
    say(f"Sweep in a Celery worker: {result.worker_rows_per_s} rows/s.")


def _sweep_in_worker(
    target: Database, options: Options, env: dict[str, str], result: SweepResult
) -> None:
    """The sweep task sent to a worker on ``target``, until nothing there is due and every
    history row it wrote is sealed: the same work at every scale (when a task's batches run
    out, the sealers its commits queued run before it goes on, in the same worker)."""
    due = _due(target.url)
    worker_env = {**env, "DATABASE_URL": target.url, "CELERY_BROKER_URL": options.redis_url}
    with (
        celery_worker(worker_env, log=options.logs / "bench-celery.log") as worker,
        psycopg.connect(target.url, autocommit=True) as poll,
    ):
        started = time.monotonic()
        Celery(broker=options.redis_url).send_task("ledger.tasks.expire_due")
        deadline = started + 3600
        while _busy(poll) and time.monotonic() < deadline:
            time.sleep(0.2)
        spent = time.monotonic() - started
        left = _due(target.url)
        result.worker_rows = due - left
        result.worker_seconds = round(spent, 2)
        if due - left:
            result.worker_rows_per_s = round((due - left) / spent)
        if left or _busy(poll):
            result.failures.append(f"The worker left {left} of {due} due rows or some unsealed.")
        result.worker_peak_mib = round(worker.peak_rss_kib() / 1024, 1)


def _copy(copy: Database, source: Database) -> None:
    # Autovacuum may be on the source for a moment after the writes: try again shortly.
    for attempt in range(30):
        try:
            copy.create(template=source)
            return
        except psycopg.errors.ObjectInUse:
            if attempt == 29:
                raise
            time.sleep(1)


def _machine() -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        postgres = str(cursor.fetchone()[0])
    cpu = ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    memory = ""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            memory = f"{int(line.split()[1]) / 1024 / 1024:.0f} GiB"
    return {
        "cpu": cpu,
        "cores": str(os.cpu_count()),
        "memory": memory,
        "postgresql": postgres,
        "python": platform.python_version(),
        "os": f"{platform.system()} {platform.release()}",
    }
