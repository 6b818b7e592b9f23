"""`make bench-data SCALE=N`: a realistic dataset of N memories, for `make bench`."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryadmin.bench import data


class Command(BaseCommand):
    help = (
        "Fill this (PostgreSQL) database with a benchmark dataset of SCALE memories, built "
        "with set-based SQL. Refuses a database holding data it did not make."
    )

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
            f"Built in {info.build_seconds:.0f} s. Subject with {data.BIG_SUBJECT} memories: "
            f"{info.big_subject}; memory with the long history: {info.history_memory}."
        )
        self.stdout.write(f"Bench agent key (read, write): {info.key}")
