"""Where a memory was used: each card says how many conversations were given it and when
last, and lists them on request (htmx, or a plain link that opens the page with the list)."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

import pytest
import time_machine
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from ledger.actions.recalls import record_recall
from ledger.models import Agent, Memory, Subject
from ledger.reads.recall import recall
from ledger.views.cards import CONVERSATIONS_SHOWN
from tests.conftest import SUBJECT, agent_client, signed_in

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
PAGE = f"/subjects/{SUBJECT}/"


@pytest.fixture
def dana(make_person: Callable[..., User]) -> User:
    return make_person("dana", subject=SUBJECT)


def read(agent: Agent, *, run: str | None, at: datetime, goal: str = "billing") -> None:
    with time_machine.travel(at, tick=False):
        result = recall(subject=Subject.objects.get(ref=SUBJECT), goal=goal, k=5)
        record_recall(agent=agent, result=result, run_ref=run)


def card_html(html: str, memory: Memory) -> str:
    start = html.index(f'id="memory-{memory.pk}"')
    return " ".join(html[start : html.index("</article>", start)].split())


def test_a_memory_never_used_says_so_plainly(dana: User, remember) -> None:
    memory = remember("Prefers email.")
    html = card_html(signed_in(dana).get(PAGE).content.decode(), memory)
    assert "Not used in any conversation yet." in html
    assert "Used in" not in html


def test_the_card_counts_conversations_and_says_when_last(
    dana: User, remember, agent: Agent
) -> None:
    memory = remember("Prefers email for billing.")
    read(agent, run="run_a", at=datetime(2026, 11, 2, 9, 0, tzinfo=UTC))
    read(agent, run="run_a", at=datetime(2026, 11, 3, 9, 0, tzinfo=UTC))
    read(agent, run="run_b", at=datetime(2026, 11, 20, 9, 0, tzinfo=UTC))
    # A read outside any run has nothing to group it with: a conversation of its own.
    read(agent, run=None, at=datetime(2026, 11, 28, 16, 30, tzinfo=UTC))
    html = card_html(signed_in(dana).get(PAGE).content.decode(), memory)
    assert "Used in 3 conversations, last on" in html
    assert "28 November 2026</time>" in html
    assert "Not used in any conversation" not in html


def test_one_conversation_is_singular(dana: User, remember, agent: Agent) -> None:
    memory = remember("Prefers email for billing.")
    read(agent, run="run_a", at=datetime(2026, 11, 2, 9, 0, tzinfo=UTC))
    html = card_html(signed_in(dana).get(PAGE).content.decode(), memory)
    assert "Used in 1 conversation, last on" in html


def test_the_list_comes_with_htmx_run_agent_and_when_latest_first(
    dana: User, remember, agent: Agent
) -> None:
    memory = remember("Prefers email for billing.")
    other = agent_client("billing-bot", ["read"])[1]
    read(agent, run="run_a", at=datetime(2026, 11, 2, 9, 0, tzinfo=UTC))
    read(agent, run="run_a", at=datetime(2026, 11, 3, 9, 0, tzinfo=UTC))
    read(other, run="run_b", at=datetime(2026, 11, 20, 9, 5, tzinfo=UTC))
    response = signed_in(dana).get(reverse("memory-uses", args=[memory.pk]), **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert html.index("run_b") < html.index("run_a")
    assert "by billing-bot, last on" in html
    assert "20 November 2026, 09:05 UTC" in html
    assert "by fixture-agent" in html
    assert "(2 times)" in html
    # The person sees the run's name; only staff may open a run.
    assert "/runs/run_a/" not in html


def test_without_javascript_the_link_opens_the_page_with_the_list(
    dana: User, remember, agent: Agent
) -> None:
    memory = remember("Prefers email for billing.")
    read(agent, run="run_a", at=datetime(2026, 11, 2, 9, 0, tzinfo=UTC))
    client = signed_in(dana)
    page = client.get(PAGE).content.decode()
    assert f"?uses={memory.pk}#memory-{memory.pk}" in page
    response = client.get(reverse("memory-uses", args=[memory.pk]))
    assert response.status_code == 302
    assert f"uses={memory.pk}" in response["Location"]
    html = card_html(client.get(response["Location"]).content.decode(), memory)
    assert "<details" in html and " open" in html
    # The person reads plain words; the run's ref is there to quote to support.
    assert "by fixture-agent" in html and "Reference <code>run_a</code>." in html


def test_support_sees_it_too_with_the_runs_linked(
    dana: User, remember, agent: Agent, make_person: Callable[..., User]
) -> None:
    memory = remember("Prefers email for billing.")
    read(agent, run="run_a", at=datetime(2026, 11, 2, 9, 0, tzinfo=UTC))
    support = signed_in(make_person("sam", role="support"))
    html = card_html(support.get(PAGE).content.decode(), memory)
    assert "Used in 1 conversation, last on" in html
    listed = support.get(reverse("memory-uses", args=[memory.pk]), **HTMX).content.decode()
    assert 'href="/runs/run_a/"' in listed


def test_the_list_shows_the_latest_and_counts_the_rest(dana: User, remember, agent: Agent) -> None:
    memory = remember("Prefers email for billing.")
    for n in range(CONVERSATIONS_SHOWN + 2):
        read(agent, run=f"run_{n:03}", at=datetime(2026, 10, 1, 9, n % 60, n // 60, tzinfo=UTC))
    html = signed_in(dana).get(reverse("memory-uses", args=[memory.pk]), **HTMX).content.decode()
    assert html.count("<li>") == CONVERSATIONS_SHOWN
    assert "And 2 earlier conversations." in html
    assert "run_051" in html and "run_000" not in html


def test_a_malformed_uses_parameter_is_ignored(dana: User, remember) -> None:
    remember("Prefers email.")
    client = signed_in(dana)
    assert client.get(PAGE, {"uses": "not-a-uuid"}).status_code == 200
    assert client.get(PAGE, {"uses": "00000000-0000-0000-0000-000000000000"}).status_code == 200


def test_each_conversation_says_its_goal_and_when_and_offers_to_ask_support(
    dana: User, remember, agent: Agent, settings: Any
) -> None:
    settings.MEMORYADMIN_SUPPORT_EMAIL = "help@example.com"
    memory = remember("Prefers email for billing.")
    read(agent, run="run_90", at=datetime(2026, 11, 2, 9, 0, tzinfo=UTC), goal="billing")
    # The goal is the agent's text: escaped, never markup.
    goal = "<b>answer</b> a billing question"
    read(agent, run="run_90", at=datetime(2026, 11, 3, 9, 0, tzinfo=UTC), goal=goal)
    client = signed_in(dana)

    def listed() -> str:
        url = reverse("memory-uses", args=[memory.pk])
        return " ".join(client.get(url, **HTMX).content.decode().split())

    html = listed()
    assert "&lt;b&gt;answer&lt;/b&gt; a billing question" in html and "<b>" not in html
    assert "3 November 2026, 09:00 UTC" in html
    mail = re.search(r'<a href="(mailto:[^"]+)">Ask support about this</a>', html)
    assert mail is not None
    asked = unquote(mail[1].replace("&amp;", "&"))
    assert asked.startswith("mailto:help@example.com?")
    assert "run_90" in asked and str(memory.pk) in asked
    # However many conversations it lists, the same number of queries.
    with CaptureQueriesContext(connection) as one:
        listed()
    for n in range(5):
        read(agent, run=f"run_{n}", at=datetime(2026, 11, 4, 9, n, tzinfo=UTC), goal=f"goal {n}")
    with CaptureQueriesContext(connection) as six:
        html = listed()
    assert "goal 4" in html and html.count("Ask support about this") == 6
    assert len(six) == len(one)
