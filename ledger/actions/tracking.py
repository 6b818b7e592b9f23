"""Saving a tracked row with its actor and reason, so history says who and why."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import models

from ledger.actors import Actor


def save_tracked(
    instance: models.Model,
    *,
    actor: Actor,
    reason: str,
    update_fields: Iterable[str] | None = None,
    bump_version: bool = False,
) -> None:
    """Save ``instance`` so that its history row names ``actor`` and ``reason``."""
    attrs: Any = instance
    attrs._history_actor = actor.label
    attrs._history_user = actor.user
    attrs._change_reason = reason
    fields = list(update_fields) if update_fields is not None else None
    if bump_version:
        attrs.version += 1
        if fields is not None:
            fields.append("version")
    instance.save(update_fields=fields)
