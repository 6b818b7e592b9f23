"""Support cannot erase someone alone: their erasure is a request until an admin other than
the one who asked approves it (and the erasure runs) or declines it with a reason."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from ledger.actions.erasure import erase_subject
from ledger.actions.erasure_requests import request_erasure
from ledger.actors import Actor
from ledger.models import Erasure, ErasureRequest, Memory, Subject
from ledger.rules.refusals import Refusal
from tests.conftest import signed_in

pytestmark = pytest.mark.django_db

MARCO = "acct_e7a1c0ffee42b9d3"
QUEUE = "/audit/erasure-requests/"
ASKED = "the person, by phone, ticket 4411"


@pytest.fixture
def people(make_person: Callable[..., Any]) -> dict[str, User]:
    return {
        "sam": make_person("sam", role="support"),
        "ada": make_person("ada", role="admin"),
        "bea": make_person("bea", role="admin"),
        "marco": make_person("marco", subject=MARCO),
    }


@pytest.fixture
def marco(remember: Callable[..., Memory], people: dict[str, User]) -> Subject:
    remember("Takes the early train on Mondays.", subject=MARCO)
    return Subject.objects.get(ref=MARCO)


@pytest.fixture(autouse=True)
def admins_mail(settings: Any, people: dict[str, User]) -> None:
    settings.MAILERS = {"default": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"}}
    # Test data, not a change anyone makes: the admins' addresses.
    for name in ("ada", "bea"):
        User.objects.filter(username=name).update(email=f"{name}@example.com")


def ask(client: Client, subject: Subject, **extra: str) -> Any:
    return client.post(
        reverse("subject-erase", args=[subject.ref]),
        {"confirm_name": subject.ref, "requested_by": ASKED, "pause": "on", **extra},
    )


def waiting(subject: Subject) -> ErasureRequest:
    return ErasureRequest.objects.get(subject=subject, decision="")


def test_supports_erasure_waits_for_an_admin_who_is_told_by_email(
    marco: Subject, people: dict[str, User], django_capture_on_commit_callbacks: Any
) -> None:
    sam = signed_in(people["sam"])
    form = sam.get(reverse("subject-erase", args=[MARCO])).content.decode()
    assert "nothing is erased until an admin other than you approves it" in form
    assert "Ask an admin to erase everything" in form
    with django_capture_on_commit_callbacks(execute=True):
        response = ask(sam, marco)
    assert response.status_code == 302
    assert not Erasure.objects.exists()
    assert Memory.objects.get(subject=marco).status == "active"
    request = waiting(marco)
    assert (request.requested_by, request.reason, request.pause) == ("user:sam", ASKED, True)
    assert request.history.count() == 1

    page = sam.get(response["Location"]).content.decode()
    assert "Erasure requested: nothing is erased until an admin approves it." in page
    assert "Erasure requested by you, waiting for an admin." in page
    seen = signed_in(people["ada"]).get(reverse("subject", args=[MARCO])).content.decode()
    assert "Erasure requested by support (sam), waiting for an admin." in seen

    assert sorted(m.to[0] for m in mail.outbox) == ["ada@example.com", "bea@example.com"]
    message = mail.outbox[0]
    assert MARCO in message.subject
    assert "Support (sam) asked to erase" in message.body and ASKED in message.body
    assert "http://testserver" not in message.body and QUEUE in message.body
    # The subject's name stays on the machine.
    assert "Takes the early train" not in message.body


def test_an_admin_approves_and_the_real_erasure_runs(
    marco: Subject, people: dict[str, User]
) -> None:
    ask(signed_in(people["sam"]), marco)
    ada = signed_in(people["ada"])
    queue = ada.get(QUEUE).content.decode()
    assert MARCO in queue and ASKED in queue and "Approve and erase" in queue
    assert 'name="csrfmiddlewaretoken"' in queue

    response = ada.post(reverse("erasure-request-approve", args=[waiting(marco).pk]))
    assert response.status_code == 302 and response["Location"] == QUEUE
    erasure = Erasure.objects.get(subject=marco)
    assert (erasure.erased_by, erasure.requested_by, erasure.memories) == ("user:ada", ASKED, 1)
    assert Memory.objects.get(subject=marco).status == "erased"
    marco.refresh_from_db()
    assert marco.memory_paused
    request = ErasureRequest.objects.get(subject=marco)
    assert (request.decision, request.decided_by) == ("approved", "user:ada")
    page = ada.get(QUEUE).content.decode()
    assert f"Approved: everything about {MARCO} was erased (1 memory)." in page
    assert "No erasure is waiting." in page
    subject_page = signed_in(people["sam"]).get(reverse("subject", args=[MARCO])).content
    assert b"waiting for an admin" not in subject_page


def test_an_htmx_approval_answers_with_the_decided_request(
    marco: Subject, people: dict[str, User]
) -> None:
    ask(signed_in(people["sam"]), marco)
    pk = waiting(marco).pk
    response = signed_in(people["bea"]).post(
        reverse("erasure-request-approve", args=[pk]), HTTP_HX_REQUEST="true"
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert f'id="erasure-request-{pk}"' in html and "<html" not in html
    assert "Approved</span> by you" in html and "Approve and erase" not in html


def test_declining_needs_a_reason_and_erases_nothing(
    marco: Subject, people: dict[str, User]
) -> None:
    ask(signed_in(people["sam"]), marco)
    pk = waiting(marco).pk
    ada = signed_in(people["ada"])
    url = reverse("erasure-request-decline", args=[pk])
    bare = ada.post(url, {"reason": "  "})
    assert bare.status_code == 400
    assert "Say why the erasure is declined: support reads it." in bare.content.decode()
    fragment = ada.post(url, {"reason": ""}, HTTP_HX_REQUEST="true")
    assert fragment.status_code == 400 and "Say why the erasure is declined" in (
        fragment.content.decode()
    )
    assert waiting(marco).pk == pk

    done = ada.post(url, {"reason": "Ticket 4411 was withdrawn by the person."})
    assert done.status_code == 302
    request = ErasureRequest.objects.get(pk=pk)
    assert (request.decision, request.decision_reason) == (
        "declined",
        "Ticket 4411 was withdrawn by the person.",
    )
    assert not Erasure.objects.exists()
    assert Memory.objects.get(subject=marco).status == "active"
    assert "Ticket 4411 was withdrawn" in ada.get(QUEUE).content.decode()
    # Declined, support may ask again.
    assert ask(signed_in(people["sam"]), marco).status_code == 302


def test_only_an_admin_decides_and_never_on_their_own_request(
    marco: Subject, people: dict[str, User]
) -> None:
    # An admin's own erasure is immediate; one filed by an admin (a script, say) still needs
    # another admin.
    request = request_erasure(subject=marco, actor=Actor.for_user(people["ada"]), reason=ASKED)
    url = reverse("erasure-request-approve", args=[request.pk])
    for who in ("sam", "marco"):
        assert signed_in(people[who]).post(url).status_code == 404
        assert signed_in(people[who]).get(QUEUE).status_code == 404
    assert Client().post(url).status_code == 302  # to sign in
    own = signed_in(people["ada"]).post(url)
    assert own.status_code == 403
    assert "You asked for this erasure: another admin must approve it." in own.content.decode()
    assert not Erasure.objects.exists()
    assert signed_in(people["bea"]).post(url).status_code == 302
    again = signed_in(people["bea"]).post(url)
    assert again.status_code == 409
    assert "This erasure request is no longer waiting (approved)." in again.content.decode()


def test_a_second_request_and_one_for_an_erased_subject_are_refused_in_words(
    marco: Subject, people: dict[str, User]
) -> None:
    sam = signed_in(people["sam"])
    ask(sam, marco)
    second = ask(sam, marco)
    assert second.status_code == 409
    assert (
        "An erasure of this person is already waiting for an admin (requested by sam)."
        in second.content.decode()
    )
    signed_in(people["bea"]).post(reverse("erasure-request-approve", args=[waiting(marco).pk]))
    erased = ask(sam, marco)
    assert erased.status_code == 409
    assert "Everything about this person was already erased" in erased.content.decode()
    assert ErasureRequest.objects.count() == 1


def test_an_admin_and_the_person_erase_at_once_and_close_a_waiting_request(
    marco: Subject, people: dict[str, User]
) -> None:
    ask(signed_in(people["sam"]), marco)
    own = signed_in(people["marco"]).post(
        reverse("subject-erase", args=[MARCO]), {"confirm_name": MARCO}
    )
    assert own.status_code == 302
    assert Erasure.objects.get().erased_by == "user:marco"
    request = ErasureRequest.objects.get()
    assert (request.decision, request.decided_by) == ("overtaken", "user:marco")
    assert "Erased meanwhile" in signed_in(people["ada"]).get(QUEUE).content.decode()


def test_an_admins_erasure_of_someone_needs_no_approval(
    marco: Subject, people: dict[str, User]
) -> None:
    form = signed_in(people["ada"]).get(reverse("subject-erase", args=[MARCO])).content.decode()
    assert "Ask an admin" not in form
    assert ask(signed_in(people["ada"]), marco).status_code == 302
    assert Erasure.objects.get().erased_by == "user:ada"
    assert not ErasureRequest.objects.exists()


def test_every_erasure_form_needs_its_csrf_token(marco: Subject, people: dict[str, User]) -> None:
    ask(signed_in(people["sam"]), marco)
    pk = waiting(marco).pk
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(people["ada"])
    for name in ("erasure-request-approve", "erasure-request-decline"):
        assert strict.post(reverse(name, args=[pk]), {"reason": "x"}).status_code == 403
    assert waiting(marco).pk == pk


def test_the_queue_costs_the_same_queries_for_few_or_many(
    remember: Callable[..., Memory], people: dict[str, User]
) -> None:
    sam = Actor.for_user(people["sam"])

    def grow(start: int, times: int) -> None:
        for n in range(start, start + times):
            ref = f"acct_queue_{n}"
            remember("Something to forget.", subject=ref)
            request_erasure(subject=Subject.objects.get(ref=ref), actor=sam, reason=ASKED)

    ada = signed_in(people["ada"])

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert ada.get(QUEUE).status_code == 200
        return len(captured)

    grow(0, 2)
    few = queries()
    grow(2, 6)
    bea = signed_in(people["bea"])
    for request in ErasureRequest.objects.all()[:3]:
        bea.post(reverse("erasure-request-decline", args=[request.pk]), {"reason": "not asked"})
    assert queries() == few


def test_the_erasure_itself_refuses_support_whatever_calls_it(
    marco: Subject, people: dict[str, User]
) -> None:
    with pytest.raises(Refusal) as refused:
        erase_subject(subject=marco, actor=Actor.for_user(people["sam"]), requested_by=ASKED)
    assert (refused.value.code, refused.value.status) == ("erasure_needs_admin", 403)
    assert "file an erasure request" in refused.value.detail
    assert not Erasure.objects.exists()
    assert Memory.objects.get(subject=marco).status == "active"
