"""Support's queues, oldest first, and resolving a journal entry from what the world shows."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from ledger.actions.journal import journal_intent, record_outcome, run_for_agent
from ledger.models import Agent, Conflict, JournalEntry, Memory
from ledger.views import queues
from tests.conftest import SUBJECT, signed_in

pytestmark = pytest.mark.django_db
START = datetime(2031, 5, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def people(make_person: Callable[..., User]) -> dict[str, User]:
    return {
        "sam": make_person("sam", role="support"),
        "dana": make_person("dana", subject=SUBJECT),
    }


@pytest.fixture
def journal(agent: Agent) -> Callable[..., JournalEntry]:
    """Journal an intent in run_q, and move it to ``state`` unless it stays intended."""

    def make(key: str, state: str = "intended") -> JournalEntry:
        run = run_for_agent(ref="run_q", agent=agent)
        assert run is not None
        entry = journal_intent(
            agent=agent, run=run, idempotency_key=key, action="payments.refund", intent={"n": 1}
        ).entry
        if state != "intended":
            entry = record_outcome(agent=agent, idempotency_key=key, state=state)
        return entry

    return make


def page(client: Client, url: str, **params: Any) -> str:
    response = client.get(url, params)
    assert response.status_code == 200, url
    return response.content.decode()


def positions(html: str, *texts: str) -> list[int]:
    found = [html.find(text) for text in texts]
    assert -1 not in found, list(zip(texts, found, strict=True))
    return found


def test_pending_guesses_are_listed_oldest_first_with_their_count(
    people: dict[str, User], remember: Callable[..., Memory], clock: Callable[[datetime], None]
) -> None:
    clock(START)
    first = remember("Might like tulips.", basis="inferred", key="flowers")
    clock(START + timedelta(hours=1))
    second = remember("Might work nights.", basis="inferred", key="shifts")
    remember("Prefers email.", key="contact.channel")
    html = page(signed_in("sam"), "/queues/pending/")
    assert "2 items waiting" in html
    a, b = positions(
        html,
        reverse("memory-history", args=[first.pk]),
        reverse("memory-history", args=[second.pk]),
    )
    assert a < b
    assert "Prefers email." not in html


def test_open_conflicts_link_to_the_conflict_on_the_subject_page(
    people: dict[str, User], remember: Callable[..., Memory]
) -> None:
    remember("Prefers email.", key="contact.channel")
    remember("Prefers post.", key="contact.channel")
    conflict = Conflict.objects.get()
    html = page(signed_in("sam"), "/queues/conflicts/")
    assert "1 conflict to resolve," in html
    assert f'href="/subjects/{SUBJECT}/#conflict-{conflict.pk}"' in html


def test_memories_due_for_review_are_listed(
    people: dict[str, User], remember: Callable[..., Memory], clock: Callable[[datetime], None]
) -> None:
    clock(START)
    memory = remember("Prefers email.", key="contact.channel", expires_at=None, permanent=True)
    assert memory.review_at is not None
    assert "Nothing is due for review." in page(signed_in("sam"), "/queues/review/")
    clock(memory.review_at + timedelta(days=1))
    html = page(signed_in("sam"), "/queues/review/")
    assert reverse("memory-history", args=[memory.pk]) in html


def test_the_journal_queue_lists_only_what_needs_resolving_oldest_first(
    people: dict[str, User], journal: Callable[..., JournalEntry], clock: Callable[[datetime], None]
) -> None:
    clock(START)
    stale = journal("refund-1")
    unknown = journal("refund-2", "unknown")
    journal("refund-3", "done")
    clock(START + timedelta(days=1))
    fresh = journal("refund-4")
    html = page(signed_in("sam"), "/queues/journal/")
    assert "2 actions to resolve" in html
    a, b = positions(html, f'id="journal-{stale.pk}"', f'id="journal-{unknown.pk}"')
    assert a < b
    assert f'id="journal-{fresh.pk}"' not in html
    assert 'href="/runs/run_q/journal/#journal-' in html


def test_queues_page_through_without_overlap_or_gap(
    people: dict[str, User],
    remember: Callable[..., Memory],
    clock: Callable[[datetime], None],
    monkeypatch: Any,
) -> None:
    monkeypatch.setattr(queues, "PAGE_SIZE", 2)
    clock(START)
    # Two written in the same instant: the id breaks the tie.
    guesses = [remember(f"Might like colour {n}.", basis="inferred", key=f"c{n}") for n in range(2)]
    for n in range(2, 5):
        clock(START + timedelta(minutes=n))
        guesses.append(remember(f"Might like colour {n}.", basis="inferred", key=f"c{n}"))
    client = signed_in("sam")
    order: list[Memory] = []
    params: dict[str, str] = {}
    while True:
        html = page(client, "/queues/pending/", **params)
        order += sorted(
            (g for g in guesses if reverse("memory-history", args=[g.pk]) in html),
            key=lambda g: html.find(reverse("memory-history", args=[g.pk])),
        )
        if "Next page" not in html:
            break
        params = {"after": html.split('href="?after=')[1].split('"')[0]}
    expected = sorted(guesses, key=lambda g: (g.written_at, g.pk))
    assert order == expected


def test_a_bad_cursor_or_queue_is_refused_in_words(people: dict[str, User]) -> None:
    sam = signed_in("sam")
    response = sam.get("/queues/pending/", {"after": "bogus"})
    assert response.status_code == 400
    assert "not one this page gave out" in response.content.decode()
    assert sam.get("/queues/erasures/").status_code == 404


@pytest.mark.parametrize("queue", ["pending", "journal", "conflicts", "review"])
def test_a_queue_runs_the_same_queries_for_3_or_30_rows(
    people: dict[str, User],
    remember: Callable[..., Memory],
    journal: Callable[..., JournalEntry],
    clock: Callable[[datetime], None],
    queue: str,
) -> None:
    def add(numbers: range) -> None:
        clock(START)
        for n in numbers:
            if queue == "pending":
                remember(f"Might like colour {n}.", basis="inferred", key=f"c{n}")
            elif queue == "journal":
                journal(f"refund-{n}", "unknown")
            elif queue == "conflicts":
                remember(f"Deliver before {n} am.", key=f"slot{n}")
                remember(f"Deliver after {n} pm.", key=f"slot{n}")
            else:
                remember(f"Reads invoice {n} on paper.", kind="account_fact")
        if queue == "review":
            # Long enough after for every account fact to be due for review, none expired.
            clock(START + timedelta(days=120))

    def count() -> int:
        # Signed in at the moment the queue is read: the clock moves further than a session.
        client = signed_in("sam")
        with CaptureQueriesContext(connection) as captured:
            response = client.get(f"/queues/{queue}/")
        assert response.status_code == 200
        return len(captured)

    add(range(3))
    few = count()
    add(range(3, 30))
    assert count() == few
    listed = signed_in("sam").get(f"/queues/{queue}/").content.decode()
    assert f"30 {queues.QUEUES[queue].counted}, oldest first." in listed


def test_the_staff_home_counts_each_queue(
    people: dict[str, User], remember: Callable[..., Memory], journal: Callable[..., JournalEntry]
) -> None:
    remember("Might like tulips.", basis="inferred", key="flowers")
    journal("refund-1", "unknown")
    html = page(signed_in("sam"), "/")
    for queue, title, number in [
        ("pending", "Waiting for confirmation: guesses and held writes", '"badge pending">1'),
        ("journal", "Actions whose outcome nobody knows", '"badge pending">1'),
        ("conflicts", "Conflicts to resolve", '"badge">0'),
    ]:
        assert f'<a href="/queues/{queue}/">{title}</a> <span class={number}</span>' in html


def test_the_run_journal_offers_resolving_an_unknown(
    people: dict[str, User], journal: Callable[..., JournalEntry]
) -> None:
    unknown = journal("refund-1", "unknown")
    done = journal("refund-2", "done")
    html = page(signed_in("sam"), "/runs/run_q/journal/")
    assert f'action="/journal/{unknown.pk}/resolve/"' in html
    assert f'action="/journal/{done.pk}/resolve/"' not in html
    assert 'name="csrfmiddlewaretoken"' in html


def test_resolving_records_state_verification_and_who(
    people: dict[str, User], journal: Callable[..., JournalEntry]
) -> None:
    entry = journal("refund-1", "unknown")
    response = signed_in("sam").post(
        f"/journal/{entry.pk}/resolve/",
        {
            "state": "done",
            "verification": "Refund rf_88 is settled in the console.",
            "next": "/queues/journal/",
        },
    )
    assert response.status_code == 303
    assert response["Location"] == f"/queues/journal/#journal-{entry.pk}"
    entry.refresh_from_db()
    assert entry.state == "done"
    assert entry.verification == {
        "checked": "Refund rf_88 is settled in the console.",
        "recorded_by": "user:sam",
    }
    last = entry.history.latest()
    assert last.history_actor == "user:sam"
    assert "unknown → done" in last.history_change_reason
    assert "Refund rf_88 is settled" in last.history_change_reason


def test_resolving_by_htmx_swaps_the_entry(
    people: dict[str, User], journal: Callable[..., JournalEntry], clock: Callable[[datetime], None]
) -> None:
    clock(START)
    entry = journal("refund-1")
    clock(START + timedelta(days=1))
    response = signed_in("sam").post(
        f"/journal/{entry.pk}/resolve/",
        {"state": "not_done", "verification": "No refund in the console.", "show_run": "1"},
        headers={"HX-Request": "true"},
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<article class="card journal-entry not_done"')
    assert "Recorded as not done" in html and "<html" not in html
    assert 'href="/runs/run_q/journal/#journal-' in html
    # The swapped card keeps its steps, sam's resolution last.
    assert "<strong>Intended</strong>" in html
    assert "<strong>Not done</strong>, <time" in html and "by you." in html


@pytest.mark.parametrize(
    ("state", "data", "status", "words"),
    [
        ("done", {"state": "not_done", "verification": "Looked."}, 409, "done is final"),
        ("unknown", {"state": "done", "verification": "  "}, 400, "Say what you checked"),
        ("unknown", {"state": "unknown", "verification": "Looked."}, 400, "done or as not done"),
        ("intended", {"state": "done", "verification": "Looked."}, 409, "may still report"),
    ],
)
def test_a_bad_resolution_is_refused_in_words_and_writes_nothing(
    people: dict[str, User],
    journal: Callable[..., JournalEntry],
    state: str,
    data: dict[str, str],
    status: int,
    words: str,
) -> None:
    entry = journal("refund-1", state)
    before = entry.history.count()
    sam = signed_in("sam")
    plain = sam.post(f"/journal/{entry.pk}/resolve/", data)
    htmx = sam.post(f"/journal/{entry.pk}/resolve/", data, headers={"HX-Request": "true"})
    for response in (plain, htmx):
        assert response.status_code == status
        assert words in response.content.decode()
    entry.refresh_from_db()
    assert entry.state == state and entry.history.count() == before


def test_nobody_but_support_reaches_the_queues(
    people: dict[str, User], journal: Callable[..., JournalEntry], client: Client
) -> None:
    entry = journal("refund-1", "unknown")
    dana = signed_in("dana")
    urls = ["/queues/", "/queues/pending/", "/queues/journal/"]
    for url in urls:
        assert dana.get(url).status_code == 404
        anonymous = client.get(url)
        assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    resolve = f"/journal/{entry.pk}/resolve/"
    assert dana.post(resolve, {"state": "done", "verification": "x"}).status_code == 404
    assert client.post(resolve, {"state": "done", "verification": "x"}).status_code == 302
    entry.refresh_from_db()
    assert entry.state == "unknown"


def test_the_queues_page_lists_every_queue(people: dict[str, User]) -> None:
    html = page(signed_in("sam"), "/queues/")
    for name in ("conflicts", "pending", "review", "journal"):
        assert f'href="/queues/{name}/"' in html
    assert "a person's own erasure, and an admin's, happen at once" in html
