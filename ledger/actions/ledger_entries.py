"""Writes to the ledger of durable facts and commitments."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from ledger.actions.memories import SourceInput, _add_source_row, _run_for
from ledger.actions.tracking import save_tracked
from ledger.actors import Actor
from ledger.models import Agent, LedgerEntry, Subject


def record_ledger_entry(
    *,
    subject: Subject,
    agent: Agent,
    fact: str,
    kind: str,
    source: SourceInput,
    run_ref: str | None = None,
    key: str = "",
    expires_at: datetime | None = None,
    immutable: bool = False,
) -> LedgerEntry:
    """Record one entry, verbatim, with its source."""
    actor = Actor.for_agent(agent)
    now = timezone.now()
    with transaction.atomic():
        entry = LedgerEntry(
            subject=subject,
            run=_run_for(run_ref, agent=agent, subject=subject),
            agent=agent,
            key=key,
            fact=fact,
            kind=kind,
            source=_add_source_row(data=source, agent=agent, subject=subject, now=now, actor=actor),
            immutable=immutable,
            expires_at=expires_at,
            recorded_at=now,
        )
        save_tracked(entry, actor=actor, reason=f"Recorded as {kind}.")
    return entry
