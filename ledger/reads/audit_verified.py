"""The audit's last verification by ``verify_audit``: when it ran and whether everything held,
kept beside the checkpoint file (``MEMORYADMIN_AUDIT_CHECKPOINTS``) so that ``/metrics`` can
report its result and its age. Written by ``ledger.actions.audit_verified``.

Like a checkpoint line, the record names its database: a development machine's several
databases share one folder, and one database's verification says nothing of another's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ledger.reads.audit_checkpoints import checkpoint_path, database_name


@dataclass(frozen=True)
class Verification:
    at: datetime
    ok: bool


def verification_path() -> Path:
    return checkpoint_path().with_name("audit-verified.json")


def last_verification() -> Verification | None:
    """This database's last verification; None when none was recorded (or the record is
    unreadable, which an alert on its age catches as surely)."""
    try:
        data = json.loads(verification_path().read_text(encoding="utf-8"))
        if data["database"] != database_name():
            return None
        return Verification(datetime.fromisoformat(data["at"]), bool(data["ok"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
