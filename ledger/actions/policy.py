"""Changing the write policy: the one row every write is decided by."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from ledger.actions._tracking import save_tracked
from ledger.actors import Actor
from ledger.models import Policy


def change_policy(*, actor: Actor, reason: str, **changes: Any) -> Policy:
    """Set the named settings and keep the rest; the next write is decided by the result.

    The row is stored if a flushed database lost it, so its history starts here.
    """
    settable = {field.name for field in Policy._meta.concrete_fields} - {"id", "version"}
    unknown = set(changes) - settable
    if unknown:
        raise ValueError(f"not policy settings: {', '.join(sorted(unknown))}")
    with transaction.atomic():
        policy = Policy.objects.select_for_update().filter(pk=1).first() or Policy(pk=1)
        for name, value in changes.items():
            setattr(policy, name, value)
        save_tracked(policy, actor=actor, reason=reason, bump_version=True)
    return policy
