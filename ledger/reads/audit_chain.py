"""The audit's hash chain: every history row sealed in a chain per table, and its check.

A seal (``AuditSeal``, in its own append-only table, so the history tables need no
UPDATE for it) holds two things about one history row:

- ``digest``: a SHA-256 of what an erasure may remove from the row: the fields
  ``ledger.actions.erasure.ERASABLE`` names for its model, and the free-text reason.
- ``hash``: a SHA-256 over the previous seal's hash of the same table, the row's
  skeleton (its table, id, object, date, kind of change, actor, role and subject), every
  other column of the row, and the digest.

The changes to people and the records of erasures are chained the same way. Changing,
backdating or deleting a sealed row, or removing a seal, breaks the chain at that row. An
erasure changes only what the digest covers, so the chain still follows; the verifier
accepts a digest that no longer matches only in exactly the shape an erasure
leaves (its erasable fields are blank, its reason is erasure's, and it is dated at or
before an erasure of its subject: a past erasure does not excuse later history). Which
fields changed since the object's previous version is not listed separately: the hash
covers the whole row, so any change to one is caught. Links Django
clears when the row they point at is deleted (``history_user_id``, ``PersonChange.person``)
are left out of the hash, so that deleting a person does not break the audit; the actor
in words (``history_actor``, ``PersonChange.actor``) is in it.

Sealing runs in a Celery task that a commit which wrote history queues (``seal_after_commit``,
from ``ledger.signals``; ``SEAL_DELAY_SECONDS`` later, so one run seals a burst of commits),
from a Celery beat task every minute, and at the start of ``manage.py verify_audit``. The
writer itself runs no sealing query. One sealer at a time works on a table (a PostgreSQL
advisory lock, tried and skipped if taken); writers take no lock at all. Rows are sealed in
id order; a row whose transaction commits after a later row was sealed is sealed on the
next pass, with the next seq: the chain's order is the seals', not the rows'.

A release that changes what a seal covers (a column added, a field made erasable) reseals
in its migration (``reseal``), each chain checked first as the release before sealed it
(``chains_in`` builds one release's chains from a migration's state of the models).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

from django.apps import apps
from django.apps.registry import Apps
from django.db import models
from django.db.migrations.recorder import MigrationRecorder
from django.db.models import Count, Exists, Min, OuterRef, Q
from django.utils import timezone

from ledger.models import AuditSeal, Erasure
from ledger.models.audit import MAC_FIELD, canonical
from ledger.models.erasable import ERASABLE, ERASURE_REASONS, Erasable, blank_value

logger = logging.getLogger(__name__)

# Seals read per query by the verifier.
VERIFY_CHUNK = 1000

# Told how many more rows a check has read.
Tick = Callable[[int], None]


@dataclass(frozen=True, eq=False)
class Chain:
    """One table's chain: which columns are its skeleton, its digest, and the rest."""

    table: str
    label: str
    model: type[models.Model]
    row_id: str
    object_id: str
    date: str
    reason: str
    skeleton: tuple[str, ...]
    # The erasable fields, then the reason.
    digested: tuple[str, ...]
    kept: tuple[str, ...]
    # What an erasure blanks in the tracked model whose history this is, when one reaches it.
    erasable: Erasable | None = None

    @property
    def columns(self) -> tuple[str, ...]:
        return (*self.skeleton, *self.digested, *self.kept)

    def rows(self, using: str = "default") -> models.QuerySet[Any]:
        return self.model._default_manager.using(using).all()


@cache
def chains() -> tuple[Chain, ...]:
    """Every chained table: each model's history, the changes to people, the erasures."""
    return chains_in(apps, {model.__name__: rule for model, rule in ERASABLE.items()})


def chains_in(registry: Apps, erasable: Mapping[str, Erasable]) -> tuple[Chain, ...]:
    """The chains of the models as ``registry`` has them (the project's, or a migration's
    state of them), with ``erasable`` (by tracked model name) in their digests: the layout
    of one release, so that a migration can check seals under one and reseal under another."""
    ledger = registry.get_app_config("ledger")
    found = [
        _history_chain(
            model,
            ledger.get_model(f"Historical{model.__name__}"),
            erasable.get(model.__name__),
        )
        for model in ledger.get_models()
        if f"historical{model._meta.model_name}" in ledger.models
    ]
    # A migration's state may predate a record table a later release adds.
    records = {"personchange": _person_changes, "erasure": _erasures}
    found += [
        build(ledger.models[name]) for name, build in records.items() if name in ledger.models
    ]
    return tuple(found)


def chain_for(table: str) -> Chain:
    return {chain.table: chain for chain in chains()}[table]


def unchained_links(model: type[models.Model]) -> list[str]:
    """Columns Django sets to null when the row they point at is deleted: outside the hash
    (a person's deletion must not break the audit), updatable by the application."""
    return [
        f.attname
        for f in model._meta.concrete_fields
        if f.remote_field is not None and f.remote_field.on_delete is models.SET_NULL
    ]


def _history_chain(
    tracked: type[models.Model], history: type[models.Model], erasable: Erasable | None
) -> Chain:
    skeleton = (
        "history_id",
        tracked._meta.pk.attname,
        "history_date",
        "history_type",
        "history_actor",
        "history_role",
        "history_subject_id",
    )
    digested = (*(erasable.blank if erasable else ()), "history_change_reason")
    return Chain(
        table=history._meta.db_table,
        label=f"{tracked._meta.verbose_name} history",
        model=history,
        row_id="history_id",
        object_id=tracked._meta.pk.attname,
        date="history_date",
        reason="history_change_reason",
        skeleton=skeleton,
        digested=digested,
        kept=_rest(history, (*skeleton, *digested)),
        erasable=erasable,
    )


def _record_chain(
    model: type[models.Model],
    *,
    label: str,
    object_id: str,
    date: str,
    skeleton: tuple[str, ...],
    reason: str,
) -> Chain:
    """A table that is its own record (no history table behind it): each row is sealed, its
    free text (``reason``: why, who asked) in the digest."""
    return Chain(
        table=model._meta.db_table,
        label=label,
        model=model,
        row_id="id",
        object_id=object_id,
        date=date,
        reason=reason,
        skeleton=skeleton,
        digested=(reason,),
        kept=_rest(model, (*skeleton, reason)),
    )


def _person_changes(model: type[models.Model]) -> Chain:
    skeleton = ("id", "changed_at", "actor", "actor_role", "username", "field")
    return _record_chain(
        model,
        label="person change",
        object_id="username",
        date="changed_at",
        skeleton=skeleton,
        reason="reason",
    )


def _erasures(model: type[models.Model]) -> Chain:
    # The records the verifier's erasure exception rests on: were they changeable, moving
    # one to another subject would excuse blanking that subject's history.
    skeleton = ("id", "subject_id", "erased_at", "erased_by", "erased_by_role")
    return _record_chain(
        model,
        label="erasure",
        object_id="subject_id",
        date="erased_at",
        skeleton=skeleton,
        reason="requested_by",
    )


def _rest(model: type[models.Model], taken: tuple[str, ...]) -> tuple[str, ...]:
    # The MAC is checked on its own (``ledger.reads.audit_macs``): an erasure makes it anew.
    left_out = {*taken, *unchained_links(model), MAC_FIELD}
    return tuple(f.attname for f in model._meta.concrete_fields if f.attname not in left_out)


# --- the two digests ---------------------------------------------------------------------


def digest_of(chain: Chain, row: dict[str, Any]) -> str:
    return hashlib.sha256(canonical({name: row[name] for name in chain.digested})).hexdigest()


def hash_of(chain: Chain, previous: str, row: dict[str, Any], digest: str) -> str:
    body = canonical(
        {
            "table": chain.table,
            "skeleton": canonical({name: row[name] for name in chain.skeleton}).decode(),
            "kept": canonical({name: row[name] for name in chain.kept}).decode(),
            "digest": digest,
        }
    )
    return hashlib.sha256(previous.encode() + b"\n" + body).hexdigest()


# --- seals -----------------------------------------------------------------------------


def sealed(chain: Chain, using: str = "default") -> models.QuerySet[AuditSeal]:
    return AuditSeal.objects.using(using).filter(table=chain.table)


def unsealed(chain: Chain, using: str = "default") -> models.QuerySet[Any]:
    seal = sealed(chain, using).filter(row_id=OuterRef(chain.row_id))
    return chain.rows(using).filter(~Exists(seal))


# --- verifying ---------------------------------------------------------------------------


@dataclass
class Finding:
    """The first row of a table whose seal does not follow, in words."""

    chain: Chain
    row_id: int
    problem: str
    row: dict[str, Any] | None = None

    def __str__(self) -> str:
        where = f"{self.chain.label} row {self.row_id}"
        if self.row is not None:
            when = self.row[self.chain.date].astimezone(UTC)
            where += f" (object {self.row[self.chain.object_id]}, {when:%Y-%m-%d %H:%M:%S} UTC)"
        return f"{where}: {self.problem}"


@dataclass
class TableCheck:
    chain: Chain
    checked: int = 0
    erased: int = 0
    head: str = ""
    unsealed: int = 0
    # Rows without a seal written longer ago than the sealer should take: it has stopped.
    stale: int = 0
    oldest_unsealed: datetime | None = None
    finding: Finding | None = None


def verify(
    *, stale_after: timedelta = timedelta(minutes=5), tick: Tick | None = None
) -> list[TableCheck]:
    """Walk every table's chain; the first row that does not follow is its finding.
    ``tick`` is told how many seals each chunk checked (the Audit page's progress)."""
    cutoff = timezone.now() - stale_after
    checks = []
    for chain in chains():
        check = walk(chain, tick)
        counts = unsealed(chain).aggregate(
            unsealed=Count("pk"),
            stale=Count("pk", filter=Q(**{f"{chain.date}__lt": cutoff})),
            oldest=Min(chain.date),
        )
        check.unsealed, check.stale = counts["unsealed"], counts["stale"]
        check.oldest_unsealed = counts["oldest"]
        checks.append(check)
    return checks


def walk(chain: Chain, tick: Tick | None = None) -> TableCheck:
    check = TableCheck(chain)
    previous, expected = "", 1
    for seals in seals_in_chunks(chain):
        if tick:
            tick(len(seals))
        rows = rows_of(chain, seals)
        problems: list[Finding] = []
        differs: list[tuple[AuditSeal, dict[str, Any]]] = []
        for seal in seals:
            row = rows.get(seal.row_id)
            if seal.seq != expected:
                problems.append(_gap(chain, seal, expected, row))
            elif row is None:
                problems.append(Finding(chain, seal.row_id, "it was deleted after it was sealed"))
            elif hash_of(chain, previous, row, seal.digest) != seal.hash:
                problems.append(Finding(chain, seal.row_id, _CHANGED, row))
            elif digest_of(chain, row) != seal.digest:
                differs.append((seal, row))
            previous, expected = seal.hash, seal.seq + 1
        erased = _left_by_erasure(chain, [row for _, row in differs])
        problems += [
            Finding(chain, seal.row_id, _TEXT_CHANGED, row)
            for seal, row in differs
            if row[chain.row_id] not in erased
        ]
        if problems:
            order = {seal.row_id: seal.seq for seal in seals}
            check.finding = min(problems, key=lambda finding: order[finding.row_id])
            check.checked += order[check.finding.row_id] - seals[0].seq
            return check
        check.checked += len(seals)
        check.erased += len(erased)
        check.head = previous
    return check


_CHANGED = (
    "it no longer matches its seal: who made the change, when, the kind of change or "
    "a recorded value was altered after it was sealed"
)
_TEXT_CHANGED = (
    "its text or reason no longer matches its seal, and not in the way an erasure leaves it"
)


def _gap(chain: Chain, seal: AuditSeal, expected: int, row: dict[str, Any] | None) -> Finding:
    if seal.seq == expected + 1:
        missing = f"seal {expected} before it is missing"
    else:
        missing = f"seals {expected}–{seal.seq - 1} before it are missing"
    return Finding(chain, seal.row_id, f"the chain does not follow: {missing}", row)


def rows_of(chain: Chain, seals: list[AuditSeal]) -> dict[int, dict[str, Any]]:
    found = chain.rows().filter(**{f"{chain.row_id}__in": [seal.row_id for seal in seals]})
    return {row[chain.row_id]: row for row in found.values(*chain.columns)}


def seals_in_chunks(chain: Chain) -> Iterator[list[AuditSeal]]:
    after = 0
    while True:
        seals = list(sealed(chain).filter(seq__gt=after).order_by("seq")[:VERIFY_CHUNK])
        if not seals:
            return
        yield seals
        after = seals[-1].seq


def _left_by_erasure(chain: Chain, rows: Iterable[dict[str, Any]]) -> set[int]:
    """The rows, of those given, that are exactly as an erasure of their subject leaves
    them: every erasable field blank, the reason erasure's, and the row dated at or before
    an erasure of a subject it is about (``erase_subject`` blanks no later row)."""
    erasable = chain.erasable
    if erasable is None:
        return set()
    blanked = [
        row[chain.row_id]
        for row in rows
        if all(
            row[name] == blank_value(value, row[chain.object_id])
            for name, value in erasable.blank.items()
        )
        and row[chain.reason] in ERASURE_REASONS
    ]
    if not blanked:
        return set()
    # Correlated with each row's date, so one query answers for every erasure there is; a
    # later erasure of the subject covers the rows written since an earlier one.
    written = OuterRef(chain.date)
    for _ in range(erasable.depth - 1):
        written = OuterRef(written)
    erased = Erasure.objects.filter(erased_at__gte=written).values("subject_id")
    found = chain.rows().filter(erasable.reach(erased), **{f"{chain.row_id}__in": blanked})
    return set(found.values_list(chain.row_id, flat=True))


# --- a release that changes the layout ---------------------------------------------------


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def append_only_grants(role: str, schema: str = "public") -> list[str]:
    """The SQL (PostgreSQL) that lets ``role`` use every table of the project, with the
    chained ones append-only: history rows can be read and added, never deleted, and
    updated only where an erasure blanks them (and in the links Django clears when a
    person is deleted); seals can be read and added, nothing else. Generated from the
    models, so it covers a table added by a later migration once it is run again."""
    who = _quoted(role)
    chained = {chain.table: chain for chain in chains()}
    statements = [f"GRANT USAGE ON SCHEMA {_quoted(schema)} TO {who};"]
    tables = sorted(
        {
            model._meta.db_table
            for model in apps.get_models(include_auto_created=True)
            if model._meta.managed and not model._meta.proxy
        }
    )
    for table in tables:
        statements.append(f"REVOKE ALL ON {_quoted(table)} FROM {who};")
        chain = chained.get(table)
        if table == AuditSeal._meta.db_table:
            statements.append(f"GRANT SELECT, INSERT ON {_quoted(table)} TO {who};")
        elif chain is None:
            statements.append(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {_quoted(table)} TO {who};")
        else:
            statements.append(f"GRANT SELECT, INSERT ON {_quoted(table)} TO {who};")
            if columns := ", ".join(_quoted(column) for column in updatable(chain)):
                statements.append(f"GRANT UPDATE ({columns}) ON {_quoted(table)} TO {who};")
    recorder = MigrationRecorder.Migration._meta.db_table
    statements.append(f"GRANT SELECT ON {_quoted(recorder)} TO {who};")
    statements.append(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA {_quoted(schema)} TO {who};")
    return statements


def updatable(chain: Chain) -> list[str]:
    """The columns of a chained table the application may update: what an erasure blanks
    (with the reason, and the MAC it makes anew), and the links Django clears on a
    deletion. None of them is in the hash: the digest covers the first, checked against the
    shape erasure leaves, and the MAC is made with a key the database never holds."""
    erasable = list(chain.erasable.blank) if chain.erasable else []
    reason = [chain.reason, MAC_FIELD] if chain.erasable else []
    return [*erasable, *reason, *unchained_links(chain.model)]
