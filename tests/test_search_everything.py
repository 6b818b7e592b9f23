"""Support's search across everything written down: a complaint's word finds the ledger
commitment, the message, the run goal, the compaction that dropped it and the memory,
grouped by type, on the staff home and on the complaint page."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from ledger.actions.ledger_entries import record_ledger_entry
from ledger.actions.recalls import record_recall
from ledger.actions.snapshots import SnapshotInput, store_snapshot
from ledger.actions.sources import SourceInput
from ledger.models import Agent, LedgerEntry, Memory, Snapshot, Subject
from ledger.reads.recall import recall
from tests.conftest import SUBJECT, signed_in
from tests.test_snapshot_checks import DOCUMENT

pytestmark = pytest.mark.django_db
MARCO = "acct_1f6b0c93d2e84a71"
NOW = datetime(2031, 3, 1, 12, 0, tzinfo=UTC)
COMMITMENT = "Deliver on Saturdays between 9 and 12"
EXCERPT = "Saturday mornings suit me, I'm out the rest of the week."
GOAL = "plan the Saturday slot for the next order"
DELIVERY = "Wants the delivery left with the neighbour."
COMPLAINT = "/complaints/"


@pytest.fixture
def sam(make_person: Callable[..., User]) -> User:
    return make_person("sam", role="support")


def commit(agent: Agent, subject: str, fact: str, *, ref: str, excerpt: str = "") -> LedgerEntry:
    return record_ledger_entry(
        subject=Subject.objects.get(ref=subject),
        agent=agent,
        fact=fact,
        kind="commitment",
        run_ref="run_160",
        source=SourceInput(kind="user_message", ref=ref, run="run_160", turn=2, excerpt=excerpt),
    )


@pytest.fixture
def saturday(
    agent: Agent,
    sam: User,
    remember: Callable[..., Memory],
    clock: Callable[[datetime], None],
) -> dict[str, Any]:
    """Marco's Saturday deliveries, written down everywhere but in a memory's words; and
    Dana's own Saturday commitment, another subject's."""
    clock(NOW - timedelta(days=20))
    dana = remember("Prefers email over telephone for billing questions.")
    clock(NOW - timedelta(days=10))
    delivery = remember(DELIVERY, subject=MARCO, key="delivery.place")
    commitment = commit(agent, MARCO, COMMITMENT, ref="msg_0700", excerpt=EXCERPT)
    clock(NOW - timedelta(days=8))
    marco = Subject.objects.get(ref=MARCO)
    for turn in (1, 2, 3):
        # The agent asks again each turn: one goal, one run, listed once.
        result = recall(subject=marco, goal=GOAL, k=5)
        record_recall(agent=agent, result=result, run_ref="run_161", turn=turn)
    clock(NOW - timedelta(days=7))
    # Compacted without the commitment in force: rejected, and the problem names it.
    dropped = store_snapshot(
        run_ref="run_162",
        agent=agent,
        data=SnapshotInput(
            document=copy.deepcopy(DOCUMENT),
            tokens_before=48_000,
            tokens_after=10_400,
            subject_ref=MARCO,
        ),
    )
    assert dropped.status == Snapshot.Status.REJECTED
    clock(NOW - timedelta(days=5))
    other = commit(agent, SUBJECT, "Deliver on Saturdays after 10 only", ref="msg_0800")
    clock(NOW)
    return {"delivery": delivery, "commitment": commitment, "other": other, "dana": dana}


def best_matches(html: str) -> dict[str, str]:
    """The "Best matches" section of a page: each group's title → its rows."""
    section = html.split('id="best-matches-title"', 1)[1].split("</section>", 1)[0]
    groups = re.split(r'<h3 id="best-[a-z]+">', section)[1:]
    return {group.split(" <span", 1)[0]: group for group in groups}


def words(html: str) -> str:
    """What a person reads: the page without its tags, white space folded."""
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_saturday_finds_the_commitment_the_message_the_goal_and_the_compaction(
    sam: User, saturday: dict[str, Any]
) -> None:
    response = signed_in(sam).get("/", {"q": "Saturday"})
    assert response.status_code == 200
    found = best_matches(response.content.decode())

    assert list(found) == [
        "Ledger entries and commitments",
        "What people and tools said",
        "What agents were doing (run goals)",
        "Compactions",
    ]
    ledger = found["Ledger entries and commitments"]
    assert COMMITMENT in ledger and "Deliver on Saturdays after 10 only" in ledger
    assert reverse("subject-ledger", args=[MARCO]) in ledger
    assert "shares the word ‘saturday’" in words(ledger)
    said = found["What people and tools said"]
    assert "Saturday mornings suit me, I&#x27;m out the rest of the week." in said
    assert reverse("source", args=["msg_0700"]) in said
    goals = found["What agents were doing (run goals)"]
    assert goals.count(GOAL) == 1 and "asked 3 times" in goals
    assert reverse("run", args=["run_161"]) in goals
    compactions = found["Compactions"]
    assert reverse("run", args=["run_162"]) in compactions
    assert "rejected" in compactions
    # Every hit names its subject, linked.
    assert reverse("subject", args=[MARCO]) in compactions


def test_a_rejected_compaction_is_found_by_the_words_it_dropped(
    sam: User, saturday: dict[str, Any]
) -> None:
    # The document never says "Saturdays": only the problem naming the dropped commitment.
    assert "Saturday" not in str(DOCUMENT)
    html = signed_in(sam).get("/", {"q": "saturdays between"}).content.decode()
    compactions = words(best_matches(html)["Compactions"])
    assert f"not carried verbatim in commitments or pinned: “{COMMITMENT}”" in compactions
    assert "generation 1, rejected" in compactions


def test_deliveries_finds_the_memory_that_says_delivery(
    sam: User, saturday: dict[str, Any]
) -> None:
    html = signed_in(sam).get("/", {"q": "deliveries"}).content.decode()
    memories = best_matches(html)["Memories"]
    assert DELIVERY in memories
    assert reverse("memory-history", args=[saturday["delivery"].pk]) in memories
    assert "shares the word ‘deliveries’" in words(memories)
    # The memory table below is kept as it was.
    assert "Memories, newest first" in html


def test_htmx_typing_gets_the_best_matches_in_the_fragment(
    sam: User, saturday: dict[str, Any]
) -> None:
    response = signed_in(sam).get(
        "/",
        {"q": "Saturday"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="search-results",
        HTTP_HX_TRIGGER="q",
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="search-results"')
    assert COMMITMENT in best_matches(html)["Ledger entries and commitments"]


def test_the_complaint_words_alone_search_every_subject(
    sam: User, saturday: dict[str, Any]
) -> None:
    response = signed_in(sam).get(COMPLAINT, {"phrase": "keeps suggesting Saturday deliveries"})
    assert response.status_code == 200
    found = best_matches(response.content.decode())
    assert DELIVERY in found["Memories"]
    ledger = found["Ledger entries and commitments"]
    assert COMMITMENT in ledger and "Deliver on Saturdays after 10 only" in ledger


def test_a_subject_narrows_the_search_to_its_own_items(sam: User, saturday: dict[str, Any]) -> None:
    query = {"phrase": "Saturday", "subject": MARCO}
    html = signed_in(sam).get(COMPLAINT, query).content.decode()
    assert "Recalled about" in html
    found = best_matches(html)
    ledger = found["Ledger entries and commitments"]
    assert COMMITMENT in ledger
    assert "after 10 only" not in html
    assert reverse("subject", args=[SUBJECT]) not in "".join(found.values())


def test_the_days_narrow_the_search(sam: User, saturday: dict[str, Any]) -> None:
    # Only Dana's commitment was written in these days.
    query = {"phrase": "Saturday", "start": "2031-02-23", "end": "2031-02-25"}
    found = best_matches(signed_in(sam).get(COMPLAINT, query).content.decode())
    assert list(found) == ["Ledger entries and commitments"]
    assert "after 10 only" in found["Ledger entries and commitments"]
    assert COMMITMENT not in found["Ledger entries and commitments"]
    nothing = {"phrase": "Saturday", "start": "2031-02-27"}
    assert "holds the words “Saturday” in those days" in words(
        signed_in(sam).get(COMPLAINT, nothing).content.decode()
    )


def test_a_complaint_with_neither_words_nor_subject_is_refused_in_words(sam: User) -> None:
    response = signed_in(sam).get(COMPLAINT, {"phrase": "", "subject": "", "start": "2031-01-01"})
    assert response.status_code == 400
    assert (
        "Nothing to look for: give words from the complaint, a subject, or both."
        in response.content.decode()
    )


def test_a_person_cannot_reach_the_search(
    make_person: Callable[..., User], saturday: dict[str, Any]
) -> None:
    marco = signed_in(make_person("marco", subject=MARCO))
    assert marco.get(COMPLAINT, {"phrase": "Saturday"}).status_code == 404
    home = marco.get("/", {"q": "Saturday"}).content.decode()
    assert "Best matches" not in home and "Saturdays" not in home


def test_memory_text_is_escaped(
    sam: User, remember: Callable[..., Memory], saturday: dict[str, Any]
) -> None:
    remember("Hates <script>alert(1)</script> deliveries.", subject=MARCO)
    html = signed_in(sam).get("/", {"q": "deliveries"}).content.decode()
    memories = best_matches(html)["Memories"]
    assert "&lt;script&gt;alert(1)&lt;/script&gt; deliveries." in memories
    assert "<script>alert" not in html


def test_the_queries_do_not_grow_with_the_hits(
    agent: Agent,
    sam: User,
    remember: Callable[..., Memory],
    clock: Callable[[datetime], None],
    saturday: dict[str, Any],
    django_assert_max_num_queries: Any,
) -> None:
    client = signed_in(sam)
    marco = Subject.objects.get(ref=MARCO)
    pages = [("/", {"q": "Saturday deliveries"}), (COMPLAINT, {"phrase": "Saturday deliveries"})]

    def grow(first: int, times: int) -> None:
        """Another hit of every type, ``times`` times."""
        for n in range(first, first + times):
            clock(NOW + timedelta(hours=n))
            remember(f"Deliveries on Saturday number {n}.", subject=MARCO, key=f"saturday.{n}")
            commit(
                agent,
                MARCO,
                f"Saturday delivery {n} confirmed",
                ref=f"msg_09{n:02}",
                excerpt=f"Saturday {n} please",
            )
            result = recall(subject=marco, goal=f"Saturday delivery {n}", k=5)
            record_recall(agent=agent, result=result, run_ref=f"run_2{n:02}", turn=1)

    def count(url: str, query: dict[str, str]) -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url, query).status_code == 200
        return len(captured)

    # One of each first, so that every list on the pages (the memory table too) has rows.
    grow(1, 1)
    before = [count(url, query) for url, query in pages]
    grow(2, 14)
    for (url, query), queries in zip(pages, before, strict=True):
        with django_assert_max_num_queries(queries):
            html = client.get(url, query).content.decode()
        assert len(re.findall(r"Saturday delivery \d+ confirmed", html)) == 10
