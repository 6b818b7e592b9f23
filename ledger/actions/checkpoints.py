"""Recording the audit chain's checkpoints (``ledger.reads.audit_checkpoints`` says what
they are and checks the database against them).

A checkpoint is appended after every sealing pass of all tables (the beat's, every minute,
and ``verify_audit``'s) when a chain's head moved, and every hour whatever happened, by the
beat's ``checkpoint_audit``. The sealer a commit queues records none: it runs about once a
second under load, and the beat's pass follows it within a minute.

A checkpoint is recorded only when every chain still extends the last one. A chain that
does not was cut back behind the application's back: recording it would make the cut the
new normal, so the recorder refuses, logs it, and leaves the last checkpoint to accuse.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field

from django.utils import timezone

from ledger.reads.audit_checkpoints import (
    chain_heads,
    checkpoint_path,
    cut_back,
    database_name,
    last_checkpoint,
    signed_line,
)

logger = logging.getLogger(__name__)


@dataclass
class Recorded:
    """What a call did: wrote a line, had nothing new to write, or refused."""

    written: bool = False
    refused: list[str] = field(default_factory=list)


def record_checkpoint(
    *, force: bool = False, resealed: tuple[str, ...] = (), using: str = "default"
) -> Recorded:
    """Append a signed checkpoint of every chain's head, if one moved since the last (any
    way, with ``force``), unless a chain no longer extends the last checkpoint. The tables
    an upgrade has just ``resealed`` (after checking them) start afresh."""
    heads = chain_heads(using)
    last = last_checkpoint(using=using)
    if last is not None:
        for table in resealed:
            last.heads.pop(table, None)
        if problems := cut_back(last, using):
            logger.error(
                "The audit chain no longer extends the checkpoint of %s, so none is recorded "
                "(run verify_audit): %s",
                last.at.isoformat(),
                "; ".join(problems),
            )
            return Recorded(refused=problems)
        if heads == last.heads and not (force or resealed):
            return Recorded()
    line = signed_line(database_name(using), timezone.now(), heads)
    _append(line)
    return Recorded(written=True)


def _append(line: str) -> None:
    """One write of the whole line to a file opened for appending: two processes recording
    at once never interleave their lines. Synced, so that a line written survives a crash."""
    path = checkpoint_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (line + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
