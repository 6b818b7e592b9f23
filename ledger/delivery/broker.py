"""Queuing a Celery task after a write has committed, never at the write's expense.

A commit queues its follow-up work: the audit sealer (``actions.seals``), the embedder
(``actions.vectors``), the webhook deliveries (``delivery.webhooks``). With the broker down
the write has already happened and must still answer at once: the settings give the
broker one connection attempt of a second (``CELERY_BROKER_CONNECTION_TIMEOUT``,
``CELERY_BROKER_TRANSPORT_OPTIONS``), ``send`` makes one publish without retries, and a
failure is one log line. Nothing is lost: each of those tasks has a beat pass that does
whatever no message asked for (``seal-audit``, ``embed-missing``, ``deliver-webhooks``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from celery import current_app
from kombu.exceptions import KombuError

logger = logging.getLogger(__name__)


def send(name: str, args: Sequence[Any], *, instead: str, **options: Any) -> bool:
    """Queue the task ``name`` with ``args``; whether it was queued. By name: the web
    process need not have imported the tasks. When the broker cannot take it, the warning
    names the task, the error and what does its work ``instead`` (never the arguments:
    they may name a person's memories), and the caller goes on."""
    try:
        current_app.send_task(name, tuple(args), retry=False, **options)
    except (KombuError, OSError) as error:
        logger.warning("%s could not be queued (%s): %s.", name, error, instead)
        return False
    return True
