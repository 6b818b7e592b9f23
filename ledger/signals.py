"""Stamp every history row with the actor the write function named.

A tracked row that arrives here without an actor was saved outside ``ledger.actions``:
that is refused, so a write that skips the action functions fails loudly at once instead
of leaving an anonymous row in the audit.
"""

from typing import Any

from django.dispatch import receiver
from simple_history.signals import pre_create_historical_record


class UntrackedWrite(RuntimeError):
    """A tracked model was saved or deleted without going through ``ledger.actions``."""


@receiver(pre_create_historical_record)
def stamp_actor(sender: Any, instance: Any, history_instance: Any, **kwargs: Any) -> None:
    actor = getattr(instance, "_history_actor", "")
    if not actor:
        raise UntrackedWrite(
            f"{type(instance).__name__} was changed outside ledger.actions; "
            "call the action function that stands for this change."
        )
    history_instance.history_actor = actor
