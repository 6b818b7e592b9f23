"""The audit's last verification (``verify_audit``, or **Verify now** on the Audit page): when
it ran, who started it, what it checked and which rows failed, kept beside the checkpoint
file (``MEMORYADMIN_AUDIT_CHECKPOINTS``) so that ``/metrics`` can report its result and its
age, the Audit page can mark the rows that failed, and every page can warn the admins while
it stands failed. Written by ``ledger.actions.audit_verified``, with the progress of one
running from the Audit page beside it.

The record stays outside the database on purpose: whoever could change a row with SQL could
otherwise also change the record of the verification that caught it.

Like a checkpoint line, each file names its database: a development machine's several
databases share one folder, and one database's verification says nothing of another's.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ledger.actors import Actor
from ledger.reads.audit_checkpoints import checkpoint_path, database_name

# Who started a verification, when no person did.
COMMAND_LINE = "command line"
SCHEDULED = "scheduled"


@dataclass(frozen=True)
class Failure:
    """A row of a chained table that failed, and why, in verify_audit's words."""

    table: str
    row_id: int
    problem: str


@dataclass(frozen=True)
class Verification:
    at: datetime
    ok: bool
    # ``user:ada``, ``COMMAND_LINE`` or ``SCHEDULED``; "" in a record from before it was kept.
    by: str = ""
    checked: int = 0
    # What failed, as verify_audit says it: each check's title and its lines; the rows to mark.
    findings: tuple[tuple[str, tuple[str, ...]], ...] = ()
    failures: tuple[Failure, ...] = ()

    @property
    def by_words(self) -> str:
        return Actor.username_in(self.by) or self.by or "an earlier release"

    @property
    def rows_failed(self) -> int:
        """How many rows fail (a row may fail more than one check)."""
        return len({(failure.table, failure.row_id) for failure in self.failures})


@dataclass(frozen=True)
class Progress:
    """A verification queued or running from the Audit page."""

    by: str
    started: datetime
    step: str
    checked: int
    total: int

    @property
    def by_words(self) -> str:
        return Actor.username_in(self.by) or self.by


def verification_path() -> Path:
    return checkpoint_path().with_name("audit-verified.json")


def progress_path() -> Path:
    """One file a database (its name may be a path, hence the hash): claimed by the first
    click, so a second finds it and starts nothing."""
    tag = hashlib.sha256(database_name().encode()).hexdigest()[:12]
    return checkpoint_path().with_name(f"audit-verifying-{tag}.json")


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("database") != database_name():
        return None
    return data


def last_verification() -> Verification | None:
    """This database's last verification; None when none was recorded (or the record is
    unreadable, which an alert on its age catches as surely)."""
    data = _read(verification_path())
    if data is None:
        return None
    try:
        return Verification(
            at=datetime.fromisoformat(data["at"]),
            ok=bool(data["ok"]),
            by=str(data.get("by", "")),
            checked=int(data.get("checked", 0)),
            findings=tuple(
                (str(title), tuple(str(line) for line in lines))
                for title, lines in data.get("findings", ())
            ),
            failures=tuple(
                Failure(str(table), int(row_id), str(problem))
                for table, row_id, problem in data.get("failures", ())
            ),
        )
    except (ValueError, KeyError, TypeError):
        return None


def progress() -> Progress | None:
    """The verification queued or running from the Audit page, if one is."""
    data = _read(progress_path())
    if data is None:
        return None
    try:
        return Progress(
            by=str(data["by"]),
            started=datetime.fromisoformat(data["started"]),
            step=str(data["step"]),
            checked=int(data["checked"]),
            total=int(data["total"]),
        )
    except (ValueError, KeyError, TypeError):
        return None
