"""Forgetting on schedule, in process: what expires, when, once, and who the history names.

Time is travelled with time_machine; the real-worker behaviour is in ``test_worker.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.conf import settings
from django.db import connection, connections, transaction
from django.db.models import Count
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from ledger.actions import seals
from ledger.actions._tracking import save_tracked
from ledger.actions.expiry import expire_due as expire_now
from ledger.actions.ledger_entries import record_ledger_entry
from ledger.actions.lifecycle import renew_memory
from ledger.actions.sources import SourceInput
from ledger.actors import Actor
from ledger.dates import when
from ledger.models import Conflict, LedgerEntry, Memory, Subject
from ledger.models.audit import mac_problem
from ledger.reads import audit_chain
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
    follow_ups = [c for c in queued if not isinstance(c, seals._SealAfterCommit)]
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


# The set-based batches: what they cost, and that they write what the ORM wrote.


def due_rows(count: int, *, prefix: str, sharing: int = 1) -> list[Any]:
    """``count`` due memories, a third of them in keyed slots, ``sharing`` to an expiry,
    inserted in bulk (no history: what is measured is the sweep's own)."""
    subject = Subject.objects.bulk_create([Subject(ref=f"acct_{prefix}")])[0]
    return Memory.objects.bulk_create(
        Memory(
            subject=subject,
            kind="preference",
            key=f"slot.{n % 7}" if n % 3 == 0 else "",
            statement=f"{prefix} fact number {n}.",
            normalized=f"{prefix.lower()} fact number {n}.",
            basis="stated",
            written_at=WRITTEN,
            expires_at=WRITTEN + timedelta(days=1, seconds=n // sharing),
        )
        for n in range(count)
    )


def statements(queries: CaptureQueriesContext) -> list[str]:
    # Savepoints are the test's transaction around each batch, not work the batch does.
    return [q["sql"].split()[0] for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]]


def test_a_batch_of_fifty_and_a_batch_of_five_hundred_cost_the_same_queries(
    clock: Callable[[datetime], None],
) -> None:
    clock(WRITTEN + timedelta(days=2))
    costs = []
    for count, prefix in ((50, "Small"), (500, "Large")):
        rows = due_rows(count, prefix=prefix)
        with CaptureQueriesContext(connection) as queries:
            run = expire_now(batch_size=1000)
        assert run.memories == count
        assert Memory.objects.filter(pk__in=[m.pk for m in rows], status="expired").count() == count
        costs.append(statements(queries))
    # Per batch: the UPDATE … RETURNING, the history INSERT … SELECT, whether a webhook
    # endpoint listens (none does: no events' INSERT … SELECT) and the conflict query; then
    # the ledger entries' UPDATE, which finds none.
    assert costs[0] == costs[1] == ["WITH", "WITH", "SELECT", "SELECT", "WITH"]
    assert Memory.history.filter(history_actor="system:expiry").count() == 550


def index_entries_read() -> int:
    """The entries the sweep's index has handed to scans in this (the test's) transaction,
    the rows the scans then found already expired included."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_get_xact_tuples_returned('memory_due'::regclass)")
        return int(cursor.fetchone()[0])


def test_each_batch_starts_where_the_last_ended_so_a_backlog_is_read_once(
    clock: Callable[[datetime], None],
) -> None:
    """The rows a run expired stay in the sweep's index until a vacuum: a batch that
    searched from the earliest expiry would pass over all of them, and a backlog of 200,000
    (the first sweep at a million memories) would cost the square of its size."""
    clock(WRITTEN + timedelta(days=2))
    with connection.cursor() as cursor:
        # The plan a large table gets (docs/scale.md), not the sequential scan a few rows do.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
    # What a search from the earliest expiry passes over before any row is due here: the
    # entries earlier tests' rolled-back rows left in the index.
    start = index_entries_read()
    assert expire_now().memories == 0
    left_behind = index_entries_read() - start
    # Four rows to an expiry, so that batches of ten end inside one.
    rows = due_rows(200, prefix="Backlog", sharing=4)
    start = index_entries_read()
    run = expire_now(batch_size=10)
    read = index_entries_read() - start - left_behind
    assert run.memories == 200
    assert Memory.objects.filter(pk__in=[m.pk for m in rows], status="expired").count() == 200
    assert Memory.history.filter(history_actor="system:expiry").count() == 200
    # About two entries for each row expired, the last batch as many as the first: searching
    # from the earliest expiry each time, the twenty batches read 2,500.
    assert read <= 3 * 200


def orm_expiry(row: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The row and its history row as the ORM path wrote them (one ``save_tracked`` per
    row, before the sweep was set-based), rolled back: the yardstick for the sweep's."""
    with transaction.atomic():
        row.status = "expired"
        fields = ["status"]
        if hasattr(row, "status_changed_at"):
            row.status_changed_at = timezone.now()
            fields.append("status_changed_at")
        save_tracked(
            row,
            actor=Actor.system("expiry"),
            reason=f"Expired: its expiry, {when(row.expires_at)}, has passed.",
            update_fields=fields,
            bump_version=True,
        )
        written = as_stored(row)
        transaction.set_rollback(True)
    return written


def as_stored(row: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every column of the row and of its latest history row, but the history row's id;
    its MAC (a fresh nonce each row) as what is wrong with it, if anything."""
    history = type(row).history.model
    columns = [f.attname for f in history._meta.concrete_fields if not f.primary_key]
    latest = history.objects.filter(id=row.pk).order_by("-history_id").values(*columns).first()
    latest["history_mac"] = mac_problem(history, latest)
    return type(row).objects.filter(pk=row.pk).values().get(), latest


def test_history_the_sweep_writes_is_the_history_the_orm_wrote(
    remember: Callable[..., Memory], agent: Any, clock: Callable[[datetime], None]
) -> None:
    clock(WRITTEN)
    # Seconds past the minute: the reason names the minute, as every page does.
    memory = remember(
        "Prefers calls in the morning.",
        key="contact.time",
        expires_at=WRITTEN + timedelta(days=1, seconds=42),
        expires_omitted=False,
    )
    entry = record_ledger_entry(
        subject=memory.subject,
        agent=agent,
        fact="Do not email the supplier until the dispute closes.",
        kind="commitment",
        source=SourceInput(kind="user_message", ref="msg_9"),
        expires_at=WRITTEN + timedelta(days=1, seconds=42),
    )
    clock(WRITTEN + timedelta(days=2))
    by_orm = [orm_expiry(Memory.objects.get(pk=memory.pk)), orm_expiry(entry)]
    entry.refresh_from_db()
    assert entry.status == "active"

    expire_now()
    by_sweep = [as_stored(memory), as_stored(entry)]
    assert by_sweep == by_orm
    (_, history), _ = by_sweep
    assert history["history_change_reason"] == (
        "Expired: its expiry, 11 January 2026, 09:00 UTC, has passed."
    )
    assert (history["history_actor"], history["history_role"]) == ("system:expiry", "system")
    assert history["history_subject_id"] == memory.subject_id


def test_the_audit_chain_follows_after_a_sweep(
    remember: Callable[..., Memory], clock: Callable[[datetime], None]
) -> None:
    clock(WRITTEN)
    memories = [expiring(remember, f"Fact number {n}.", days=1) for n in range(3)]
    clock(WRITTEN + timedelta(days=2))
    expire_now()
    # What the sealer a commit queues does, then the whole check verify_audit makes.
    assert seals.seal_pending(full=True) >= len(memories)
    checks = audit_chain.verify()
    assert [check.finding for check in checks] == [None] * len(checks)
    assert all(check.unsealed == 0 for check in checks)


def test_a_possible_conflict_closes_when_its_keyless_side_expires(
    remember: Callable[..., Memory], clock: Callable[[datetime], None]
) -> None:
    clock(WRITTEN)
    expiring(remember, "Never telephone about billing.", days=1)
    expiring(remember, "Happy to be phoned about billing at any time.", days=90)
    conflict = Conflict.objects.open().get(possible=True)
    clock(WRITTEN + timedelta(days=2))
    expire_now()
    conflict.refresh_from_db()
    assert conflict.status == "resolved"
    assert conflict.history.first().history_actor == "system:expiry"


def test_a_possible_conflict_closes_when_its_commitment_expires(
    remember: Callable[..., Memory], agent: Any, clock: Callable[[datetime], None]
) -> None:
    clock(WRITTEN)
    subject = expiring(remember, "Prefers email over telephone.", days=90).subject
    record_ledger_entry(
        subject=subject,
        agent=agent,
        fact="Never telephone about billing.",
        kind="commitment",
        source=SourceInput(kind="user_message", ref="msg_commit"),
        expires_at=WRITTEN + timedelta(days=7),
    )
    expiring(remember, "Happy to be phoned about billing at any time.", days=90)
    conflict = Conflict.objects.open().get(possible=True, commitment__isnull=False)
    clock(WRITTEN + timedelta(days=8))
    assert expire_now().ledger_entries == 1
    conflict.refresh_from_db()
    assert conflict.status == "resolved"
    assert conflict.history.first().history_actor == "system:expiry"


@pytest.mark.django_db(transaction=True)
def test_two_sweeps_at_once_expire_each_row_once_and_skip_a_held_row(
    clock: Callable[[datetime], None],
) -> None:
    clock(WRITTEN + timedelta(days=2))
    rows = due_rows(120, prefix="Race")
    held = rows[0]
    runs: list[int] = []
    with transaction.atomic():
        # A writer holds one due row: both sweeps pass it by instead of waiting.
        Memory.objects.select_for_update().get(pk=held.pk)
        start = threading.Barrier(2)

        def sweep() -> None:
            try:
                start.wait()
                runs.append(expire_now(batch_size=7).memories)
            finally:
                connections.close_all()

        threads = [threading.Thread(target=sweep) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert sum(runs) == 119
    assert Memory.objects.get(pk=held.pk).status == "active"
    assert expire_now().memories == 1
    expired = Memory.objects.filter(pk__in=[m.pk for m in rows])
    assert set(expired.values_list("status", "version")) == {("expired", 2)}
    per_row = (
        Memory.history.filter(history_actor="system:expiry")
        .values("id")
        .annotate(n=Count("history_id"))
    )
    assert sorted(row["n"] for row in per_row) == [1] * 120
