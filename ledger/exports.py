"""The export document: everything kept about one subject, as plain JSON-ready data.

A pure read. The format is versioned (``FORMAT``) and documented in docs/end-users.md;
add fields freely, but rename or remove one only with a new format version.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone

from ledger.models import Conflict, Erasure, LedgerEntry, Memory, Source, Subject

FORMAT = "memoryadmin.export/1"


def _time(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _history(rows: Any) -> list[dict[str, Any]]:
    return [
        {
            "version": row.version,
            "status": row.status,
            "changed_at": _time(row.history_date),
            "change": {"+": "created", "~": "changed", "-": "deleted"}[row.history_type],
            "actor": row.history_actor,
            "reason": row.history_change_reason,
        }
        for row in rows
    ]


def _source(source: Source) -> dict[str, Any]:
    return {
        "id": str(source.pk),
        "kind": source.kind,
        "ref": source.ref,
        "run": source.run.ref if source.run else None,
        "turn": source.turn,
        "excerpt": source.excerpt,
        "received_at": _time(source.received_at),
    }


def _memory(memory: Memory) -> dict[str, Any]:
    rows = memory.history.order_by("history_date", "history_id")
    history = _history(rows)
    for entry, row in zip(history, rows, strict=True):
        entry["statement"] = row.statement
        entry["basis"] = row.basis
        entry["expires_at"] = _time(row.expires_at)
    return {
        "id": str(memory.pk),
        "kind": memory.kind,
        "key": memory.key,
        "statement": memory.statement,
        "basis": memory.basis,
        "stated_by": memory.stated_by,
        "status": memory.status,
        "written_at": _time(memory.written_at),
        "confirmed_at": _time(memory.confirmed_at),
        "expires_at": _time(memory.expires_at),
        "supersedes": str(memory.supersedes_id) if memory.supersedes_id else None,
        "agent": memory.agent.name if memory.agent else None,
        "run": memory.run.ref if memory.run else None,
        "version": memory.version,
        "sources": [_source(s) for s in memory.sources.all()],
        "history": history,
    }


def _ledger_entry(entry: LedgerEntry) -> dict[str, Any]:
    rows = entry.history.order_by("history_date", "history_id")
    history = _history(rows)
    for item, row in zip(history, rows, strict=True):
        item["fact"] = row.fact
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
        "history": history,
    }


def _conflict(conflict: Conflict) -> dict[str, Any]:
    return {
        "id": conflict.pk,
        "key": conflict.key,
        "status": conflict.status,
        "opened_at": _time(conflict.opened_at),
        "resolved_at": _time(conflict.resolved_at),
        "memories": sorted(str(pk) for pk in conflict.memories.values_list("pk", flat=True)),
    }


def _erasure(erasure: Erasure) -> dict[str, Any]:
    return {
        "erased_at": _time(erasure.erased_at),
        "erased_by": erasure.erased_by,
        "memories": erasure.memories,
        "ledger_entries": erasure.ledger_entries,
        "sources": erasure.sources,
    }


def export_subject(subject: Subject, *, now: datetime | None = None) -> dict[str, Any]:
    """Everything about ``subject``: memories in every status with their history and
    sources, ledger entries in every status, conflicts and erasures."""
    memories = (
        Memory.objects.for_subject(subject)
        .select_related("agent", "run")
        .prefetch_related("sources__run")
        .order_by("written_at", "id")
    )
    entries = (
        LedgerEntry.objects.filter(subject=subject)
        .select_related("agent", "run", "source__run", "promotion_source__run")
        .order_by("recorded_at", "id")
    )
    return {
        "format": FORMAT,
        "exported_at": _time(now or timezone.now()),
        "subject": {
            "ref": subject.ref,
            "display_name": subject.display_name,
            "memory_paused": subject.memory_paused,
            "created_at": _time(subject.created_at),
        },
        "memories": [_memory(m) for m in memories],
        "ledger_entries": [_ledger_entry(e) for e in entries],
        "conflicts": [_conflict(c) for c in subject.conflicts.order_by("opened_at", "id")],
        "erasures": [_erasure(e) for e in subject.erasures.order_by("erased_at", "id")],
    }
