"""Celery tasks. Thin: each calls a write function and owns its retry policy.

Messages are acknowledged late and rejected back to the queue if the worker dies
(``CELERY_TASK_ACKS_LATE``, ``CELERY_TASK_REJECT_ON_WORKER_LOST``), so every task here
must be safe to run twice, and is.
"""

from __future__ import annotations

import logging
import uuid
from smtplib import SMTPException
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError

from ledger.actions import (
    audit_verified,
    checkpoints,
    expiry,
    recall_log,
    reminders,
    seals,
    vectors,
)
from ledger.delivery import webhooks
from ledger.embeddings import EmbeddingUnavailable

logger = logging.getLogger(__name__)

# Lost connections, deadlocks and mail-server trouble pass; retry soon, a few times, with
# a short capped backoff rather than a long countdown the broker might redeliver early.
RETRY = {
    "autoretry_for": (
        OperationalError,
        InterfaceError,
        SMTPException,
        ConnectionError,
        TimeoutError,
        reminders.DigestNotSent,
    ),
    "retry_backoff": 2,
    "retry_backoff_max": 120,
    "retry_jitter": True,
    "max_retries": 5,
    "acks_late": True,
}


# Celery ships no types: a task is Any to the type checker, its body is still checked.
@shared_task(name="ledger.tasks.expire_due", **RETRY)  # type: ignore[untyped-decorator]
def expire_due() -> dict[str, int | bool]:
    """Expire whatever is due; a run that hit its batch limit queues the next at once."""
    run = expiry.expire_due()
    if not run.finished:
        expire_due.delay_on_commit()
    return run.as_dict()


@shared_task(name="ledger.tasks.send_reminders", **RETRY)  # type: ignore[untyped-decorator]
def send_reminders() -> dict[str, int]:
    """Create the reminders that became due, then e-mail one digest per recipient."""
    memories = reminders.create_due_reminders()
    # With e-mail off the reminders stay unsent, on the dashboard.
    digests = reminders.send_digests() if settings.MEMORYADMIN_EMAIL else 0
    return {"memories_reminded": memories, "digests_sent": digests}


@shared_task(name="ledger.tasks.seal_audit", **RETRY)  # type: ignore[untyped-decorator]
def seal_audit() -> dict[str, int]:
    """Seal the history rows no commit's sealer did (it was busy, dropped, or the row
    committed late)."""
    return {"sealed": seals.seal_pending()}


@shared_task(name=audit_verified.VERIFY_TASK, **RETRY)  # type: ignore[untyped-decorator]
def verify_audit(by: str) -> dict[str, Any]:
    """The Audit page's Verify now: ``verify_audit``'s checks, with progress the page polls
    (``ledger.actions.audit_verified``); safe twice, as a check that records its result."""
    verified = audit_verified.verify_reporting(by=by)
    return {"ok": verified.ok, "checked": verified.checked, "failures": len(verified.failures)}


@shared_task(name="ledger.tasks.checkpoint_audit", **RETRY)  # type: ignore[untyped-decorator]
def checkpoint_audit() -> dict[str, bool]:
    """Record a signed checkpoint of the audit chain's heads, even if none moved: at least
    one an hour, so the file shows the chains were checked (``ledger.actions.checkpoints``)."""
    recorded = checkpoints.record_checkpoint(force=True)
    return {"written": recorded.written, "refused": bool(recorded.refused)}


@shared_task(name=seals.SEAL_TASK, **RETRY)  # type: ignore[untyped-decorator]
def seal_written(tables: list[str], using: str = "default") -> dict[str, int]:
    """Seal what the commits that queued this wrote to ``tables`` (``seals.queue_sealer``)."""
    return {"sealed": seals.seal_written(tables, using=using)}


@shared_task(name="ledger.tasks.keep_recall_log", **RETRY)  # type: ignore[untyped-decorator]
def keep_recall_log() -> dict[str, Any]:
    """Make the recall log's next months, drop those past the retention."""
    return recall_log.keep_recall_log().as_dict()


@shared_task(name=webhooks.DELIVER_TASK, **RETRY)  # type: ignore[untyped-decorator]
def deliver_webhooks(event_id: str | None = None) -> dict[str, Any]:
    """Send one event's deliveries (queued when its change committed), or whatever is due
    (the beat's pass, with no event): each at most once, however often this runs. The
    beat's pass also forgets settled deliveries past the retention."""
    sent = webhooks.deliver(event_id=event_id).as_dict()
    if event_id is None:
        sent["forgotten"] = webhooks.forget_settled()
    return sent


@shared_task(name=vectors.EMBED_TASK, **RETRY)  # type: ignore[untyped-decorator]
def embed_memories(memory_ids: list[str], using: str = "default") -> dict[str, int]:
    """Embed the memories a transaction wrote. With the backend down they wait for the
    beat's pass (``embed_missing``): a retry here would only wait on it too."""
    try:
        return {"embedded": vectors.embed([uuid.UUID(pk) for pk in memory_ids], using=using)}
    except EmbeddingUnavailable as error:
        logger.warning("New memories were not embedded (%s): the beat's pass will.", error)
        return {"embedded": 0}


@shared_task(name="ledger.tasks.embed_missing", **RETRY)  # type: ignore[untyped-decorator]
def embed_missing() -> dict[str, int]:
    """The beat's pass: what a broker outage or the backend left unembedded, a bounded
    number per run; ``manage.py embed_memories`` does a whole model change."""
    try:
        return {"embedded": vectors.embed_missing(limit=settings.MEMORYADMIN_EMBED_PASS_SIZE)}
    except EmbeddingUnavailable as error:
        logger.warning("The embedding pass stopped (%s): the next one tries again.", error)
        return {"embedded": 0}
