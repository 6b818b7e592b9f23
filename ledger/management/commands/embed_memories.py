from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from ledger.actions import vectors
from ledger.embeddings import EmbeddingUnavailable, configured_model


class Command(BaseCommand):
    help = (
        "Embed every live memory that has no vector of the configured model: the backfill "
        "after an upgrade or a change of model. Resumable: stop it at any point and run it "
        "again; what is done stays done."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--limit", type=int, default=None, help="embed at most this many, then stop"
        )
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args: Any, limit: int | None, no_progress: bool, **options: Any) -> None:
        if limit is not None and limit < 1:
            raise CommandError("--limit must be 1 or more.")
        model = configured_model()
        if model is None:
            raise CommandError("Embeddings are off (MEMORYADMIN_EMBEDDINGS=off): nothing to do.")
        waiting = vectors.missing()
        total = waiting if limit is None else min(waiting, limit)
        self.stdout.write(f"{waiting} live memories have no {model} vector; embedding {total}.")
        bar = tqdm(total=total, unit="memory", disable=no_progress or total == 0, file=self.stderr)
        try:
            done = vectors.embed_missing(limit=limit, progress=bar.update)
        except EmbeddingUnavailable as error:
            raise CommandError(
                f"The embedding backend failed ({error}). What was embedded is kept: run "
                "the command again to go on."
            ) from None
        finally:
            bar.close()
        self.stdout.write(f"Embedded {done} memories with {model}; {vectors.missing()} left.")
