"""Pages stay cheap however much a subject or the whole store holds: the subject page a page
at a time, support's search by each way it matches, the queues and the Django admin's
lists counted only so far; and the paging a person uses keeps their place and their filters.

Page sizes and caps are made small here, so that a few rows already fill several pages.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta
from itertools import count
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.http import QueryDict
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from ledger import admin as ledger_admin
from ledger.actions.agents import create_agent
from ledger.actions.gate import MemoryInput, write_memory
from ledger.actions.journal import journal_intent, run_for_agent
from ledger.actions.ledger_entries import record_ledger_entry
from ledger.actions.recalls import record_recall
from ledger.actions.sources import SourceInput
from ledger.actions.subjects import set_display_name
from ledger.actors import Actor
from ledger.models import Agent, Memory, Subject, WriteDecision
from ledger.reads.recall import recall
from ledger.views import memories, queues, search
from tests.conftest import SUBJECT, signed_in

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "memory-list"}
PAGE = f"/subjects/{SUBJECT}/"


@pytest.fixture
def people(make_person: Callable[..., User]) -> dict[str, User]:
    return {
        "dana": make_person("dana", subject=SUBJECT),
        "sam": make_person("sam", role="support"),
        "alex": make_person("alex", role="admin"),
    }


@pytest.fixture
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memories, "PAGE_SIZE", 3)


@pytest.fixture
def write(
    remember: Callable[..., Memory], clock: Callable[[datetime], None]
) -> Callable[..., list[Memory]]:
    """``n`` memories of one kind, each written a minute after the one before, so the page's
    newest-first order is theirs."""
    minutes = count()
    start = timezone.now() - timedelta(days=1)

    def many(n: int, words: str = "Likes", kind: str = "preference", **fields: Any) -> list[Memory]:
        made = []
        for _ in range(n):
            i = next(minutes)
            clock(start + timedelta(minutes=i))
            made.append(remember(f"{words} number {i}.", kind=kind, **fields))
        return made

    return many


def queries(client: Client, url: str, **headers: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, **headers)
    assert response.status_code == 200, url
    return len(captured)


def shown(html: str, memory: Memory) -> bool:
    return f'id="memory-{memory.pk}"' in html


def next_link(html: str) -> str:
    found = re.search(r'rel="next" href="\?([^"]*)"', html)
    return found.group(1).replace("&amp;", "&") if found else ""


# The subject page.


@pytest.mark.parametrize("who", ["dana", "sam"])
def test_the_subject_page_costs_the_same_queries_for_3_or_60_memories(
    people: dict[str, User],
    write: Callable[..., list[Memory]],
    remember: Callable[..., Memory],
    agent: Agent,
    who: str,
) -> None:
    client = signed_in(people[who])
    # Three memories, with one of each thing a page shows: a conflict, a guess, a read.
    remember("Lives in Leeds.", key="home")
    remember("Lives in York.", key="home")
    remember("Guess number one.", basis="inferred")
    subject = Subject.objects.get(ref=SUBJECT)
    record_recall(agent=agent, result=recall(subject=subject, goal="lives", k=10))
    few = queries(client, PAGE), queries(client, PAGE, **HTMX)
    write(45, kind="account_fact")
    write(12, words="Episode", kind="episode")
    remember("Guess number two.", basis="inferred")
    for _ in range(3):
        record_recall(agent=agent, result=recall(subject=subject, goal="number", k=10))
    assert Memory.objects.filter(subject=subject).count() >= 60
    many = queries(client, PAGE), queries(client, PAGE, **HTMX)
    assert many == few
    assert queries(client, f"{PAGE}?page=2") == few[0]


def test_a_long_list_comes_a_page_at_a_time_and_htmx_fetches_the_next(
    people: dict[str, User], write: Callable[..., list[Memory]], small_pages: None
) -> None:
    client = signed_in(people["dana"])
    written = write(7)
    newest = written[::-1]
    first = client.get(PAGE).content.decode()
    assert [shown(first, m) for m in newest] == [True] * 3 + [False] * 4
    assert "Page 1 of 3 (7 memories, 3 a page)" in first
    assert next_link(first) == "page=2"

    second = client.get(f"{PAGE}?page=2", **HTMX)
    html = second.content.decode()
    assert html.lstrip().startswith('<div id="memory-list"') and "<html" not in html
    assert [shown(html, m) for m in newest] == [False] * 3 + [True] * 3 + [False]
    assert 'hx-get="?page=3"' in html and 'hx-get="?page=1"' in html
    assert second["Vary"] and "HX-Target" in second["Vary"]

    last = client.get(f"{PAGE}?page=3").content.decode()
    assert [shown(last, m) for m in newest] == [False] * 6 + [True]
    assert next_link(last) == "" and 'rel="prev"' in last


def test_a_search_and_its_filters_survive_paging(
    people: dict[str, User], write: Callable[..., list[Memory]], small_pages: None
) -> None:
    client = signed_in(people["dana"])
    tea = write(5, words="Drinks tea")
    coffee = write(3, words="Drinks coffee")
    first = client.get(PAGE, {"q": "tea", "kind": "preference"}).content.decode()
    assert next_link(first) == "q=tea&kind=preference&page=2"
    second = client.get(f"{PAGE}?{next_link(first)}", **HTMX).content.decode()
    assert [shown(second, m) for m in tea] == [True, True, False, False, False]
    assert not any(shown(second, m) for m in coffee)
    assert 'value="tea"' not in second  # the fragment is the results, not the search form


@pytest.mark.parametrize("number", ["abc", "0", "-1", "1.5", "²"])
def test_a_page_number_that_is_not_one_is_refused_in_words_with_the_first_page(
    people: dict[str, User], write: Callable[..., list[Memory]], small_pages: None, number: str
) -> None:
    client = signed_in(people["dana"])
    newest = write(4)[-1]
    for headers in ({}, HTMX):
        response = client.get(PAGE, {"page": number}, **headers)
        html = response.content.decode()
        assert response.status_code == 400
        assert "pages are numbered from 1. Here is the first page." in html
        assert shown(html, newest)


def test_a_page_past_the_end_is_the_last_page(
    people: dict[str, User], write: Callable[..., list[Memory]], small_pages: None
) -> None:
    oldest = write(4)[0]
    response = signed_in(people["dana"]).get(PAGE, {"page": "99"})
    assert response.status_code == 200
    html = response.content.decode()
    assert "Page 2 of 2" in html and shown(html, oldest)


def test_a_link_to_one_memory_opens_the_page_that_holds_it(
    people: dict[str, User], write: Callable[..., list[Memory]], small_pages: None
) -> None:
    client = signed_in(people["dana"])
    oldest = write(7)[0]
    html = client.get(PAGE, {"show": str(oldest.pk)}).content.decode()
    assert "Page 3 of 3" in html and shown(html, oldest)
    # The plain (no-JavaScript) Correct button: the page holding it, with its form open.
    editing = client.get(PAGE, {"edit": str(oldest.pk)}).content.decode()
    assert f'id="statement-input-{oldest.pk}"' in editing
    # The memory's history links back to where it is.
    history = client.get(f"/memories/{oldest.pk}/history/").content.decode()
    assert f"?show={oldest.pk}#memory-{oldest.pk}" in history
    # Without JavaScript, Correct first redirects to its page.
    redirect = client.get(f"/memories/{oldest.pk}/edit/")
    assert redirect["Location"] == f"{PAGE}?edit={oldest.pk}#memory-{oldest.pk}"


def test_headings_count_the_whole_list_and_say_where_they_continue(
    people: dict[str, User], write: Callable[..., list[Memory]], small_pages: None
) -> None:
    client = signed_in(people["dana"])
    write(4)
    write(2, words="Pays", kind="account_fact")
    first = client.get(PAGE).content.decode()
    assert 'Preferences <span class="count">4</span>' in first
    second = client.get(PAGE, {"page": "2"}).content.decode()
    assert 'Preferences <span class="count">4, continued</span>' in second
    assert 'Facts about the account <span class="count">2</span>' in second


def test_what_waits_for_the_person_is_on_the_first_page_after_its_memories(
    people: dict[str, User],
    write: Callable[..., list[Memory]],
    remember: Callable[..., Memory],
    small_pages: None,
) -> None:
    client = signed_in(people["dana"])
    leeds = remember("Lives in Leeds.", key="home", kind="account_fact")
    remember("Lives in York.", key="home", kind="account_fact")
    guess = remember("Might like tulips.", basis="inferred")
    write(6)
    first = client.get(PAGE).content.decode()
    assert "Statements that disagree" in first and shown(first, guess)
    # The memories come first, a keyboard's few Tab presses away; questions after them.
    assert first.index('<h2 id="group-preference">Preferences') < first.index(
        f'id="memory-{guess.pk}"'
    )
    assert first.index('id="memories"') < first.index("Statements that disagree")
    last = client.get(PAGE, {"page": "3"}).content.decode()
    assert "Statements that disagree" not in last
    assert "1 conflict to settle</a> is on the first page." in last
    conflict = leeds.conflicts.get()
    assert shown(last, leeds) and f'href="?#conflict-{conflict.pk}"' in last


# Support's search.


def test_a_search_pages_through_every_way_a_memory_matches_newest_first(
    people: dict[str, User],
    remember: Callable[..., Memory],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(search, "PAGE_SIZE", 2)
    rossi = create_agent(name="Rossi", scopes=["write"], actor=Actor.system("test"))[0]
    by_agent = write_memory(
        agent=rossi,
        data=MemoryInput(
            subject="acct_e",
            kind="preference",
            basis="stated",
            statement="Likes jazz.",
            source=SourceInput(kind="user_message", ref="msg_e"),
        ),
    ).memory
    assert by_agent is not None
    expected = {
        remember("Called Mr Rossi back about the parcel.", subject="acct_a"),  # its words
        remember("Prefers the morning.", subject="acct_marco"),  # its subject's name
        remember(
            "Reads e-mail daily.",
            subject="acct_b",
            source=SourceInput(kind="tool_result", ref="rossi"),  # its source
        ),
        remember(
            "Has two dogs.",
            subject="acct_c",
            source=SourceInput(kind="user_message", ref="msg_c", run="rossi"),  # its run
        ),
        by_agent,  # its agent
    }
    remember("Matches nothing at all.", subject="acct_d")
    set_display_name(
        subject=Subject.objects.get(ref="acct_marco"),
        display_name="Marco Rossi",
        actor=Actor.system("test"),
    )
    client = signed_in(people["sam"])
    seen: list[Memory] = []
    asked: dict[str, str] = {"q": "rossi"}
    # As the results follow the typing: a search sent would open the run "rossi" names.
    typing = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TRIGGER": "q", "HTTP_HX_TARGET": "search-results"}
    for _ in range(5):
        html = client.get("/", asked, **typing).content.decode()
        seen += [m for m in Memory.objects.order_by("-written_at", "-pk") if listed(html, m)]
        found = re.search(r'href="\?([^"]*after=[^"]*)"', html)
        if not found:
            break
        asked = dict(QueryDict(found.group(1).replace("&amp;", "&")).items())
    newest_first = sorted(expected, key=lambda m: (m.written_at, m.pk), reverse=True)
    assert seen == newest_first
    assert set(Memory.objects.found_by("rossi")) == expected


def listed(html: str, memory: Memory) -> bool:
    """Whether the memory table links to the memory's trace (on the search page: not the
    best matches of every type above it)."""
    table = html.split('id="memory-results-title"', 1)[-1]
    return f'href="/memories/{memory.pk}/history/"' in table


# The queues.


def test_a_queue_longer_than_its_count_says_more_than(
    people: dict[str, User], remember: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(queues, "COUNT_CAP", 3)
    client = signed_in(people["sam"])
    for n in range(5):
        remember(f"Might like tulips {n}.", basis="inferred", subject=f"acct_t{n}")
    home = client.get("/").content.decode()
    pending = '<a href="/queues/pending/">Waiting for confirmation: guesses and held writes</a>'
    assert f'{pending} <span class="badge pending">3+</span>' in home
    queue = client.get("/queues/pending/").content.decode()
    assert "More than 3 items waiting, oldest first." in queue
    for n in range(5):
        assert f"Might like tulips {n}." in queue


# The Django admin.


def admin_queries(client: Client, url: str) -> tuple[int, list[str]]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(captured), [q["sql"] for q in captured.captured_queries]


def test_the_admin_memory_list_costs_the_same_queries_and_never_counts_the_whole_table(
    people: dict[str, User], write: Callable[..., list[Memory]]
) -> None:
    client = signed_in(people["alex"])
    write(3)
    few, _ = admin_queries(client, "/admin/ledger/memory/")
    write(57, kind="episode", subject="acct_other")
    many, sql = admin_queries(client, "/admin/ledger/memory/")
    assert many == few
    counts = [q for q in sql if q.startswith("SELECT COUNT(")]
    assert counts and all("LIMIT" in q for q in counts)
    # Is it a slot? Then how many statements hold the word, up to a bound.
    assert queries(client, "/admin/ledger/memory/?q=number") == few + 2


def test_an_admin_list_longer_than_it_counts_says_more_than(
    people: dict[str, User], write: Callable[..., list[Memory]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ledger_admin.CappedPaginator, "cap", 4)
    client = signed_in(people["alex"])
    write(6)
    html = client.get("/admin/ledger/memory/").content.decode()
    assert "More than 4 memories: the first 4 are paged here" in html
    searched = client.get("/admin/ledger/memory/?q=number").content.decode()
    assert "More than 4 results" in searched
    write_few = client.get("/admin/ledger/memory/?q=nothing-like-it").content.decode()
    assert "0 results" in write_few


def test_the_admin_finds_a_memory_by_id_subject_reference_slot_or_words(
    people: dict[str, User], remember: Callable[..., Memory]
) -> None:
    client = signed_in(people["alex"])
    email = remember("Prefers email over telephone.", key="contact.channel")
    parcel = remember("Phoned about a parcel.", subject="acct_parcel")
    tulips = remember("Likes tulips in spring.", subject="acct_tulips")

    def found(term: str) -> set[str]:
        html = client.get("/admin/ledger/memory/", {"q": term}).content.decode()
        return {m.statement for m in (email, parcel, tulips) if m.statement in html}

    assert found(str(tulips.pk)) == {tulips.statement}
    assert found("acct_parcel") == {parcel.statement}
    assert found("contact.channel") == {email.statement}
    # Words, as support's search reads them: "phone" finds "Phoned".
    assert found("phone") == {parcel.statement}
    assert found("acct_pa") == set()  # a reference is looked up whole


def test_the_other_admin_lists_cost_the_same_queries_for_few_or_many(
    people: dict[str, User], agent: Agent, remember: Callable[..., Memory]
) -> None:
    client = signed_in(people["alex"])
    run = run_for_agent(ref="run_admin", agent=agent)
    assert run is not None
    made = count()

    def grow(times: int) -> None:
        for _ in range(times):
            n = next(made)
            remember(f"Fact {n}.", subject=f"acct_admin_{n}", kind="account_fact")
            record_ledger_entry(
                subject=Subject.objects.get(ref=f"acct_admin_{n}"),
                agent=agent,
                fact=f"Commitment {n}.",
                kind="commitment",
                run_ref="run_admin",
                source=SourceInput(kind="user_message", ref=f"msg_{n}", run="run_admin", turn=n),
            )
            journal_intent(
                agent=agent, run=run, idempotency_key=f"k{n}", action=f"act {n}", intent={}
            )

    lists = ["subject", "ledgerentry", "journalentry", "writedecision", "agent"]
    grow(2)
    few = [queries(client, f"/admin/ledger/{name}/") for name in lists]
    grow(20)
    assert WriteDecision.objects.count() >= 22
    assert [queries(client, f"/admin/ledger/{name}/") for name in lists] == few
