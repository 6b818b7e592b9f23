"""A write held because its agent is quarantined says so wherever it waits: staff read which
agent and the admin's reason, the person that the program that wrote it is under review."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from ledger.actions.agents import restrict_agent
from ledger.actors import Actor
from ledger.models import Agent, Memory
from ledger.rules.agents import Restriction
from tests.conftest import SUBJECT, signed_in

pytestmark = pytest.mark.django_db
WHY = "Misreads refunds; every write checked by hand until fixed."
STAFF_WORDS = (
    "Held because an admin quarantined fixture-agent: Misreads refunds; every write checked "
    "by hand until fixed. Only a person&#x27;s confirmation makes it active."
)
PERSON_WORDS = "Held for your confirmation: an admin is reviewing the program that wrote it"


@pytest.fixture
def held(agent: Agent, remember: Callable[..., Memory], make_person: Any) -> Memory:
    make_person("marco", subject=SUBJECT)
    make_person("sam", role="support")
    restrict_agent(
        agent=agent,
        actor=Actor.system("test-admin"),
        restriction=Restriction.QUARANTINED,
        on=True,
        reason=WHY,
    )
    agent.refresh_from_db()  # remember() writes as this very object
    memory = remember("Prefers deliveries after 18:00.")
    assert memory.status == Memory.Status.PENDING
    return memory


def test_support_reads_which_agent_was_quarantined_and_why_wherever_the_write_waits(
    held: Memory,
) -> None:
    support = signed_in("sam")
    assert STAFF_WORDS in support.get(f"/subjects/{SUBJECT}/").content.decode()
    assert STAFF_WORDS in support.get("/queues/pending/").content.decode()
    assert STAFF_WORDS in support.get(f"/memories/{held.pk}/history/").content.decode()


def test_the_person_is_told_it_waits_for_their_confirmation_in_their_words(held: Memory) -> None:
    page = signed_in("marco").get(f"/subjects/{SUBJECT}/").content.decode()
    assert PERSON_WORDS in page
    # On the card they answer, not the admin's note about an agent they never chose.
    assert WHY not in page and "fixture-agent" not in page
    history = signed_in("marco").get(f"/memories/{held.pk}/history/").content.decode()
    assert PERSON_WORDS in history


def test_the_words_go_once_the_quarantine_ends_and_cost_no_query_per_memory(
    held: Memory, agent: Agent, remember: Callable[..., Memory]
) -> None:
    support = signed_in("sam")
    support.get(f"/subjects/{SUBJECT}/")
    with CaptureQueriesContext(connection) as one:
        support.get(f"/subjects/{SUBJECT}/")
    for n in range(4):
        remember(f"Prefers invoices in batch {n}.")
    with CaptureQueriesContext(connection) as five:
        page = support.get(f"/subjects/{SUBJECT}/").content.decode()
    assert page.count("Held because an admin quarantined fixture-agent") == 5
    assert len(five.captured_queries) == len(one.captured_queries)

    restrict_agent(
        agent=agent,
        actor=Actor.system("test-admin"),
        restriction=Restriction.QUARANTINED,
        on=False,
        reason="Fixed in 2.4.1.",
    )
    # Still waiting for a person, but no longer because of a quarantine.
    assert "quarantined fixture-agent" not in support.get(f"/subjects/{SUBJECT}/").content.decode()
