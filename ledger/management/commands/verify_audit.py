from datetime import UTC, timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ledger.actions import audit_verified
from ledger.reads.audit_verified import COMMAND_LINE


class Command(BaseCommand):
    help = (
        "Check the audit: each table's hash chain (the first history row that no longer "
        "matches its seal), every history row's MAC (rows the application did not write), "
        "every live row against its newest history version, and the chains against the "
        "latest signed checkpoint. Exit non-zero, naming the rows, if anything fails."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--no-seal",
            action="store_true",
            help="check the seals as they are, without sealing the rows still waiting first",
        )
        parser.add_argument(
            "--stale-minutes",
            type=int,
            default=5,
            help="warn about rows with no seal written longer ago than this (default 5)",
        )

    def handle(self, *args: Any, no_seal: bool, stale_minutes: int, **options: Any) -> None:
        if stale_minutes < 0:
            raise CommandError("--stale-minutes must be 0 or more.")
        # Recorded for /metrics and the Audit page (docs/observability.md, docs/audit.md).
        verified = audit_verified.verify(
            by=COMMAND_LINE, seal=not no_seal, stale_after=timedelta(minutes=stale_minutes)
        )
        checks, macs, live, file = verified.checks, verified.macs, verified.live, verified.file
        latest = file.latest
        refused = {check.chain.table: check.bad for check in macs}
        for check in checks:
            stale = check.stale - refused.get(check.chain.table, 0)
            if stale > 0:
                oldest = check.oldest_unsealed.astimezone(UTC) if check.oldest_unsealed else None
                self.stderr.write(
                    f"Warning: {check.chain.label}: {_rows(stale)} without a seal, the "
                    f"oldest written {oldest:%Y-%m-%d %H:%M:%S} UTC. Is the sealer running "
                    "(celery beat sends ledger.tasks.seal_audit every minute)?"
                )
        if verified.failed:
            raise CommandError(
                "\n".join(
                    title + "".join(f"\n  {line}" for line in lines)
                    for title, lines in verified.failed
                )
            )
        for check in checks:
            head = f", last seal {check.head[:16]}" if check.head else ""
            erased = f" ({check.erased} blanked by an erasure)" if check.erased else ""
            self.stdout.write(f"  {check.chain.label}: {_rows(check.checked)}{erased}{head}")
        checked = sum(check.checked for check in checks)
        unsealed = sum(check.unsealed for check in checks)
        self.stdout.write(
            f"The audit chain follows: {len(checks)} tables, {_rows(checked)} checked, "
            f"{unsealed} not sealed yet."
        )
        self.stdout.write(
            f"Every history row carries its MAC: {_rows(sum(c.checked for c in macs))} "
            f"checked; every live row of {len(live)} tracked models equals its newest version."
        )
        if latest is None:
            self.stdout.write(f"No checkpoint of this database in {file.path} yet.")
        else:
            when = latest.at.astimezone(UTC)
            self.stdout.write(
                f"The chains extend the checkpoint of {when:%Y-%m-%d %H:%M:%S} UTC "
                f"({file.path}, line {latest.line})."
            )


def _rows(count: int) -> str:
    return f"{count} row" if count == 1 else f"{count} rows"
