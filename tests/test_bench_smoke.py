"""`make bench-data` and `make bench` (``python -m tools.bench data`` and ``run``) at a tiny
scale, so that neither rots: the dataset is built, every path is measured over HTTP beside
its floor, the sweep in-process and in a Celery worker, and the report has a row of numbers
for each (in a temporary folder, never docs/benchmarks.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connection
from django.template import engines

from ledger.models import Memory
from tests.conftest import SUBJECT, TEST_REDIS_URL, signed_in
from tools.bench import report
from tools.bench.commands import Bench, BenchData
from tools.bench.layers import Layers, timed_request
from tools.bench.paths import PATHS
from tools.bench.servers import ROOT, Database

# Minutes long: started first (tests/conftest.py), so it never ends the run alone.
pytestmark = pytest.mark.long

SCALE = 300


@pytest.fixture
def scratch(django_db_blocker: Any) -> Iterator[Database]:
    """A database of the benchmark's own, migrated as `make bench-data` migrates it. (Not a
    copy of the test database: a template may have no other session, and a live server
    thread of an earlier test may still hold one.)"""
    with django_db_blocker.unblock():
        if connection.vendor != "postgresql":
            pytest.skip("The benchmark's dataset is built with PostgreSQL's SQL.")
        params = connection.settings_dict
    test_db = Database(
        f"postgres://{params['USER']}:{params['PASSWORD'] or ''}@{params['HOST']}:"
        f"{params['PORT'] or 5432}/{params['NAME']}"
    )
    scratch = test_db.sibling(f"{test_db.name}_bench")
    scratch.drop()
    scratch.create()
    try:
        env = {**os.environ, "DATABASE_URL": scratch.url, "DATABASE_POOL": "0", "DEBUG": "1"}
        manage("migrate", "--no-input", "-v", "0", env=env)
        yield scratch
    finally:
        scratch.drop()


def manage(*args: str, env: dict[str, str]) -> str:
    return run_python("manage.py", *args, env=env)


def bench(*args: str, env: dict[str, str]) -> str:
    """``python -m tools.bench …`` from the repository's root, as the Makefile runs it."""
    return run_python("-m", "tools.bench", *args, env=env)


def run_python(*args: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.worker
def test_bench_data_then_bench_report_every_path_beside_its_floor(
    scratch: Database, tmp_path: Path
) -> None:
    env = {**os.environ, "DATABASE_URL": scratch.url, "DATABASE_POOL": "0", "DEBUG": "1"}
    built = bench("data", "--scale", str(SCALE), env=env)
    assert "Bench agent key (read, write): ma_bench" in built

    output = tmp_path / "benchmarks.md"
    production = {
        **env,
        "DEBUG": "0",
        "HTTPS": "0",
        "SECRET_KEY": "bench-smoke-secret-key-not-for-anything-else-0123456789",
        "MEMORYADMIN_EMAIL": "0",
    }
    bench(
        "run",
        *("--output", str(output), "--redis-url", TEST_REDIS_URL, "--logs", str(tmp_path)),
        *("--rounds", "1", "--batch", "2", "--warmup", "1", "--burst", "4", "--concurrency", "2"),
        # The scratch database goes afterwards: the worker may sweep it, with no copy.
        *("--sweep-rounds", "1", "--sweep-batches", "1", "--sweep-in-place"),
        env=production,
    )

    results = json.loads(report.json_path(output, SCALE).read_text())
    assert [path["name"] for path in results["paths"]] == [path.name for path in PATHS]
    for path in results["paths"]:
        assert path["failures"] == [], path["name"]
        assert 0 < path["p50_ms"] <= path["p99_ms"], path["name"]
        assert path["rps"] > 0 and path["queries"] >= 1, path["name"]
        wanted = next(p.floors for p in PATHS if p.name == path["name"])
        assert [floor["name"] for floor in path["floors"]] == list(wanted)
        assert all(floor["p50_ms"] > 0 and floor["ratio"] > 0 for floor in path["floors"])
        assert path["in_process_ms"] > 0, path["name"]
        assert_shares(path["shares"])
    sweep = results["sweep"]
    assert sweep["failures"] == []
    assert sweep["rows_per_s"] > 0 and sweep["floor_rows_per_s"] > 0
    assert sweep["worker_rows"] == results["dataset"]["due for expiry"]
    assert sweep["worker_peak_mib"] > 0 and results["web_worker_peak_mib"] > 0
    found = results["retrieval"]
    assert found["model"] == "all-MiniLM-L6-v2" and found["embedded"] > 0
    assert found["backfill_per_s"] > 0 and found["goal_embed_ms"] > 0
    assert found["hybrid_ms"] > 0 and found["words_ms"] > 0 and found["ratio"] > 0
    assert found["model_rss_mib"] > found["bare_rss_mib"] > 0

    document = output.read_text()
    assert report.start_marker(SCALE) in document and report.end_marker(SCALE) in document
    assert "| in-process: SQL / Python / rendering |" in document
    for path in PATHS:
        assert f"| {path.name} |" in document


def assert_shares(shares: dict[str, float]) -> None:
    assert set(shares) == {"sql", "python", "rendering"}
    assert all(share >= 0 for share in shares.values())
    assert sum(shares.values()) == pytest.approx(100, abs=0.2)


@pytest.mark.django_db
def test_a_timed_page_splits_its_time_into_sql_python_and_rendering(
    remember: Callable[..., Memory], make_person: Callable[..., User]
) -> None:
    remember("Prefers invoices as PDF attachments.")
    client = signed_in(make_person("support-1", role="support"))
    layers = Layers()
    with timed_request(layers):
        response = client.get(f"/subjects/{SUBJECT}/")
    assert response.status_code == 200
    assert layers.requests == 1 and layers.ms_per_request()
    assert layers.sql > 0 and layers.rendering > 0 and layers.python > 0
    assert layers.sql + layers.rendering < layers.total
    assert_shares(layers.shares())


@pytest.mark.django_db
def test_sql_run_while_rendering_counts_as_sql_not_rendering() -> None:
    # The rows are read lazily, inside the template's loop, by a statement that takes 50 ms.
    rows = User.objects.raw("SELECT id FROM auth_user, pg_sleep(0.05)")
    template = engines["django"].from_string("{% for row in rows %}{{ row.pk }}{% endfor %}")
    layers = Layers()
    with timed_request(layers):
        template.render({"rows": rows})
    assert layers.sql >= 0.05
    assert layers.rendering < 0.05


@pytest.mark.django_db
def test_bench_data_never_replaces_memories_it_did_not_make(
    remember: Callable[..., Memory],
) -> None:
    memory = remember("Prefers invoices as PDF attachments.")
    with pytest.raises(CommandError, match="holds memories that the benchmark did not make"):
        call_command(BenchData(), "--scale", "100", "--replace")
    assert Memory.objects.filter(pk=memory.pk).exists()


@pytest.mark.django_db
def test_bench_without_a_dataset_says_to_build_one_first() -> None:
    with pytest.raises(CommandError, match="run `make bench-data`"):
        call_command(Bench())
