"""The export document: everything kept about one subject, as plain JSON-ready data.

It answers a person's request for access to their data, so it holds everything and says
it in words that mean something outside the program: every memory in every status with
its history, sources and every time an agent was given it; the ledger; when memory was
paused and by whom; every conflict and who settled it how; erasures. Who acted is said
as ``who`` ("the person", "support", …) beside the exact ``actor`` label; no internal
code or row number of another table appears.

A pure read in a fixed number of queries, however much the subject holds. The format is
versioned (``FORMAT``), described by the JSON Schema in ``ledger.reads.export_schema`` (served
at ``/api/v1/schemas/export``) and documented in docs/end-users.md; add fields freely
(to the schema too), but rename or remove one only with a new format version.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Prefetch
from django.utils import timezone

from ledger import access
from ledger.actors import Actor
from ledger.choices import Basis, ConflictStatus, MemoryStatus, StatedBy
from ledger.models import (
    Conflict,
    Erasure,
    LedgerEntry,
    Memory,
    RecallItem,
    Source,
    Subject,
)
from ledger.reads.export_schema import (
    FORMAT,
    WHO_ADMIN,
    WHO_AGENT,
    WHO_OTHER_PERSON,
    WHO_PERSON,
    WHO_SUPPORT,
    WHO_SYSTEM,
    WHO_UNKNOWN,
)
from ledger.words import CORRECTION_REF, reason_words

__all__ = ["FORMAT", "export_subject"]

_CHANGES = {"+": "created", "~": "changed", "-": "deleted"}


def _time(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


@dataclass(frozen=True)
class _Names:
    """Who an actor label is, in the export's words (``ledger.reads.export_schema.WHO``)."""

    owner: str | None
    roles: Mapping[str, access.Role]

    @classmethod
    def load(cls, subject: Subject, labels: Iterable[str]) -> _Names:
        """One query for the roles of every person named, whatever the number of rows."""
        usernames = {name for label in labels if (name := Actor.username_in(label))}
        owner = subject.owner.get_username() if subject.owner else None
        return cls(owner=owner, roles=access.roles_of(usernames))

    def who(self, label: str) -> str:
        kind, _, name = label.partition(":")
        if kind == "user":
            # The person first: an owner who is also staff acts for themselves here.
            if name == self.owner:
                return WHO_PERSON
            role = self.roles.get(name)
            if role == access.Role.ADMIN:
                return WHO_ADMIN
            if role == access.Role.SUPPORT:
                return WHO_SUPPORT
            return WHO_OTHER_PERSON
        if kind == "agent":
            return WHO_AGENT
        if kind == "system":
            return WHO_SYSTEM
        return WHO_UNKNOWN

    def by(self, label: str) -> dict[str, str]:
        return {"who": self.who(label), "actor": label}


def _grouped(rows: Iterable[Any], key: str) -> dict[Any, list[Any]]:
    groups: dict[Any, list[Any]] = defaultdict(list)
    for row in rows:
        groups[getattr(row, key)].append(row)
    return groups


def _change(row: Any, names: _Names) -> dict[str, Any]:
    return {
        "version": row.version,
        "changed_at": _time(row.history_date),
        "change": _CHANGES[row.history_type],
        **names.by(row.history_actor),
        "reason": reason_words(row.history_change_reason or "") or row.history_change_reason,
    }


def _source(source: Source) -> dict[str, Any]:
    kind, ref = source.kind, source.ref
    # A correction made on the dashboard is stored as a hand-written source naming the
    # memory it corrects; the export says so in its own words.
    if kind == Source.Kind.OPERATOR and ref.startswith(CORRECTION_REF):
        kind, ref = "correction", ref.removeprefix(CORRECTION_REF)
    return {
        "kind": kind,
        "ref": ref,
        "run": source.run.ref if source.run else None,
        "turn": source.turn,
        "excerpt": source.excerpt,
        "received_at": _time(source.received_at),
    }


def _origin(memory: Memory, rows: list[Any], names: _Names) -> dict[str, str]:
    """How the memory came to be, in the export's words, and who is behind it."""
    if memory.basis == Basis.INFERRED:
        return {"how": "guessed", "who": names.who(rows[0].history_actor) if rows else WHO_AGENT}
    if memory.stated_by == StatedBy.SUPPORT_CONFIRMATION:
        # Whoever on the staff did it, it was not the person.
        return {"how": "confirmed", "who": WHO_SUPPORT}
    if memory.stated_by == StatedBy.CONFIRMATION:
        confirmed = next((r for r in rows if r.stated_by == StatedBy.CONFIRMATION), None)
        who = names.who(confirmed.history_actor) if confirmed else WHO_UNKNOWN
        return {"how": "confirmed", "who": who}
    if memory.stated_by == StatedBy.SUPPORT_CORRECTION:
        return {"how": "corrected", "who": WHO_SUPPORT}
    if memory.stated_by == StatedBy.CORRECTION:
        who = names.who(rows[0].history_actor) if rows else WHO_UNKNOWN
        return {"how": "corrected", "who": who}
    first = min(memory.sources.all(), key=lambda source: source.received_at, default=None)
    if first is not None and first.kind != Source.Kind.USER_MESSAGE:
        # Stated, but not in the person's words: a tool's answer, an import, a hand entry.
        return {"how": "recorded", "who": names.who(rows[0].history_actor) if rows else WHO_UNKNOWN}
    # Stated by the person, whoever wrote it down (an agent recording their own words).
    return {"how": "said", "who": WHO_PERSON}


def _read(item: RecallItem) -> dict[str, Any]:
    recall = item.recall
    return {
        "read_at": _time(recall.recalled_at),
        "agent": recall.agent.name,
        "run": recall.run.ref if recall.run else None,
        "turn": recall.turn,
        "goal": recall.goal,
    }


def _memory(
    memory: Memory, rows: list[Any], reads: list[RecallItem], names: _Names
) -> dict[str, Any]:
    successor = getattr(memory, "superseded_by", None)
    return {
        "id": str(memory.pk),
        "kind": memory.kind,
        "key": memory.key,
        "statement": memory.statement,
        "basis": memory.basis,
        "origin": _origin(memory, rows, names),
        "status": memory.status,
        "withheld": memory.withheld,
        "written_at": _time(memory.written_at),
        "confirmed_at": _time(memory.confirmed_at),
        "expires_at": _time(memory.expires_at),
        "supersedes": str(memory.supersedes_id) if memory.supersedes_id else None,
        "superseded_by": str(successor.pk) if successor else None,
        "agent": memory.agent.name if memory.agent else None,
        "run": memory.run.ref if memory.run else None,
        "version": memory.version,
        "sources": [_source(s) for s in memory.sources.all()],
        "history": [
            {
                **_change(row, names),
                "status": row.status,
                "withheld": row.withheld,
                "statement": row.statement,
                "basis": row.basis,
                "expires_at": _time(row.expires_at),
            }
            for row in rows
        ],
        "reads": [_read(item) for item in reads],
    }


def _ledger_entry(entry: LedgerEntry, rows: list[Any], names: _Names) -> dict[str, Any]:
    return {
        "id": str(entry.pk),
        "kind": entry.kind,
        "key": entry.key,
        "fact": entry.fact,
        "status": entry.status,
        "immutable": entry.immutable,
        "recorded_at": _time(entry.recorded_at),
        "expires_at": _time(entry.expires_at),
        "supersedes": str(entry.supersedes_id) if entry.supersedes_id else None,
        "agent": entry.agent.name if entry.agent else None,
        "run": entry.run.ref if entry.run else None,
        "source": _source(entry.source),
        "promotion_source": _source(entry.promotion_source) if entry.promotion_source else None,
        "version": entry.version,
        "history": [
            {**_change(row, names), "status": row.status, "fact": row.fact} for row in rows
        ],
    }


def _resolution(
    conflict: Conflict,
    conflict_rows: list[Any],
    members: list[uuid.UUID],
    memory_rows: Mapping[uuid.UUID, list[Any]],
    names: _Names,
) -> dict[str, Any] | None:
    """Who closed the conflict, how, and which statements it left in use.

    A person's settling is stored on the conflict (``resolution`` and ``kept``); a conflict
    that closed because a contender went some other way is read from the history: the
    closing row names who closed it, and a contender still active then was kept.
    """
    closing = next((r for r in conflict_rows if r.status == ConflictStatus.RESOLVED), None)
    if closing is None:
        return None
    if conflict.resolution:
        kept = [conflict.kept_id] if conflict.kept_id else []
        return {
            **names.by(closing.history_actor),
            "how": conflict.resolution,
            "kept": [str(pk) for pk in kept],
        }
    at = closing.history_date
    kept = []
    for pk in members:
        before = [r for r in memory_rows.get(pk, []) if r.history_date <= at]
        if before and before[-1].status == MemoryStatus.ACTIVE:
            kept.append(pk)
    how = "kept" if kept else "none_left"
    return {**names.by(closing.history_actor), "how": how, "kept": [str(pk) for pk in kept]}


def _pauses(rows: list[Any], names: _Names) -> list[dict[str, Any]]:
    """Every change of the memory switch, from the subject's history."""
    events = []
    paused = False
    for row in rows:
        if row.memory_paused != paused:
            events.append(
                {"at": _time(row.history_date), "paused": row.memory_paused}
                | names.by(row.history_actor)
            )
        paused = row.memory_paused
    return events


def export_subject(subject: Subject, *, now: datetime | None = None) -> dict[str, Any]:
    """Everything about ``subject``: memories in every status with their history, sources
    and reads, ledger entries in every status, pauses, conflicts and erasures."""
    memories = list(
        Memory.objects.for_subject(subject)
        .select_related("agent", "run", "superseded_by")
        .prefetch_related(Prefetch("sources", Source.objects.select_related("run")))
        .order_by("written_at", "id")
    )
    memory_rows = _grouped(
        Memory.history.filter(subject_id=subject.pk).order_by("history_date", "history_id"),
        "id",
    )
    reads = _grouped(
        RecallItem.objects.about(subject)
        .select_related("recall__agent", "recall__run")
        .order_by("recall__recalled_at", "recall_id"),
        "memory_id",
    )
    entries = list(
        LedgerEntry.objects.filter(subject=subject)
        .select_related("agent", "run", "source__run", "promotion_source__run")
        .order_by("recorded_at", "id")
    )
    entry_rows = _grouped(
        LedgerEntry.history.filter(subject_id=subject.pk).order_by("history_date", "history_id"),
        "id",
    )
    conflicts = list(
        subject.conflicts.order_by("opened_at", "id").prefetch_related(
            Prefetch("memories", Memory.objects.only("pk").order_by("pk"))
        )
    )
    conflict_rows = _grouped(
        Conflict.history.filter(subject_id=subject.pk).order_by("history_date", "history_id"),
        "id",
    )
    subject_rows = list(
        Subject.history.filter(id=subject.pk).order_by("history_date", "history_id")
    )
    erasures: list[Erasure] = list(subject.erasures.order_by("erased_at", "id"))
    labels = [
        row.history_actor
        for rows in (*memory_rows.values(), *entry_rows.values(), *conflict_rows.values())
        for row in rows
    ]
    labels += [row.history_actor for row in subject_rows] + [e.erased_by for e in erasures]
    names = _Names.load(subject, labels)
    return {
        "format": FORMAT,
        "exported_at": _time(now or timezone.now()),
        "subject": {
            "ref": subject.ref,
            "display_name": subject.display_name,
            "created_at": _time(subject.created_at),
            "memory_paused": subject.memory_paused,
            "pauses": _pauses(subject_rows, names),
        },
        "memories": [
            _memory(m, memory_rows.get(m.pk, []), reads.get(m.pk, []), names) for m in memories
        ],
        "ledger_entries": [_ledger_entry(e, entry_rows.get(e.pk, []), names) for e in entries],
        "conflicts": [
            {
                "key": c.key,
                "possible": c.possible,
                "commitment": str(c.commitment_id) if c.commitment_id else None,
                "status": c.status,
                "opened_at": _time(c.opened_at),
                "resolved_at": _time(c.resolved_at),
                "memories": [str(m.pk) for m in c.memories.all()],
                "resolution": _resolution(
                    c,
                    conflict_rows.get(c.pk, []),
                    [m.pk for m in c.memories.all()],
                    memory_rows,
                    names,
                ),
            }
            for c in conflicts
        ],
        "erasures": [
            {
                "erased_at": _time(e.erased_at),
                "erased_by": e.erased_by,
                "who": names.who(e.erased_by),
                "memories": e.memories,
                "ledger_entries": e.ledger_entries,
                "sources": e.sources,
            }
            for e in erasures
        ],
    }
