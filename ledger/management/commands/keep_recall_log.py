from typing import Any

from django.core.management.base import BaseCommand, CommandError

from ledger.actions.recall_log import keep_recall_log
from ledger.reads import recall_log


class Command(BaseCommand):
    help = (
        "Keep the recall log: make the next months' partitions (PostgreSQL) and drop the "
        "months past MEMORYADMIN_RECALL_RETENTION_DAYS, or delete old reads (SQLite). Beat "
        "does the same every hour; run it as the tables' owner when the application's role "
        "may not."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        upkeep = keep_recall_log()
        if upkeep.skipped:
            raise CommandError(f"Nothing done: {upkeep.skipped}")
        for label, months in (("Made", upkeep.made), ("Dropped", upkeep.dropped)):
            if months:
                self.stdout.write(f"{label} the months {', '.join(months)}.")
        if upkeep.deleted:
            self.stdout.write(f"Deleted {upkeep.deleted} reads past the retention.")
        if recall_log.partitioned():
            kept = recall_log.months()
            self.stdout.write(
                f"The recall log holds {len(kept)} months, {kept[0]} to {kept[-1]}."
                if kept
                else "The recall log holds no month: every read is in the default partition."
            )
        if not upkeep.finished:
            self.stdout.write("Some of it is left for the next run (see the log).")
