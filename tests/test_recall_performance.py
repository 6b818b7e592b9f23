"""Recall costs the same whatever k is, and its query is served by the subject's live index."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.contrib.postgres.search import SearchQuery, SearchVector
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from ledger.actions.imports import import_memory
from ledger.actions.sources import SourceInput
from ledger.actors import Actor
from ledger.models import SEARCH_CONFIG, Memory, Policy, Subject
from ledger.reads.recall import recall, recent_queryset
from ledger.reads.retrieval import with_vectors
from tests.conftest import SUBJECT

pytestmark = pytest.mark.django_db
URL = f"/api/v1/subjects/{SUBJECT}/recall"
postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the index and its plan are PostgreSQL's"
)


@pytest.fixture
def crowded(remember: Callable[..., Memory]) -> Subject:
    """A subject with more memories than the cap, an open conflict, and a neighbour."""
    for n in range(25):
        remember(f"Asked about refund number {n} for order {1000 + n}.")
    remember("Prefers email.", key="contact.channel")
    remember("Prefers telephone.", key="contact.channel")
    for n in range(5):
        remember(f"Another subject's fact {n}.", subject="acct_neighbour")
    subject = Subject.objects.get(ref=SUBJECT)
    # Most of a long-lived subject's rows are no longer servable: expired, superseded …
    for n in range(30):
        import_memory(
            subject=subject,
            kind="episode",
            statement=f"Old episode {n} about a refund.",
            basis="stated",
            source=SourceInput(kind="import", ref=f"legacy:{n}"),
            written_at=timezone.now() - timedelta(days=400),
            expires_at=timezone.now() - timedelta(days=10),
            actor=Actor.system("import"),
        )
    return subject


@pytest.mark.parametrize("goal", ["refund order", ""])
def test_reading_takes_two_queries_whatever_k_is(
    crowded: Subject, django_assert_num_queries, goal: str
) -> None:
    cap = Policy.current().recall_cap
    for k in (1, cap):
        # The servable memories, which say the subject has open conflicts; then those
        # conflicts with their servable statements.
        with django_assert_num_queries(2):
            result = recall(subject=crowded, goal=goal, k=k)
        assert len(result.memories) == k


def test_a_recorded_recall_issues_the_same_number_of_queries_for_k_1_and_the_cap(
    api: APIClient, crowded: Subject
) -> None:
    cap = Policy.current().recall_cap
    counts = {}
    # The key's first use is noted once (the keys page shows it): not part of either count.
    assert api.get(URL, {"goal": "refund", "k": 1}).status_code == 200
    for k in (1, cap):
        with CaptureQueriesContext(connection) as queries:
            response = api.get(URL, {"goal": "refund", "k": k, "run": f"run_k{k}", "turn": 1})
        assert response.status_code == 200
        assert len(response.json()["memories"]) == k
        counts[k] = len(queries)
    assert counts[1] == counts[cap]


@pytest.fixture
def volume(crowded: Subject) -> Subject:
    """Tens of thousands of memories over a thousand subjects, most no longer servable.

    Made in SQL for the planner's sake only: as many gated writes would take minutes, and a
    query plan needs neither their history nor their sources.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO ledger_subject (ref, display_name, memory_paused, created_at) "
            "SELECT 'volume_' || g, '', false, now() FROM generate_series(1, 1000) g"
        )
        cursor.execute(
            """
            INSERT INTO ledger_memory (id, subject_id, kind, key, statement, normalized,
                basis, status, stated_by, written_at, confirmed_at, expires_at, version)
            SELECT gen_random_uuid(), s.id, 'preference', '', 'Asked about order ' || g,
                'asked about order ' || g, 'stated',
                CASE WHEN g % 10 < 3 THEN 'active' WHEN g % 10 < 6 THEN 'expired'
                     ELSE 'superseded' END,
                '', now() - g * interval '1 day', now() - g * interval '1 day',
                CASE WHEN g % 20 = 0 THEN NULL
                     WHEN g % 10 < 3 THEN now() + interval '30 days'
                     ELSE now() - interval '3 days' END,
                1
            FROM ledger_subject s, generate_series(1, 40) g
            WHERE s.ref LIKE 'volume_%'
            ORDER BY random()
            """
        )
        cursor.execute("ANALYZE ledger_memory")
    return crowded


@postgresql_only
def test_recall_query_with_a_goal_uses_the_subject_live_index(volume: Subject) -> None:
    candidates = Memory.objects.for_subject(volume).servable(timezone.now())
    plan = with_vectors(candidates).explain()
    assert "memory_subject_live" in plan, plan
    assert re.search(r"Index Cond: \(\(subject_id = \d+\) AND .*expires_at", plan), plan


@postgresql_only
def test_recall_query_without_a_goal_uses_the_subject_live_index(volume: Subject) -> None:
    candidates = Memory.objects.for_subject(volume).servable(timezone.now())
    plan = recent_queryset(candidates)[:5].explain()
    assert "memory_subject_live" in plan, plan
    assert re.search(r"Index Cond: \(\(subject_id = \d+\) AND .*expires_at", plan), plan


@postgresql_only
def test_full_text_match_can_use_the_gin_index(volume: Subject, remember) -> None:
    remember("Disputed a card payment with a chargeback.")
    matching = Memory.objects.annotate(
        search=SearchVector("statement", config=SEARCH_CONFIG)
    ).filter(search=SearchQuery("chargeback", config=SEARCH_CONFIG))
    plan = matching.explain()
    assert "memory_statement_search" in plan, plan
    assert [m.statement for m in matching] == ["Disputed a card payment with a chargeback."]
