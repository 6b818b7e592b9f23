"""Checkpoints of the audit chain: each chain's length and head, signed, kept outside the
database (``MEMORYADMIN_AUDIT_CHECKPOINTS``, one JSON object a line, appended by
``ledger.actions.checkpoints``), and the check of the database's chains against them.

The seals alone cannot show that the newest rows were removed together with their seals:
what is left still follows. A checkpoint can, since the database role can neither write the
file nor sign a line (the signature is an HMAC under ``MEMORYADMIN_AUDIT_KEY``): a chain
shorter than the latest checkpoint, or whose seal at the checkpointed length is not the
checkpointed head, was cut back (and perhaps sealed again) after that checkpoint.

A line names the database it describes (its name in the settings), so that one file
serving a development machine's several databases never compares one with another. Only
this database's lines are judged: another database's are not this deployment's (they may be
signed with another key), so they are passed over unread, signature and all. A line of this
database whose signature fails, and a line that is no checkpoint at all, are reported.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connections
from django.db.models import Q

from ledger.models import AuditSeal
from ledger.models.audit import canonical, sign, signature_problem
from ledger.reads.audit_chain import chains

# The signing key's sub-key: a checkpoint's signature can never pass for a row's MAC.
PURPOSE = "checkpoints"
# Read from the end of the file to find its last line: more than any one line takes.
TAIL = 1 << 16

Heads = dict[str, tuple[int, str]]


@dataclass(frozen=True)
class Checkpoint:
    """One line: when, which database, and each chain's length (its last seq) and head."""

    line: int
    at: datetime
    database: str
    heads: Heads


@dataclass
class CheckpointFile:
    """What the file holds for this database, and the lines whose signature fails."""

    path: Path
    checkpoints: list[Checkpoint] = field(default_factory=list)
    tampered: list[str] = field(default_factory=list)

    @property
    def latest(self) -> Checkpoint | None:
        return self.checkpoints[-1] if self.checkpoints else None


def checkpoint_path() -> Path:
    return Path(settings.MEMORYADMIN_AUDIT_CHECKPOINTS)


def database_name(using: str = "default") -> str:
    return str(connections[using].settings_dict["NAME"])


def chain_heads(using: str = "default") -> Heads:
    """Each chain's last seal, as (seq, hash): one index lookup a table."""
    heads: Heads = {}
    for chain in chains():
        last = (
            AuditSeal.objects.using(using)
            .filter(table=chain.table)
            .order_by("-seq")
            .values_list("seq", "hash")
            .first()
        )
        if last is not None:
            heads[chain.table] = last
    return heads


def signed_line(database: str, at: datetime, heads: Heads) -> str:
    """A checkpoint as the line the file keeps, its signature over everything else."""
    body = _body(database, at, heads)
    return json.dumps(
        {**body, "signature": sign(PURPOSE, canonical(body))}, sort_keys=True, ensure_ascii=False
    )


def _body(database: str, at: datetime, heads: Heads) -> dict[str, Any]:
    return {
        "at": at.isoformat(),
        "database": database,
        "heads": {table: [seq, head] for table, (seq, head) in sorted(heads.items())},
    }


def _parse(number: int, text: str, database: str) -> tuple[Checkpoint | None, str | None]:
    """A line of ``database`` as a checkpoint, or what is wrong with it; (None, None) for
    another database's line, which is not this deployment's to judge."""
    try:
        data = json.loads(text)
        if str(data["database"]) != database:
            return None, None
        signature = data.pop("signature")
        at = datetime.fromisoformat(data["at"])
        heads = {table: (int(seq), str(head)) for table, (seq, head) in data["heads"].items()}
    except (ValueError, KeyError, TypeError, AttributeError):
        return None, f"line {number} is not a checkpoint"
    if (problem := signature_problem(PURPOSE, canonical(data), str(signature))) is not None:
        return None, f"line {number} ({data.get('at', '?')}): {problem}"
    return Checkpoint(number, at, database, heads), None


def read_checkpoints(path: Path | None = None, using: str = "default") -> CheckpointFile:
    """This database's lines of the file, each signature checked; other databases' lines
    passed over, lines that are no checkpoint reported."""
    path = path or checkpoint_path()
    found = CheckpointFile(path)
    database = database_name(using)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return found
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        checkpoint, problem = _parse(number, line, database)
        if problem is not None:
            found.tampered.append(problem)
        elif checkpoint is not None:
            found.checkpoints.append(checkpoint)
    return found


def last_checkpoint(path: Path | None = None, using: str = "default") -> Checkpoint | None:
    """The file's last good checkpoint of this database, read from the end: the recorder
    asks every minute, and the file only grows."""
    path = path or checkpoint_path()
    database = database_name(using)
    try:
        with path.open("rb") as file:
            size = file.seek(0, 2)
            start = max(0, size - TAIL)
            file.seek(start)
            tail = file.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None
    lines = tail.splitlines()
    if start > 0:
        lines = lines[1:]  # the first may be cut
    for line in reversed(lines):
        checkpoint, _ = _parse(0, line, database)
        if checkpoint is not None:
            return checkpoint
    # Only another database's lines at the end of a long file: read it all.
    return None if start == 0 else read_checkpoints(path, using).latest


def cut_back(checkpoint: Checkpoint, using: str = "default") -> list[str]:
    """How each chain fails to extend ``checkpoint``, in words; empty when every one does.

    A chain extends it when it is at least as long and its seal at the checkpointed length
    still has the checkpointed hash (the walk of the chain shows that every seal before it
    follows)."""
    if not checkpoint.heads:
        return []
    wanted = Q()
    for table, (seq, _) in checkpoint.heads.items():
        wanted |= Q(table=table, seq=seq)
    seals = AuditSeal.objects.using(using).filter(wanted).values_list("table", "seq", "hash")
    found = {(table, seq): head for table, seq, head in seals}
    labels = {chain.table: chain.label for chain in chains()}
    when = f"{checkpoint.at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"
    problems = []
    for table, (seq, head) in sorted(checkpoint.heads.items()):
        label = labels.get(table, table)
        now = found.get((table, seq))
        if now is None:
            last = AuditSeal.objects.using(using).filter(table=table).order_by("-seq").first()
            length = last.seq if last else 0
            problems.append(
                f"{label} ({table}): the chain has {length} seals, but the checkpoint of "
                f"{when} recorded {seq}: seals after {length} were removed, with their rows"
            )
        elif now != head:
            problems.append(
                f"{label} ({table}): seal {seq} is not the head the checkpoint of {when} "
                f"recorded ({head[:16]}, now {now[:16]}): the chain was cut back and sealed "
                "again since"
            )
    return problems
