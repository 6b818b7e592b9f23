"""What support and admins see of erasure requests outside the queue's buttons: the queue
box's count, why an admin declined (on the subject's page), a request already waiting (on
the erase page), the queue after an htmx decision, and the write policy's agents switch."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from ledger.actions.erasure_requests import decline_erasure, request_erasure
from ledger.actors import Actor
from ledger.models import ErasureRequest, Memory, Subject
from tests import test_erasure_requests
from tests.conftest import signed_in
from tests.test_erasure_requests import ASKED, MARCO, QUEUE

pytestmark = pytest.mark.django_db

# The same people and subject as the queue's own tests.
people = test_erasure_requests.people
marco = test_erasure_requests.marco


def filed(subject: Subject, people: dict[str, User]) -> ErasureRequest:
    return request_erasure(subject=subject, actor=Actor.for_user(people["sam"]), reason=ASKED)


def declined(subject: Subject, people: dict[str, User], why: str) -> ErasureRequest:
    return decline_erasure(
        request=filed(subject, people), actor=Actor.for_user(people["ada"]), reason=why
    )


def queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


def test_the_queue_box_says_who_erases_at_once_and_counts_the_requests_for_admins(
    remember: Callable[..., Memory], people: dict[str, User]
) -> None:
    for url in ("/", "/queues/"):
        html = signed_in(people["sam"]).get(url).content.decode()
        assert "Erasure needs no queue" not in html
        assert "a person's own erasure, and an admin's, happen at once" in html
        assert "support's waits for an admin" in html
        assert f'href="{QUEUE}"' not in html
    ada = signed_in(people["ada"])
    none_yet = queries(ada, "/queues/")
    for n in range(3):
        remember("Something to forget.", subject=f"acct_box_{n}")
        filed(Subject.objects.get(ref=f"acct_box_{n}"), people)
    for url in ("/", "/queues/"):
        html = ada.get(url).content.decode()
        assert f'<a href="{QUEUE}">Erasure requests</a> <span class="badge pending">3</span>' in (
            html
        )
    # One count, however many wait.
    assert queries(ada, "/queues/") == none_yet


def test_support_reads_on_the_subjects_page_why_an_admin_declined(
    marco: Subject, people: dict[str, User]
) -> None:
    page = reverse("subject", args=[MARCO])
    sam = signed_in(people["sam"])
    first = filed(marco, people)
    # A request waiting, the names of who asked looked up: the decline adds no query.
    waiting_only = queries(sam, page)
    decline_erasure(
        request=first,
        actor=Actor.for_user(people["ada"]),
        reason="Ticket <4411> was withdrawn by the person.",
    )
    for who, by in (("sam", "an admin (ada)"), ("ada", "you")):
        html = signed_in(people[who]).get(page).content.decode()
        assert f"Erasure request declined by {by} on" in html
        assert "Ticket &lt;4411&gt; was withdrawn by the person." in html
        assert "<4411>" not in html
    # The person never asked for it: their page does not show it.
    assert b"declined" not in signed_in(people["marco"]).get(page).content
    # Asked again: the new request waits, and the old decline no longer speaks beside it.
    filed(marco, people)
    html = sam.get(page).content.decode()
    assert "Erasure requested by you, waiting for an admin." in html
    assert "declined" not in html
    assert queries(sam, page) == waiting_only


def test_an_approval_after_a_decline_says_no_more_of_the_decline(
    marco: Subject, people: dict[str, User]
) -> None:
    declined(marco, people, "Not asked by the person.")
    erase = reverse("subject-erase", args=[MARCO])
    signed_in(people["ada"]).post(erase, {"confirm_name": MARCO, "requested_by": ASKED})
    html = signed_in(people["sam"]).get(reverse("subject", args=[MARCO])).content.decode()
    assert "Everything was erased on" in html
    assert "Erasure request declined" not in html


def test_supports_erase_page_says_a_request_already_waits_instead_of_the_form(
    marco: Subject, people: dict[str, User]
) -> None:
    filed(marco, people)
    url = reverse("subject-erase", args=[MARCO])
    html = signed_in(people["sam"]).get(url).content.decode()
    assert f"An erasure of {marco.name} is already waiting for an admin: requested by you" in html
    assert f"Who asked, and how: “{ASKED}”" in html
    assert 'name="confirm_name"' not in html
    assert "Ask an admin to erase everything" not in html
    # An admin erases at once, which closes the request: the form, with the request named.
    admin = signed_in(people["ada"]).get(url).content.decode()
    assert "Support’s request to erase" in admin and "Erasing here closes it." in admin
    assert 'name="confirm_name"' in admin


def test_an_htmx_decision_moves_the_request_out_of_the_waiting_list(
    remember: Callable[..., Memory], marco: Subject, people: dict[str, User]
) -> None:
    remember("Something else to forget.", subject="acct_other_1")
    other = filed(Subject.objects.get(ref="acct_other_1"), people)
    first = filed(marco, people)
    ada = signed_in(people["ada"])
    answer = ada.post(
        reverse("erasure-request-decline", args=[first.pk]),
        {"reason": "Ticket <b>withdrawn</b>."},
        HTTP_HX_REQUEST="true",
    )
    html = answer.content.decode()
    assert answer.status_code == 200 and "<html" not in html
    # In the card's place nothing (another still waits); out of band, the count, the
    # decided list with it on top, and what was done.
    assert 'class="card erasure-request"' not in html
    assert "No erasure is waiting." not in html
    assert '<span id="waiting-count" class="badge pending" hx-swap-oob="true">1</span>' in html
    assert '<section id="erasure-decided" aria-labelledby="decided-title" hx-swap-oob="true">' in (
        html
    )
    assert f'<tr id="erasure-request-{first.pk}" class="just-decided">' in html
    assert "Declined</span> by you" in html
    assert "Ticket &lt;b&gt;withdrawn&lt;/b&gt;." in html
    assert '<div id="erasure-said" role="status" hx-swap-oob="true">' in html
    assert f"Declined: nothing about {MARCO} erased." in html

    last = ada.post(reverse("erasure-request-approve", args=[other.pk]), HTTP_HX_REQUEST="true")
    html = last.content.decode()
    assert "No erasure is waiting." in html
    assert '<span id="waiting-count" class="badge" hx-swap-oob="true">0</span>' in html
    assert f'<tr id="erasure-request-{other.pk}" class="just-decided">' in html
    assert f'<tr id="erasure-request-{first.pk}">' in html
    # The page itself: the approve form and the decline form (a textarea), each with CSRF.
    filed(marco, people)
    page = ada.get(QUEUE).content.decode()
    assert 'class="erasure-decision"' in page
    assert '<textarea id="decline-reason-' in page
    assert page.count('name="csrfmiddlewaretoken"') >= 3


def test_the_policy_page_says_in_plain_words_what_the_agents_switch_does(
    people: dict[str, User],
) -> None:
    html = signed_in(people["ada"]).get(reverse("policy")).content.decode()
    assert "not_your_write" not in html and "staff scope" not in html
    assert "Off: an agent may correct or delete only what it wrote itself" in html
    assert "keys given the staff permission (on the Agents page) still may change it" in html
    assert "On: any agent that may write may change any agent&#x27;s memories" in html
    # Beside the box, what it means ticked and unticked (app.css shows the one that holds).
    assert (
        '<label for="id_agents_change_others" class="switch-state">'
        '<span class="when-on">On: any agent changes any agent&#x27;s writes</span>'
        '<span class="when-off">Off: each agent changes only its own writes</span></label>'
    ) in html
