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

from ledger.actions.lifecycle import correct_memory, withhold_memory
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


def test_the_trace_stops_reading_a_memorys_reads_at_its_bounds(
    memory: Memory, people: dict[str, User], agent: Agent
) -> None:
    # Every statement over the recall log stops at a bound (the reads listed, the reach
    # counted): a memory read a million times costs what one read a thousand times does.
    read(agent, memory, 3)
    with CaptureQueriesContext(connection) as captured:
        response = signed_in(people["sam"]).get(reverse("memory-history", args=[memory.pk]))
    assert "Given to agents 3 times since it was written" in response.content.decode()
    over_reads = [q["sql"] for q in captured if "ledger_recallitem" in q["sql"]]
    assert over_reads
    assert all(" LIMIT " in sql for sql in over_reads), over_reads


def test_a_long_chain_of_corrections_comes_a_page_of_versions_at_a_time(
    memory: Memory, people: dict[str, User]
) -> None:
    sam = signed_in(people["sam"])
    original = memory

    def correct(memory: Memory, n: int) -> Memory:
        return correct_memory(
            memory=memory,
            actor=Actor.for_user(people["sam"]),
            statement=f"Prefers calls, version {n}.",
            reason=f"correction {n}",
        )

    memory = correct(memory, 0)
    few, short = page(sam, memory)
    assert "Older versions" not in short
    for n in range(1, history.VERSIONS_SHOWN + 4):
        memory = correct(memory, n)
    many, newest = page(sam, memory)
    assert many == few
    shown = re.findall(r'id="version-title-([0-9a-f-]+)"', newest)
    assert len(shown) == history.VERSIONS_SHOWN
    assert shown[0] == str(memory.pk)
    assert "Latest version" in newest
    assert "Prefers calls, version 3." in newest
    # Newest first: the rest are one link away, keyed by the first version they show.
    older = re.search(r'href="\?from=([0-9a-f-]+)">Older versions', newest)
    assert older is not None
    queries, rest = page(sam, memory, f"?from={older.group(1)}")
    assert queries == many
    assert re.findall(r'id="version-title-([0-9a-f-]+)"', rest)[-1] == str(original.pk)
    assert len(re.findall(r'id="version-title-', rest)) == 5
    assert "Latest version" not in rest
    assert "Prefers phone calls in the morning." in rest
    assert f'href="?from={memory.pk}">Newer versions' in rest
    # A link to an early version opens the page that holds it.
    _, linked = page(sam, original)
    assert f'id="version-{original.pk}"' in linked
    assert "Older versions" not in linked


def test_a_page_of_versions_from_no_version_of_the_chain_is_refused_with_the_reason(
    memory: Memory, people: dict[str, User]
) -> None:
    sam = signed_in(people["sam"])
    url = reverse("memory-history", args=[memory.pk])
    response = sam.get(f"{url}?from=garbage<b>")
    assert response.status_code == 400
    text = response.content.decode()
    assert "“garbage&lt;b&gt;” is no version of this memory." in text
    # The page that holds the memory is still shown below the reason.
    assert f'id="version-{memory.pk}"' in text
    assert sam.get(f"{url}?from={memory.pk}").status_code == 200
