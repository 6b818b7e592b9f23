"""Which history rows the application did not write as they stand: each row's MAC
(``ledger.models.audit``) checked against its content, and MACs found on two rows.

The chain shows that a sealed row has not changed since it was sealed; it cannot show who
wrote the row, since the sealer seals what it finds. The MAC can: the database role may
insert a row, but not make the MAC of one without the key. A row copied whole under a new
id carries a valid MAC, the original's: no two rows the application writes share one (each
has its own random nonce), so a MAC found twice names the copy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC
from typing import Any

from django.db.models import Count

from ledger.models.audit import MAC_FIELD, mac_fields, mac_problem
from ledger.reads.audit_chain import Chain, Tick, chains

# Rows read per query.
CHUNK = 5000
# Rows named per table: beyond it, counted.
NAMED = 20
# Rows the Audit page can mark per table (``marks``): enough for any one tampering.
MARKED = 500


@dataclass
class MacCheck:
    """One history table's rows whose MAC does not vouch for them."""

    chain: Chain
    checked: int = 0
    problems: list[str] = field(default_factory=list)
    bad: int = 0
    # (row id, problem) of the rows found, for the Audit page's marks.
    marks: list[tuple[int, str]] = field(default_factory=list)

    def add(self, row: dict[str, Any], problem: str) -> None:
        self.bad += 1
        if len(self.problems) < NAMED:
            self.problems.append(f"{where(self.chain, row)}: {problem}")
        if len(self.marks) < MARKED:
            self.marks.append((row[self.chain.row_id], problem))


def where(chain: Chain, row: dict[str, Any]) -> str:
    """How a row is named, as ``verify_audit`` names a row whose seal does not follow."""
    when = row[chain.date].astimezone(UTC)
    return (
        f"{chain.label} row {row[chain.row_id]} (table {chain.table}, object "
        f"{row[chain.object_id]}, {when:%Y-%m-%d %H:%M:%S} UTC)"
    )


def check_macs(tick: Tick | None = None) -> list[MacCheck]:
    """Every history table's rows, each MAC checked; the tables without MACs left out.
    ``tick`` is told how many rows each chunk checked."""
    return [_check(chain, tick) for chain in chains() if MAC_FIELD in _columns(chain)]


def _columns(chain: Chain) -> set[str]:
    return {f.attname for f in chain.model._meta.concrete_fields}


def _check(chain: Chain, tick: Tick | None) -> MacCheck:
    check = MacCheck(chain)
    columns = {chain.row_id, chain.date, chain.object_id, MAC_FIELD, *mac_fields(chain.model)}
    after = 0
    while True:
        rows = list(
            chain.rows()
            .filter(**{f"{chain.row_id}__gt": after})
            .order_by(chain.row_id)
            .values(*columns)[:CHUNK]
        )
        for row in rows:
            if problem := mac_problem(chain.model, row):
                check.add(row, problem)
        check.checked += len(rows)
        if tick:
            tick(len(rows))
        if len(rows) < CHUNK:
            break
        after = rows[-1][chain.row_id]
    _copies(chain, check)
    return check


def _copies(chain: Chain, check: MacCheck) -> None:
    """Rows whose MAC another row carries too: all but the first of each are copies."""
    repeated = (
        chain.rows()
        .exclude(**{MAC_FIELD: ""})
        .values(MAC_FIELD)
        .annotate(rows=Count(chain.row_id))
        .filter(rows__gt=1)
        .values(MAC_FIELD)
    )
    rows = (
        chain.rows()
        .filter(**{f"{MAC_FIELD}__in": repeated})
        .order_by(MAC_FIELD, chain.row_id)
        .values(chain.row_id, chain.date, chain.object_id, MAC_FIELD)
    )
    first: dict[str, int] = {}
    for row in rows:
        original = first.setdefault(row[MAC_FIELD], row[chain.row_id])
        if original != row[chain.row_id]:
            check.add(
                row,
                f"it carries the MAC of row {original}: a copy the application did not write",
            )
