"""``manage.py import_memories FILE --agent NAME``: the API's import, from the command line.

The same checks and the same write gate as ``POST /api/v1/imports``, as the named agent's
writes (its restrictions apply; an operator at the server is not held to its API rate).
Exits 0 when no line was refused, 1 when any was (the others were still imported), and 2
when the file or the options cannot be used (nothing written).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ledger.actions.imports import ImportReport, import_memories
from ledger.api.imports import ImportReportSerializer, ImportRequestSerializer
from ledger.models import Agent, Memory
from ledger.rules.import_formats import FORMATS, MAX_CHARS, UnreadableFile

UNUSABLE = 2


class Command(BaseCommand):
    help = (
        "Import memories from a file (a memoryadmin export, a JSON object of statements "
        "per subject, or plain text lines) through the write gate, and print the report."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")
        parser.add_argument("--agent", required=True, help="the existing agent that writes them")
        parser.add_argument("--format", choices=FORMATS, default="auto")
        parser.add_argument(
            "--subject", help="a plain text file's subject (or an export's new one)"
        )
        parser.add_argument("--kind", choices=Memory.Kind.values, default="preference")
        parser.add_argument("--name", help="the name in each source ref (default: the file's)")
        parser.add_argument("--dry-run", action="store_true", help="decide, write nothing")
        parser.add_argument("--json", action="store_true", help="print the report as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        agent = Agent.objects.filter(name=options["agent"]).first()
        if agent is None or not agent.is_active:
            raise CommandError(f"No active agent named '{options['agent']}'.", returncode=UNUSABLE)
        path = Path(options["file"])
        try:
            if path.stat().st_size > 4 * MAX_CHARS:
                raise CommandError(f"{path} is too large to import.", returncode=UNUSABLE)
            content = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise CommandError(f"Cannot read {path}: {error}", returncode=UNUSABLE) from error
        request = {
            "name": options["name"] or path.name,
            "content": content,
            "format": options["format"],
            "kind": options["kind"],
            "dry_run": options["dry_run"],
        }
        if options["subject"]:
            request["subject"] = options["subject"]
        incoming = ImportRequestSerializer(data=request)
        if not incoming.is_valid():
            raise CommandError(_errors(incoming.errors), returncode=UNUSABLE)
        try:
            format, lines = incoming.lines()
        except UnreadableFile as error:
            problems = "\n".join(f"  {p}" for p in error.problems)
            raise CommandError(
                f"Nothing was imported from {path}:\n{problems}", returncode=UNUSABLE
            ) from error
        report = import_memories(
            agent=agent,
            name=request["name"],
            format=format,
            lines=lines,
            dry_run=options["dry_run"],
        )
        if options["json"]:
            self.stdout.write(json.dumps(ImportReportSerializer(report).data, indent=2))
        else:
            self._print(report)
        if report.refused:
            raise CommandError(f"{report.refused} of {len(report.lines)} lines were refused.")

    def _print(self, report: ImportReport) -> None:
        run = "Dry run: nothing was written." if report.dry_run else "Imported."
        self.stdout.write(f"{run} {report.name} read as {report.format}.")
        for line in report.lines:
            memory = f" memory {line.memory}" if line.memory else ""
            code = f" [{line.code}]" if line.code else ""
            self.stdout.write(f"  {line.ref}  {line.outcome}{code}  {line.subject}{memory}")
            self.stdout.write(f"      {json.dumps(line.statement, ensure_ascii=False)}")
            self.stdout.write(f"      {line.reason}")
        totals = ", ".join(f"{n} {outcome}" for outcome, n in report.totals.items())
        self.stdout.write(f"Totals: {totals}.")


def _errors(errors: dict[str, Any]) -> str:
    return "\n".join(
        f"{field}: {' '.join(map(str, messages))}" for field, messages in errors.items()
    )
