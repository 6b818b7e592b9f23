"""Stamp every history row with the actor the write function named."""

from typing import Any

from django.dispatch import receiver
from simple_history.signals import pre_create_historical_record


@receiver(pre_create_historical_record)
def stamp_actor(sender: Any, instance: Any, history_instance: Any, **kwargs: Any) -> None:
    history_instance.history_actor = getattr(instance, "_history_actor", "") or "unknown"
