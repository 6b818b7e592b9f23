"""Support traces a complaint from a memory to the exact write and to every run that read it,
and sees the exact block each recall served. The person keeps their plain history."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from ledger.actions.agents import restrict_agent
from ledger.actions.conflicts import resolve_conflict
from ledger.actions.ledger_entries import record_ledger_entry
from ledger.actions.lifecycle import correct_memory
from ledger.actions.policy import change_policy
from ledger.actions.recalls import record_recall
from ledger.actions.sources import SourceInput
from ledger.actors import Actor
from ledger.models import Agent, Conflict, Memory, Recall
from ledger.reads.recall import recall
from ledger.rules.agents import Restriction
from tests.conftest import SUBJECT, signed_in

pytestmark = pytest.mark.django_db
SCRIPT = "<script>alert(1)</script>"
# In a statement, a whole tag is held for review (``ledger.rules.poison``); an unclosed one passes
# the gate and must still be escaped.
UNCLOSED = "<b onclick=alert(1)"


def message(ref: str = "msg_0588", *, run: str = "run_150", excerpt: str = "") -> SourceInput:
    return SourceInput(kind="user_message", ref=ref, run=run, turn=3, excerpt=excerpt)


@pytest.fixture
def people(make_person: Callable[..., User]) -> dict[str, User]:
    return {
        "dana": make_person("dana", subject=SUBJECT),
        "sam": make_person("sam", role="support"),
        "erin": make_person("erin", subject="acct_someone_else"),
    }


@pytest.fixture
def sam(people: dict[str, User]) -> Client:
    return signed_in(people["sam"])


@pytest.fixture
def phoned(remember: Callable[..., Memory], people: dict[str, User]) -> Memory:
    change_policy(actor=Actor.system("test"), reason="shorter lives", ttl_preference_days=300)
    return remember(
        f"Happy to be phoned about deliveries. {UNCLOSED}",
        key="contact.channel",
        source=message(excerpt=f"you can ring me about the parcels {SCRIPT}"),
    )


def read(agent: Agent, memory: Memory, *, run: str = "run_151", goal: str = "call") -> Recall:
    return record_recall(
        agent=agent, result=recall(subject=memory.subject, goal=goal, k=5), run_ref=run, turn=2
    )


def trace(client: Client, memory: Memory) -> str:
    response = client.get(reverse("memory-history", args=[memory.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_the_trace_shows_the_write_its_excerpt_and_the_gates_reasons(
    phoned: Memory, sam: Client, remember: Callable[..., Memory]
) -> None:
    # A second agent write of the same claim corroborates it: a second source, a second decision.
    remember(
        f"Happy to be phoned about deliveries. {UNCLOSED}",
        key="contact.channel",
        source=message("msg_0601", run="run_152", excerpt="yes phone is fine"),
    )
    html = trace(sam, phoned)
    assert "Trace of a memory" in html
    assert "By the assistant <strong>fixture-agent</strong>" in html
    assert "msg_0588" in html and "msg_0601" in html
    assert "turn 3" in html
    assert "you can ring me about the parcels &lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "yes phone is fine" in html
    assert SCRIPT not in html and UNCLOSED not in html
    decisions = list(phoned.write_decisions.order_by("decided_at", "id"))
    assert [d.outcome for d in decisions] == ["accepted", "merged"]
    # Each decision in words, said once: the outcome, then what the gate's reason adds.
    assert '<span class="badge accepted">Accepted</span>: Stated preference.' in html
    assert (
        '<span class="badge merged">Added as evidence</span>: '
        "the same statement came again, from another source.</li>"
    ) in html
    decided = html.split("What the write gate decided")[1].split("Its reach")[0]
    for raw in (">accepted</span>", ">merged</span>", "Accepted: Accepted", "<code>"):
        assert raw not in decided
    # The version the change made, the number the memory records (1 is the shipped policy),
    # said beside the write and not again beside each decision made under it.
    assert "Accepted under policy version 2." in html
    assert "(under policy version" not in html


def test_a_decision_under_another_policy_than_the_write_names_it(
    remember: Callable[..., Memory], sam: Client, people: dict[str, User]
) -> None:
    memory = remember("Likes short answers.")
    html = trace(sam, memory)
    assert "Accepted under policy version 1." in html
    assert "(under policy version" not in html and "default policy" not in html
    change_policy(actor=Actor.system("test"), reason="shorter lives", ttl_preference_days=300)
    remember("Likes short answers.", source=message("msg_0700"))
    html = trace(sam, memory)
    assert "Accepted under policy version 1." in html
    assert html.count("(under policy version 2, of ") == 1


@pytest.mark.parametrize(
    ("restriction", "words"),
    [
        (Restriction.QUARANTINED, "the agent is quarantined by an admin"),
        (Restriction.STATED_UNTRUSTED, "the agent is not trusted for what people said"),
    ],
)
def test_a_statement_held_by_a_restriction_reads_as_held_with_the_admins_reason(
    remember: Callable[..., Memory], sam: Client, agent: Agent, restriction: Restriction, words: str
) -> None:
    why = "Wrote guesses as statements during the CRM import."
    restrict_agent(
        agent=agent, actor=Actor.system("test"), restriction=restriction, on=True, reason=why
    )
    agent.refresh_from_db()
    held = remember("Pays by direct debit.", source=message())
    remember("Pays by direct debit.", source=message("msg_0602"))
    assert held.write_decisions.filter(code=restriction.code).count() == 2
    html = trace(sam, held)
    assert "Held for confirmation under policy version 1." in html
    assert "Accepted under" not in html
    decided = html.split("What the write gate decided")[1].split("Its reach")[0]
    assert f'<span class="badge pending">Held for confirmation</span>: {words}: {why}' in decided
    assert f"It stays held for confirmation: {words}: {why}" in decided
    assert restriction.code not in html and "<code>" not in decided


def test_each_recall_says_where_the_memory_stood_in_words(
    phoned: Memory, sam: Client, agent: Agent
) -> None:
    read(agent, phoned, goal="")
    read(agent, phoned, run="run_152", goal="phoned deliveries")
    html = trace(sam, phoned)
    assert "Place in the block" in html and "Position, rank" not in html
    # No goal: nothing to be relevant to, so no 0.000 but why it was there; matched: how
    # well, in words.
    assert "<td>1 (among the newest: no goal)</td>" in html and "0.000" not in html
    assert re.search(r"<td>1 \(relevance to the goal: 0\.\d{3}\)</td>", html)


def test_every_recall_links_to_the_exact_block_it_served(
    phoned: Memory, sam: Client, agent: Agent
) -> None:
    served = [read(agent, phoned, run=f"run_15{n}", goal=f"{SCRIPT} n{n}") for n in (1, 2, 3)]
    html = trace(sam, phoned)
    assert "Given to agents 3 times since it was written, 3 since it last changed" in html
    for recall_row in served:
        url = reverse("recall", args=[recall_row.pk])
        assert f'href="{url}"' in html
        page = sam.get(url)
        assert page.status_code == 200
        body = page.content.decode()
        assert "<pre" in body
        # The block verbatim, escaped: the statement's markup is text, never markup.
        escaped = (
            recall_row.block.replace("&", "&amp;")
            .replace("<", "&lt;")
            .replace(">", "&gt;")
            .replace('"', "&quot;")
            .replace("'", "&#x27;")
        )
        assert escaped in body
        assert SCRIPT not in body
        assert recall_row.run is not None and recall_row.run.ref in body
        assert f'href="{reverse("memory-history", args=[phoned.pk])}"' in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt; n1" in html


def test_a_correction_is_linked_both_ways_with_what_changed(
    phoned: Memory, sam: Client, people: dict[str, User]
) -> None:
    new = correct_memory(
        memory=phoned,
        actor=Actor.for_user(people["sam"]),
        statement="Prefers e-mail about deliveries.",
        reason="Ticket 88",
    )
    for shown in (phoned, new):
        html = trace(sam, shown)
        old_link = f'href="{reverse("memory-history", args=[phoned.pk])}#version-{phoned.pk}"'
        new_link = f'href="{reverse("memory-history", args=[new.pk])}#version-{new.pk}"'
        assert f"This version replaced <a {old_link}>an earlier one</a>" in html
        assert f"Replaced by <a {new_link}>a later version</a>" in html
        assert (
            "<del>Happy to be phoned about deliveries. &lt;b onclick=alert(1)</del>"
            " → <ins>Prefers e-mail about deliveries.</ins>"
        ) in html
        assert "Status: <del>In use</del> → <ins>Replaced by a correction</ins>" in html
        assert "<strong>Replaced by a correction</strong> by you" in html
        assert "Ticket 88" in html
    person = trace(signed_in(people["dana"]), new)
    assert "by support (sam)" in person and "Ticket 88" in person
    assert "<ins>Prefers e-mail about deliveries.</ins>" in person


def test_a_conflict_resolution_is_shown_on_the_kept_one_and_the_other(
    phoned: Memory, sam: Client, remember: Callable[..., Memory], people: dict[str, User]
) -> None:
    email = remember("Prefers email about deliveries.", key="contact.channel")
    conflict = Conflict.objects.open().get()
    open_trace = trace(sam, phoned)
    assert "Open conflicts" in open_trace
    assert "Keep this one (support)" in open_trace
    resolve_conflict(
        conflict=conflict,
        actor=Actor.for_user(people["dana"]),
        keep=email,
        statement=None,
    )
    kept = trace(sam, email)
    assert "Was in a conflict with" in kept and "this one was kept." in kept
    assert f'href="{reverse("memory-history", args=[phoned.pk])}"' in kept
    other = trace(sam, phoned)
    assert "Was in a conflict with" in other
    assert "“Prefers email about deliveries.”</a> was kept." in other
    # The person sees the resolution on their own history too.
    assert "this one was kept." in trace(signed_in(people["dana"]), email)


def test_the_neighbourhood_lists_the_same_source_and_run(
    phoned: Memory, sam: Client, remember: Callable[..., Memory], agent: Agent
) -> None:
    sibling = remember("Best reached by phone after 6 pm.", key="contact.time", source=message())
    record_ledger_entry(
        subject=phoned.subject,
        agent=agent,
        run_ref="run_150",
        fact="Promised a call back on Friday.",
        kind="commitment",
        source=message("msg_0590"),
    )
    html = trace(sam, phoned)
    neighbourhood = html.split("Its neighbourhood")[1]
    same_source = neighbourhood.split("Other memories from the same run")[0]
    assert "Best reached by phone after 6 pm." in same_source
    assert f'href="{reverse("memory-history", args=[sibling.pk])}"' in same_source
    same_run = neighbourhood.split("Other memories from the same run")[1]
    assert "Best reached by phone after 6 pm." in same_run.split("Ledger entries")[0]
    assert "Promised a call back on Friday." in same_run.split("Ledger entries")[1]


def test_the_person_sees_their_history_without_supports_parts(
    phoned: Memory, people: dict[str, User], agent: Agent
) -> None:
    read(agent, phoned)
    html = trace(signed_in(people["dana"]), phoned)
    assert "History of a memory" in html
    for support_part in ("Trace of a memory", "msg_0588", "write gate", "neighbourhood"):
        assert support_part not in html
    assert "/recalls/" not in html
    assert "(support)" not in html


def test_an_end_user_gets_404_for_a_recall_and_for_someone_elses_history(
    phoned: Memory, people: dict[str, User], agent: Agent, client: Client
) -> None:
    served = read(agent, phoned)
    url = reverse("recall", args=[served.pk])
    for who in ("dana", "erin"):
        assert signed_in(people[who]).get(url).status_code == 404
    erin = signed_in(people["erin"])
    assert erin.get(reverse("memory-history", args=[phoned.pk])).status_code == 404
    anonymous = client.get(url)
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    assert (
        signed_in(people["sam"]).get(reverse("recall", args=[served.pk + 1000])).status_code == 404
    )


def grow(
    current: Memory,
    remember: Callable[..., Memory],
    agent: Agent,
    sam: User,
    *,
    corrections: int,
    reads: int,
) -> Memory:
    """More versions, more neighbours from the same message and run, and more recalls."""
    start = Memory.objects.count()
    for n in range(start, start + corrections):
        current = correct_memory(
            memory=current, actor=Actor.for_user(sam), statement=f"Version {n}.", reason=f"fix {n}"
        )
        remember(f"Neighbour {n}.", key=f"other.{n}", source=message())
    for _ in range(reads):
        read(agent, current)
    return current


def queries(client: Client, memory: Memory) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(reverse("memory-history", args=[memory.pk])).status_code == 200
    return len(captured)


@pytest.mark.parametrize("who", ["sam", "dana"])
def test_the_trace_runs_a_fixed_number_of_queries(
    remember: Callable[..., Memory], agent: Agent, people: dict[str, User], who: str
) -> None:
    client = signed_in(people[who])
    sam = people["sam"]
    memory = remember("Happy to be phoned.", key="contact.channel", source=message())
    small = grow(memory, remember, agent, sam, corrections=2, reads=2)
    first = queries(client, small)
    large = grow(small, remember, agent, sam, corrections=6, reads=18)
    chain = Memory.objects.filter(subject=memory.subject, key="contact.channel")
    assert chain.count() == 9
    assert queries(client, large) == first


def test_the_recall_page_runs_a_fixed_number_of_queries(
    phoned: Memory, sam: Client, agent: Agent, remember: Callable[..., Memory]
) -> None:
    few = read(agent, phoned)
    for n in range(12):
        remember(f"Fact {n}.", key=f"fact.{n}")
    many = read(agent, phoned, goal="")
    assert many.items.count() > few.items.count()
    counts = []
    for row in (few, many):
        with CaptureQueriesContext(connection) as captured:
            assert sam.get(reverse("recall", args=[row.pk])).status_code == 200
        counts.append(len(captured))
    assert counts[0] == counts[1]


def test_recall_ids_that_are_not_numbers_are_not_found(sam: Client) -> None:
    assert sam.get("/recalls/abc/").status_code == 404
    assert sam.get("/memories/not-a-uuid/history/").status_code == 404
