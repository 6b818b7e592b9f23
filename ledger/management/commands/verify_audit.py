from datetime import UTC, timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ledger.actions import seals
from ledger.reads import audit_chain


class Command(BaseCommand):
    help = (
        "Check the audit's hash chain: report the first history row of each table that no "
        "longer matches its seal, and exit non-zero if there is one."
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
        if not no_seal:
            seals.seal_pending(full=True)
        checks = audit_chain.verify(stale_after=timedelta(minutes=stale_minutes))
        for check in checks:
            if check.stale:
                oldest = check.oldest_unsealed.astimezone(UTC) if check.oldest_unsealed else None
                self.stderr.write(
                    f"Warning: {check.chain.label}: {_rows(check.stale)} without a seal, the "
                    f"oldest written {oldest:%Y-%m-%d %H:%M:%S} UTC. Is the sealer running "
                    "(celery beat sends ledger.tasks.seal_audit every minute)?"
                )
        findings = [str(check.finding) for check in checks if check.finding]
        if findings:
            raise CommandError(
                "The audit chain does not follow:\n" + "\n".join(f"  {f}" for f in findings)
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


def _rows(count: int) -> str:
    return f"{count} row" if count == 1 else f"{count} rows"
