"""A memory's history page costs the same however long its history and however often it
was read: a fixed number of queries, the latest changes and reads shown with a way to see
more, and reach counted up to a bound."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from ledger.actions.lifecycle import withhold_memory
from ledger.actions.recalls import record_recall
from ledger.actors import Actor
from ledger.models import Agent, Memory
from ledger.reads.recall import recall
from ledger.views import history
from tests.conftest import SUBJECT, signed_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def people(make_person: Callable[..., User]) -> dict[str, User]:
    return {
        "dana": make_person("dana", subject=SUBJECT),
        "sam": make_person("sam", role="support"),
    }


@pytest.fixture
def memory(remember: Callable[..., Memory]) -> Memory:
    return remember("Prefers phone calls in the morning.")


def page(client: Client, memory: Memory, query: str = "") -> tuple[int, str]:
    """The number of queries the history page ran, and the page."""
    with CaptureQueriesContext(connection) as captured:
        response = client.get(reverse("memory-history", args=[memory.pk]) + query)
    assert response.status_code == 200, response.content[:300]
    return len(captured), response.content.decode()


def change(memory: Memory, dana: User, times: int) -> Memory:
    """``times`` more history rows: the person withholds it and lets it be used, in turn."""
    for _ in range(times):
        memory = withhold_memory(
            memory=memory, actor=Actor.for_user(dana), withheld=not memory.withheld
        )
    return memory


def read(agent: Agent, memory: Memory, times: int) -> None:
    result = recall(subject=memory.subject, goal="phone", k=5)
    for _ in range(times):
        record_recall(agent=agent, result=result, run_ref="run_calls")


@pytest.mark.parametrize("who", ["dana", "sam"])
def test_the_page_costs_the_same_queries_for_5_or_200_changes(
    memory: Memory, people: dict[str, User], who: str
) -> None:
    client = signed_in(people[who])
    memory = change(memory, people["dana"], 4)
    few, shown = page(client, memory)
    assert "not shown here" not in shown
    memory = change(memory, people["dana"], 195)
    many, shown = page(client, memory)
    assert many == few
    # The write, then the latest changes; those between them are a click away.
    left_out = 200 - 1 - history.CHANGES_SHOWN
    assert f"{left_out} later changes not shown here" in shown
    assert (
        shown.count("Not to be used by the assistant") + shown.count("Allowed to be used again")
        == history.CHANGES_SHOWN
    )
    more = history.CHANGES_SHOWN * 2
    assert f'href="?changes={more}#version-{memory.pk}"' in shown
    _, longer = page(client, memory, f"?changes={more}")
    assert f"{200 - 1 - more} later changes not shown here" in longer
    _, everything = page(client, memory, "?changes=500")
    assert "not shown here" not in everything
    assert everything.count("Not to be used by the assistant") == 100


def test_the_trace_costs_the_same_queries_for_10_or_500_reads(
    memory: Memory, people: dict[str, User], agent: Agent
) -> None:
    sam = signed_in(people["sam"])
    read(agent, memory, 10)
    few, shown = page(sam, memory)
    assert "Given to agents 10 times since it was written" in shown
    read(agent, memory, 490)
    many, shown = page(sam, memory)
    assert many == few
    assert "Given to agents 500 times since it was written" in shown
    assert f"The latest {history.READS_SHOWN} are listed." in shown
    # Newest first: the last recall recorded heads the list.
    blocks = [int(pk) for pk in re.findall(r'href="/recalls/(\d+)/"', shown)]
    assert len(blocks) == history.READS_SHOWN
    assert blocks == sorted(blocks, reverse=True)


def test_past_the_counted_bound_the_reach_says_more_than(
    memory: Memory, people: dict[str, User], agent: Agent, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(history, "READS_COUNTED", 20)
    read(agent, memory, 25)
    _, shown = page(signed_in(people["sam"]), memory)
    assert "Given to agents more than 20 times since it was written" in shown


@pytest.mark.parametrize("asked", ["abc", "0", "-5", "1e3"])
def test_a_number_of_changes_that_is_not_one_is_a_400_with_the_latest(
    memory: Memory, people: dict[str, User], asked: str
) -> None:
    response = signed_in(people["dana"]).get(
        reverse("memory-history", args=[memory.pk]), {"changes": asked}
    )
    assert response.status_code == 400
    shown = response.content.decode()
    assert "is not a number of changes to show" in shown
    assert "Prefers phone calls in the morning." in shown
