"""Forgetting on schedule, in process: what expires, when, once, and who the history names.

Time is travelled with time_machine; the real-worker behaviour is in ``test_worker.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.conf import settings

from ledger import audit_chain
from ledger.actions.expiry import expire_due as expire_now
from ledger.actions.ledger_entries import record_ledger_entry
from ledger.actions.lifecycle import renew_memory
from ledger.actions.sources import SourceInput
from ledger.actors import Actor
from ledger.models import Conflict, LedgerEntry, Memory, Subject
from ledger.tasks import expire_due
from memoryadmin.celery import app
from tests.conftest import SUBJECT

pytestmark = pytest.mark.django_db

WRITTEN = datetime(2026, 1, 10, 9, 0, tzinfo=UTC)


@pytest.fixture
def batch(settings: Any) -> Callable[..., None]:
    def set_limits(size: int, max_batches: int = 100) -> None:
        settings.MEMORYADMIN_EXPIRY_BATCH_SIZE = size
        settings.MEMORYADMIN_EXPIRY_MAX_BATCHES = max_batches

    return set_limits


def expiring(remember: Callable[..., Memory], statement: str, days: int, **fields: Any) -> Memory:
    return remember(
        statement,
        expires_at=WRITTEN + timedelta(days=days),
        expires_omitted=False,
        **fields,
    )


def by_expiry(memory: Memory) -> int:
    return memory.history.filter(history_actor="system:expiry").count()


def test_memory_past_its_expiry_becomes_expired_and_history_says_expiry_did_it(
    remember: Callable[..., Memory], clock: Callable[[datetime], None]
) -> None:
    clock(WRITTEN)
    memory = expiring(remember, "Prefers calls in the morning.", days=3)
    clock(WRITTEN + timedelta(days=3, minutes=1))
    result = expire_due()
    memory.refresh_from_db()
    assert result == {"memories": 1, "ledger_entries": 0, "finished": True}
    assert memory.status == "expired"
    assert memory.status_changed_at == WRITTEN + timedelta(days=3, minutes=1)
    last = memory.history.first()
    assert last.history_actor == "system:expiry"
    assert last.history_change_reason.startswith("Expired: its expiry, 13 January 2026, 09:00 UTC")
    assert not Memory.objects.servable().filter(pk=memory.pk).exists()


def test_memory_not_yet_at_its_expiry_is_left_alone(
    remember: Callable[..., Memory], clock: Callable[[datetime], None]
) -> None:
    clock(WRITTEN)
    memory = expiring(remember, "Prefers calls in the morning.", days=3)
    clock(WRITTEN + timedelta(days=2, hours=23))
    expire_due()
    memory.refresh_from_db()
    assert memory.status == "active"
    assert by_expiry(memory) == 0


def test_unconfirmed_guess_expires_too(
    remember: Callable[..., Memory], clock: Callable[[datetime], None]
) -> None:
    clock(WRITTEN)
    guess = expiring(remember, "Probably closes on Mondays.", days=5, basis="inferred")
    assert guess.status == "pending"
    clock(WRITTEN + timedelta(days=6))
    expire_due()
    guess.refresh_from_db()
    assert guess.status == "expired"


def test_running_again_changes_nothing_and_writes_no_second_history_row(
    remember: Callable[..., Memory], clock: Callable[[datetime], None]
) -> None:
    clock(WRITTEN)
    memory = expiring(remember, "Prefers calls in the morning.", days=1)
    clock(WRITTEN + timedelta(days=2))
    expire_due()
    version = Memory.objects.get(pk=memory.pk).version
    assert expire_due() == {"memories": 0, "ledger_entries": 0, "finished": True}
    clock(WRITTEN + timedelta(days=30))
    expire_due()
    memory.refresh_from_db()
    assert memory.version == version
    assert by_expiry(memory) == 1


def test_more_due_rows_than_one_batch_all_expire_in_one_run(
    remember: Callable[..., Memory],
    clock: Callable[[datetime], None],
    batch: Callable[..., None],
) -> None:
    batch(3)
    clock(WRITTEN)
    memories = [expiring(remember, f"Fact number {n}.", days=1) for n in range(8)]
    keeper = expiring(remember, "Still true next month.", days=40)
    clock(WRITTEN + timedelta(days=2))
    assert expire_due()["memories"] == 8
    assert {m.status for m in Memory.objects.filter(pk__in=[m.pk for m in memories])} == {"expired"}
    assert all(by_expiry(m) == 1 for m in memories)
    keeper.refresh_from_db()
    assert keeper.status == "active"


def test_run_that_reaches_its_batch_limit_queues_the_rest_on_commit(
    remember: Callable[..., Memory],
    clock: Callable[[datetime], None],
    batch: Callable[..., None],
    django_capture_on_commit_callbacks: Any,
) -> None:
    batch(2, max_batches=2)
    clock(WRITTEN)
    memories = [expiring(remember, f"Fact number {n}.", days=1) for n in range(7)]
    clock(WRITTEN + timedelta(days=2))
    app.conf.task_always_eager = True
    try:
        with django_capture_on_commit_callbacks(execute=True) as queued:
            first = expire_due()
    finally:
        app.conf.task_always_eager = settings.CELERY_TASK_ALWAYS_EAGER
    assert first == {"memories": 4, "ledger_entries": 0, "finished": False}
    # The follow-up ran when the (test's) transaction committed, and itself queued one more
    # (besides the audit's sealing of the history rows the expiry wrote).
    follow_ups = [c for c in queued if not isinstance(c, audit_chain._SealAfterCommit)]
    assert len(follow_ups) == 2
    assert Memory.objects.filter(pk__in=[m.pk for m in memories], status="expired").count() == 7
    assert all(by_expiry(m) == 1 for m in memories)


def test_expired_memory_stays_visible_to_its_owner_and_can_be_renewed(
    remember: Callable[..., Memory],
    clock: Callable[[datetime], None],
    make_person: Callable[..., Any],
) -> None:
    clock(WRITTEN)
    dana = make_person("dana", subject=SUBJECT)
    memory = expiring(remember, "Prefers calls in the morning.", days=1)
    clock(WRITTEN + timedelta(days=2))
    expire_due()
    assert Memory.objects.visible_to(dana).get(pk=memory.pk).status == "expired"
    renewed = renew_memory(
        memory=memory,
        actor=Actor.for_user(dana),
        expires_at=WRITTEN + timedelta(days=200),
        reason="Still true.",
    )
    assert renewed.status == "active"
    assert renewed.history.first().history_actor == "user:dana"
    clock(WRITTEN + timedelta(days=100))
    expire_due()
    renewed.refresh_from_db()
    assert renewed.status == "active"


def test_when_one_side_of_a_conflict_expires_the_conflict_closes(
    remember: Callable[..., Memory], clock: Callable[[datetime], None]
) -> None:
    clock(WRITTEN)
    expiring(remember, "Deliveries before noon.", days=1, key="delivery.window")
    later = expiring(remember, "Deliveries after 3 pm.", days=90, key="delivery.window")
    conflict = Conflict.objects.open().get()
    clock(WRITTEN + timedelta(days=2))
    expire_due()
    conflict.refresh_from_db()
    assert conflict.status == "resolved"
    assert conflict.history.first().history_actor == "system:expiry"
    later.refresh_from_db()
    assert later.status == "active"


def test_ledger_entry_past_its_expiry_becomes_expired_once(
    remember: Callable[..., Memory], agent: Any, clock: Callable[[datetime], None]
) -> None:
    clock(WRITTEN)
    remember("Prefers calls in the morning.")
    subject = Subject.objects.get(ref=SUBJECT)
    entry = record_ledger_entry(
        subject=subject,
        agent=agent,
        fact="Do not email the supplier until the dispute closes.",
        kind="commitment",
        source=SourceInput(kind="user_message", ref="msg_9"),
        expires_at=WRITTEN + timedelta(days=7),
        immutable=True,
    )
    forever = record_ledger_entry(
        subject=subject,
        agent=agent,
        fact="Account opened in 2019.",
        kind="established",
        source=SourceInput(kind="tool_result", ref="crm_1"),
    )
    clock(WRITTEN + timedelta(days=8))
    assert expire_due()["ledger_entries"] == 1
    assert expire_now().ledger_entries == 0
    entry.refresh_from_db()
    assert entry.status == "expired"
    assert entry.history.filter(history_actor="system:expiry").count() == 1
    assert list(LedgerEntry.objects.in_force()) == [forever]


def test_beat_schedule_names_the_registered_tasks() -> None:
    schedule = app.conf.beat_schedule
    assert schedule["expire-due"]["task"] in app.tasks
    assert schedule["send-reminders"]["task"] in app.tasks
    # A message nobody took within one period is dropped: the next one does the same work.
    assert schedule["expire-due"]["options"]["expires"] == schedule["expire-due"]["schedule"]
