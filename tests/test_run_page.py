"""The run page: what one agent run wrote, and what it recalled, turn by turn."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from ledger.actions.erasure import erase_subject
from ledger.actions.gate import MemoryInput, write_memory
from ledger.actions.journal import (
    journal_intent,
    record_outcome,
    resolve_journal_entry,
    run_for_agent,
)
from ledger.actions.ledger_entries import record_ledger_entry
from ledger.actions.notes import write_note
from ledger.actions.recalls import record_recall
from ledger.actions.sources import SourceInput
from ledger.actors import Actor
from ledger.models import Agent, JournalEntry, Memory, Run, Subject
from ledger.reads.recall import recall
from ledger.views import run_page
from tests.complaint_story import EVENING, UNRELATED, WRONG, build_story
from tests.conftest import SUBJECT, VALID_BODY, body, signed_in

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
            # A write the gate refuses (a system-of-record key), listed with the run's.
            refused = write_memory(
                agent=agent,
                data=MemoryInput(
                    subject=memory.subject.ref,
                    kind="account_fact",
                    basis="stated",
                    statement=f"Phone {n}.",
                    key="contact.phone",
                    source=SourceInput(kind="user_message", ref=f"r{n}", run="run_q"),
                ),
            )
            assert refused.refused
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
    assert "Writes the gate refused (11)" in client.get("/runs/run_q/").content.decode()


# What the gate refused: a refusal stores no memory, so the run page is where support sees it.

REFUSED = "+44 20 7946 0000"


def refuse(api: APIClient, run: str = "run_77") -> None:
    """A write the gate refuses: the policy keeps ``contact.phone`` in another system."""
    source = {**VALID_BODY["source"], "run": run}
    response = api.post(
        "/api/v1/memories",
        body(key="contact.phone", statement=REFUSED, source=source),
        format="json",
    )
    assert response.status_code == 422, response.json()
    assert response.json()["code"] == "system_of_record"


def accept(api: APIClient, run: str = "run_77", statement: str = "Likes tea.") -> None:
    source = {**VALID_BODY["source"], "run": run}
    response = api.post("/api/v1/memories", body(statement=statement, source=source), format="json")
    assert response.status_code == 201, response.json()


def test_a_refused_write_is_on_its_runs_page_with_why(
    api_agent: tuple[APIClient, Agent], sam: User
) -> None:
    api, agent = api_agent
    accept(api)
    refuse(api)

    page = signed_in(sam).get("/runs/run_77/").content.decode()

    assert "Memories (1)" in page and "Likes tea." in page
    assert "Writes the gate refused (1)" in page
    assert "The key &#x27;contact.phone&#x27; belongs to another system of record" in page
    assert "<code>system_of_record</code>" in page
    # The decision never kept the words it was sent, and the page shows nothing it lacks.
    assert REFUSED not in page


def test_a_run_with_nothing_refused_says_so(api_agent: tuple[APIClient, Agent], sam: User) -> None:
    api, _ = api_agent
    accept(api)
    page = signed_in(sam).get("/runs/run_77/").content.decode()
    assert "Writes the gate refused (0)" in page
    assert "The gate refused none of this run's writes." in page


def test_a_refusal_belongs_to_the_run_that_was_the_agents_latest_about_the_subject(
    api_agent: tuple[APIClient, Agent], sam: User, clock: Callable[[datetime], None]
) -> None:
    api, _ = api_agent
    clock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    accept(api, run="run_77")
    clock(datetime(2026, 3, 2, 9, 5, tzinfo=UTC))
    refuse(api, run="run_77")
    clock(datetime(2026, 3, 2, 10, 0, tzinfo=UTC))
    accept(api, run="run_78", statement="Likes coffee.")
    clock(datetime(2026, 3, 2, 10, 5, tzinfo=UTC))
    refuse(api, run="run_78")
    refuse(api, run="run_78")

    client = signed_in(sam)
    assert "Writes the gate refused (1)" in client.get("/runs/run_77/").content.decode()
    assert "Writes the gate refused (2)" in client.get("/runs/run_78/").content.decode()


def test_only_support_sees_a_runs_refusals(
    api_agent: tuple[APIClient, Agent], sam: User, make_person: Callable[..., User]
) -> None:
    api, _ = api_agent
    accept(api)
    refuse(api)
    # The person the run is about, and someone else's person: the page does not exist.
    make_person("dana", subject=SUBJECT)
    make_person("olga", subject="acct_other")
    for person in ("dana", "olga"):
        response = signed_in(person).get("/runs/run_77/")
        assert response.status_code == 404
        assert b"system of record" not in response.content
    assert signed_in(sam).get("/runs/run_77/").status_code == 200


def test_an_erased_subjects_refusals_keep_no_reason(
    api_agent: tuple[APIClient, Agent], sam: User
) -> None:
    api, _ = api_agent
    accept(api)
    refuse(api)
    run = Run.objects.get(ref="run_77")
    erase_subject(subject=Subject.objects.get(ref=SUBJECT), actor=Actor.system("test"))

    # The agent's name for the run may say whom it was about: it became an opaque id, and
    # the run's page is found under that one alone.
    run.refresh_from_db()
    assert run.ref != "run_77"
    support = signed_in(sam)
    assert support.get("/runs/run_77/").status_code == 404
    page = support.get(reverse("run", args=[run.ref])).content.decode()

    assert "Writes the gate refused (1)" in page
    assert "Reason removed by an erasure." in page
    assert "contact.phone" not in page and REFUSED not in page
    # Nothing links to the old name: not the run's page, nor the subject's.
    subject_page = support.get(f"/subjects/{SUBJECT}/").content.decode()
    for html in (page, subject_page):
        assert "run_77" not in html
    assert reverse("run", args=[run.ref]) in subject_page


def test_a_long_list_of_refusals_is_cut_and_says_how_many_more(
    api_agent: tuple[APIClient, Agent], sam: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_page, "REFUSALS_SHOWN", 2)
    api, _ = api_agent
    accept(api)
    for _ in range(5):
        refuse(api)

    page = signed_in(sam).get("/runs/run_77/").content.decode()

    assert "Writes the gate refused (5)" in page
    assert page.count("<code>system_of_record</code>") == 2
    assert "And 3 more, older." in page


# A journal entry's life: support reads how it got to where it is, not only where it is.


def test_the_journal_shows_each_entrys_steps_unknown_then_done(
    agent: Agent, sam: User, make_person: Callable[..., User]
) -> None:
    run = run_for_agent(ref="run_j", agent=agent)
    assert run is not None
    journal_intent(
        agent=agent, run=run, idempotency_key="sms-1", action="send_sms", intent={"to": "marco"}
    )
    record_outcome(
        agent=agent,
        idempotency_key="sms-1",
        state="unknown",
        effect={"error": "<script>alert(1)</script> timed out"},
    )
    resolve_journal_entry(
        entry=JournalEntry.objects.get(idempotency_key="sms-1"),
        state="done",
        verification="Message sm_42 is listed as delivered in the SMS console.",
        actor=Actor.for_user(sam),
    )
    make_person("tess", role="support")

    page = signed_in("tess").get("/runs/run_j/journal/").content.decode()

    steps = page[page.index("Its steps") :]
    intended = steps.index("<strong>Intended</strong>")
    unknown = steps.index("<strong>Outcome unknown</strong>")
    done = steps.index("<strong>Done</strong>")
    assert intended < unknown < done
    assert steps.count("by the assistant (fixture-agent).") == 2
    assert "by support (sam)." in steps
    # The effect is shown at the step that recorded it, escaped; the check with the last.
    assert steps.index("Effect recorded:") < done < steps.index("Verification recorded:")
    assert "&lt;script&gt;alert(1)&lt;/script&gt; timed out" in steps
    assert "<script>alert" not in page
    assert "sm_42 is listed as delivered" in steps[done:]


def test_the_journal_reads_every_entrys_steps_in_a_fixed_number_of_queries(
    agent: Agent, sam: User
) -> None:
    client = signed_in(sam)
    run = run_for_agent(ref="run_jq", agent=agent)
    assert run is not None
    made = iter(range(1000))

    def act(times: int) -> None:
        for _ in range(times):
            key = f"act-{next(made)}"
            journal_intent(agent=agent, run=run, idempotency_key=key, action="a", intent={})
            record_outcome(agent=agent, idempotency_key=key, state="unknown", effect={})
            resolve_journal_entry(
                entry=JournalEntry.objects.get(idempotency_key=key),
                state="not_done",
                verification="Nothing in the console.",
                actor=Actor.for_user(sam),
            )

    def count() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/runs/run_jq/journal/").status_code == 200
        return len(captured)

    act(1)
    first = count()
    act(10)
    assert count() == first
    page = client.get("/runs/run_jq/journal/").content.decode()
    assert page.count("<strong>Not done</strong>") == 11
