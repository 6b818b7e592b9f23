"""Saving and deleting a tracked row with its actor and reason, so history says who and why.

Private to ``ledger.actions``: a write anywhere else would skip the checks the action
functions make, and ``tests/test_write_boundary.py`` fails on one. The history receiver
(``ledger.signals``) refuses a tracked row saved without an actor for the same reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.db import models
from django.utils import timezone
from simple_history.signals import post_create_historical_record, pre_create_historical_record

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


def create_tracked[M: models.Model](
    instances: Sequence[M], *, actor: Actor, reasons: Sequence[str]
) -> list[M]:
    """Insert new rows of one model, each with its first history row naming ``actor`` and
    its own reason (``reasons``, in order): two statements however many rows. The history
    rows pass through the same receivers as a single save's (``ledger.signals``: stamped,
    then sealed), which ``bulk_create`` alone would skip."""
    if not instances:
        return []
    for instance, reason in zip(instances, reasons, strict=True):
        _stamp(instance, actor, reason)
    model = type(instances[0])
    created = model._default_manager.bulk_create(instances)
    history = model.history.model  # type: ignore[attr-defined]
    using = created[0]._state.db or "default"
    now = timezone.now()
    rows = []
    for instance in created:
        said = {
            "history_date": now,
            "history_user": actor.user,
            "history_change_reason": instance._change_reason,  # type: ignore[attr-defined]
        }
        row = history(
            history_type="+",
            **said,
            **{field.attname: getattr(instance, field.attname) for field in history.tracked_fields},
        )
        pre_create_historical_record.send(
            sender=history, instance=instance, history_instance=row, using=using, **said
        )
        rows.append((instance, row, said))
    history._default_manager.using(using).bulk_create([row for _, row, _ in rows])
    for instance, row, said in rows:
        post_create_historical_record.send(
            sender=history, instance=instance, history_instance=row, using=using, **said
        )
    return created


def delete_tracked(instance: models.Model, *, actor: Actor, reason: str) -> None:
    """Delete ``instance``; its history keeps a last row naming ``actor`` and ``reason``."""
    _stamp(instance, actor, reason)
    instance.delete()
