"""The recall log on PostgreSQL is partitioned by month: the upgrade moves every read into
its month and ids go on, the next months are made ahead, months past the retention go
whole, a read no month covered is handled, and support's trace still finds every read.

These tests commit (partitions are tables: they are made and dropped by DDL, each in its
own transaction), so they run with ``transaction=True``; the months one test makes stay for
the next, so each asks about months of its own and never drops the current one."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from ledger.actions.recall_log import keep_recall_log
from ledger.actions.recalls import record_recall
from ledger.models import Agent, Memory, Recall, RecallItem
from ledger.reads import recall_log
from ledger.reads.recall import recall
from ledger.reads.recall_log import ITEMS, RECALLS, Month
from tests.conftest import SUBJECT, signed_in
from tests.test_audit_chain import grants
from tests.test_audit_upgrade import migrate
from tests.test_production_settings import check_deploy

pytestmark = pytest.mark.django_db(transaction=True)
BEFORE = [("ledger", "0009_hardening")]


def where(table: str) -> dict[int, str]:
    """Each row of ``table`` (a recall's id, or an item's recall) → the partition it is in."""
    column = "id" if table == RECALLS else "recall_id"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {column}, tableoid::regclass::text FROM {table}")
        return dict(cursor.fetchall())


def relkind(table: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT relkind FROM pg_class WHERE oid = %s::regclass", [table])
        return str(cursor.fetchone()[0])


def read_at(agent: Agent, memory: Memory, clock: Callable[..., None], at: Any) -> Recall:
    clock(at)
    return record_recall(agent=agent, result=recall(subject=memory.subject, goal="", k=5))


@pytest.fixture
def memory(remember: Callable[..., Memory]) -> Memory:
    return remember("Prefers phone calls in the morning.")


def test_the_upgrade_moves_every_read_into_its_month_and_ids_go_on(
    memory: Memory, agent: Agent, clock: Callable[..., None]
) -> None:
    now = timezone.now()
    earlier = read_at(agent, memory, clock, now - timedelta(days=62))
    clock(now)
    apps = migrate(BEFORE)
    try:
        assert (relkind(RECALLS), relkind(ITEMS)) == ("r", "r")
        # A read written by the release before, a year back.
        old = apps.get_model("ledger", "Recall").objects.create(
            agent_id=agent.pk,
            subject_id=memory.subject_id,
            k=5,
            goal="",
            block="the block of a year ago",
            recalled_at=now - timedelta(days=400),
        )
        apps.get_model("ledger", "RecallItem").objects.create(
            recall_id=old.pk, memory_id=memory.pk, position=1, rank=0.0
        )
    finally:
        migrate()
    assert (relkind(RECALLS), relkind(ITEMS)) == ("p", "p")
    for recalled in (earlier, old):
        month = Month.of(recalled.recalled_at)
        assert where(RECALLS)[recalled.pk] == month.partition(RECALLS)
        assert where(ITEMS)[recalled.pk] == month.partition(ITEMS)
    item = RecallItem.objects.get(recall_id=old.pk)
    assert (item.subject_id, item.recalled_at) == (memory.subject_id, old.recalled_at)

    # The next read takes the next id and lands in this month.
    newest = read_at(agent, memory, clock, now)
    assert newest.pk == old.pk + 1
    assert where(RECALLS)[newest.pk] == Month.of(now).partition(RECALLS)
    # An item points at its recall by id and time, and goes with it.
    assert RecallItem.objects.filter(recall_id=newest.pk).count() == 1
    Recall.objects.filter(pk=newest.pk).delete()
    assert not RecallItem.objects.filter(recall_id=newest.pk).exists()


def test_the_next_months_are_made_ahead_and_a_second_run_finds_nothing_to_do() -> None:
    now = timezone.now() + timedelta(days=120)
    first = keep_recall_log(now=now)
    have = set(recall_log.months())
    assert set(recall_log.ahead(now)) <= have
    assert Month.of(now).next().next().next() in have
    assert first.finished and not first.skipped
    again = keep_recall_log(now=now)
    assert (again.made, again.dropped, again.deleted) == ([], [], 0)


def test_a_month_past_the_retention_goes_whole_and_the_months_after_it_stay(
    memory: Memory, agent: Agent, clock: Callable[..., None], settings: Any
) -> None:
    now = timezone.now()
    gone = read_at(agent, memory, clock, now - timedelta(days=270))
    kept = read_at(agent, memory, clock, now - timedelta(days=31))
    clock(now)
    # With a longer retention both months are made, each taking its read from the default.
    settings.MEMORYADMIN_RECALL_RETENTION_DAYS = 400
    keep_recall_log(now=now)
    assert where(RECALLS)[gone.pk] == Month.of(gone.recalled_at).partition(RECALLS)
    assert where(ITEMS)[kept.pk] == Month.of(kept.recalled_at).partition(ITEMS)

    settings.MEMORYADMIN_RECALL_RETENTION_DAYS = 180
    upkeep = keep_recall_log(now=now)
    assert str(Month.of(gone.recalled_at)) in upkeep.dropped
    assert str(Month.of(kept.recalled_at)) not in upkeep.dropped
    # Dropped with the partition, not deleted row by row.
    assert upkeep.deleted == 0
    assert not Recall.objects.filter(pk=gone.pk).exists()
    assert not RecallItem.objects.filter(recall_id=gone.pk).exists()
    assert Recall.objects.filter(pk=kept.pk).exists()
    assert Month.of(gone.recalled_at) not in recall_log.months()


def test_reads_no_month_covers_join_their_month_or_go_past_the_retention(
    memory: Memory, agent: Agent, clock: Callable[..., None], settings: Any
) -> None:
    now = timezone.now()
    # A clock far ahead, and an old import: no month holds either yet.
    ahead = read_at(agent, memory, clock, now + timedelta(days=300))
    ancient = read_at(agent, memory, clock, now - timedelta(days=3 * 365))
    clock(now)
    assert where(RECALLS)[ahead.pk] == recall_log.default_partition(RECALLS)
    upkeep = keep_recall_log(now=now)
    assert upkeep.deleted == 1
    assert not Recall.objects.filter(pk=ancient.pk).exists()
    assert not RecallItem.objects.filter(recall_id=ancient.pk).exists()
    # When its month comes within reach, the read from the future moves into it.
    settings.MEMORYADMIN_RECALL_RETENTION_DAYS = 400
    keep_recall_log(now=now + timedelta(days=280))
    assert where(RECALLS)[ahead.pk] == Month.of(ahead.recalled_at).partition(RECALLS)
    assert where(ITEMS)[ahead.pk] == Month.of(ahead.recalled_at).partition(ITEMS)


def test_two_runs_at_once_make_each_month_once(settings: Any) -> None:
    now = timezone.now() + timedelta(days=500)
    settings.MEMORYADMIN_RECALL_RETENTION_DAYS = 700
    results: list[Any] = []

    def run() -> None:
        try:
            results.append(keep_recall_log(now=now))
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    made = [month for upkeep in results for month in upkeep.made]
    assert len(results) == 2 and made
    assert sorted(made) == sorted(set(made))
    assert set(recall_log.ahead(now)) <= set(recall_log.months())


def test_supports_trace_lists_reads_from_every_month_newest_first(
    memory: Memory, agent: Agent, clock: Callable[..., None], make_person: Callable[..., User]
) -> None:
    now = timezone.now()
    reads = [read_at(agent, memory, clock, now - timedelta(days=days)) for days in (95, 40, 0)]
    clock(now)
    keep_recall_log(now=now)
    assert len({where(RECALLS)[r.pk] for r in reads}) == 3
    make_person("sam", role="support")
    make_person("dana", subject=SUBJECT)
    page = signed_in("sam").get(reverse("memory-history", args=[memory.pk])).content.decode()
    assert "Given to agents 3 times since it was written" in page
    links = [page.index(f'href="/recalls/{r.pk}/"') for r in reversed(reads)]
    assert links == sorted(links)


@pytest.mark.django_db
def test_the_application_role_reads_and_writes_the_log_but_leaves_its_months_to_the_owner(
    memory: Memory, agent: Agent, caplog: pytest.LogCaptureFixture
) -> None:
    # Roles and grants are transactional: this test's rollback removes them.
    role = f"ma_h6_app_{uuid.uuid4().hex[:8]}"
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE ROLE "{role}" NOLOGIN')
        for statement in grants(role):
            if statement not in ("BEGIN;", "COMMIT;"):
                cursor.execute(statement)
        cursor.execute(f'SET LOCAL ROLE "{role}"')
    recalled = record_recall(agent=agent, result=recall(subject=memory.subject, goal="", k=5))
    assert RecallItem.objects.filter(recall=recalled, memory=memory).exists()
    upkeep = keep_recall_log()
    assert upkeep.skipped and not upkeep.finished
    assert "Run `manage.py keep_recall_log` as the tables' owner" in caplog.text


def test_a_retention_under_a_day_is_refused() -> None:
    ran = check_deploy(MEMORYADMIN_RECALL_RETENTION_DAYS="0")
    assert ran.returncode != 0
    assert "MEMORYADMIN_RECALL_RETENTION_DAYS must be 1 or more" in ran.stderr
