"""The run page: what one agent run wrote, and what it recalled, turn by turn."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from ledger.actions.journal import journal_intent
from ledger.actions.ledger_entries import record_ledger_entry
from ledger.actions.notes import write_note
from ledger.actions.recalls import record_recall
from ledger.actions.sources import SourceInput
from ledger.models import Agent, Memory, Run
from ledger.recall import recall
from tests.complaint_story import EVENING, UNRELATED, WRONG, build_story
from tests.conftest import signed_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def sam(make_person: Callable[..., User]) -> User:
    return make_person("sam", role="support")


def test_the_run_page_lists_what_the_run_wrote(
    agent: Agent, sam: User, clock: Callable[[datetime], None]
) -> None:
    story = build_story(agent=agent, support=sam, clock=clock)
    run = Run.objects.get(ref="run_150")
    journal_intent(
        agent=agent, run=run, idempotency_key="k1", action="send_sms", intent={"to": "marco"}
    )
    write_note(run=run, agent=agent, key="channel", value="phone, he said")
    record_ledger_entry(
        subject=story.wrong.subject,
        agent=agent,
        fact="Call Marco before each delivery.",
        kind="commitment",
        source=SourceInput(kind="user_message", ref="msg_0588"),
        run_ref="run_150",
    )

    page = signed_in(sam).get("/runs/run_150/").content.decode()

    assert "Agent fixture-agent" in page
    for statement in (WRONG, EVENING, UNRELATED):
        assert statement in page
    assert "msg_0588</code></a>, turn 3" in page
    assert "Replaced by a correction" in page
    assert f"/memories/{story.wrong.pk}/history/" in page
    assert "Call Marco before each delivery." in page
    assert "send_sms" in page
    assert "Journal (1)" in page and "Notes (1)" in page and "Compactions (0)" in page
    assert "This run recalled nothing." in page


def test_the_run_page_lists_what_the_run_recalled_by_turn(
    agent: Agent, sam: User, clock: Callable[[datetime], None]
) -> None:
    story = build_story(agent=agent, support=sam, clock=clock)
    subject = story.wrong.subject
    record_recall(
        agent=agent, result=recall(subject=subject, goal="phone", k=5), run_ref="run_151", turn=1
    )

    page = signed_in(sam).get("/runs/run_151/").content.decode()

    # Turn 1 (the later read) comes before turn 2.
    assert page.index("Turn 1") < page.index("Turn 2")
    assert "<q>phone</q>" in page and "<q>arrange a delivery</q>" in page
    assert f"/memories/{story.wrong.pk}/history/" in page
    assert "This run wrote no memories." in page


def test_the_run_page_escapes_what_agents_wrote(
    agent: Agent, sam: User, remember: Callable[..., Memory]
) -> None:
    memory = remember(
        "Says <script>alert(1)</script> a lot.",
        source=SourceInput(kind="user_message", ref="msg_x", run="run_x", turn=1),
    )
    record_recall(
        agent=agent,
        result=recall(subject=memory.subject, goal="<script>alert(2)</script>", k=5),
        run_ref="run_x",
        turn=1,
    )
    page = signed_in(sam).get("/runs/run_x/").content.decode()
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(1)" in page and "&lt;script&gt;alert(2)" in page


def test_the_run_page_is_for_support_only(
    agent: Agent, sam: User, make_person: Callable[..., User], remember: Callable[..., Memory]
) -> None:
    remember("Likes tea.", source=SourceInput(kind="user_message", ref="m", run="run_1"))
    make_person("dana")
    assert signed_in("dana").get("/runs/run_1/").status_code == 404
    anonymous = Client().get("/runs/run_1/")
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    assert signed_in(sam).get("/runs/run_1/").status_code == 200
    assert signed_in(sam).get("/runs/no_such_run/").status_code == 404


def test_the_run_page_runs_a_fixed_number_of_queries(
    agent: Agent, sam: User, remember: Callable[..., Memory]
) -> None:
    client = signed_in(sam)

    def grow(start: int, times: int) -> None:
        for n in range(start, start + times):
            memory = remember(
                f"Fact number {n}.",
                key=f"fact.{n}",
                source=SourceInput(kind="user_message", ref=f"m{n}", run="run_q", turn=n),
            )
            run = Run.objects.get(ref="run_q")
            journal_intent(agent=agent, run=run, idempotency_key=f"k{n}", action="a", intent={})
            write_note(run=run, agent=agent, key=f"n{n}", value="v")
            for turn in (n, n):
                result = recall(subject=memory.subject, goal="fact", k=5)
                record_recall(agent=agent, result=result, run_ref="run_q", turn=turn)

    def count() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/runs/run_q/").status_code == 200
        return len(captured)

    grow(1, 1)
    first = count()
    grow(2, 10)
    assert count() == first
