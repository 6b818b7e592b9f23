"""Undoing a deletion reopens the conflicts that deletion closed: the same rows, so the
work support did on them comes back, and agents are warned again. A conflict a person
settled meanwhile stays settled."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from rest_framework.test import APIClient

from ledger.actions.conflicts import dismiss_conflict
from ledger.actions.lifecycle import retract_memory
from ledger.actions.retractions import Selection, retract_batch, undo_batch
from ledger.actions.slots import REOPENED
from ledger.actors import Actor
from ledger.models import Conflict, Memory
from tests.conftest import SUBJECT, body, signed_in
from tests.test_possible_conflicts import EMAIL, HAPPY_PHONED, NEVER_PHONE, RECALL, commit, write

pytestmark = pytest.mark.django_db
HTMX = {"HX-Request": "true"}
POST = "Prefers post over email"


@pytest.fixture
def people(make_person: Callable[..., User]) -> dict[str, User]:
    return {"dana": make_person("dana", subject=SUBJECT), "sam": make_person("sam", role="support")}


@pytest.fixture
def happy(api: APIClient, people: dict[str, User]) -> Memory:
    """The walkthrough's memory: in a slot conflict with a rival in its slot, and in possible
    conflicts with another memory and with a commitment, by its words."""
    write(api, EMAIL)
    commit(api, NEVER_PHONE)
    write_in_slot(api, POST)
    memory = Memory.objects.get(pk=write_in_slot(api, HAPPY_PHONED)["memory"]["id"])
    assert Conflict.objects.open().filter(possible=True).count() == 2
    assert Conflict.objects.open().filter(possible=False).count() == 1
    return memory


def write_in_slot(api: APIClient, statement: str) -> dict[str, Any]:
    response = api.post(
        "/api/v1/memories", body(statement=statement, key="contact.channel"), format="json"
    )
    assert response.status_code == 201, response.json()
    return dict(response.json())


def conflicts_of(memory: Memory) -> list[Conflict]:
    return list(Conflict.objects.filter(memories=memory).order_by("pk"))


def test_undoing_a_deletion_reopens_the_same_conflicts_with_supports_work(
    api: APIClient, happy: Memory
) -> None:
    sam = signed_in("sam")
    slot = Conflict.objects.get(possible=False)
    work = reverse("queue-work", args=["conflict", slot.pk, "ticket"])
    assert sam.post(work, {"ticket": "ZD-77"}).status_code == 303
    noted = reverse("queue-work", args=["conflict", slot.pk, "note"])
    assert sam.post(noted, {"text": "Dana will call back."}).status_code in (200, 303)

    dana = signed_in("dana")
    assert dana.post(reverse("memory-delete", args=[happy.pk]), headers=HTMX).status_code == 200
    assert not Conflict.objects.open().exists()
    assert "ZD-77" not in sam.get("/queues/conflicts/").content.decode()

    undone = dana.post(reverse("memory-undo", args=[happy.pk]), headers=HTMX)
    assert undone.status_code == 200
    # The very rows the deletion closed, open again, and no new ones.
    assert Conflict.objects.count() == 3
    assert all(c.status == Conflict.Status.OPEN for c in conflicts_of(happy))
    assert all(c.resolved_at is None for c in conflicts_of(happy))
    latest = slot.history.order_by("-history_date").first()
    assert latest is not None
    assert (latest.history_change_reason, latest.history_actor) == (REOPENED, "user:dana")

    queue = sam.get("/queues/conflicts/").content.decode()
    assert '<code class="ticket">ZD-77</code>' in queue
    assert "Dana will call back." in queue
    assert HAPPY_PHONED in queue and NEVER_PHONE in queue

    history = dana.get(reverse("memory-history", args=[happy.pk])).content.decode()
    assert "it closed when a statement went" not in history

    # Agents are warned again: recall flags the reopened conflicts.
    recalled = api.get(RECALL, {"goal": "how to contact about an invoice"}).json()
    assert len(recalled["conflicts"]) == 3
    block = recalled["block"].splitlines()
    assert len([line for line in block if line.startswith("POSSIBLE CONFLICT")]) == 2
    assert len([line for line in block if line.startswith("UNRESOLVED CONFLICT")]) == 1
    assert f"  | {NEVER_PHONE}" in block and f"  | {HAPPY_PHONED}" in block


def test_a_conflict_a_person_settled_meanwhile_stays_closed(happy: Memory) -> None:
    sam = Actor.for_user(User.objects.get(username="sam"))
    with_memory = Conflict.objects.get(possible=True, commitment__isnull=True)
    dismiss_conflict(conflict=with_memory, actor=sam, reason="Both are true.")
    client = signed_in("dana")
    assert client.post(reverse("memory-delete", args=[happy.pk]), headers=HTMX).status_code == 200
    assert client.post(reverse("memory-undo", args=[happy.pk]), headers=HTMX).status_code == 200
    with_memory.refresh_from_db()
    assert with_memory.status == Conflict.Status.RESOLVED
    assert with_memory.resolution == Conflict.Resolution.DISMISSED
    # The others the deletion closed are open again.
    assert Conflict.objects.open().count() == 2


def test_a_conflict_whose_other_side_went_meanwhile_stays_closed(happy: Memory) -> None:
    client = signed_in("dana")
    assert client.post(reverse("memory-delete", args=[happy.pk]), headers=HTMX).status_code == 200
    rival = Memory.objects.get(statement=POST)
    sam = Actor.for_user(User.objects.get(username="sam"))
    retract_memory(memory=rival, actor=sam, reason="Wrong person.")
    assert client.post(reverse("memory-undo", args=[happy.pk]), headers=HTMX).status_code == 200
    assert not Conflict.objects.open().filter(possible=False).exists()
    assert Conflict.objects.open().filter(possible=True).count() == 2


def test_undoing_a_batch_deletion_reopens_conflicts_between_its_own_memories(
    happy: Memory,
) -> None:
    sam = Actor.for_user(User.objects.get(username="sam"))
    rival = Memory.objects.get(statement=POST)
    email = Memory.objects.get(statement=EMAIL)
    opened = {c.pk for c in Conflict.objects.open()}
    batch = retract_batch(
        selection=Selection(memories=(happy.pk, rival.pk, email.pk)), actor=sam, reason="misread"
    )
    assert not Conflict.objects.open().exists()
    undo_batch(batch=batch, actor=sam, reason="a mistake")
    assert {c.pk for c in Conflict.objects.open()} == opened
    assert Conflict.objects.count() == 3
