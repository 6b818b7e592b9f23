from datetime import UTC, timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ledger.actions import seals
from ledger.actions.audit_verified import record_verification
from ledger.reads import audit_chain, audit_checkpoints, audit_live, audit_macs


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
        if not no_seal:
            # Rows without a valid MAC are passed over: named below, never sealed.
            seals.seal_pending(full=True)
        checks = audit_chain.verify(stale_after=timedelta(minutes=stale_minutes))
        macs = audit_macs.check_macs()
        live = audit_live.check_live_rows()
        file = audit_checkpoints.read_checkpoints()
        latest = file.latest
        cut = audit_checkpoints.cut_back(latest) if latest else []
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
        sections = [
            ("The audit chain does not follow:", [str(c.finding) for c in checks if c.finding]),
            ("History rows the application did not write:", _named(macs, "history rows")),
            ("Live rows that differ from their history:", _named(live, "rows")),
            (f"The chain was cut back since its last checkpoint ({file.path}):", cut),
            (f"The checkpoint file {file.path} was tampered with:", file.tampered),
        ]
        failed = [(title, lines) for title, lines in sections if lines]
        # For /metrics: the result and its age (docs/observability.md).
        record_verification(ok=not failed)
        if failed:
            raise CommandError(
                "\n".join(
                    title + "".join(f"\n  {line}" for line in lines) for title, lines in failed
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


def _named(checks: list[Any], what: str) -> list[str]:
    """Each check's named rows, and how many more it found than it names."""
    lines: list[str] = []
    for check in checks:
        lines += check.problems
        if check.bad > len(check.problems):
            lines.append(f"… and {check.bad - len(check.problems)} more {what} like these")
    return lines


def _rows(count: int) -> str:
    return f"{count} row" if count == 1 else f"{count} rows"
