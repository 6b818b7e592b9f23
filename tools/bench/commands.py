"""The benchmark's two commands, ``python -m tools.bench data`` (``make bench-data``) and
``python -m tools.bench run`` (``make bench``): Django commands run outside ``manage.py``, so
the product's packages hold no trace of the benchmark. Import this after ``django.setup()``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from tools.bench import data, run, vocabulary

# Read by ``django.setup()``, which has run before a command parses its arguments: not offered.
TOO_LATE = {"--settings", "--pythonpath"}


class BenchData(BaseCommand):
    """`make bench-data SCALE=N`: a realistic dataset of N memories, for `make bench`."""

    help = (
        "Fill this (PostgreSQL) database with a benchmark dataset of SCALE memories, built "
        "with set-based SQL. Refuses a database holding data it did not make."
    )
    suppressed_base_arguments = TOO_LATE

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--scale", type=int, default=100_000, help="memories (default 100000)")
        parser.add_argument(
            "--replace", action="store_true", help="replace the benchmark data already there"
        )
        parser.add_argument("--seed", type=int, default=14, help="random seed (default 14)")

    def handle(self, *args: Any, scale: int, replace: bool, seed: int, **options: Any) -> None:
        self.stdout.write(f"Building a benchmark dataset of {scale:,} memories...")
        try:
            info = data.build(scale=scale, replace=replace, seed=seed, say=self.stdout.write)
        except (data.NotPostgres, data.NotBenchData, ValueError) as problem:
            raise CommandError(str(problem)) from problem
        for label, count in info.counts.items():
            self.stdout.write(f"  {label}: {count:,}")
        self.stdout.write(
            f"Built in {info.build_seconds:.0f} s. Subject with {vocabulary.BIG_SUBJECT} memories: "
            f"{info.big_subject}; memory with the long history: {info.history_memory}."
        )
        self.stdout.write(f"Bench agent key (read, write): {info.key}")


class Bench(BaseCommand):
    """`make bench`: every hot path over HTTP beside its floor, written to docs/benchmarks.md."""

    help = (
        "Benchmark the data `python -m tools.bench data` built: gunicorn on loopback, each "
        "path beside its floor, the expiry sweep in-process and in a Celery worker; writes "
        "the report."
    )
    suppressed_base_arguments = TOO_LATE

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", type=Path, default=Path("docs/benchmarks.md"))
        parser.add_argument(
            "--redis-url",
            default="redis://127.0.0.1:6379/14",
            help="Redis for the rate limits and the worker's broker",
        )
        parser.add_argument("--rounds", type=int, default=5)
        parser.add_argument("--batch", type=int, default=20, help="requests a path per round")
        parser.add_argument("--warmup", type=int, default=3, help="requests a path first")
        parser.add_argument("--burst", type=int, default=100, help="requests for requests/s")
        parser.add_argument("--concurrency", type=int, default=4, help="in flight in a burst")
        parser.add_argument("--workers", type=int, default=2, help="gunicorn sync workers")
        parser.add_argument("--sweep-rounds", type=int, default=3)
        parser.add_argument("--sweep-batches", type=int, default=4, help="500-row batches a round")
        parser.add_argument("--no-worker-sweep", action="store_true")
        parser.add_argument(
            "--sweep-in-place",
            action="store_true",
            help="the worker expires this database's due rows, no copy (a scratch database)",
        )
        parser.add_argument("--logs", type=Path, default=Path("/tmp"))

    def handle(self, *args: Any, **options: Any) -> None:
        if connection.vendor != "postgresql":
            raise CommandError(
                "bench needs the PostgreSQL database `python -m tools.bench data` filled: "
                "set DATABASE_URL."
            )
        for name in (
            "rounds",
            "batch",
            "warmup",
            "burst",
            "concurrency",
            "workers",
            "sweep_rounds",
            "sweep_batches",
        ):
            if options[name] < 1:
                raise CommandError(f"--{name.replace('_', '-')} must be 1 or more.")
        settings = run.Options(
            output=options["output"],
            redis_url=options["redis_url"],
            rounds=options["rounds"],
            batch=options["batch"],
            warmup=options["warmup"],
            burst=options["burst"],
            concurrency=options["concurrency"],
            workers=options["workers"],
            sweep_rounds=options["sweep_rounds"],
            sweep_batches=options["sweep_batches"],
            worker_sweep=not options["no_worker_sweep"],
            sweep_in_place=options["sweep_in_place"],
            logs=options["logs"],
        )
        try:
            run.run(settings, say=self.stdout.write)
        except run.NoBenchData as problem:
            raise CommandError(str(problem)) from problem


COMMANDS: dict[str, type[BaseCommand]] = {"data": BenchData, "run": Bench}
