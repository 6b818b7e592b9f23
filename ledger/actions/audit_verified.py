"""Recording what ``verify_audit`` found (``ledger.reads.audit_verified`` reads it back)."""

from __future__ import annotations

import json
import os
import tempfile

from django.utils import timezone

from ledger.reads.audit_checkpoints import database_name
from ledger.reads.audit_verified import verification_path


def record_verification(*, ok: bool) -> None:
    """Replace the record with this verification, whole: a scrape never reads half of one."""
    path = verification_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"database": database_name(), "at": timezone.now().isoformat(), "ok": ok}
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", dir=path.parent, prefix=".audit-verified-", delete=False
    ) as file:
        json.dump(record, file)
    os.replace(file.name, path)
