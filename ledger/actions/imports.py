"""Bringing in memories from an older store, with their original dates."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from ledger import policy
from ledger.actions._tracking import save_tracked
from ledger.actions.slots import refresh_conflict
from ledger.actions.sources import SourceInput, add_source
from ledger.actors import Actor
from ledger.models import Memory, Policy, Subject


def import_memory(
    *,
    subject: Subject,
    kind: str,
    statement: str,
    basis: str,
    source: SourceInput,
    written_at: datetime,
    expires_at: datetime | None,
    actor: Actor,
    key: str = "",
) -> Memory:
    """One memory as the older store had it.

    Unlike the gate, this keeps dates in the past: a memory already past its expiry
    arrives expired, so it is never served.
    """
    now = timezone.now()
    expired = expires_at is not None and expires_at <= now
    current = Policy.current()
    with transaction.atomic():
        memory = Memory(
            subject=subject,
            kind=kind,
            key=key,
            statement=statement,
            normalized=policy.normalize_statement(statement),
            basis=basis,
            status=Memory.Status.EXPIRED if expired else Memory.Status.ACTIVE,
            written_at=written_at,
            confirmed_at=written_at,
            expires_at=expires_at,
            review_at=policy.review_date_for(current, kind=kind, now=written_at),
            policy_version=current.version,
            status_changed_at=now if expired else None,
        )
        save_tracked(memory, actor=actor, reason="Imported with its original dates.")
        add_source(
            data=source, agent=None, subject=subject, now=written_at, actor=actor, memory=memory
        )
        refresh_conflict(subject=subject, key=key, actor=actor)
    return memory
