"""Stamp every history row with the actor the write function named, refuse a tracked
row changed without one, and have the audit's new rows sealed once their transaction
commits (``seals.seal_after_commit``: by a Celery task, not by the writer).

A tracked row that reaches ``save()`` or ``delete()`` without an actor was changed
outside ``ledger.actions``: it is refused before anything is written, so a write that
skips the action functions fails loudly at once instead of leaving an anonymous row in
the audit. (Raw ``QuerySet.update`` sends no signal; ``tests/test_write_boundary.py``
finds those in the source.)
"""

from typing import Any

from django.db.models.signals import post_save, pre_delete, pre_save
from django.dispatch import receiver
from simple_history.signals import post_create_historical_record, pre_create_historical_record

from ledger.actions import seals, vectors
from ledger.models import Erasure, Memory, PersonChange, Source, Subject


class UntrackedWrite(RuntimeError):
    """A tracked model was saved or deleted without going through ``ledger.actions``."""


@receiver(pre_save)
@receiver(pre_delete)
def refuse_untracked_write(sender: Any, instance: Any, **kwargs: Any) -> None:
    if kwargs.get("raw") or not _is_tracked(sender):
        return
    if not getattr(instance, "_history_actor", ""):
        raise UntrackedWrite(
            f"{sender.__name__} was changed outside ledger.actions; "
            "call the action function that stands for this change."
        )


@receiver(pre_create_historical_record)
def stamp_actor(sender: Any, instance: Any, history_instance: Any, **kwargs: Any) -> None:
    history_instance.history_actor = instance._history_actor
    history_instance.history_role = getattr(instance, "_history_role", "")
    history_instance.history_subject_id = subject_of(instance)


@receiver(post_create_historical_record)
def seal_history(sender: Any, history_instance: Any, **kwargs: Any) -> None:
    using = history_instance._state.db or "default"
    seals.seal_after_commit(history_instance._meta.db_table, using)


@receiver(post_create_historical_record, sender=Memory.history.model)
def embed_new_memory(sender: Any, instance: Any, history_instance: Any, **kwargs: Any) -> None:
    """Every new memory (a write, a correction, an import, a revert's copy) is embedded
    once its transaction commits."""
    if history_instance.history_type == "+":
        vectors.embed_after_commit(instance.pk, history_instance._state.db or "default")


@receiver(post_save, sender=PersonChange)
@receiver(post_save, sender=Erasure)
def seal_record(sender: Any, instance: Any, created: bool, **kwargs: Any) -> None:
    """Changes to people and erasures have no history table: their rows are the record."""
    if created:
        seals.seal_after_commit(sender._meta.db_table, instance._state.db or "default")


def subject_of(instance: Any) -> int | None:
    """The subject a tracked row is about, for the audit's filter; None for agents, keys,
    the policy and batches, which are about no one subject."""
    if isinstance(instance, Subject):
        return int(instance.pk)
    if hasattr(instance, "subject_id"):
        return instance.subject_id  # type: ignore[no-any-return]
    if isinstance(instance, Source) and instance.memory is not None:
        return instance.memory.subject_id
    run = getattr(instance, "run", None)
    return run.subject_id if run is not None else None


def _is_tracked(model: type) -> bool:
    # simple-history marks each model it tracks in its options, and only those. (Asking for
    # the ``history`` manager itself builds a manager class on every call: every save.)
    options = model._meta  # type: ignore[attr-defined]
    return options.app_label == "ledger" and hasattr(options, "simple_history_manager_attribute")
