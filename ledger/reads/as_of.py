"""What was in force about a subject at a past moment, rebuilt from history. Pure reads.

A memory's state at ``at`` is its latest history row at or before it; it was in force if
that row was active, not withheld by the person, and not yet past its expiry. The block is
what recall would have rendered then for an agent that gave no goal. A conflict's members
are not kept in history, but a memory only ever joins a conflict, never leaves it, and no
memory written after ``at`` was in force at ``at``: today's members, narrowed to what was in
force, are the members it had. Erased memories have blank history rows and are left out.

Given a goal, the block is ranked as recall ranked then: with the embedding model the
subject's last recall before ``at`` recorded. A statement never changes (a correction is a
new memory), so its stored vector is the one it had, if the model is the same; when the
model recorded then is not the one configured now, the goal cannot be embedded with it and
the replay ranks by words, and says so.
"""

from __future__ import annotations

import secrets
from collections.abc import Hashable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from django.db.models import F, QuerySet, Window
from django.db.models.functions import RowNumber

from ledger.choices import Basis, ConflictStatus, MemoryStatus
from ledger.embeddings import configured_model
from ledger.models import Conflict, Memory, MemoryVector, Policy, Recall, Subject
from ledger.reads import retrieval
from ledger.reads.recall import DEFAULT_K, ConflictGroup, render_block
from ledger.reads.retrieval import Ranked, Semantic, goal_terms
from ledger.rules import ranking

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
    goal: str = ""
    # With a goal: what the replayed ranking served, why, and with which model.
    ranked: tuple[Ranked, ...] = ()
    semantic: Semantic = Semantic.NO_GOAL
    model: str = ""
    model_then: str = ""


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


def as_of(subject: Subject, at: datetime, goal: str = "", k: int | None = None) -> AsOf:
    """What was in force about ``subject`` at ``at``, and the block a recall of ``k`` (by
    default the default size) would have served then: for ``goal``, ranked as then, or
    without one."""
    k = min(k or DEFAULT_K, Policy.current().recall_cap)
    in_force = memories_in_force(subject, at)
    conflicts = conflicts_open_at(subject, at, in_force)
    replay = _replayed(subject, at, goal, in_force, k) if goal_terms(goal) else None
    served = [r.memory for r in replay[0]] if replay else in_force[:k]
    block = render_block(
        subject_ref=subject.ref,
        memories=served,
        conflicts=conflicts,
        nonce=secrets.token_hex(8),
    )
    state = AsOf(at=at, k=k, in_force=in_force, conflicts=conflicts, block=block, goal=goal)
    if replay is None:
        return state
    ranked, semantic, model, model_then = replay
    return replace(
        state, ranked=tuple(ranked), semantic=semantic, model=model, model_then=model_then
    )


def _replayed(
    subject: Subject, at: datetime, goal: str, in_force: list[Memory], k: int
) -> tuple[list[Ranked], Semantic, str, str]:
    """``in_force`` ranked for ``goal`` with the model of the last recall before ``at``;
    the ranking, whether meaning took part, the model used, and the model then."""
    then = (
        Recall.objects.filter(subject=subject, recalled_at__lte=at)
        .exclude(model="")
        .order_by("-recalled_at")
        .values_list("model", flat=True)
        .first()
    )
    model_then = then or configured_model() or ""
    vector, semantic, model = (None, Semantic.OFF, "")
    if model_then and model_then == configured_model():
        vector, semantic, model = retrieval.goal_vector(goal)
    vectors = MemoryVector.objects.of_model(model).filter(memory__in=[m.pk for m in in_force])
    stored = dict(vectors.values_list("memory_id", "vector")) if model else {}
    for memory in in_force:
        memory.embedding = stored.get(memory.pk)  # type: ignore[attr-defined]
        memory.embedding_model = model  # type: ignore[attr-defined]
    dimensions = 0 if vector is None else len(vector)
    candidates = retrieval.candidates_of(in_force, model, dimensions)
    if vector is not None and any(c.vector is None for c in candidates):
        semantic = Semantic.PARTIAL
    by_id: dict[Hashable, Memory] = {m.pk: m for m in in_force}
    chosen = ranking.rank(goal, candidates, goal_vector=vector, k=k)
    ranked = [Ranked(by_id[c.candidate.id], c.why.score, c.why) for c in chosen]
    return ranked, semantic, model, model_then


def recalls_around(subject: Subject, at: datetime) -> list[Recall]:
    """The recalls actually made about ``subject`` within a day of ``at``, latest first."""
    return list(
        Recall.objects.filter(
            subject=subject, recalled_at__gte=at - AROUND, recalled_at__lte=at + AROUND
        )
        .select_related("agent", "run")
        .order_by("-recalled_at", "-id")[:RECALLS_AROUND]
    )
