"""`make bench`: every hot path over HTTP beside its floor, written to docs/benchmarks.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from memoryadmin.bench import run


class Command(BaseCommand):
    help = (
        "Benchmark the data `bench_data` built: gunicorn on loopback, each path beside its "
        "floor, the expiry sweep in-process and in a Celery worker; writes the report."
    )

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
                "bench needs the PostgreSQL database bench_data filled: set DATABASE_URL."
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
