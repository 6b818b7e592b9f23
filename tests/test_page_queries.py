"""Every page that lists things runs a fixed number of queries, however many rows it lists.

Each test loads a page, adds many more of the rows it lists, loads it again, and asserts
the same number of queries: a page that queried once per row would grow.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from datetime import timedelta
from itertools import count

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from ledger.actions.journal import journal_intent, run_for_agent
from ledger.actions.ledger_entries import record_ledger_entry
from ledger.actions.lifecycle import correct_memory, withhold_memory
from ledger.actions.notes import write_note
from ledger.actions.recalls import record_recall
from ledger.actions.reminders import create_due_reminders
from ledger.actions.snapshots import SnapshotInput, store_snapshot
from ledger.actions.sources import SourceInput
from ledger.actors import Actor
from ledger.models import Agent, Memory
from ledger.reads.recall import recall
from tests.conftest import SUBJECT, signed_in
from tests.test_snapshot_checks import DOCUMENT

pytestmark = pytest.mark.django_db
RUN = "run_queries"
MORE = 12


def queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(captured)


@pytest.fixture
def people(make_person: Callable[..., User]) -> dict[str, User]:
    return {
        "dana": make_person("dana", subject=SUBJECT),
        "sam": make_person("sam", role="support"),
    }


@pytest.fixture
def numbers() -> Iterator[int]:
    return count(1)


@pytest.fixture
def grow_memories(
    remember: Callable[..., Memory],
    people: dict[str, User],
    numbers: Iterator[int],
    agent: Agent,
) -> Callable[[int], None]:
    """Add corrected memories (by the person and by support), guesses, conflicts, memories
    the person withheld, and reads of them in runs and outside any run."""

    def grow(times: int) -> None:
        for _ in range(times):
            n = next(numbers)
            for who in ("dana", "sam"):
                written = remember(f"Statement {who} {n} as first written.", key=f"k.{who}.{n}")
                correct_memory(
                    memory=written,
                    actor=Actor.for_user(people[who]),
                    statement=f"Statement {who} {n} as corrected.",
                    reason="wrong",
                )
            remember(f"Guess {n}.", basis="inferred")
            remember(f"Lives in town {n}.", key=f"home.{n}")
            remember(f"Lives in city {n}.", key=f"home.{n}")
            withhold_memory(
                memory=remember(f"Kept but not used {n}."),
                actor=Actor.for_user(people["dana"]),
                withheld=True,
            )
            subject = written.subject
            for run in (f"run_{n}", f"run_{n}", None):
                result = recall(subject=subject, goal="statement lives town", k=5)
                record_recall(agent=agent, result=result, run_ref=run)

    return grow


@pytest.mark.parametrize("who", ["dana", "sam"])
def test_the_subject_page(
    grow_memories: Callable[[int], None], people: dict[str, User], who: str
) -> None:
    client = signed_in(people[who])
    url = f"/subjects/{SUBJECT}/"
    grow_memories(1)
    first = queries(client, url)
    grow_memories(MORE)
    assert queries(client, url) == first


@pytest.mark.parametrize("who", ["dana", "sam"])
def test_the_list_of_conversations_that_used_a_memory(
    remember: Callable[..., Memory], people: dict[str, User], agent: Agent, who: str
) -> None:
    client = signed_in(people[who])
    memory = remember("Prefers phone calls.")
    url = f"/memories/{memory.pk}/uses/"

    def read(times: int) -> None:
        for n in range(times):
            for run in (f"run_uses_{n}_{timezone.now().timestamp()}", None):
                result = recall(subject=memory.subject, goal="calls", k=5)
                record_recall(agent=agent, result=result, run_ref=run)

    read(1)
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url, HTTP_HX_REQUEST="true").status_code == 200
    first = len(captured)
    read(MORE)
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url, HTTP_HX_REQUEST="true").status_code == 200
    assert len(captured) == first


@pytest.mark.parametrize("who", ["dana", "sam"])
def test_the_export(
    grow_memories: Callable[[int], None], people: dict[str, User], who: str
) -> None:
    client = signed_in(people[who])
    url = f"/subjects/{SUBJECT}/export/"
    grow_memories(1)
    first = queries(client, url)
    grow_memories(MORE)
    assert queries(client, url) == first


def test_the_staff_home_page(remember: Callable[..., Memory], people: dict[str, User]) -> None:
    client = signed_in(people["sam"])
    remember("Prefers email.")
    first = queries(client, "/")
    for n in range(MORE):
        remember(f"Fact {n}.", subject=f"acct_many_{n}")
    assert queries(client, "/") == first


@pytest.mark.parametrize("who", ["dana", "sam"])
def test_the_history_of_a_memory(
    remember: Callable[..., Memory], people: dict[str, User], agent: Agent, who: str
) -> None:
    client = signed_in(people[who])
    memory = remember("Prefers phone calls.")
    subject = memory.subject

    def read(times: int) -> None:
        for _ in range(times):
            record_recall(agent=agent, result=recall(subject=subject, goal="calls", k=5))

    def correct(times: int) -> Memory:
        current = Memory.objects.servable().get(subject=subject)
        for n in range(times):
            current = correct_memory(
                memory=current,
                actor=Actor.for_user(people["dana" if n % 2 else "sam"]),
                statement=f"Prefers e-mail, version {n}.",
                reason=f"correction {n}",
            )
            read(2)
        return current

    read(1)
    latest = correct(1)
    first = queries(client, f"/memories/{latest.pk}/history/")
    latest = correct(MORE)
    assert queries(client, f"/memories/{latest.pk}/history/") == first


@pytest.mark.parametrize("who", ["dana", "sam"])
def test_the_reminders_page(
    remember: Callable[..., Memory],
    people: dict[str, User],
    clock: Callable[..., None],
    who: str,
) -> None:
    start = timezone.now()

    def due(times: int, moment: int) -> None:
        clock(start)
        for n in range(times):
            remember(f"Reviewed fact {moment}-{n}.")
        clock(start + timedelta(days=400 + moment))
        create_due_reminders()

    # Signed in after each move of the clock: a session does not last 400 days.
    due(1, 0)
    first = queries(signed_in(people[who]), "/reminders/")
    due(MORE, 1)
    assert queries(signed_in(people[who]), "/reminders/") == first


@pytest.mark.parametrize("who", ["dana", "sam"])
def test_the_ledger_page(
    remember: Callable[..., Memory], people: dict[str, User], agent: Agent, who: str
) -> None:
    client = signed_in(people[who])
    subject = remember("Prefers email.").subject
    url = f"/subjects/{SUBJECT}/ledger/"

    def record(times: int) -> None:
        for n in range(times):
            for kind in ("commitment", "proposal", "interpretation"):
                record_ledger_entry(
                    subject=subject,
                    agent=agent,
                    fact=f"{kind} {n} {timezone.now().timestamp()}",
                    kind=kind,
                    run_ref=RUN,
                    source=SourceInput(kind="user_message", ref=f"msg_{n}", run=RUN, turn=n),
                )

    record(1)
    first = queries(client, url)
    record(MORE)
    assert queries(client, url) == first


def test_the_journal_and_notes_of_a_run(agent: Agent, people: dict[str, User]) -> None:
    client = signed_in(people["sam"])
    run = run_for_agent(ref=RUN, agent=agent)
    assert run is not None
    made = count()

    def act(times: int) -> None:
        for _ in range(times):
            n = next(made)
            journal_intent(
                agent=agent,
                run=run,
                idempotency_key=f"key-{n}",
                action=f"send invoice {n}",
                intent={"invoice": n},
            )
            write_note(run=run, agent=agent, key=f"note-{n}", value="first")
            write_note(run=run, agent=agent, key=f"note-{n}", value="second")

    act(1)
    journal = queries(client, f"/runs/{RUN}/journal/")
    notes = queries(client, f"/runs/{RUN}/notes/")
    act(MORE)
    assert queries(client, f"/runs/{RUN}/journal/") == journal
    assert queries(client, f"/runs/{RUN}/notes/") == notes


def test_the_compaction_timeline(agent: Agent, people: dict[str, User]) -> None:
    client = signed_in(people["sam"])

    def compact(times: int) -> None:
        for _ in range(times):
            data = SnapshotInput(
                document=copy.deepcopy(DOCUMENT), tokens_before=48_000, tokens_after=10_400
            )
            store_snapshot(run_ref=RUN, agent=agent, data=data)

    compact(2)
    first = queries(client, f"/runs/{RUN}/snapshots/")
    compact(MORE)
    assert queries(client, f"/runs/{RUN}/snapshots/") == first
