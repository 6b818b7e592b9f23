"""A subject's memory as of a moment: what was in use, the block an agent would have been
given, and the recalls actually made around then."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from ledger.actions.erasure_requests import approve_erasure, request_erasure
from ledger.actions.lifecycle import confirm_memory, correct_memory
from ledger.actions.recalls import record_recall
from ledger.actors import Actor
from ledger.models import Agent, Memory
from ledger.reads.recall import recall
from tests.complaint_story import (
    CORRECTED_AT,
    EVENING,
    MARCO,
    RIGHT,
    START,
    UNRELATED,
    WRONG,
    build_story,
)
from tests.conftest import signed_in

pytestmark = pytest.mark.django_db
URL = f"/subjects/{MARCO}/as-of/"


@pytest.fixture
def sam(make_person: Callable[..., User]) -> User:
    return make_person("sam", role="support")


def block_of(page: str) -> str:
    """The reconstructed block: the first <pre> on the page."""
    return page.split('<pre class="document">', 1)[1].split("</pre>", 1)[0]


def test_before_the_correction_the_wrong_memory_was_in_use_and_served(
    agent: Agent, sam: User, clock: Callable[[datetime], None]
) -> None:
    build_story(agent=agent, support=sam, clock=clock)
    at = (START + timedelta(days=2, hours=1)).isoformat()

    page = signed_in(sam).get(URL, {"at": at}).content.decode()

    block = block_of(page)
    assert WRONG in block and EVENING in block and UNRELATED in block
    assert RIGHT not in page
    # run_152 read an hour before, run_153 23 hours after; run_151, 25 hours before, is out.
    assert page.count("<pre") == 1 + 2
    assert "run_151" not in page
    assert page.index("run_153") < page.index("run_152")
    recalled = page.split('id="recalls-around"', 1)[1]
    assert recalled.count(WRONG) == 2


def test_after_the_correction_the_correction_is_in_use_and_not_the_wrong_one(
    agent: Agent, sam: User, clock: Callable[[datetime], None]
) -> None:
    build_story(agent=agent, support=sam, clock=clock)
    at = (CORRECTED_AT + timedelta(minutes=5)).isoformat()

    page = signed_in(sam).get(URL, {"at": at}).content.decode()

    block = block_of(page)
    assert RIGHT in block
    assert WRONG not in block
    assert "corrected by support, not by the person" in block
    # Nothing was recalled after the correction; run_153 read it two days before.
    assert "No agent recalled anything" in page


def test_a_date_alone_means_the_end_of_that_day(
    agent: Agent, sam: User, clock: Callable[[datetime], None]
) -> None:
    build_story(agent=agent, support=sam, clock=clock)
    page = signed_in(sam).get(URL, {"at": CORRECTED_AT.date().isoformat()}).content.decode()
    assert RIGHT in block_of(page) and WRONG not in block_of(page)


def test_without_a_moment_it_shows_now(
    agent: Agent, sam: User, clock: Callable[[datetime], None]
) -> None:
    build_story(agent=agent, support=sam, clock=clock)
    response = signed_in(sam).get(URL)
    assert response.status_code == 200
    assert RIGHT in block_of(response.content.decode())


def test_a_memory_before_it_was_written_or_after_it_expired_is_not_in_use(
    agent: Agent, sam: User, clock: Callable[[datetime], None], remember: Callable[..., Memory]
) -> None:
    clock(START)
    remember(
        "Away until Friday.",
        subject=MARCO,
        expires_at=START + timedelta(days=3),
        expires_omitted=False,
    )
    # Every moment asked about has come (a future one is refused).
    clock(START + timedelta(days=5))
    client = signed_in(sam)
    before = client.get(URL, {"at": (START - timedelta(hours=1)).isoformat()}).content.decode()
    during = client.get(URL, {"at": (START + timedelta(days=1)).isoformat()}).content.decode()
    after = client.get(URL, {"at": (START + timedelta(days=4)).isoformat()}).content.decode()
    assert "Away until Friday." not in block_of(before)
    assert "Away until Friday." in block_of(during)
    assert "Away until Friday." not in block_of(after)


def test_an_open_conflict_at_the_moment_is_in_the_block(
    sam: User, clock: Callable[[datetime], None], remember: Callable[..., Memory]
) -> None:
    clock(START)
    remember("Prefers morning deliveries.", subject=MARCO, key="delivery.time")
    remember("Prefers evening deliveries.", subject=MARCO, key="delivery.time")
    clock(START + timedelta(hours=2))
    page = signed_in(sam).get(URL, {"at": (START + timedelta(hours=1)).isoformat()})
    assert "UNRESOLVED CONFLICT in slot delivery.time" in block_of(page.content.decode())


def test_an_erased_subject_shows_nothing_of_what_was_erased(
    agent: Agent, sam: User, clock: Callable[[datetime], None], make_person: Callable[..., User]
) -> None:
    build_story(agent=agent, support=sam, clock=clock)
    story_subject = Memory.objects.filter(statement=RIGHT).get().subject
    request = request_erasure(
        subject=story_subject, actor=Actor.for_user(sam), reason="Marco, by phone"
    )
    approve_erasure(request=request, actor=Actor.for_user(make_person("ada", role="admin")))
    at = (START + timedelta(days=2, hours=1)).isoformat()
    page = signed_in(sam).get(URL, {"at": at}).content.decode()
    for statement in (WRONG, EVENING, UNRELATED, RIGHT):
        assert statement not in page
    assert "(erased: the content is gone)" in page


def test_memory_text_and_goals_are_escaped(
    agent: Agent, sam: User, clock: Callable[[datetime], None], remember: Callable[..., Memory]
) -> None:
    clock(START)
    # Held for review as markup, then confirmed: escaped wherever it shows.
    memory = remember("Says <script>alert(1)</script> often.", subject=MARCO)
    confirm_memory(memory=memory, actor=Actor.system("test"), reason="Checked.")
    record_recall(agent=agent, result=recall(subject=memory.subject, goal="<script>x", k=5))
    page = signed_in(sam).get(URL).content.decode()
    assert "<script>alert" not in page and "<script>x" not in page
    assert "&lt;script&gt;alert(1)" in page


@pytest.mark.parametrize("at", ["yesterday", "2027-02-30", "2027-13-01T10:00", "2027-03-01T25:00"])
def test_a_bad_moment_is_refused_in_words(
    sam: User, remember: Callable[..., Memory], at: str
) -> None:
    remember("Likes tea.", subject=MARCO)
    response = signed_in(sam).get(URL, {"at": at})
    assert response.status_code == 400
    assert "is not a" in response.content.decode()


@pytest.mark.parametrize("at", ["9999-12-31", "0001-01-01", "9999-12-31T23:59:59"])
def test_a_moment_too_far_to_look_around_is_refused_in_words(
    sam: User, remember: Callable[..., Memory], at: str
) -> None:
    remember("Likes tea.", subject=MARCO)
    response = signed_in(sam).get(URL, {"at": at})
    assert response.status_code == 400
    assert "Choose a moment between 1900 and 9998." in response.content.decode()


def test_the_page_is_for_support_only(
    sam: User, make_person: Callable[..., User], remember: Callable[..., Memory]
) -> None:
    remember("Likes tea.", subject=MARCO)
    make_person("marco", subject=MARCO)
    assert signed_in("marco").get(URL).status_code == 404
    anonymous = Client().get(URL)
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    assert signed_in(sam).get("/subjects/acct_nobody/as-of/").status_code == 404


def test_the_page_runs_a_fixed_number_of_queries_whatever_the_history(
    agent: Agent, sam: User, clock: Callable[[datetime], None], remember: Callable[..., Memory]
) -> None:
    clock(START)
    client = signed_in(sam)
    current = remember("Version 0.", subject=MARCO, key="slot.a")
    remember("Morning.", subject=MARCO, key="slot.b")
    remember("Evening.", subject=MARCO, key="slot.b")

    def grow(start: int, times: int) -> None:
        nonlocal current
        for n in range(start, start + times):
            clock(START + timedelta(hours=n))
            current = correct_memory(
                memory=current, actor=Actor.for_user(sam), statement=f"Version {n}.", reason="x"
            )
            remember(f"Fact {n}.", subject=MARCO, key=f"fact.{n}")
            record_recall(agent=agent, result=recall(subject=current.subject, goal="", k=5))

    def count() -> int:
        clock(START + timedelta(hours=30))
        with CaptureQueriesContext(connection) as captured:
            response = client.get(URL, {"at": (START + timedelta(hours=30)).isoformat()})
            assert response.status_code == 200
        return len(captured)

    grow(1, 1)
    first = count()
    grow(2, 12)
    assert count() == first
