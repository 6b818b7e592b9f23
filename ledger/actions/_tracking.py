"""Saving and deleting a tracked row with its actor and reason, so history says who and why.

Private to ``ledger.actions``: a write anywhere else would skip the checks the action
functions make, and ``tests/test_write_boundary.py`` fails on one. The history receiver
(``ledger.signals``) refuses a tracked row saved without an actor for the same reason.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import models

from ledger.actors import Actor


def _stamp(instance: models.Model, actor: Actor, reason: str) -> None:
    # simple-history reads these attributes when it writes the history row.
    instance._history_actor = actor.label  # type: ignore[attr-defined]
    instance._history_role = actor.role  # type: ignore[attr-defined]
    instance._history_user = actor.user  # type: ignore[attr-defined]
    instance._change_reason = reason  # type: ignore[attr-defined]


def save_tracked(
    instance: models.Model,
    *,
    actor: Actor,
    reason: str,
    update_fields: Iterable[str] | None = None,
    bump_version: bool = False,
) -> None:
    """Save ``instance`` so that its history row names ``actor`` and ``reason``."""
    _stamp(instance, actor, reason)
    fields = list(update_fields) if update_fields is not None else None
    if bump_version:
        instance.version += 1  # type: ignore[attr-defined]
        if fields is not None:
            fields.append("version")
    instance.save(update_fields=fields)


def delete_tracked(instance: models.Model, *, actor: Actor, reason: str) -> None:
    """Delete ``instance``; its history keeps a last row naming ``actor`` and ``reason``."""
    _stamp(instance, actor, reason)
    instance.delete()
