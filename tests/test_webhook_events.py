"""Every move a memory makes is told to webhook receivers: a walk over ``MEMORY_MOVES``
drives each move from each status through its real action and checks that it files one
kind of event, about every memory whose status, words, expiry or use it changed, each as it
now is. Moves with no event of their own file ``memory.changed``, ``change`` the move's name.
So do a guess that agents corroborate, and a conflict's resolution through the moves it
makes; a batch deletion takes a single deletion's every step.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from ledger.actions import lifecycle, reminders
from ledger.actions.agents import create_agent
from ledger.actions.conflicts import dismiss_conflict, resolve_conflict
from ledger.actions.expiry import expire_due
from ledger.actions.gate import MemoryInput, write_memory
from ledger.actions.lifecycle import (
    confirm_memory,
    correct_memory,
    renew_memory,
    restore_memory,
    retract_memory,
    withhold_memory,
)
from ledger.actions.retractions import Selection, retract_batch
from ledger.actions.reverts import revert_correction
from ledger.actions.sources import SourceInput
from ledger.actors import Actor
from ledger.choices import MemoryStatus
from ledger.models import Agent, Conflict, Memory, WebhookDelivery
from ledger.rules.memories import MEMORY_MOVES, MemoryMove
from tests.conftest import SUBJECT, signed_in
from tests.test_webhooks import endpoint

pytestmark = pytest.mark.django_db
ADMIN = Actor.system("test")
# Far enough ahead that the sweep expires every live memory.
LATER = timedelta(days=3650)
FILING = "WITH ev (pk, event_id) AS ("

# The event each move files, and for ``memory.changed`` the ``change`` it names.
EVENT_OF: dict[MemoryMove, tuple[str, str | None]] = {
    MemoryMove.CORRECT: ("memory.corrected", None),
    MemoryMove.RETRACT: ("memory.retracted", None),
    MemoryMove.CONFIRM: ("memory.changed", "confirm"),
    MemoryMove.RENEW: ("memory.changed", "renew"),
    MemoryMove.RESTORE: ("memory.written", None),
    MemoryMove.EXPIRE: ("memory.expired", None),
    MemoryMove.WITHHOLD: ("memory.changed", "withhold"),
    MemoryMove.ALLOW: ("memory.changed", "allow"),
    MemoryMove.REVERT: ("memory.changed", "revert"),
}
WALK = [(status, move) for status, moves in MEMORY_MOVES.items() for move in moves]

# Status, words, whether it is used, basis, when it dies, when it was confirmed.
State = tuple[Any, ...]


def states() -> dict[str, State]:
    """What a receiver may mirror of every memory, by id."""
    rows = Memory.objects.values_list(
        "pk", "status", "statement", "withheld", "basis", "expires_at", "confirmed_at"
    )
    return {str(pk): tuple(state) for pk, *state in rows}


def memory_events() -> list[WebhookDelivery]:
    return list(WebhookDelivery.objects.filter(event__startswith="memory.").order_by("id"))


def told_of_every_change(before: dict[str, State]) -> list[WebhookDelivery]:
    """The memory events filed since ``before``: they name every memory that changed (the
    one a correction replaced by its ``corrects``), each with its status as it now is."""
    after = states()
    changed = {pk for pk, state in after.items() if before.get(pk) != state}
    assert changed, "the action changed no memory"
    events = memory_events()
    told = {e.payload["memory"]["id"] for e in events} | {
        e.payload["corrects"] for e in events if "corrects" in e.payload
    }
    assert changed <= told, f"no event about {sorted(changed - told)}"
    for event in events:
        memory = event.payload["memory"]
        assert memory["status"] == after[memory["id"]][0]
        assert memory["statement"] == after[memory["id"]][1]
    return events


@pytest.fixture(autouse=True)
def loopback_endpoints(settings: Any) -> None:
    # Nothing here is sent: the endpoint's address only has to be accepted.
    settings.MEMORYADMIN_WEBHOOK_ALLOW_PRIVATE = True


@pytest.fixture
def dana(make_person: Callable[..., User]) -> User:
    return make_person("dana", subject=SUBJECT)


def _by_agent(agent: Agent, memory: Memory) -> Memory:
    """An agent's correction from a tool: a guess, pending, that keeps a "don't use it"."""
    return correct_memory(
        memory=memory,
        actor=Actor.for_agent(agent),
        statement="Prefers letters to calls.",
        reason="The CRM says so.",
        source=SourceInput(kind="tool_result", ref="crm_7"),
    )


def prepared(
    status: str, move: MemoryMove, *, remember: Callable[..., Memory], agent: Agent, dana: User
) -> Memory:
    """A memory in ``status`` that ``move`` may be made on: a correction (or a revert) to
    revert, a withheld memory to let be used again."""
    person = Actor.for_user(dana)
    guess = status == MemoryStatus.PENDING and move != MemoryMove.ALLOW
    memory = remember(
        "Prefers phone calls.", basis="inferred" if guess else "stated", kind="episode"
    )
    if move == MemoryMove.ALLOW:
        if status == MemoryStatus.EXPIRED:
            expire_due(now=timezone.now() + LATER)
        memory = withhold_memory(memory=memory, actor=person, withheld=True)
    if move == MemoryMove.REVERT:
        memory = correct_memory(
            memory=memory, actor=ADMIN, statement="Prefers letters.", reason="Said so."
        )
    if move == MemoryMove.REVERT and status == MemoryStatus.PENDING:
        # A revert puts a guess back as a guess, waiting again: a pending one to revert.
        memory = revert_correction(memory=memory, actor=ADMIN, reason="It was a guess.")
    if move == MemoryMove.ALLOW and status == MemoryStatus.PENDING:
        memory = _by_agent(agent, memory)
    if status == MemoryStatus.EXPIRED and move != MemoryMove.ALLOW:
        expire_due(now=timezone.now() + LATER)
    if status == MemoryStatus.RETRACTED:
        retract_memory(memory=memory, actor=person, reason="Not true.")
    memory.refresh_from_db()
    assert memory.status == status
    return memory


def make(move: MemoryMove, memory: Memory, dana: User) -> None:
    """``move``, through the action a person, an admin or the sweep takes it with."""
    person = Actor.for_user(dana)
    if move == MemoryMove.CORRECT:
        correct_memory(memory=memory, actor=ADMIN, statement="Prefers post.", reason="Said so.")
    elif move == MemoryMove.RETRACT:
        retract_memory(memory=memory, actor=ADMIN, reason="Wrong person.")
    elif move == MemoryMove.CONFIRM:
        confirm_memory(memory=memory, actor=person)
    elif move == MemoryMove.RENEW:
        renew_memory(
            memory=memory, actor=person, expires_at=timezone.now() + timedelta(days=30), reason=""
        )
    elif move == MemoryMove.RESTORE:
        restore_memory(memory=memory, actor=person, within_seconds=30)
    elif move == MemoryMove.EXPIRE:
        assert expire_due(now=timezone.now() + LATER).memories == 1
    elif move in (MemoryMove.WITHHOLD, MemoryMove.ALLOW):
        withhold_memory(memory=memory, actor=person, withheld=move == MemoryMove.WITHHOLD)
    elif move == MemoryMove.REVERT:
        revert_correction(memory=memory, actor=ADMIN, reason="The correction was wrong.")
    else:
        raise AssertionError(f"The walk does not know how to make the move {move!r}.")


@pytest.mark.parametrize(("status", "move"), WALK, ids=[f"{m}-from-{s}" for s, m in WALK])
def test_every_move_files_its_one_event_about_every_memory_it_changes(
    status: str,
    move: MemoryMove,
    remember: Callable[..., Memory],
    agent: Agent,
    dana: User,
) -> None:
    memory = prepared(status, move, remember=remember, agent=agent, dana=dana)
    endpoint()
    before = states()

    make(move, memory, dana)

    events = told_of_every_change(before)
    event, change = EVENT_OF[move]
    assert {e.event for e in events} == {event}
    if change is not None:
        assert {e.payload["change"] for e in events} == {change}
    # One event id per memory told of: a receiver de-duplicating on it loses none.
    assert len({e.event_id for e in events}) == len(events)


def test_every_move_in_the_table_has_its_event() -> None:
    moves = {move for moves in MEMORY_MOVES.values() for move in moves}
    assert moves == set(EVENT_OF)


def test_a_revert_tells_of_the_copy_and_of_the_correction_it_supersedes(
    remember: Callable[..., Memory],
) -> None:
    original = remember("Prefers phone calls.")
    fixed = correct_memory(memory=original, actor=ADMIN, statement="Prefers post.", reason="x")
    endpoint(events=["memory.changed"])
    copy = revert_correction(memory=fixed, actor=ADMIN, reason="The correction was wrong.")
    shown = {e.payload["memory"]["id"]: e.payload["memory"] for e in memory_events()}
    assert shown[str(copy.pk)]["status"] == "active"
    assert shown[str(copy.pk)]["statement"] == "Prefers phone calls."
    assert shown[str(fixed.pk)]["status"] == "superseded"
    assert len(shown) == 2


# --- a guess corroborated by a second agent -----------------------------------------------


def _guess(agent: Agent) -> Memory:
    result = write_memory(
        agent=agent,
        data=MemoryInput(
            subject=SUBJECT,
            kind="preference",
            basis="inferred",
            statement="Probably prefers calls in the morning.",
            source=SourceInput(kind="tool_result", ref=f"crm_{agent.name}"),
        ),
    )
    assert result.memory is not None
    return result.memory


def test_a_guess_two_agents_wrote_becomes_active_and_a_mirror_is_told(agent: Agent) -> None:
    other = create_agent(name="second-agent", scopes=["write"], actor=ADMIN)[0]
    guess = _guess(agent)
    assert guess.status == "pending"
    endpoint()
    before = states()

    assert _guess(other).pk == guess.pk

    (event,) = told_of_every_change(before)
    assert (event.event, event.payload["change"]) == ("memory.changed", "confirm")
    # Agents corroborated it, no person confirmed it: it stays a guess, active.
    assert (event.payload["memory"]["status"], event.payload["memory"]["basis"]) == (
        "active",
        "inferred",
    )


def test_a_corroborated_guess_costs_no_statement_when_no_endpoint_is_active(
    agent: Agent,
) -> None:
    other = create_agent(name="second-agent", scopes=["write"], actor=ADMIN)[0]
    guess = _guess(agent)
    with CaptureQueriesContext(connection) as queries:
        _guess(other)
    guess.refresh_from_db()
    assert guess.status == "active"
    assert not [q for q in queries if q["sql"].startswith(FILING)]


def test_a_person_s_correction_into_a_guess_files_only_the_correction(
    remember: Callable[..., Memory], dana: User
) -> None:
    """The guess it merges into is confirmed on the way: the ``memory.corrected`` event
    carries it as it now is, active, so no second event tells the same."""
    guess = remember("Probably prefers post.", basis="inferred")
    other = remember("Prefers phone calls.")
    endpoint()
    before = states()
    correct_memory(
        memory=other, actor=Actor.for_user(dana), statement="Probably prefers post.", reason=""
    )
    (event,) = told_of_every_change(before)
    assert event.event == "memory.corrected"
    assert event.payload["memory"]["id"] == str(guess.pk)
    assert event.payload["memory"]["status"] == "active"


# --- conflicts: resolved through the moves, or dismissed with no memory changed -----------


def _slot_conflict(remember: Callable[..., Memory]) -> tuple[Conflict, Memory, Memory]:
    email = remember("Wants invoices by email.", key="contact.channel")
    post = remember("Wants invoices by post.", key="contact.channel")
    return Conflict.objects.open().get(), email, post


@pytest.mark.parametrize("rewrite", [False, True], ids=["keep-one", "write-the-right-one"])
def test_resolving_a_conflict_tells_of_every_memory_it_changes(
    remember: Callable[..., Memory], dana: User, rewrite: bool
) -> None:
    conflict, email, post = _slot_conflict(remember)
    endpoint()
    before = states()
    resolve_conflict(
        conflict=conflict,
        actor=Actor.for_user(dana),
        keep=email,
        statement="Wants invoices by email, as PDF." if rewrite else None,
    )
    events = told_of_every_change(before)
    retracted = [e for e in events if e.event == "memory.retracted"]
    assert [e.payload["memory"]["id"] for e in retracted] == [str(post.pk)]
    corrected = [e for e in events if e.event == "memory.corrected"]
    assert [e.payload["corrects"] for e in corrected] == ([str(email.pk)] if rewrite else [])


def test_dismissing_a_possible_conflict_changes_no_memory_and_tells_of_none(
    remember: Callable[..., Memory], dana: User
) -> None:
    remember("Never telephone about billing")
    remember("Happy to be phoned about billing at any time")
    conflict = Conflict.objects.open().get(possible=True)
    endpoint()
    before = states()
    dismiss_conflict(conflict=conflict, actor=Actor.for_user(dana))
    assert states() == before
    assert memory_events() == []


# --- a batch deletion is the single deletion, many times ----------------------------------


def test_a_batch_deletion_takes_every_step_of_a_single_deletion(
    remember: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each of a single deletion's steps reaches the batch: one stood in for by a spy on
    ``retract_memory``'s reminder step, which a copy of its steps would not call."""
    poisoned = SourceInput(kind="user_message", ref="msg_0588")
    memories = [remember(s, source=poisoned) for s in ("Call on Sundays.", "Call at 6 pm.")]
    stepped: list[str] = []

    def clear_reminders(*, memory: Memory, **kwargs: Any) -> Any:
        stepped.append(str(memory.pk))
        return reminders.clear_reminders(memory=memory, **kwargs)

    monkeypatch.setattr(lifecycle, "clear_reminders", clear_reminders)
    endpoint(events=["memory.retracted"])
    with CaptureQueriesContext(connection) as queries:
        retract_batch(selection=Selection(source_ref="msg_0588"), actor=ADMIN, reason="Misread.")
    assert sorted(stepped) == sorted(str(m.pk) for m in memories)
    # Still one statement files the batch's events, one event a memory.
    assert len([q for q in queries if q["sql"].startswith(FILING)]) == 1
    assert len(memory_events()) == 2


# --- the admin page ------------------------------------------------------------------------


def test_the_admin_page_offers_the_new_event(make_person: Callable[..., User]) -> None:
    page = signed_in(make_person("ada", "admin")).get(reverse("webhooks")).content.decode()
    assert 'value="memory.changed"' in page
    assert "a memory is confirmed (by a person, or by agents corroborating a guess)" in page
