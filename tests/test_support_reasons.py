"""Support (or an admin) changing someone else's memory must say why, and the actions
refuse them otherwise, whoever calls: a page, the API, a command or a test. The person
need not. Each action is called here directly, never through a view."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from ledger.actions.conflicts import dismiss_conflict, keep_commitment, resolve_conflict
from ledger.actions.erasure import erase_subject
from ledger.actions.erasure_requests import request_erasure
from ledger.actions.expiry import expire_due
from ledger.actions.ledger_entries import record_ledger_entry
from ledger.actions.lifecycle import (
    confirm_memory,
    correct_memory,
    renew_memory,
    retract_memory,
)
from ledger.actions.sources import SourceInput
from ledger.actors import Actor
from ledger.models import Agent, Conflict, Erasure, ErasureRequest, LedgerEntry, Memory, Subject
from ledger.rules.refusals import Refusal
from tests.conftest import SUBJECT

pytestmark = pytest.mark.django_db

# The dashboard's words, which the actions now say themselves.
SAY_WHY = "Support must say why they change someone's memory."
SAY_WHO_ASKED = "Say who asked for the erasure, and how. Nothing was erased."
NEVER_PHONE = "Never telephone about billing"
HAPPY_PHONED = "Happy to be phoned about billing at any time"

# Given who acts and the reason they give, make the change.
Act = Callable[[Actor, str], object]


@dataclass(frozen=True)
class Scene:
    remember: Callable[..., Memory]
    agent: Agent
    clock: Callable[..., None]


@dataclass(frozen=True)
class Case:
    # Writes what the action needs, and returns the action.
    setup: Callable[[Scene], Act]
    code: str = "reason_required"
    detail: str = SAY_WHY


def _correct(scene: Scene) -> Act:
    memory = scene.remember("Happy to be phoned about deliveries.")
    return lambda actor, reason: correct_memory(
        memory=memory, actor=actor, statement="Prefers letters about deliveries.", reason=reason
    )


def _retract(scene: Scene) -> Act:
    memory = scene.remember("Happy to be phoned about deliveries.")
    return lambda actor, reason: retract_memory(memory=memory, actor=actor, reason=reason)


def _guess(scene: Scene) -> Memory:
    memory = scene.remember(
        "Likes deliveries in the morning.", basis="inferred", key="delivery.time"
    )
    assert memory.status == Memory.Status.PENDING
    return memory


def _confirm_guess(scene: Scene) -> Act:
    guess = _guess(scene)
    return lambda actor, reason: confirm_memory(memory=guess, actor=actor, reason=reason)


def _reject_guess(scene: Scene) -> Act:
    # "No" to the question about a guess deletes it.
    guess = _guess(scene)
    return lambda actor, reason: retract_memory(memory=guess, actor=actor, reason=reason)


def _renew(scene: Scene) -> Act:
    start = timezone.now()
    scene.clock(start - timedelta(days=400))
    memory = scene.remember("Orders flour on Mondays.")
    scene.clock(start)
    expire_due()
    memory.refresh_from_db()
    assert memory.status == Memory.Status.EXPIRED
    return lambda actor, reason: renew_memory(
        memory=memory,
        actor=actor,
        expires_at=start + timedelta(days=365),
        reason=reason,
        kept_for="kept for 1 year",
    )


def _slot_conflict(scene: Scene) -> Conflict:
    scene.remember("Prefers email.", key="contact.channel")
    scene.remember("Prefers a phone call.", key="contact.channel")
    return Conflict.objects.open().get()


def _keep_memory(scene: Scene) -> Act:
    conflict = _slot_conflict(scene)
    keep = conflict.memories.get(statement="Prefers email.")
    return lambda actor, reason: resolve_conflict(
        conflict=conflict, actor=actor, keep=keep, statement=None, reason=reason
    )


def _write_what_is_right(scene: Scene) -> Act:
    conflict = _slot_conflict(scene)
    return lambda actor, reason: resolve_conflict(
        conflict=conflict, actor=actor, keep=None, statement="Prefers letters.", reason=reason
    )


def _keep_commitment(scene: Scene) -> Act:
    scene.remember(HAPPY_PHONED)
    record_ledger_entry(
        subject=Subject.objects.get(ref=SUBJECT),
        agent=scene.agent,
        fact=NEVER_PHONE,
        kind="commitment",
        source=SourceInput(kind="user_message", ref="msg_commit", excerpt=NEVER_PHONE),
    )
    conflict = Conflict.objects.open().get(possible=True, commitment__isnull=False)
    return lambda actor, reason: keep_commitment(conflict=conflict, actor=actor, reason=reason)


def _dismiss(scene: Scene) -> Act:
    scene.remember(NEVER_PHONE)
    scene.remember(HAPPY_PHONED)
    conflict = Conflict.objects.open().get(possible=True)
    return lambda actor, reason: dismiss_conflict(conflict=conflict, actor=actor, reason=reason)


def _erase(scene: Scene) -> Act:
    # Staff erasing for the person say who asked: the erasure's reason, or support's
    # request's (an admin approves it).
    scene.remember("Happy to be phoned about deliveries.")
    subject = Subject.objects.get(ref=SUBJECT)

    def act(actor: Actor, reason: str) -> object:
        if actor.role == "support":
            return request_erasure(subject=subject, actor=actor, reason=reason)
        return erase_subject(subject=subject, actor=actor, requested_by=reason)

    return act


CASES = [
    pytest.param(Case(_correct), id="correct"),
    pytest.param(Case(_retract), id="delete"),
    pytest.param(Case(_confirm_guess), id="answer-yes-confirm"),
    pytest.param(Case(_reject_guess), id="answer-no-reject"),
    pytest.param(Case(_renew), id="renew"),
    pytest.param(Case(_keep_memory), id="conflict-keep-memory"),
    pytest.param(Case(_write_what_is_right), id="conflict-write-what-is-right"),
    pytest.param(Case(_keep_commitment), id="conflict-keep-commitment"),
    pytest.param(Case(_dismiss), id="conflict-dismiss"),
    pytest.param(Case(_erase, code="request_required", detail=SAY_WHO_ASKED), id="erase"),
]


@pytest.fixture
def people(make_person: Callable[..., User]) -> dict[str, User]:
    return {
        "dana": make_person("dana", subject=SUBJECT),
        "sam": make_person("sam", role="support"),
        "ada": make_person("ada", role="admin"),
    }


@pytest.fixture
def scene(
    people: dict[str, User],
    remember: Callable[..., Memory],
    agent: Agent,
    clock: Callable[..., None],
) -> Scene:
    return Scene(remember=remember, agent=agent, clock=clock)


def everything() -> tuple[object, ...]:
    """What an action could have changed: each memory's status and version, conflicts,
    ledger entries, erasures, and every history row."""
    return (
        sorted((str(m.pk), m.status, m.version, m.statement) for m in Memory.objects.all()),
        sorted((c.pk, c.status, c.resolution or "") for c in Conflict.objects.all()),
        sorted((str(e.pk), e.status) for e in LedgerEntry.objects.all()),
        Erasure.objects.count(),
        ErasureRequest.objects.count(),
        Memory.history.count(),
        Conflict.history.count(),
        Subject.history.count(),
    )


@pytest.mark.parametrize("who", ["sam", "ada"], ids=["support", "admin"])
@pytest.mark.parametrize("case", CASES)
def test_staff_changing_someones_memory_without_a_reason_is_refused(
    scene: Scene, people: dict[str, User], case: Case, who: str
) -> None:
    act = case.setup(scene)
    before = everything()
    for reason in ("", "   "):
        with pytest.raises(Refusal) as refused:
            act(Actor.for_user(people[who]), reason)
        assert (refused.value.code, refused.value.status) == (case.code, 400)
        assert refused.value.detail == case.detail
    assert everything() == before


@pytest.mark.parametrize("case", CASES)
def test_support_with_a_reason_makes_the_change(
    scene: Scene, people: dict[str, User], case: Case
) -> None:
    act = case.setup(scene)
    before = everything()
    act(Actor.for_user(people["sam"]), "Ticket 88: the person phoned.")
    assert everything() != before


@pytest.mark.parametrize("case", CASES)
def test_the_person_makes_the_same_change_without_a_reason(
    scene: Scene, people: dict[str, User], case: Case
) -> None:
    act = case.setup(scene)
    before = everything()
    act(Actor.for_user(people["dana"]), "")
    assert everything() != before


def test_supports_reason_may_not_hide_what_it_says(scene: Scene, people: dict[str, User]) -> None:
    act = _correct(scene)
    before = everything()
    with pytest.raises(Refusal) as refused:
        act(Actor.for_user(people["sam"]), "Ticket 88\u202e: the person phoned.")
    assert (refused.value.code, refused.value.status) == ("reason_invalid_character", 400)
    assert everything() == before


def test_a_renewal_keeps_why_beside_for_how_long(scene: Scene, people: dict[str, User]) -> None:
    act = _renew(scene)
    act(Actor.for_user(people["sam"]), " Still true, said on a call. ")
    renewed = Memory.objects.get(statement="Orders flour on Mondays.")
    row = renewed.history.order_by("-history_date", "-history_id").first()
    assert row is not None
    assert row.history_change_reason == "Renewed: Still true, said on a call. (kept for 1 year)."


@pytest.mark.parametrize("setup", [_correct, _retract], ids=["correct", "delete"])
@pytest.mark.parametrize("who", ["agent", "system"])
def test_agents_and_the_system_are_not_asked_here(
    scene: Scene, setup: Callable[[Scene], Act], who: str
) -> None:
    # An agent's reason is the API's to demand (its serializers require one); a script run
    # by the system gives its own.
    act = setup(scene)
    before = everything()
    act(Actor.for_agent(scene.agent) if who == "agent" else Actor.system("test"), "")
    assert everything() != before
