"""Support acts on someone's memory only with a reason in their own words, and every such
change is said as support's, never as the person's: on the card, the history, the export
and the block agents are given."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from ledger.actions.expiry import expire_due
from ledger.actions.recalls import record_recall
from ledger.models import Conflict, Memory, Recall
from ledger.reads.recall import recall
from tests.conftest import SUBJECT, signed_in

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
PAGE = reverse("subject", args=[SUBJECT])


@pytest.fixture
def dana(make_person: Callable[..., User]) -> Client:
    return signed_in(make_person("dana", subject=SUBJECT))


@pytest.fixture
def sam(make_person: Callable[..., User]) -> Client:
    return signed_in(make_person("sam", role="support"))


@pytest.fixture
def guess(remember: Callable[..., Memory], dana: Client) -> Memory:
    # One agent's guess from one source waits for the person (or support) to confirm it.
    memory = remember("Likes deliveries in the morning.", basis="inferred", key="delivery.time")
    assert memory.status == Memory.Status.PENDING
    return memory


def last_reason(memory: Memory) -> tuple[str, str]:
    row = memory.history.order_by("-history_date", "-history_id").first()
    assert row is not None
    return row.history_actor, row.history_change_reason or ""


def rows_of(memory: Memory) -> int:
    return memory.history.count()


def test_support_deleting_without_a_reason_is_refused_and_nothing_changes(
    remember: Callable[..., Memory], sam: Client
) -> None:
    memory = remember("Happy to be phoned about deliveries.")
    before = rows_of(memory)
    url = reverse("memory-delete", args=[memory.pk])
    for extra in (HTMX, {}):
        response = sam.post(url, {"reason": "  "}, **extra)
        assert response.status_code == 400
        assert "Support must say why they change someone" in response.content.decode()
    memory.refresh_from_db()
    assert memory.status == Memory.Status.ACTIVE
    assert rows_of(memory) == before


def test_support_deletes_with_a_reason_recorded_as_support(
    remember: Callable[..., Memory], sam: Client, dana: Client
) -> None:
    memory = remember("Happy to be phoned about deliveries.")
    response = sam.post(
        reverse("memory-delete", args=[memory.pk]), {"reason": "Ticket 88: misread."}, **HTMX
    )
    assert response.status_code == 200
    memory.refresh_from_db()
    assert memory.status == Memory.Status.RETRACTED
    assert last_reason(memory) == ("user:sam", "Ticket 88: misread.")
    history = dana.get(reverse("memory-history", args=[memory.pk])).content.decode()
    assert "<strong>Deleted</strong> by support (sam)" in history
    assert "Ticket 88: misread." in history


def test_the_person_still_deletes_without_being_asked_why(
    remember: Callable[..., Memory], dana: Client
) -> None:
    memory = remember("Happy to be phoned about deliveries.")
    ask = dana.get(reverse("memory-delete", args=[memory.pk]), **HTMX).content.decode()
    assert "Yes, delete it" in ask and 'name="reason"' not in ask
    dana.post(reverse("memory-delete", args=[memory.pk]), **HTMX)
    memory.refresh_from_db()
    assert last_reason(memory) == ("user:dana", "Deleted by the person.")


def test_support_sees_its_own_wording_and_a_reason_field(
    guess: Memory, sam: Client, dana: Client
) -> None:
    staff = sam.get(PAGE).content.decode()
    assert "Confirm for the record (support)" in staff
    assert "Yes, that’s right" not in staff
    assert 'name="reason"' in staff
    person = dana.get(PAGE).content.decode()
    assert "Yes, that’s right" in person
    assert "(support)" not in person


def test_support_confirming_without_a_reason_is_refused(guess: Memory, sam: Client) -> None:
    before = rows_of(guess)
    response = sam.post(reverse("memory-answer", args=[guess.pk]), {"answer": "yes"}, **HTMX)
    assert response.status_code == 400
    assert "Support must say why" in response.content.decode()
    guess.refresh_from_db()
    assert (guess.status, guess.basis, rows_of(guess)) == (
        Memory.Status.PENDING,
        "inferred",
        before,
    )


def test_support_confirmation_is_said_as_supports_everywhere(
    guess: Memory, sam: Client, dana: Client, agent: Any
) -> None:
    response = sam.post(
        reverse("memory-answer", args=[guess.pk]),
        {"answer": "yes", "reason": "Confirmed on the phone, ticket 12."},
        **HTMX,
    )
    assert response.status_code == 200
    guess.refresh_from_db()
    assert guess.stated_by == "support_confirmation"
    assert last_reason(guess) == ("user:sam", "Confirmed on the phone, ticket 12.")
    for client in (dana, sam):
        card = client.get(PAGE).content.decode().split(f'id="memory-{guess.pk}"')[1]
        card = card.split("</article>")[0]
        assert "Confirmed by support" in card
        assert "confirmed by the person" not in card.lower()
        history = client.get(reverse("memory-history", args=[guess.pk])).content.decode()
        assert "confirmed by support" in history
        assert "Confirmed on the phone, ticket 12." in history
        assert "confirmed by the person" not in history.lower()
        # Before support's word it was nobody's statement, least of all the person's.
        assert "said by the person" not in history
        assert "not stated: a guess" in history
    export = dana.get(reverse("subject-export", args=[SUBJECT])).json()
    exported = next(m for m in export["memories"] if m["id"] == str(guess.pk))
    assert exported["origin"] == {"how": "confirmed", "who": "support"}
    assert "the person" not in str(exported["origin"])
    block = record_recall(agent=agent, result=recall(subject=guess.subject, goal="", k=5)).block
    assert "a guess confirmed by support, not by the person" in block
    assert "the person confirmed" not in block


def test_the_persons_own_confirmation_still_says_so(
    guess: Memory, dana: Client, sam: Client, agent: Any
) -> None:
    dana.post(reverse("memory-answer", args=[guess.pk]), {"answer": "yes"}, **HTMX)
    guess.refresh_from_db()
    assert guess.stated_by == "confirmation"
    assert last_reason(guess) == ("user:dana", "Confirmed by the person.")
    assert "You confirmed this" in dana.get(PAGE).content.decode()
    assert "Confirmed by the person" in sam.get(PAGE).content.decode()
    history = sam.get(reverse("memory-history", args=[guess.pk])).content.decode()
    assert "confirmed by the person" in history
    block = record_recall(agent=agent, result=recall(subject=guess.subject, goal="", k=5)).block
    assert "a guess the person confirmed" in block
    assert Recall.objects.count() == 1


def test_support_rejecting_a_guess_needs_a_reason_too(guess: Memory, sam: Client) -> None:
    url = reverse("memory-answer", args=[guess.pk])
    assert sam.post(url, {"answer": "no"}, **HTMX).status_code == 400
    sam.post(url, {"answer": "no", "reason": "The person said no on the phone."}, **HTMX)
    guess.refresh_from_db()
    assert guess.status == Memory.Status.RETRACTED
    assert last_reason(guess) == ("user:sam", "The person said no on the phone.")


@pytest.fixture
def expired(remember: Callable[..., Memory], dana: Client, clock: Callable[..., None]) -> Memory:
    start = timezone.now()
    clock(start - timedelta(days=400))
    memory = remember("Orders flour on Mondays.")
    clock(start)
    expire_due()
    memory.refresh_from_db()
    assert memory.status == Memory.Status.EXPIRED
    return memory


def test_support_renewing_needs_a_reason_and_records_it(expired: Memory, sam: Client) -> None:
    url = reverse("memory-renew", args=[expired.pk])
    before = rows_of(expired)
    refused = sam.post(url, {"period": "365"}, **HTMX)
    assert refused.status_code == 400
    assert "Support must say why" in refused.content.decode()
    expired.refresh_from_db()
    assert (expired.status, rows_of(expired)) == (Memory.Status.EXPIRED, before)
    card = sam.get(PAGE + "?status=expired").content.decode()
    assert "Renew (support)" in card
    sam.post(url, {"period": "365", "reason": "Still orders on Mondays, said on a call."}, **HTMX)
    expired.refresh_from_db()
    assert expired.status == Memory.Status.ACTIVE
    actor, reason = last_reason(expired)
    assert actor == "user:sam"
    assert reason.startswith("Renewed: Still orders on Mondays, said on a call. (kept for 1 year")


def test_the_person_renews_without_a_reason(expired: Memory, dana: Client) -> None:
    response = dana.post(reverse("memory-renew", args=[expired.pk]), {"period": "365"}, **HTMX)
    assert response.status_code == 200
    expired.refresh_from_db()
    assert expired.status == Memory.Status.ACTIVE
    assert last_reason(expired)[1].startswith("Renewed: kept for 1 year")


@pytest.fixture
def conflict(remember: Callable[..., Memory], dana: Client) -> Conflict:
    remember("Prefers email.", key="contact.channel")
    remember("Prefers a phone call.", key="contact.channel")
    found = Conflict.objects.open().get()
    return found


def test_support_resolving_a_conflict_needs_a_reason(conflict: Conflict, sam: Client) -> None:
    keep = conflict.memories.get(statement="Prefers email.")
    url = reverse("conflict-resolve", args=[conflict.pk])
    page = sam.get(PAGE).content.decode()
    assert "Keep this one (support)" in page
    refused = sam.post(url, {"keep": keep.pk}, **HTMX)
    assert refused.status_code == 400
    assert "Support must say why" in refused.content.decode()
    conflict.refresh_from_db()
    assert conflict.status == Conflict.Status.OPEN
    assert Memory.objects.filter(status=Memory.Status.ACTIVE).count() == 2
    sam.post(url, {"keep": keep.pk, "reason": "The person wrote in: email only."}, **HTMX)
    conflict.refresh_from_db()
    assert (conflict.status, conflict.kept_id) == (Conflict.Status.RESOLVED, keep.pk)
    other = conflict.memories.get(statement="Prefers a phone call.")
    assert last_reason(other) == (
        "user:sam",
        "Conflict resolved by staff. The person wrote in: email only.",
    )
    actor, reason = last_reason(keep)
    assert actor == "user:sam"
    assert reason.endswith("“Prefers a phone call.”. The person wrote in: email only.")


def test_the_person_keeps_one_without_a_reason(conflict: Conflict, dana: Client) -> None:
    keep = conflict.memories.get(statement="Prefers email.")
    page = dana.get(PAGE).content.decode()
    assert "Keep this one" in page and "(support)" not in page
    dana.post(reverse("conflict-resolve", args=[conflict.pk]), {"keep": keep.pk}, **HTMX)
    conflict.refresh_from_db()
    assert conflict.status == Conflict.Status.RESOLVED
    other = conflict.memories.get(statement="Prefers a phone call.")
    assert last_reason(other) == ("user:dana", "Conflict resolved by the person.")


def test_supports_correction_is_said_as_supports_and_belongs_to_no_run(
    guess: Memory, sam: Client, dana: Client, agent: Any
) -> None:
    response = sam.post(
        reverse("memory-edit", args=[guess.pk]),
        {"statement": "Closed on Sundays only.", "reason": "He told us on the phone."},
    )
    assert response.status_code == 302
    new = Memory.objects.get(statement="Closed on Sundays only.")
    assert new.stated_by == "support_correction"
    # A batch deletion of the agent's run must never take support's fix with it.
    assert new.run is None
    card = dana.get(PAGE).content.decode().split(f'id="memory-{new.pk}"')[1]
    assert "Corrected by support" in card.split("</article>")[0]
    export = dana.get(reverse("subject-export", args=[SUBJECT])).json()
    exported = next(m for m in export["memories"] if m["id"] == str(new.pk))
    assert exported["origin"] == {"how": "corrected", "who": "support"}
    block = record_recall(agent=agent, result=recall(subject=new.subject, goal="", k=5)).block
    assert "corrected by support, not by the person" in block
