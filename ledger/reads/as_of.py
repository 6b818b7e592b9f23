"""What was in force about a subject at a past moment, rebuilt from history. Pure reads.

A memory's state at ``at`` is its latest history row at or before it; it was in force if
that row was active, not withheld by the person, and not yet past its expiry. The block is
what recall would have rendered then for an agent that gave no goal. A conflict's members
are not kept in history, but a memory only ever joins a conflict, never leaves it, and no
memory written after ``at`` was in force at ``at``: today's members, narrowed to what was in
force, are the members it had. Erased memories have blank history rows and are left out.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import F, QuerySet, Window
from django.db.models.functions import RowNumber

from ledger.choices import Basis, ConflictStatus, MemoryStatus
from ledger.models import Conflict, Memory, Policy, Recall, Subject
from ledger.reads.recall import DEFAULT_K, ConflictGroup, render_block

# How far either side of the moment the recalls actually made are looked for, and how many.
AROUND = timedelta(hours=24)
RECALLS_AROUND = 20


@dataclass(frozen=True)
class AsOf:
    at: datetime
    k: int
    in_force: list[Memory]
    conflicts: list[ConflictGroup]
    block: str


def _latest_per_id(history: QuerySet[Any], at: datetime) -> QuerySet[Any]:
    """Each row's latest history row at or before ``at``, in one query."""
    latest: QuerySet[Any] = (
        history.filter(history_date__lte=at)
        .annotate(
            latest=Window(
                RowNumber(),
                partition_by=[F("id")],
                order_by=[F("history_date").desc(), F("history_id").desc()],
            )
        )
        .filter(latest=1)
    )
    return latest


def _in_force(row: Any, at: datetime) -> bool:
    return (
        row.history_type != "-"
        and row.status == MemoryStatus.ACTIVE
        and not row.withheld
        and row.statement != ""
        and (row.expires_at is None or row.expires_at > at)
    )


def memories_in_force(subject: Subject, at: datetime) -> list[Memory]:
    """The memories of ``subject`` in force at ``at``, as they read then, in recall's order
    without a goal: stated before guessed, then the most recently confirmed, then newest."""
    rows = _latest_per_id(Memory.history.filter(subject_id=subject.pk), at)
    memories = [row.instance for row in rows if _in_force(row, at)]
    # Stable sorts, least significant key first, mirror ``recall.recent_queryset``.
    memories.sort(key=lambda m: m.pk, reverse=True)
    memories.sort(key=lambda m: m.written_at, reverse=True)
    memories.sort(key=lambda m: (m.confirmed_at is None, _negated(m.confirmed_at)))
    memories.sort(key=lambda m: m.basis != Basis.STATED)
    return memories


def _negated(moment: datetime | None) -> float:
    return -moment.timestamp() if moment else 0.0


def conflicts_open_at(
    subject: Subject, at: datetime, in_force: list[Memory]
) -> list[ConflictGroup]:
    """The conflicts about ``subject`` open at ``at`` that still had two statements an
    agent could be given, as ``recall.open_conflicts`` finds them now."""
    rows = _latest_per_id(Conflict.history.filter(subject_id=subject.pk), at)
    open_then = {
        row.id: row.key
        for row in rows
        if row.history_type != "-" and row.status == ConflictStatus.OPEN
    }
    members = Conflict.memories.through.objects.filter(conflict_id__in=list(open_then))
    by_id = {m.pk: m for m in in_force}
    grouped: dict[int, list[Memory]] = {}
    for link in members:
        if link.memory_id in by_id:
            grouped.setdefault(link.conflict_id, []).append(by_id[link.memory_id])
    groups = []
    for conflict_id, key in sorted(open_then.items(), key=lambda pair: (pair[1], pair[0])):
        contenders = sorted(grouped.get(conflict_id, []), key=lambda m: (m.written_at, str(m.pk)))
        if len({m.normalized for m in contenders}) > 1:
            groups.append(ConflictGroup(id=conflict_id, key=key, memories=tuple(contenders)))
    return groups


def as_of(subject: Subject, at: datetime) -> AsOf:
    """What was in force about ``subject`` at ``at``, and the block a goal-less recall with
    the default size would have served then."""
    k = min(DEFAULT_K, Policy.current().recall_cap)
    in_force = memories_in_force(subject, at)
    conflicts = conflicts_open_at(subject, at, in_force)
    block = render_block(
        subject_ref=subject.ref,
        memories=in_force[:k],
        conflicts=conflicts,
        nonce=secrets.token_hex(8),
    )
    return AsOf(at=at, k=k, in_force=in_force, conflicts=conflicts, block=block)


def recalls_around(subject: Subject, at: datetime) -> list[Recall]:
    """The recalls actually made about ``subject`` within a day of ``at``, latest first."""
    return list(
        Recall.objects.filter(
            subject=subject, recalled_at__gte=at - AROUND, recalled_at__lte=at + AROUND
        )
        .select_related("agent", "run")
        .order_by("-recalled_at", "-id")[:RECALLS_AROUND]
    )
