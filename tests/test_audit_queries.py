"""What the audit log costs in queries: at most ten, and the same for a few entries as for a
full page, under each of its filters alone and all of them together."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from itertools import count

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from ledger.actions.lifecycle import correct_memory
from ledger.actions.people import change_role
from ledger.actions.sources import SourceInput
from ledger.actions.subjects import set_display_name
from ledger.actors import Actor
from ledger.models import Memory, Subject
from ledger.views import audit as audit_views
from tests.conftest import signed_in

DAY = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
ON_THE_DAY = "start=2026-03-02&end=2026-03-02"
# Each filter alone, then all of them at once; ``subject`` names the first subject written.
FILTERS = [
    "",
    "person=sam",
    "agent=fixture-agent",
    "role=support",
    "subject=acct_q_1",
    "action=created",
    "action=changed",
    "action=deleted",
    "kind=memory",
    "kind=person",
    "kind=subject",
    ON_THE_DAY,
    "sort=when",
    f"person=sam&role=support&subject=acct_q_1&action=changed&kind=memory&{ON_THE_DAY}",
]
BUDGET = 10


@pytest.fixture
def people(make_person: Callable[..., User]) -> dict[str, User]:
    return {
        "ada": make_person("ada", role="admin"),
        "sam": make_person("sam", role="support"),
        "lee": make_person("lee"),
    }


@pytest.fixture
def grow(
    people: dict[str, User], remember: Callable[..., Memory], clock: Callable[[datetime], None]
) -> Callable[[int], None]:
    numbers = count(1)

    def more(times: int) -> None:
        """Each time, a minute apart: a subject, a memory and its source from an agent, the
        support's correction, a change to a person and the subject's new name."""
        for _ in range(times):
            n = next(numbers)
            clock(DAY + timedelta(minutes=n))
            written = remember(
                f"Statement {n}.",
                subject=f"acct_q_{n}",
                key="contact.channel",
                source=SourceInput(kind="user_message", ref=f"msg_{n}", run=f"run_{n}", turn=1),
            )
            correct_memory(
                memory=written,
                actor=Actor.for_user(people["sam"]),
                statement=f"Corrected {n}.",
                reason="wrong",
            )
            change_role(
                people["lee"],
                actor=Actor.for_user(people["ada"]),
                role="support" if n % 2 else "user",
                reason="Moved to another team.",
            )
            subject = Subject.objects.get(ref=f"acct_q_{n}")
            set_display_name(subject=subject, display_name=f"Customer {n}", actor=Actor.system("t"))

    return more


def cost(client: Client, query: str) -> tuple[int, int]:
    """The queries a page of the log takes, and the entries it shows."""
    with CaptureQueriesContext(connection) as captured:
        response = client.get(f"{reverse('audit')}?{query}")
    assert response.status_code == 200, response.content[:300]
    return len(captured), len(response.context["rows"])


def test_the_log_costs_the_same_few_queries_for_a_few_entries_or_a_full_page_whatever_its_filters(
    people: dict[str, User], grow: Callable[[int], None]
) -> None:
    ada = signed_in(people["ada"])
    queries, shown = cost(ada, ON_THE_DAY)
    assert shown == 0
    assert queries <= BUDGET
    grow(2)
    few = {query: cost(ada, query) for query in FILTERS}
    grow(20)
    many = {query: cost(ada, query) for query in FILTERS}
    assert many[""][1] == audit_views.PAGE_SIZE
    assert many[ON_THE_DAY][1] == audit_views.PAGE_SIZE
    for query in FILTERS:
        assert many[query][0] == few[query][0], query
        assert many[query][0] <= BUDGET, query
