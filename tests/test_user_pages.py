"""The end user's subject page: see, search, correct, delete and undo, confirm, resolve,
renew, pause, and read a memory's history — through the HTTP client, plain and htmx."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from ledger.actions.agents import restrict_agent
from ledger.actions.lifecycle import correct_memory
from ledger.actions.sources import SourceInput
from ledger.actors import Actor
from ledger.models import Conflict, Memory, Policy, Subject
from ledger.rules.agents import Restriction
from tests.conftest import PASSWORD, SUBJECT, body

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def dana(make_person, remember) -> Client:
    """Dana, signed in, owning SUBJECT (which already holds one memory)."""
    user = make_person("dana", subject=SUBJECT)
    remember(
        "Prefers email over telephone for billing questions.",
        key="contact.channel",
        source=SourceInput(
            kind="user_message", ref="msg_1", run="run_12", excerpt="please email me about invoices"
        ),
    )
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


def page_url() -> str:
    return reverse("subject", args=[SUBJECT])


def memory(statement: str) -> Memory:
    return Memory.objects.get(statement=statement)


def test_a_person_with_one_subject_lands_on_its_page(dana) -> None:
    response = dana.get("/")
    assert response.status_code == 302
    assert response["Location"] == page_url()


def test_page_shows_statement_label_origin_excerpt_and_expiry(dana) -> None:
    html = dana.get(page_url()).content.decode()
    assert "What the assistant remembers about you" in html
    assert "Prefers email over telephone for billing questions." in html
    assert "The assistant wrote this, citing your message" in html
    assert "from your message in the conversation of" in html
    assert "please email me about invoices" in html
    assert "Expires on" in html
    assert '<h2 id="group-preference">Preferences' in html


def test_memories_are_grouped_by_kind_newest_first(dana, remember) -> None:
    remember("Closed the March books late.", kind="episode")
    remember("Works in the Lisbon office.", kind="account_fact")
    remember("Likes short answers.")
    html = dana.get(page_url()).content.decode()
    assert html.index("Preferences") < html.index("Facts about the account")
    assert html.index("Facts about the account") < html.index("Past episodes")
    assert html.index("Likes short answers.") < html.index("Prefers email over telephone")


def test_guess_is_labelled_and_asked_as_a_question(dana, remember) -> None:
    remember("Runs a monthly close in the first week.", basis="inferred")
    html = dana.get(page_url()).content.decode()
    assert "The assistant thinks “Runs a monthly close in the first week.” — is that right?" in (
        html
    )
    assert "Is this right?" in html


@pytest.mark.parametrize("restriction", [Restriction.QUARANTINED, Restriction.STATED_UNTRUSTED])
def test_a_statement_an_admin_held_is_asked_as_what_the_assistant_says_was_said(
    dana, remember, agent, make_person, restriction
) -> None:
    restrict_agent(
        agent=agent, actor=Actor.system("test"), restriction=restriction, on=True, reason="CRM"
    )
    agent.refresh_from_db()
    held = remember("Pays by direct debit each month.")
    guess = remember("Probably pays late.", basis="inferred")
    assert held.status == guess.status == Memory.Status.PENDING
    html = dana.get(page_url()).content.decode()
    # Not a guess: the agent's claim that Dana said it, for her to confirm or deny.
    assert (
        "The assistant says you told it “Pays by direct debit each month.” — is that right?"
    ) in html
    assert "The assistant thinks “Pays by direct debit" not in html
    assert "The assistant thinks “Probably pays late.” — is that right?" in html

    make_person("sam", role="support")
    staff = Client()
    assert staff.login(username="sam", password=PASSWORD)
    html = staff.get(page_url()).content.decode()
    assert (
        "The assistant says the person told it “Pays by direct debit each month.” — "
        "has the person confirmed it?"
    ) in html
    assert "The assistant guessed “Probably pays late.” — has the person confirmed it?" in html
    assert "Waiting for the person to confirm" in html and "Guesses waiting" not in html
    assert html.count("Reject it (support)") == 1 and html.count("Reject the guess (support)") == 1


@pytest.mark.parametrize(
    ("statement", "said"),
    [
        ("Runs a monthly close in the first week of each month.", "month.</span>” It is"),
        ("Runs a monthly close", "close</span>”. It is"),
    ],
)
def test_a_confirmed_statement_is_quoted_with_one_full_stop(
    dana, remember, statement, said
) -> None:
    guess = remember(statement, basis="inferred")
    response = dana.post(reverse("memory-answer", args=[guess.pk]), {"answer": "yes"}, **HTMX)
    answered = response.content.decode()
    assert "The assistant may now use “" in answered and said in answered
    assert ".</span>”." not in answered


def test_search_finds_a_memory_and_htmx_gets_only_the_results(dana, remember) -> None:
    remember("Likes short answers.")
    plain = dana.get(page_url(), {"q": "short"}).content.decode()
    assert "Likes short answers." in plain
    assert "Prefers email over telephone" not in plain
    fragment = dana.get(page_url(), {"q": "short"}, HTTP_HX_TARGET="memory-list", **HTMX)
    text = fragment.content.decode()
    assert text.lstrip().startswith('<div id="memory-list"')
    assert "Likes short answers." in text
    assert "<html" not in text


def test_filters_by_kind_basis_and_status(dana, remember) -> None:
    remember("Closed the March books late.", kind="episode")
    remember("Runs payroll on Fridays.", basis="inferred", kind="account_fact")
    episodes = dana.get(page_url(), {"kind": "episode"}).content.decode()
    assert "Closed the March books late." in episodes
    assert "Prefers email" not in episodes
    guesses = dana.get(page_url(), {"basis": "inferred"}).content.decode()
    assert "Runs payroll on Fridays." in guesses
    assert "Closed the March books" not in guesses
    pending = dana.get(page_url(), {"status": "pending"}).content.decode()
    assert "Runs payroll on Fridays." in pending
    assert "Prefers email" not in pending


def test_a_search_with_no_match_says_how_to_see_everything(dana) -> None:
    html = dana.get(page_url(), {"q": "zebra"}).content.decode()
    assert "Nothing matches “zebra”" in html
    assert "Clear the search" in html


def test_empty_page_says_what_will_appear(make_person) -> None:
    make_person("fern", subject="acct_fern")
    client = Client()
    client.login(username="fern", password=PASSWORD)
    html = client.get("/", follow=True).content.decode()
    assert "Nothing is remembered about you right now." in html


def test_inline_correction_supersedes_and_keeps_the_old_in_history(dana) -> None:
    old = memory("Prefers email over telephone for billing questions.")
    form = dana.get(reverse("memory-edit", args=[old.pk]), **HTMX)
    assert 'name="statement"' in form.content.decode()
    response = dana.post(
        reverse("memory-edit", args=[old.pk]),
        {"statement": "Prefers a phone call for urgent billing questions.", "reason": ""},
        **HTMX,
    )
    assert response.status_code == 200
    text = response.content.decode()
    assert "Prefers a phone call for urgent billing questions." in text
    assert "You corrected this" in text
    assert "<html" not in text
    old.refresh_from_db()
    assert old.status == Memory.Status.SUPERSEDED
    new = old.superseded_by
    assert new.stated_by == "correction"
    history = dana.get(reverse("memory-history", args=[new.pk])).content.decode()
    assert "Prefers email over telephone for billing questions." in history
    assert "Replaced by a correction" in history
    assert "by you" in history


def test_an_empty_correction_is_refused_in_the_form(dana) -> None:
    old = memory("Prefers email over telephone for billing questions.")
    response = dana.post(reverse("memory-edit", args=[old.pk]), {"statement": "  "}, **HTMX)
    assert response.status_code == 400
    assert "cannot be empty" in response.content.decode()
    old.refresh_from_db()
    assert old.status == Memory.Status.ACTIVE


def test_a_too_long_correction_says_the_limit(dana) -> None:
    old = memory("Prefers email over telephone for billing questions.")
    response = dana.post(reverse("memory-edit", args=[old.pk]), {"statement": "x" * 201}, **HTMX)
    assert response.status_code == 400
    assert "at most 200 characters" in response.content.decode()


def test_correction_without_javascript_redirects_back_with_a_message(dana) -> None:
    old = memory("Prefers email over telephone for billing questions.")
    edit = dana.get(reverse("memory-edit", args=[old.pk]))
    assert edit.status_code == 302
    page = dana.get(edit["Location"]).content.decode()
    assert "Save correction" in page
    response = dana.post(
        reverse("memory-edit", args=[old.pk]), {"statement": "Prefers letters."}, follow=True
    )
    assert "Saved. The earlier version stays" in response.content.decode()


def test_delete_asks_first_then_retracts_and_offers_undo(dana) -> None:
    old = memory("Prefers email over telephone for billing questions.")
    ask = dana.get(reverse("memory-delete", args=[old.pk]), **HTMX).content.decode()
    assert "Delete this memory?" in ask
    assert "Yes, delete it" in ask
    old.refresh_from_db()
    assert old.status == Memory.Status.ACTIVE
    response = dana.post(reverse("memory-delete", args=[old.pk]), **HTMX)
    assert "Deleted." in response.content.decode()
    # The statement's own full stop ends the sentence that quotes it.
    assert "billing questions.</span>”</p>" in response.content.decode()
    assert "Undo" in response.content.decode()
    assert old.pk not in {m.pk for m in Memory.objects.servable()}
    assert "Prefers email" not in dana.get(page_url()).content.decode().split("Your data")[0]

    undone = dana.post(reverse("memory-undo", args=[old.pk]), **HTMX)
    assert undone.status_code == 200
    assert "Undone" in undone.content.decode()
    old.refresh_from_db()
    assert old.status == Memory.Status.ACTIVE


def test_undo_after_the_window_is_refused_with_a_reason(dana) -> None:
    old = memory("Prefers email over telephone for billing questions.")
    dana.post(reverse("memory-delete", args=[old.pk]), **HTMX)
    with time_machine.travel(timezone.now() + timedelta(seconds=31)):
        response = dana.post(reverse("memory-undo", args=[old.pk]), **HTMX)
    assert response.status_code == 409
    assert "Too late to undo" in response.content.decode()
    old.refresh_from_db()
    assert old.status == Memory.Status.RETRACTED


def test_the_undo_offer_is_withdrawn_once_its_window_has_passed(dana) -> None:
    old = memory("Prefers email over telephone for billing questions.")
    offer = dana.post(reverse("memory-delete", args=[old.pk]), **HTMX).content.decode()
    assert "for 30 seconds" in offer
    with time_machine.travel(timezone.now() + timedelta(seconds=31)):
        closed = dana.get(reverse("memory-undo", args=[old.pk]), **HTMX).content.decode()
        page = dana.get(page_url(), {"deleted": old.pk}).content.decode()
    for html in (closed, page):
        assert "It can no longer be undone" in html
        assert ">Undo</button>" not in html
    old.refresh_from_db()
    assert old.status == Memory.Status.RETRACTED


def test_delete_without_javascript_shows_undo_on_the_page(dana) -> None:
    old = memory("Prefers email over telephone for billing questions.")
    response = dana.post(reverse("memory-delete", args=[old.pk]), follow=True)
    assert "Deleted." in response.content.decode()
    assert reverse("memory-undo", args=[old.pk]) in response.content.decode()


def test_yes_to_a_guess_makes_it_active_and_stated_by_confirmation(dana, remember) -> None:
    guess = remember("Runs a monthly close in the first week.", basis="inferred")
    response = dana.post(reverse("memory-answer", args=[guess.pk]), {"answer": "yes"}, **HTMX)
    assert "Confirmed." in response.content.decode()
    guess.refresh_from_db()
    assert (guess.status, guess.basis, guess.stated_by) == ("active", "stated", "confirmation")
    assert "You confirmed this" in dana.get(page_url()).content.decode()
    # No longer a guess: it lives as long as a stated account fact, not a guess's capped life.
    policy = Policy.current()
    assert guess.expires_at > timezone.now() + timedelta(days=policy.inferred_max_days)


def test_no_to_a_guess_retracts_it(dana, remember) -> None:
    guess = remember("Runs a monthly close in the first week.", basis="inferred")
    response = dana.post(reverse("memory-answer", args=[guess.pk]), {"answer": "no"}, **HTMX)
    assert "Deleted." in response.content.decode()
    guess.refresh_from_db()
    assert guess.status == Memory.Status.RETRACTED


def test_an_answer_that_is_neither_yes_nor_no_is_refused(dana, remember) -> None:
    guess = remember("Runs a monthly close in the first week.", basis="inferred")
    response = dana.post(reverse("memory-answer", args=[guess.pk]), {"answer": "maybe"}, **HTMX)
    assert response.status_code == 400
    assert "Answer yes or no." in response.content.decode()


@pytest.fixture
def conflict(dana, remember) -> Conflict:
    remember("Prefers a phone call.", key="contact.channel")
    return Conflict.objects.open().get()


def test_conflict_is_shown_side_by_side_and_flagged_on_cards(dana, conflict) -> None:
    html = dana.get(page_url()).content.decode()
    assert "These disagree. Which is right?" in html
    assert html.count("Keep this one") == 2
    assert "conflicting" in html


def test_keeping_one_side_retracts_the_other_and_closes_the_conflict(dana, conflict) -> None:
    keep = memory("Prefers a phone call.")
    response = dana.post(reverse("conflict-resolve", args=[conflict.pk]), {"keep": keep.pk}, **HTMX)
    assert "Resolved. The assistant now remembers: “Prefers a phone call.”" in (
        response.content.decode()
    )
    conflict.refresh_from_db()
    assert conflict.status == Conflict.Status.RESOLVED
    other = memory("Prefers email over telephone for billing questions.")
    assert other.status == Memory.Status.RETRACTED
    assert other.history.first().history_change_reason == "Conflict resolved by the person."


def test_the_kept_memory_history_says_who_kept_it_and_over_what(dana, conflict, api) -> None:
    keep = memory("Prefers a phone call.")
    dana.post(reverse("conflict-resolve", args=[conflict.pk]), {"keep": keep.pk}, **HTMX)
    page = dana.get(reverse("memory-history", args=[keep.pk])).content.decode()
    assert "<strong>Kept when the conflict was resolved</strong> by you" in page
    assert "deleted instead “Prefers email over telephone for billing questions.”" in page
    history = api.get(f"/api/v1/memories/{keep.pk}/history").json()["results"]
    assert history[0]["actor"] == "user:dana"
    assert history[0]["reason"] == (
        "Kept when the conflict was resolved by the person: "
        "deleted instead “Prefers email over telephone for billing questions.”"
    )
    assert memory("Prefers a phone call.").status == Memory.Status.ACTIVE


def test_rewriting_a_conflict_corrects_one_and_retracts_the_rest(dana, conflict) -> None:
    response = dana.post(
        reverse("conflict-resolve", args=[conflict.pk]),
        {"statement": "Prefers email, and a call only when urgent."},
        **HTMX,
    )
    assert response.status_code == 200
    live = Memory.objects.filter(subject__ref=SUBJECT).live()
    assert [m.statement for m in live] == ["Prefers email, and a call only when urgent."]
    conflict.refresh_from_db()
    assert conflict.status == Conflict.Status.RESOLVED


def test_resolving_with_no_choice_says_what_to_do(dana, conflict) -> None:
    response = dana.post(reverse("conflict-resolve", args=[conflict.pk]), {}, **HTMX)
    assert response.status_code == 400
    assert "Pick the statement to keep" in response.content.decode()


def test_keeping_a_side_deleted_meanwhile_is_refused_in_its_box_leaving_the_list(
    dana, conflict
) -> None:
    # A page open in another tab still offers the side deleted since.
    deleted = memory("Prefers a phone call.")
    dana.post(reverse("memory-delete", args=[deleted.pk]), **HTMX)
    response = dana.post(
        reverse("conflict-resolve", args=[conflict.pk]), {"keep": deleted.pk}, **HTMX
    )
    assert response.status_code in (400, 409)
    assert response["HX-Retarget"] == f"#conflict-{conflict.pk}"
    assert response["HX-Reswap"] == "outerHTML"
    assert f'id="conflict-{conflict.pk}"' in response.content.decode()


def test_expired_memory_says_when_and_can_be_renewed(dana, remember) -> None:
    ends = timezone.now() + timedelta(days=1)
    trip = remember("Is travelling this week.", expires_at=ends, expires_omitted=False)
    with time_machine.travel(ends + timedelta(days=1)):
        html = dana.get(page_url()).content.decode()
        assert f"expired on {ends.day} {ends:%B %Y}" in html
        assert "Keep it for" in html
        # Periods in words, each with the day it lasts until: no browser date format.
        until = timezone.now() + timedelta(days=30)
        assert f">1 month (until {until.day} {until:%B %Y})</option>" in html
        assert 'type="date"' not in html
        response = dana.post(reverse("memory-renew", args=[trip.pk]), {"period": "30"}, **HTMX)
    assert "Renewed: kept until" in response.content.decode()
    trip.refresh_from_db()
    assert trip.expires_at.date() == until.date()
    assert trip.status == Memory.Status.ACTIVE


def test_renewing_preselects_the_kinds_usual_life(dana, remember) -> None:
    ends = timezone.now() + timedelta(days=1)
    remember("Is travelling this week.", kind="episode", expires_at=ends, expires_omitted=False)
    with time_machine.travel(ends + timedelta(days=1)):
        html = dana.get(page_url()).content.decode()
    # An episode lives 90 days by default: that period is the one preselected.
    assert '<option value="90" selected>3 months' in html


def test_renewing_without_javascript_redirects_back_with_a_message(dana) -> None:
    kept = memory("Prefers email over telephone for billing questions.")
    now = timezone.now()
    with time_machine.travel(now, tick=False):
        response = dana.post(
            reverse("memory-renew", args=[kept.pk]), {"period": "365"}, follow=True
        )
    assert "Renewed: kept until" in response.content.decode()
    kept.refresh_from_db()
    assert kept.expires_at == now + timedelta(days=365)


@pytest.mark.parametrize("period", ["", "0", "-30", "31", "abc", "9999999999", "2099-01-01"])
def test_a_period_not_offered_is_refused_and_nothing_written(dana, period) -> None:
    kept = memory("Prefers email over telephone for billing questions.")
    before = (kept.expires_at, kept.version, kept.history.count())
    response = dana.post(reverse("memory-renew", args=[kept.pk]), {"period": period}, **HTMX)
    assert response.status_code == 400
    assert "Choose how long to keep it: one of 1 week, 1 month" in response.content.decode()
    kept.refresh_from_db()
    assert (kept.expires_at, kept.version, kept.history.count()) == before


def test_a_guess_is_offered_no_longer_than_the_longest_life_of_a_guess(dana, remember) -> None:
    guess = remember("Probably works in finance.", basis="inferred")
    longest = Policy.current().inferred_max_days
    refused = dana.post(reverse("memory-renew", args=[guess.pk]), {"period": "365"}, **HTMX)
    assert refused.status_code == 400
    dana.post(reverse("memory-renew", args=[guess.pk]), {"period": str(longest)}, **HTMX)
    guess.refresh_from_db()
    assert guess.expires_at <= timezone.now() + timedelta(days=longest)
    assert guess.expires_at > timezone.now() + timedelta(days=longest - 1)


def test_expiring_soon_badge(dana, remember) -> None:
    remember(
        "Is travelling next week.",
        expires_at=timezone.now() + timedelta(days=3),
        expires_omitted=False,
    )
    assert "expiring soon" in dana.get(page_url()).content.decode()


def test_pause_switch_makes_the_gate_refuse_and_the_page_say_so(dana, api) -> None:
    subject = Subject.objects.get(ref=SUBJECT)
    response = dana.post(reverse("subject-pause", args=[subject.ref]), {"paused": "on"}, **HTMX)
    assert "Memory is paused" in response.content.decode()
    refused = api.post("/api/v1/memories", body(statement="Likes tea."), format="json")
    assert refused.status_code == 423
    assert refused.json()["code"] == "memory_paused"
    assert "Memory is paused" in dana.get(page_url()).content.decode()
    subject.refresh_from_db()
    assert subject.history.first().history_actor == "user:dana"

    dana.post(reverse("subject-pause", args=[subject.ref]), {"paused": "off"}, **HTMX)
    assert api.post(
        "/api/v1/memories", body(statement="Likes tea."), format="json"
    ).status_code == (201)


def test_history_names_who_changed_it_in_words(dana, agent) -> None:
    old = memory("Prefers email over telephone for billing questions.")
    new = correct_memory(
        memory=old, actor=Actor.for_agent(agent), statement="Prefers letters.", reason="asked"
    )
    html = dana.get(reverse("memory-history", args=[new.pk])).content.decode()
    assert "the assistant (fixture-agent)" in html
    assert "Latest version" in html
    assert "Earlier version" in html


def test_hostile_statements_are_escaped_and_csp_is_sent(dana, remember) -> None:
    remember("<script>alert(1)</script>")
    remember('"><img src=x onerror=alert(1)>')
    response = dana.get(page_url())
    html = response.content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<img src=x" not in html
    assert "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in html
    csp = response["Content-Security-Policy"]
    assert "script-src 'self'" in csp
    assert "unsafe-inline" not in csp
    assert "<script>" not in html.replace('<script src="', "")


def test_support_sees_the_page_in_their_own_words(dana, make_person) -> None:
    make_person("sam", role="support")
    client = Client()
    client.login(username="sam", password=PASSWORD)
    html = client.get(page_url()).content.decode()
    assert "What the assistant remembers about acct_4b71c9e20d8af315" in html
    assert "The assistant wrote this, citing the person’s message" in html
    assert "from the person’s message in the conversation of" in html


def test_only_the_person_who_deleted_can_undo(dana, make_person) -> None:
    make_person("sam", role="support")
    support = Client()
    support.login(username="sam", password=PASSWORD)
    old = memory("Prefers email over telephone for billing questions.")
    support.post(reverse("memory-delete", args=[old.pk]), {"reason": "Ticket 7."}, **HTMX)
    response = dana.post(reverse("memory-undo", args=[old.pk]), **HTMX)
    assert response.status_code == 409
    assert "Only the person who deleted it can undo that." in response.content.decode()
    old.refresh_from_db()
    assert old.status == Memory.Status.RETRACTED


def test_support_must_say_why_they_correct(dana, make_person) -> None:
    make_person("sam", role="support")
    support = Client()
    support.login(username="sam", password=PASSWORD)
    old = memory("Prefers email over telephone for billing questions.")
    url = reverse("memory-edit", args=[old.pk])
    refused = support.post(url, {"statement": "Prefers letters."}, **HTMX)
    assert refused.status_code == 400
    assert "Support must say why" in refused.content.decode()
    support.post(url, {"statement": "Prefers letters.", "reason": "Ticket 41"}, **HTMX)
    old.refresh_from_db()
    assert old.superseded_by.statement == "Prefers letters."
    assert "You corrected this" in support.get(page_url()).content.decode()
    assert "Corrected by support" in dana.get(page_url()).content.decode()


def test_the_undo_offer_of_a_memory_restored_elsewhere_shows_the_memory(dana) -> None:
    kept = memory("Prefers email over telephone for billing questions.")
    dana.post(reverse("memory-delete", args=[kept.pk]), **HTMX)
    dana.post(reverse("memory-undo", args=[kept.pk]), **HTMX)
    # The first tab's timer re-fetches its offer: the memory is back, so no "Deleted".
    offer = dana.get(reverse("memory-undo", args=[kept.pk]), **HTMX).content.decode()
    assert "Deleted." not in offer and "can no longer be undone" not in offer
    assert kept.statement in offer


def test_only_the_one_who_deleted_is_offered_undo(dana, make_person) -> None:
    kept = memory("Prefers email over telephone for billing questions.")
    support = Client()
    support.force_login(make_person("sam", role="support"))
    support.post(reverse("memory-delete", args=[kept.pk]), {"reason": "Duplicate."}, **HTMX)
    offer = dana.get(reverse("memory-undo", args=[kept.pk]), **HTMX).content.decode()
    assert "Deleted." in offer
    assert ">Undo</button>" not in offer
