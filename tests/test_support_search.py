"""Support's search across every subject, and the page of everything one message wrote."""

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

from ledger.actions.agents import create_agent
from ledger.actions.gate import MemoryInput, write_memory
from ledger.actions.ledger_entries import record_ledger_entry
from ledger.actions.lifecycle import retract_memory
from ledger.actions.sources import SourceInput
from ledger.actions.subjects import set_display_name
from ledger.actors import Actor
from ledger.models import Agent, Memory, Subject
from ledger.views import search
from tests.conftest import SUBJECT, signed_in

pytestmark = pytest.mark.django_db
MARCO = "acct_1f6b0c93d2e84a71"
NOW = datetime(2031, 3, 1, 12, 0, tzinfo=UTC)
MISREAD = SourceInput(
    kind="user_message",
    ref="msg_0588",
    run="run_150",
    turn=3,
    excerpt="Please don't ring me, I'm not happy to be phoned. E-mail is fine.",
)


@pytest.fixture
def story(
    make_person: Callable[..., User],
    remember: Callable[..., Memory],
    clock: Callable[[datetime], None],
) -> dict[str, Memory]:
    """Marco's complaint as the demo tells it, beside Dana's ordinary memory."""
    make_person("sam", role="support")
    make_person("dana", subject=SUBJECT)
    clock(NOW - timedelta(days=10))
    email = remember(
        "Prefers email over telephone for billing questions.",
        key="contact.channel",
        source=SourceInput(kind="user_message", ref="msg_0192", run="run_77", turn=4),
    )
    clock(NOW - timedelta(days=2))
    phoned = remember(
        "Happy to be phoned about deliveries.",
        subject=MARCO,
        key="contact.channel",
        source=MISREAD,
    )
    evening = remember(
        "Best reached by phone after 6 pm.", subject=MARCO, key="contact.hours", source=MISREAD
    )
    set_display_name(
        subject=Subject.objects.get(ref=MARCO), display_name="Marco Rossi", actor=Actor.system("t")
    )
    clock(NOW)
    return {"email": email, "phoned": phoned, "evening": evening}


def find(client: Client, **params: Any) -> str:
    response = client.get("/", params)
    assert response.status_code == 200, response.content.decode()
    return response.content.decode()


def listed(html: str, *memories: Memory) -> set[str]:
    """Which of these memories the results table links to the trace of (on the search
    page, the memory table: not the best matches of every type above it)."""
    table = html.split('id="memory-results-title"', 1)[-1]
    return {m.statement for m in memories if reverse("memory-history", args=[m.pk]) in table}


def test_a_message_ref_goes_to_everything_written_from_it(story: dict[str, Memory]) -> None:
    sam = signed_in("sam")
    response = sam.get("/", {"q": "msg_0588"})
    assert response.status_code == 302
    assert response["Location"] == "/sources/msg_0588/"
    html = sam.get(response["Location"]).content.decode()
    assert listed(html, *story.values()) == {
        "Happy to be phoned about deliveries.",
        "Best reached by phone after 6 pm.",
    }
    assert html.count("not happy to be phoned. E-mail is fine.") == 1
    assert "Marco Rossi" in html and "turn 3" in html
    assert 'href="/runs/run_150/"' in html


def test_the_source_page_lists_ledger_entries_citing_it_and_deleted_memories(
    story: dict[str, Memory], agent: Agent
) -> None:
    retract_memory(
        memory=story["phoned"], actor=Actor.for_user(User.objects.get(username="sam")), reason="x"
    )
    record_ledger_entry(
        subject=Subject.objects.get(ref=MARCO),
        agent=agent,
        fact="Call the customer about the late delivery.",
        kind="interpretation",
        run_ref="run_150",
        source=SourceInput(kind="user_message", ref="msg_0588", run="run_150", turn=3),
    )
    html = signed_in("sam").get("/sources/msg_0588/").content.decode()
    assert "Happy to be phoned about deliveries." in html
    assert "retracted" in html
    assert "Call the customer about the late delivery." in html


def test_a_run_ref_goes_to_the_run(story: dict[str, Memory]) -> None:
    response = signed_in("sam").get("/", {"q": "run_150"})
    assert response.status_code == 302
    assert response["Location"] == reverse("run", args=["run_150"])


def test_an_exact_ref_from_htmx_redirects_the_whole_page(story: dict[str, Memory]) -> None:
    response = signed_in("sam").get(
        "/", {"q": "msg_0588"}, headers={"HX-Request": "true", "HX-Target": "search-results"}
    )
    assert response["HX-Redirect"] == "/sources/msg_0588/"


def test_while_typing_an_exact_ref_lists_results_instead_of_leaving_the_page(
    story: dict[str, Memory],
) -> None:
    typing = {"HX-Request": "true", "HX-Target": "search-results", "HX-Trigger": "q"}
    response = signed_in("sam").get("/", {"q": "msg_0588", "kind": ""}, headers=typing)
    assert response.status_code == 200
    assert "HX-Redirect" not in response
    assert "Happy to be phoned about deliveries." in response.content.decode()
    # The address bar keeps only what was asked.
    assert response["HX-Push-Url"] == "/?q=msg_0588"


def test_words_find_memories_by_full_text(story: dict[str, Memory]) -> None:
    html = find(signed_in("sam"), q="phone")
    # "phone" finds "phoned" by its stem; "telephone" is another word.
    assert listed(html, *story.values()) == {
        "Happy to be phoned about deliveries.",
        "Best reached by phone after 6 pm.",
    }
    assert 'href="/sources/msg_0588/"' in html and "turn 3" in html


def test_an_agent_name_finds_what_it_wrote(story: dict[str, Memory]) -> None:
    other, _ = create_agent(name="courier-bot", scopes=["write"], actor=Actor.system("t"))
    result = write_memory(
        agent=other,
        data=MemoryInput(
            subject=SUBJECT,
            kind="episode",
            basis="stated",
            statement="Parcel left with the neighbour.",
            source=SourceInput(kind="tool_result", ref="track_9"),
        ),
    )
    assert result.memory is not None
    html = find(signed_in("sam"), q="courier-bot")
    assert listed(html, result.memory, *story.values()) == {"Parcel left with the neighbour."}


def test_a_subject_name_lists_the_subject_and_its_memories(story: dict[str, Memory]) -> None:
    html = find(signed_in("sam"), q="Marco")
    assert f'href="/subjects/{MARCO}/"' in html
    assert listed(html, *story.values()) == {
        "Happy to be phoned about deliveries.",
        "Best reached by phone after 6 pm.",
    }


def test_nothing_found_says_so(story: dict[str, Memory]) -> None:
    html = find(signed_in("sam"), q="zebra")
    assert "No memory matches “zebra”" in html
    # One answer, not two: no subject list says it matched nothing as well.
    assert "No subject matches" not in html


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"kind": "preference"}, {"email", "phoned", "evening", "guess", "rival"}),
        ({"kind": "episode"}, {"episode"}),
        ({"basis": "inferred"}, {"guess"}),
        ({"status": "retracted"}, {"evening"}),
        ({"pending": "on"}, {"guess"}),
        ({"in_conflict": "on"}, {"email", "rival"}),
        ({"written_from": "2031-02-27"}, {"phoned", "evening", "guess", "episode", "rival"}),
        ({"written_to": "2031-02-20"}, {"email"}),
        ({"expiring_within": "30"}, {"guess", "episode"}),
        ({"q": "phone", "status": "active"}, {"phoned"}),
    ],
)
def test_each_filter_narrows(
    story: dict[str, Memory],
    remember: Callable[..., Memory],
    params: dict[str, str],
    expected: set[str],
) -> None:
    sam = User.objects.get(username="sam")
    retract_memory(memory=story["evening"], actor=Actor.for_user(sam), reason="Misread.")
    extra = {
        "guess": remember("Might like tulips.", subject=MARCO, basis="inferred"),
        "episode": remember(
            "Delivery was late in March.",
            subject=MARCO,
            kind="episode",
            expires_at=NOW + timedelta(days=20),
            expires_omitted=False,
        ),
        "rival": remember("Prefers post.", key="contact.channel"),
    }
    everything = {**story, **extra}
    html = find(signed_in(sam), **params)
    assert {n for n, m in everything.items() if listed(html, m)} == expected


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"kind": "gossip"}, "Kind: Select a valid choice"),
        ({"written_from": "2031-13-45"}, "Written from: Enter a valid date"),
        ({"written_from": "2031-03-02", "written_to": "2031-03-01"}, "is before"),
        ({"expiring_within": "-3"}, "Expiring within (days)"),
        ({"q": "phone", "after": "not-a-cursor"}, "not one this page gave out"),
        ({"written_to": "9999-12-31"}, "Choose a day between 1900 and 9998"),
        ({"written_from": "0001-01-01"}, "Choose a day between 1900 and 9998"),
        ({"q": "nul\x00"}, "NUL character"),
    ],
)
def test_bad_filters_are_a_400_in_words(
    story: dict[str, Memory], params: dict[str, str], words: str
) -> None:
    response = signed_in("sam").get("/", params)
    assert response.status_code == 400
    assert words in response.content.decode()


def test_a_too_long_search_says_so_in_our_words_page_or_htmx(story: dict[str, Memory]) -> None:
    client = signed_in("sam")
    long = "phone " * 50
    page = client.get("/", {"q": long})
    assert page.status_code == 400
    html = page.content.decode()
    assert "299 characters is too long for a search (200 at most)" in html
    assert "Ensure this value" not in html
    swapped = client.get(
        "/", {"q": long}, headers={"HX-Request": "true", "HX-Target": "search-results"}
    )
    assert swapped.status_code == 400
    fragment = swapped.content.decode()
    # Only the results' place, not a whole page inside it.
    assert fragment.lstrip().startswith('<div id="search-results">')
    assert "too long for a search" in fragment


def test_the_search_box_is_focused_and_its_form_keeps_the_search_in_the_address(
    story: dict[str, Memory],
) -> None:
    html = find(signed_in("sam"), q="phone", kind="preference")
    box = html.split('id="q"', 1)[1].split(">", 1)[0]
    assert "autofocus" in box
    form = html.split('role="search"', 1)[0].rsplit("<form", 1)[1]
    assert 'method="get"' in form
    # A search sent adds to the history; typing refines the entry of the search under way.
    assert 'hx-push-url="true"' in html.split('role="search"', 1)[1].split(">", 1)[0]
    assert 'hx-replace-url="true"' in box


def test_next_pages_have_no_overlap_and_no_gap(
    story: dict[str, Memory], remember: Callable[..., Memory], monkeypatch: Any
) -> None:
    monkeypatch.setattr(search, "PAGE_SIZE", 3)
    # Written in the same instant: the id breaks the tie.
    for n in range(8):
        remember(f"Parcel {n} was delivered by phone call.", subject=f"acct_p{n}", kind="episode")
    client = signed_in("sam")
    seen: list[str] = []
    params: dict[str, str] = {"q": "phone"}
    for _ in range(10):
        html = find(client, **params)
        seen += [m.statement for m in Memory.objects.all() if listed(html, m)]
        if "Next page" not in html:
            break
        cursor = html.split("after=")[1].split('"')[0].split("&")[0]
        params = {"q": "phone", "after": cursor}
    expected = Memory.objects.found_by("phone").order_by("-written_at", "-pk")
    assert len(seen) == len(set(seen)) == 10
    assert set(seen) == {m.statement for m in expected}


def test_the_search_runs_the_same_queries_for_3_or_30_rows(
    story: dict[str, Memory], remember: Callable[..., Memory]
) -> None:
    client = signed_in("sam")

    def count() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/", {"q": "phone"}).status_code == 200
        return len(captured)

    remember("Phone before noon.", subject="acct_q0", kind="episode")
    few = count()
    for n in range(1, 28):
        remember(f"Phone call {n} went well.", subject=f"acct_q{n}", kind="episode")
    assert count() == few


def test_the_source_page_runs_the_same_queries_for_2_or_9_memories(
    story: dict[str, Memory], remember: Callable[..., Memory]
) -> None:
    client = signed_in("sam")

    def count() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/sources/msg_0588/").status_code == 200
        return len(captured)

    few = count()
    for n in range(7):
        source = SourceInput(kind="user_message", ref="msg_0588", run=f"run_s{n}", turn=n)
        remember(f"Also misread, number {n}.", subject=f"acct_s{n}", source=source)
    assert count() == few


def test_the_staff_home_shows_the_queues(story: dict[str, Memory]) -> None:
    html = find(signed_in("sam"))
    assert 'href="/queues/conflicts/"' in html and 'href="/queues/journal/"' in html
    assert '<button type="submit">Search</button>' in html


def test_memory_text_is_escaped_in_results(
    story: dict[str, Memory], remember: Callable[..., Memory]
) -> None:
    remember("<script>alert(1)</script> phone me", subject=MARCO, kind="episode")
    html = find(signed_in("sam"), q="phone")
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; phone me" in html
    source = signed_in("sam").get("/sources/msg_1/").content.decode()
    assert "&lt;script&gt;" in source and "<script>alert" not in source


def test_an_unknown_source_is_a_404_in_words(story: dict[str, Memory]) -> None:
    response = signed_in("sam").get("/sources/msg_nope/")
    assert response.status_code == 404


def test_end_users_never_reach_support_search(story: dict[str, Memory], client: Client) -> None:
    dana = signed_in("dana")
    # Their home is their own page: a message ref leads nowhere of support's.
    response = dana.get("/", {"q": "msg_0588"})
    assert response.status_code == 200
    assert "Happy to be phoned" not in response.content.decode()
    assert dana.get("/sources/msg_0588/").status_code == 404
    anonymous = client.get("/sources/msg_0588/")
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]


def test_typing_refines_one_history_entry_and_a_search_sent_or_filtered_adds_one(
    story: dict[str, Memory],
) -> None:
    client = signed_in("sam")

    def ask(params: dict[str, str], current: str, trigger: str = "") -> Any:
        headers = {
            "HX-Request": "true",
            "HX-Target": "search-results",
            "HX-Current-URL": f"http://testserver{current}",
        }
        if trigger:
            headers["HX-Trigger"] = trigger
        response = client.get("/", params, headers=headers)
        assert response.status_code == 200
        return response

    # The first pause from the home starts a search: Back returns to the queues.
    assert ask({"q": "deliv"}, "/", trigger="q")["HX-Push-Url"] == "/?q=deliv"
    # Later pauses refine that same entry: Back never steps through half-typed words.
    typed = ask({"q": "deliveries"}, "/?q=deliv", trigger="q")
    assert typed["HX-Replace-Url"] == "/?q=deliveries"
    assert "HX-Push-Url" not in typed
    # Enter on what the address already holds adds nothing; a filter applied adds an entry.
    sent = ask({"q": "deliveries", "kind": ""}, "/?q=deliveries")
    assert sent["HX-Replace-Url"] == "/?q=deliveries"
    assert "HX-Push-Url" not in sent
    filtered = ask({"q": "deliveries", "status": "retracted"}, "/?q=deliveries")
    assert filtered["HX-Push-Url"] == "/?q=deliveries&status=retracted"
    # Back when htmx's history cache missed: the whole page, its box and filters set from
    # the address, and the address left alone.
    restored = client.get(
        "/",
        {"q": "deliveries", "status": "retracted"},
        headers={"HX-Request": "true", "HX-History-Restore-Request": "true"},
    )
    html = restored.content.decode()
    assert 'role="search"' in html
    assert 'value="deliveries"' in html.split('id="q"', 1)[1].split(">", 1)[0]
    assert '<option value="retracted" selected>' in html
    assert "HX-Push-Url" not in restored and "HX-Replace-Url" not in restored


def test_best_matches_are_left_out_while_a_memory_filter_is_set(story: dict[str, Memory]) -> None:
    client = signed_in("sam")
    phoned = story["phoned"].statement
    assert "Best matches" in find(client, q="deliveries")
    # "Deleted" shows no memory in use anywhere on the page, and says why the rest is gone.
    deleted = find(client, q="deliveries", status="retracted")
    assert "Best matches</h2>" not in deleted
    assert phoned not in deleted
    assert "left out while a memory filter is set" in deleted
    # The days written narrow every type: the best matches stay, within them.
    assert "Best matches</h2>" in find(client, q="deliveries", written_from="2031-02-01")
