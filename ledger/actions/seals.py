"""Sealing the audit's hash chain (``ledger.reads.audit_chain`` defines it and checks it).

A commit that wrote chained rows queues one sealer for its tables (``seal_after_commit``);
the beat's pass seals whatever a queue missed, and ``verify_audit`` everything left. Seals
are written to their own append-only table, so the history tables need no UPDATE.

A history row whose MAC does not vouch for it (``ledger.models.audit``: the application
did not write it as it stands) is never sealed: sealing would put the chain's word behind
a row the database role made. It is passed over, left unsealed, and logged;
``verify_audit`` names it. Each pass of every table (the beat's, ``verify_audit``'s) ends
by recording a signed checkpoint of the chains' heads outside the database
(``ledger.actions.checkpoints``).
"""

from __future__ import annotations

import logging
import time
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from celery import current_app
from django.db import IntegrityError, connections, transaction
from django.db.models import Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from ledger.actions import checkpoints
from ledger.delivery import broker
from ledger.models import AuditSeal
from ledger.models.audit import MAC_FIELD, mac_problem
from ledger.reads.audit_chain import (
    Chain,
    Finding,
    chains,
    digest_of,
    hash_of,
    rows_of,
    sealed,
    seals_in_chunks,
    unsealed,
    walk,
)

logger = logging.getLogger(__name__)

# Rows sealed in one transaction: a pass seals as many batches as it needs.
SEAL_BATCH = 500
# A commit's sealer runs this long after it is queued: the commits of the same process that
# follow in that time, to the same tables, leave their rows to it, so a burst of writes
# queues about one task a second per process instead of one per write.
SEAL_DELAY_SECONDS = 1
# A queued sealer that waited longer than this is dropped unrun: the beat's pass, every
# minute, has sealed its rows since.
SEAL_EXPIRES_SECONDS = 60
# A process that could not queue a sealer (the broker down) leaves its commits to the
# beat's pass for this long before it tries again, so an outage slows one write a minute
# per process, not every write.
SEAL_RETRY_SECONDS = 60
SEAL_TASK = "ledger.tasks.seal_written"
# A row committed after a later row was sealed (its transaction ran long) is found by the
# beat task's pass if it was written this recently; an older one by verify_audit's.
LATE_COMMIT = timedelta(minutes=15)
# The first key of the sealers' advisory locks ("AUDT"); the second is the table's.
_LOCK_CLASS = 0x41554454


def _take_sealer_lock(chain: Chain, using: str, *, wait: bool = False) -> bool:
    """Only one sealer per table at a time. PostgreSQL: an advisory lock held until this
    transaction ends, tried, never waited for (but waited for when ``wait``: a reseal must
    not miss a seal); SQLite serialises writers by itself."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        return True
    key = zlib.crc32(chain.table.encode()) - 2**31  # the lock's second key is a signed int4
    take = "pg_advisory_xact_lock" if wait else "pg_try_advisory_xact_lock"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {take}(%s, %s)", [_LOCK_CLASS, key])
        return wait or bool(cursor.fetchone()[0])


def seal_batch(chain: Chain, *, late_since: datetime | None = None, using: str = "default") -> int:
    """Seal up to ``SEAL_BATCH`` rows of one table, oldest id first; how many.

    It looks for rows above the highest one sealed, which is cheap (the sealer a commit
    queues does only this); with ``late_since``, also for rows written since then that
    committed after a later row was sealed (the beat task's pass).
    """
    return len(_seal(chain, _waiting(chain, late_since, using), using).seals)


def _waiting(chain: Chain, late_since: datetime | None, using: str) -> Q:
    highest = sealed(chain, using).order_by("-row_id").values("row_id")[:1]
    wanted = Q(**{f"{chain.row_id}__gt": Coalesce(Subquery(highest), 0)})
    if late_since is not None:
        wanted |= Q(**{f"{chain.date}__gte": late_since})
    return wanted


def seal_table(chain: Chain) -> int:
    """Seal every row of one table that has none, a batch at a time; how many."""
    after, total = 0, 0
    while True:
        # Walking up the ids keeps each batch's search to the rows not yet looked at.
        done = _seal(chain, Q(**{f"{chain.row_id}__gt": after}), "default")
        total += len(done.seals)
        if done.looked_at < SEAL_BATCH:
            return total
        after = done.last_row_id


@dataclass
class _Pass:
    """One batch: the seals made, and how far it looked (rows refused included)."""

    seals: list[AuditSeal] = field(default_factory=list)
    looked_at: int = 0
    last_row_id: int = 0


def _seal(chain: Chain, wanted: Q, using: str) -> _Pass:
    try:
        with transaction.atomic(using=using):
            if not _take_sealer_lock(chain, using):
                return _Pass()
            done = _next_seals(chain, wanted, using)
            AuditSeal.objects.using(using).bulk_create(done.seals)
            return done
    except IntegrityError:
        # Another sealer took these seqs first (SQLite has no advisory lock): its seals
        # stand, and these rows are left to the next pass.
        return _Pass()


def _next_seals(chain: Chain, wanted: Q, using: str) -> _Pass:
    last = sealed(chain, using).order_by("-seq").values("seq", "hash").first()
    rows = unsealed(chain, using).filter(wanted).order_by(chain.row_id)
    previous, seq = (last["hash"], last["seq"]) if last else ("", 0)
    now = timezone.now()
    done = _Pass()
    macs = _has_macs(chain)
    refused: list[tuple[int, str]] = []
    for row in rows.values(*chain.columns, *macs)[:SEAL_BATCH]:
        done.looked_at += 1
        done.last_row_id = row[chain.row_id]
        if macs and (problem := mac_problem(chain.model, row)):
            refused.append((row[chain.row_id], problem))
            continue
        seq += 1
        digest = digest_of(chain, row)
        previous = hash_of(chain, previous, row, digest)
        done.seals.append(
            AuditSeal(
                table=chain.table,
                row_id=row[chain.row_id],
                seq=seq,
                digest=digest,
                hash=previous,
                sealed_at=now,
            )
        )
    if refused:
        # One line a batch, not a row: thousands of forged rows must not flood the log.
        first_id, first_problem = refused[0]
        logger.error(
            "Not sealed: %d %s row(s) the application did not write as they stand, the "
            "first row %s: %s. verify_audit names them.",
            len(refused),
            chain.label,
            first_id,
            first_problem,
        )
    return done


def _has_macs(chain: Chain) -> tuple[str, ...]:
    """The MAC column, for a table that has one (history; people's changes and erasures'
    records are their own rows, written by the application alone)."""
    names = {f.attname for f in chain.model._meta.concrete_fields}
    return (MAC_FIELD,) if MAC_FIELD in names else ()


def seal_pending(*, full: bool = False, max_batches: int = 100) -> int:
    """Seal what is waiting in every table; how many.

    ``full`` seals every row without a seal, in the whole of each table (verify_audit's
    pass). Otherwise (the beat task) up to ``max_batches`` batches a table, of the rows
    above the highest sealed one and of the last ``LATE_COMMIT``'s.
    """
    if full:
        total = sum(seal_table(chain) for chain in chains())
    else:
        late_since = timezone.now() - LATE_COMMIT
        total = sum(
            _seal_batches(chain, late_since=late_since, using="default", max_batches=max_batches)
            for chain in chains()
        )
    checkpoints.record_checkpoint()
    return total


def seal_written(tables: Iterable[str], *, using: str = "default", max_batches: int = 100) -> int:
    """Seal the rows above the highest sealed one in each of ``tables`` (the task commits
    queue); how many. A table this release does not chain (named by a message an older
    release queued) is passed over: the beat's pass seals whatever it held."""
    known = {chain.table: chain for chain in chains()}
    return sum(
        _seal_batches(known[table], late_since=None, using=using, max_batches=max_batches)
        for table in tables
        if table in known
    )


def _seal_batches(
    chain: Chain, *, late_since: datetime | None, using: str, max_batches: int
) -> int:
    total, after = 0, 0
    for _ in range(max_batches):
        # Above the rows already looked at: rows refused for their MAC are not looked at
        # again in this pass.
        wanted = _waiting(chain, late_since, using) & Q(**{f"{chain.row_id}__gt": after})
        done = _seal(chain, wanted, using)
        total += len(done.seals)
        if done.looked_at < SEAL_BATCH:
            break
        after = done.last_row_id
    return total


@dataclass(eq=False)
class _SealAfterCommit:
    """The tables one transaction wrote chained rows to, for the sealer once it commits."""

    using: str
    tables: set[str] = field(default_factory=set)

    def __call__(self) -> None:
        queue_sealer(self.tables, using=self.using)


def seal_after_commit(table: str, using: str) -> None:
    """Have ``table``'s new rows sealed once the current transaction commits: one sealer
    for the transaction, however many tables and rows it writes."""
    # Each entry is (savepoints, callback, robust).
    for entry in connections[using].run_on_commit:
        callback = entry[1]
        if isinstance(callback, _SealAfterCommit):
            # Each savepoint that callback was queued in is either released or still open
            # around this write (one rolled back takes its callbacks with it), so the row
            # commits with the callback or not at all.
            callback.tables.add(table)
            return
    # Robust: whatever goes wrong queuing it is logged, and never fails a write that has
    # already committed; the beat's pass seals its rows.
    transaction.on_commit(_SealAfterCommit(using, {table}), using=using, robust=True)


# (database, table) → the monotonic time until which a sealer queued by this process has
# yet to start: a commit's rows in that table are left to it. Per process: nothing is
# shared, and a second process queues its own (at worst, two runs where one would do).
_queued_until: dict[tuple[str, str], float] = {}


def queue_sealer(tables: Iterable[str], *, using: str) -> None:
    """Queue the sealer task (``SEAL_TASK``) for those of ``tables`` no queued run of this
    process will reach; with ``CELERY_TASK_ALWAYS_EAGER`` (no worker), seal them now.

    A commit left to a queued run is sealed by it: the run starts ``SEAL_DELAY_SECONDS``
    after it was queued, and so after every commit it was left. A worker whose clock runs
    ahead may start it early; whatever it misses, the beat's pass seals within a minute."""
    eager = current_app.conf.task_always_eager
    now = time.monotonic()
    due = sorted(
        table for table in tables if eager or _queued_until.get((using, table), 0.0) <= now
    )
    if not due:
        return
    if eager:
        seal_written(due, using=using)
        return
    for table in due:
        _queued_until[(using, table)] = now + SEAL_DELAY_SECONDS
    queued = broker.send(
        SEAL_TASK,
        (due, using),
        countdown=SEAL_DELAY_SECONDS,
        expires=SEAL_EXPIRES_SECONDS,
        instead=f"the beat's pass seals the new rows of {', '.join(due)}; this process "
        f"tries again in {SEAL_RETRY_SECONDS} seconds",
    )
    if not queued:
        for table in due:
            _queued_until[(using, table)] = now + SEAL_RETRY_SECONDS


class ChainDoesNotFollow(Exception):
    def __init__(self, finding: Finding) -> None:
        super().__init__(str(finding))
        self.finding = finding


def reseal(old: Chain, new: Chain) -> int:
    """Seal one table's sealed rows again under ``new``'s layout (columns added, fields
    moved into the digest), in their order and keeping their times, once every seal has been
    checked under ``old``'s as ``verify_audit`` checks it, erasures included; how many.

    A chain that does not follow raises ``ChainDoesNotFollow`` with its first bad row, and
    nothing is resealed: sealing it again would launder whatever changed it. A row blanked
    by an erasure is sealed as it stands, its content being gone. Holds the table's sealer
    lock until the transaction ends, so no sealer adds a seal under either layout meanwhile."""
    _take_sealer_lock(new, "default", wait=True)
    check = walk(old)
    if check.finding is not None:
        raise ChainDoesNotFollow(check.finding)
    previous = ""
    for seals in seals_in_chunks(new):
        rows = rows_of(new, seals)
        for seal in seals:
            seal.digest = digest_of(new, rows[seal.row_id])
            seal.hash = previous = hash_of(new, previous, rows[seal.row_id], seal.digest)
        AuditSeal.objects.bulk_update(seals, ["digest", "hash"])
    # Every hash of the table is new: the checkpoints before it no longer describe it. One
    # of the chain as resealed starts afresh, once the upgrade's transaction commits (a
    # failed upgrade keeps the old seals, which the old checkpoints still describe).
    for entry in connections["default"].run_on_commit:
        if isinstance(entry[1], _CheckpointAfterReseal):
            entry[1].tables.add(new.table)
            break
    else:
        transaction.on_commit(_CheckpointAfterReseal({new.table}))
    return check.checked


@dataclass(eq=False)
class _CheckpointAfterReseal:
    """The tables one upgrade resealed, for the one checkpoint after it commits."""

    tables: set[str]

    def __call__(self) -> None:
        checkpoints.record_checkpoint(resealed=tuple(sorted(self.tables)))
