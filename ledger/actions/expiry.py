"""Forgetting on schedule: memories and ledger entries past their expiry become expired.

Work is done in bounded batches, each its own short transaction. A batch locks its rows
with ``SELECT … FOR NO KEY UPDATE SKIP LOCKED``: two workers running at once take disjoint
rows, a row another run already expired no longer matches, and a worker killed mid-batch
leaves nothing behind because its transaction rolls back. Running this any number of
times therefore expires each row once and writes one history row for it. (``NO KEY``
because a concurrent write may add the row to a conflict, which only needs a key-share
lock on it; a plain ``FOR UPDATE`` would make that write wait for the batch.)
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from ledger.actions._tracking import save_tracked
from ledger.actions.slots import refresh_conflict
from ledger.actors import Actor
from ledger.dates import when
from ledger.models import Conflict, LedgerEntry, Memory

logger = logging.getLogger(__name__)

EXPIRY = Actor.system("expiry")


@dataclass
class ExpiryRun:
    memories: int = 0
    ledger_entries: int = 0
    # False when the run stopped at its batch limit and more may be due.
    finished: bool = True

    def as_dict(self) -> dict[str, int | bool]:
        return asdict(self)


def expire_due(
    *,
    now: datetime | None = None,
    batch_size: int | None = None,
    max_batches: int | None = None,
) -> ExpiryRun:
    """Expire everything due at ``now``, batch by batch, up to ``max_batches`` batches."""
    now = now or timezone.now()
    size = batch_size or settings.MEMORYADMIN_EXPIRY_BATCH_SIZE
    limit = max_batches or settings.MEMORYADMIN_EXPIRY_MAX_BATCHES
    run = ExpiryRun()
    batches = 0
    for field, expire_batch in (
        ("memories", _expire_memory_batch),
        ("ledger_entries", _expire_ledger_batch),
    ):
        while True:
            if batches >= limit:
                run.finished = False
                return run
            done = expire_batch(now=now, size=size)
            batches += 1
            setattr(run, field, getattr(run, field) + done)
            # A short batch means nothing unlocked is left: rows another worker holds
            # are that worker's to finish.
            if done < size:
                break
    if run.memories or run.ledger_entries:
        logger.info("Expired %d memories and %d ledger entries.", run.memories, run.ledger_entries)
    return run


def _expire_memory_batch(*, now: datetime, size: int) -> int:
    with transaction.atomic():
        batch = _expire_batch(Memory.objects.due_to_expire(now), now=now, size=size)
        _settle_slots({(m.subject_id, m.key) for m in batch if m.key})
    return len(batch)


def _expire_ledger_batch(*, now: datetime, size: int) -> int:
    with transaction.atomic():
        return len(_expire_batch(LedgerEntry.objects.due_to_expire(now), now=now, size=size))


def _expire_batch(due: QuerySet[Any], *, now: datetime, size: int) -> list[Any]:
    """Lock up to ``size`` due rows nobody else holds and mark each expired, with history."""
    batch = list(
        due.select_for_update(skip_locked=True, no_key=True).order_by("expires_at", "pk")[:size]
    )
    for row in batch:
        row.status = "expired"
        fields = ["status"]
        if hasattr(row, "status_changed_at"):
            row.status_changed_at = now
            fields.append("status_changed_at")
        save_tracked(
            row,
            actor=EXPIRY,
            reason=f"Expired: its expiry, {_when(row.expires_at)}, has passed.",
            update_fields=fields,
            bump_version=True,
        )
    return batch


def _settle_slots(slots: set[tuple[int, str]]) -> None:
    """Close the conflicts that expiry leaves with a single statement.

    The open conflict is locked first, in a fixed order: two workers expiring both sides
    of one conflict would otherwise each resolve it and write two history rows, and
    locking in different orders could deadlock.
    """
    for subject_id, key in sorted(slots):
        conflict = (
            Conflict.objects.open()
            .select_for_update(of=("self",))
            .filter(subject_id=subject_id, key=key)
            .select_related("subject")
            .first()
        )
        if conflict is not None:
            refresh_conflict(subject=conflict.subject, key=key, actor=EXPIRY)


def _when(moment: datetime | None) -> str:
    # The reason is read on the history page, so it uses the people's date format.
    return when(moment) if moment else "unset"
