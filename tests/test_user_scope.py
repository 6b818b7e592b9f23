"""An end user reaches their own subject and nothing else: every other subject's page,
memory, conflict and action is a 404, plain or through htmx; the API refuses their session."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from ledger.models import Conflict, Memory, Subject
from tests.conftest import PASSWORD, SUBJECT

OTHER = "acct_other_person"
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def erin(make_person, remember) -> Client:
    """Erin is signed in and owns her own subject; Dana's subject holds a conflict and a guess."""
    make_person("dana", subject=SUBJECT)
    make_person("erin", subject=OTHER)
    remember("Erin likes tea.", subject=OTHER)
    remember("Prefers email.", key="contact.channel")
    remember("Prefers a phone call.", key="contact.channel")
    remember("Runs a monthly close.", basis="inferred")
    client = Client()
    assert client.login(username="erin", password=PASSWORD)
    return client


def danas_memory() -> Memory:
    return Memory.objects.get(statement="Prefers email.")


MEMORY_ACTIONS = [
    ("get", "memory", {}),
    ("get", "memory-edit", {}),
    ("post", "memory-edit", {"statement": "Hijacked."}),
    ("get", "memory-delete", {}),
    ("post", "memory-delete", {}),
    ("get", "memory-undo", {}),
    ("post", "memory-undo", {}),
    ("post", "memory-answer", {"answer": "yes"}),
    ("post", "memory-answer", {"answer": "no"}),
    ("post", "memory-renew", {"period": "365"}),
    ("get", "memory-history", {}),
]


@pytest.mark.parametrize("htmx", [False, True], ids=["plain", "htmx"])
@pytest.mark.parametrize(("method", "name", "data"), MEMORY_ACTIONS)
def test_another_persons_memory_is_not_found_for_each_action(
    erin, method: str, name: str, data: dict, htmx: bool
) -> None:
    target = danas_memory()
    if name == "memory-answer":
        target = Memory.objects.get(statement="Runs a monthly close.")
    before = (target.status, target.version)
    response = getattr(erin, method)(
        reverse(name, args=[target.pk]), data, **(HTMX if htmx else {})
    )
    assert response.status_code == 404
    target.refresh_from_db()
    assert (target.status, target.version) == before


SUBJECT_ACTIONS = [
    ("get", "subject", {}),
    ("post", "subject-pause", {"paused": "on"}),
    ("get", "subject-export", {}),
    ("get", "subject-erase", {}),
    ("post", "subject-erase", {"confirm_name": SUBJECT}),
]


@pytest.mark.parametrize("htmx", [False, True], ids=["plain", "htmx"])
@pytest.mark.parametrize(("method", "name", "data"), SUBJECT_ACTIONS)
def test_another_persons_subject_is_not_found_for_each_action(
    erin, method: str, name: str, data: dict, htmx: bool
) -> None:
    subject = Subject.objects.get(ref=SUBJECT)
    response = getattr(erin, method)(
        reverse(name, args=[subject.pk]), data, **(HTMX if htmx else {})
    )
    assert response.status_code == 404
    subject.refresh_from_db()
    assert not subject.memory_paused
    assert not subject.erasures.exists()
    assert Memory.objects.filter(subject=subject, status="erased").count() == 0


@pytest.mark.parametrize("data", [{"keep": "memory"}, {"statement": "Neither."}])
def test_another_persons_conflict_cannot_be_resolved(erin, data: dict) -> None:
    conflict = Conflict.objects.open().get()
    if data.get("keep") == "memory":
        data = {"keep": str(danas_memory().pk)}
    response = erin.post(reverse("conflict-resolve", args=[conflict.pk]), data, **HTMX)
    assert response.status_code == 404
    conflict.refresh_from_db()
    assert conflict.status == Conflict.Status.OPEN


def test_a_subject_id_that_does_not_exist_is_not_found(erin) -> None:
    assert erin.get(reverse("subject", args=["acct_nobody"])).status_code == 404


def test_own_page_works_while_others_are_hidden(erin) -> None:
    response = erin.get("/", follow=True)
    html = response.content.decode()
    assert "Erin likes tea." in html
    assert "Prefers email." not in html


def test_signed_out_people_are_sent_to_sign_in(erin) -> None:
    subject = Subject.objects.get(ref=OTHER)
    response = Client().get(reverse("subject", args=[subject.ref]))
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/api/v1/memories"),
        ("get", f"/api/v1/subjects/{SUBJECT}"),
        ("post", "/api/v1/memories"),
    ],
)
def test_the_api_does_not_accept_a_persons_session(erin, method: str, path: str) -> None:
    response = getattr(erin, method)(path, content_type="application/json")
    assert response.status_code in (401, 403)
    assert Memory.objects.filter(statement="Hijacked.").count() == 0


def test_the_api_refuses_a_persons_session_for_their_own_memory(erin) -> None:
    mine = Memory.objects.get(statement="Erin likes tea.")
    response = erin.post(
        f"/api/v1/memories/{mine.pk}/retract",
        {"reason": "via session"},
        content_type="application/json",
    )
    assert response.status_code in (401, 403)
    mine.refresh_from_db()
    assert mine.status == Memory.Status.ACTIVE
