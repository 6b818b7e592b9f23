"""Support's search looks for each type's matches among its newest rows first: a word that
many rows hold costs what a rare one does, however big the tables, and what it finds is what
a read of every match would have found: an older match past the newest rows, a run's asks on
both sides of their edge counted in full."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from ledger.actions.recalls import record_recall
from ledger.models import Agent, Memory, Subject
from ledger.reads import retrieval
from ledger.reads.recall import recall
from tests.conftest import SUBJECT, signed_in
from tests.test_search_everything import best_matches, words

pytestmark = pytest.mark.django_db
NOW = datetime(2031, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def sam(make_person: Callable[..., User]) -> User:
    return make_person("sam", role="support")


@pytest.fixture
def few_newest(monkeypatch: pytest.MonkeyPatch) -> None:
    """The newest rows of a type are two, and two candidates are ranked: what a big table's
    ten thousand and two hundred are to its words."""
    monkeypatch.setattr(retrieval, "RECENT_ROWS", 2)
    monkeypatch.setattr(retrieval, "CANDIDATES_PER_TYPE", 2)


def test_a_common_word_is_looked_for_among_the_newest_memories_only(
    sam: User,
    remember: Callable[..., Memory],
    clock: Callable[[datetime], None],
    few_newest: None,
) -> None:
    for day, statement in enumerate(
        ["Sends the invoices by post.", "Wants the invoices in PDF.", "Pays invoices monthly."]
    ):
        clock(NOW + timedelta(days=day))
        remember(statement, key=f"billing.{day}")
    with CaptureQueriesContext(connection) as captured:
        html = signed_in(sam).get("/", {"q": "invoices"}).content.decode()

    found = best_matches(html)["Memories"]
    assert "Pays invoices monthly." in found and "Wants the invoices in PDF." in found
    # The words' matches were taken from the newest memories: the older ones never read.
    candidates = [
        query["sql"]
        for query in captured.captured_queries
        if '"ledger_memoryvector"' in query["sql"] and "to_tsvector" in query["sql"]
    ]
    assert len(candidates) == 1
    assert '"ledger_memory"."written_at" > ' in candidates[0]


def test_an_old_match_of_a_rare_word_is_found_past_the_newest_rows(
    sam: User,
    remember: Callable[..., Memory],
    clock: Callable[[datetime], None],
    few_newest: None,
) -> None:
    clock(NOW - timedelta(days=30))
    remember("Only takes deliveries on Saturday.", key="delivery.day")
    for day in range(3):
        clock(NOW + timedelta(days=day))
        remember(f"Prefers the morning slot number {day}.", key=f"slot.{day}")

    found = best_matches(signed_in(sam).get("/", {"q": "Saturday"}).content.decode())

    assert "Only takes deliveries on Saturday." in found["Memories"]


def test_a_goal_asked_on_both_sides_of_the_newest_recalls_is_counted_in_full(
    agent: Agent,
    sam: User,
    remember: Callable[..., Memory],
    clock: Callable[[datetime], None],
    few_newest: None,
) -> None:
    remember("Only takes deliveries on Saturday.", key="delivery.day")
    subject = Subject.objects.get(ref=SUBJECT)
    for turn in range(1, 5):
        clock(NOW + timedelta(minutes=turn))
        goal = "plan the Saturday slot" if turn != 3 else "book the Saturday van"
        record_recall(
            agent=agent, result=recall(subject=subject, goal=goal, k=5), run_ref="run_7", turn=turn
        )

    html = signed_in(sam).get("/", {"q": "Saturday"}).content.decode()

    goals = words(best_matches(html)["What agents were doing (run goals)"])
    # The newest two recalls are one ask of each goal; the slot was asked three times.
    assert "plan the Saturday slot" in goals and "asked 3 times" in goals
    assert "book the Saturday van" in goals and "asked 1 time" in goals


def test_a_rare_word_finds_the_memory_table_rows_by_their_ids(
    sam: User, remember: Callable[..., Memory]
) -> None:
    memory = remember("Only takes deliveries on Saturday.", key="delivery.day")
    remember("Prefers the morning slot.", key="slot.time")
    with CaptureQueriesContext(connection) as captured:
        html = signed_in(sam).get("/", {"q": "Saturday"}).content.decode()

    assert f'href="/memories/{memory.pk}/' in html or str(memory.pk) in html
    # Tested row by row down the time index, a rare word would read every memory: the
    # table's page is read by the ids its words' index found.
    (table,) = [q["sql"] for q in captured.captured_queries if " UNION " in q["sql"]]
    assert "to_tsvector" not in table
