""" "True, but don't use it": the person keeps a memory and the assistant is never given it,
until they let it be used again. Recall, the page (htmx and plain), who may, the audit and
the API."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from ledger.actions.lifecycle import correct_memory, withhold_memory
from ledger.actions.sources import SourceInput
from ledger.actors import Actor
from ledger.models import Conflict, Memory
from ledger.rules.memories import MemoryMove, allows, memory_statuses_allowing
from ledger.rules.refusals import Refusal
from tests.conftest import PASSWORD, SUBJECT, signed_in

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
RECALL = f"/api/v1/subjects/{SUBJECT}/recall"
STATEMENT = "Is recovering from a knee operation."


@pytest.fixture
def dana(make_person: Callable[..., User]) -> User:
    return make_person("dana", subject=SUBJECT)


@pytest.fixture
def knee(dana: User, remember: Callable[..., Memory]) -> Memory:
    remember("Prefers email.")
    return remember(STATEMENT, kind="episode")


def withhold(memory: Memory, person: User, withheld: bool = True) -> Memory:
    return withhold_memory(memory=memory, actor=Actor.for_user(person), withheld=withheld)


def recalled(api: APIClient, **params: Any) -> dict[str, Any]:
    response = api.get(RECALL, {"goal": "knee operation email", "k": 20, **params})
    assert response.status_code == 200
    data: dict[str, Any] = response.json()
    return data


def served(api: APIClient) -> list[str]:
    return [m["statement"] for m in recalled(api)["memories"]]


# Recall


def test_a_withheld_memory_is_never_recalled_and_is_again_once_allowed(
    api: APIClient, knee: Memory, dana: User
) -> None:
    assert STATEMENT in served(api)
    withhold(knee, dana)
    data = recalled(api)
    assert [m["statement"] for m in data["memories"]] == ["Prefers email."]
    assert STATEMENT not in data["block"]
    text = api.get(RECALL, {"goal": "knee", "format": "text"}).content.decode()
    assert STATEMENT not in text

    withhold(knee, dana, withheld=False)
    assert STATEMENT in served(api)
    assert STATEMENT in recalled(api)["block"]


def test_a_withheld_contender_leaves_the_conflicts_section(
    api: APIClient, dana: User, remember: Callable[..., Memory]
) -> None:
    email = remember("Wants invoices by email.", key="contact.channel")
    remember("Wants invoices by post.", key="contact.channel")
    assert len(recalled(api)["conflicts"]) == 1
    withhold(email, dana)
    data = recalled(api)
    assert data["conflicts"] == []
    assert "UNRESOLVED CONFLICT" not in data["block"]
    assert "Wants invoices by email." not in data["block"]
    assert [m["statement"] for m in data["memories"]] == ["Wants invoices by post."]
    # Still live for the people: the conflict stays open for the person to settle.
    assert Conflict.objects.open().filter(key="contact.channel").exists()


def test_what_was_served_is_recorded_without_the_withheld_memory(
    api: APIClient, knee: Memory, dana: User
) -> None:
    withhold(knee, dana)
    recalled(api, run="run_withheld")
    assert not knee.recall_items.exists()


def test_a_repeat_merges_into_the_withheld_memory_instead_of_bringing_it_back(
    api: APIClient, knee: Memory, dana: User, remember: Callable[..., Memory]
) -> None:
    withhold(knee, dana)
    again = remember(STATEMENT, kind="episode", source=SourceInput(kind="user_message", ref="m9"))
    assert again.pk == knee.pk
    assert Memory.objects.filter(statement=STATEMENT).count() == 1
    assert STATEMENT not in served(api)


def test_a_correction_of_a_withheld_memory_stays_withheld(
    api: APIClient, knee: Memory, dana: User, agent: Any
) -> None:
    withhold(knee, dana)
    new = correct_memory(
        memory=knee,
        actor=Actor.for_agent(agent),
        statement="Is recovering from a hip operation.",
        reason="misheard",
        source=SourceInput(kind="user_message", ref="msg_hip"),
    )
    assert new.withheld
    assert "Is recovering from a hip operation." not in served(api)


def test_a_correction_of_a_withheld_memory_into_anothers_words_keeps_them_unused(
    api: APIClient, knee: Memory, dana: User, make_person: Callable[..., User]
) -> None:
    withhold(knee, dana)
    sam = make_person("sam", role="support")
    kept = correct_memory(
        memory=knee, actor=Actor.for_user(sam), statement="Prefers email.", reason="misfiled"
    )
    assert kept.statement == "Prefers email." and kept.withheld
    assert served(api) == []
    why = kept.history.order_by("-history_date", "-history_id").first()
    assert why is not None and why.history_actor == Actor.for_user(sam).label
    assert "does not want the assistant to use" in why.history_change_reason


# Who may, and the lifecycle


def test_support_and_admins_may_not_withhold_for_the_person(
    knee: Memory, make_person: Callable[..., User]
) -> None:
    for role in ("support", "admin"):
        staff = make_person(f"staff_{role}", role=role)
        with pytest.raises(Refusal) as refused:
            withhold(knee, staff)
        assert (refused.value.code, refused.value.status) == ("not_the_person", 403)
    knee.refresh_from_db()
    assert not knee.withheld


def test_a_superseded_memory_cannot_be_withheld(knee: Memory, dana: User) -> None:
    correct_memory(memory=knee, actor=Actor.for_user(dana), statement="Walks again.", reason="")
    with pytest.raises(Refusal) as refused:
        withhold(knee, dana)
    assert (refused.value.code, refused.value.status) == ("not_withholdable", 409)


def test_asking_twice_writes_nothing_new(knee: Memory, dana: User) -> None:
    withhold(knee, dana)
    rows = knee.history.count()
    withhold(knee, dana)
    assert knee.history.count() == rows


def test_the_lifecycle_offers_withholding_only_where_a_person_can_act() -> None:
    move = MemoryMove.WITHHOLD
    assert memory_statuses_allowing(move) == ("active", "expired")
    assert "pending" in memory_statuses_allowing(MemoryMove.ALLOW)
    for status in ("superseded", "retracted", "erased"):
        assert not allows(status, move)


# The page


def test_dont_use_this_with_htmx_labels_the_card_and_offers_use_it_again(
    knee: Memory, dana: User
) -> None:
    client = signed_in(dana)
    page = client.get(reverse("subject", args=[SUBJECT])).content.decode()
    assert "Don’t use this" in page
    response = client.post(reverse("memory-withhold", args=[knee.pk]), {"use": "no"}, **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'class="memory card"' in html
    assert "not used by the assistant" in html
    assert "Use it again" in html
    assert "The assistant will not use this any more." in html
    knee.refresh_from_db()
    assert knee.withheld
    assert knee.status == Memory.Status.ACTIVE

    response = client.post(reverse("memory-withhold", args=[knee.pk]), {"use": "yes"}, **HTMX)
    assert "The assistant may use this again." in response.content.decode()
    assert "Don’t use this" in response.content.decode()
    knee.refresh_from_db()
    assert not knee.withheld


def test_dont_use_this_without_javascript_redirects_back_with_a_message(
    knee: Memory, dana: User
) -> None:
    client = signed_in(dana)
    response = client.post(reverse("memory-withhold", args=[knee.pk]), {"use": "no"})
    assert response.status_code == 302
    assert response["Location"].endswith(f"#memory-{knee.pk}")
    page = client.get(response["Location"]).content.decode()
    assert "The assistant will not use this any more." in page
    assert "not used by the assistant" in page
    assert "Use it again" in page


def test_the_form_needs_its_csrf_token(knee: Memory, dana: User) -> None:
    client = Client(enforce_csrf_checks=True)
    client.login(username="dana", password=PASSWORD)
    response = client.post(reverse("memory-withhold", args=[knee.pk]), {"use": "no"})
    assert response.status_code == 403
    knee.refresh_from_db()
    assert not knee.withheld


def test_someone_elses_memory_is_a_404(knee: Memory, make_person: Callable[..., User]) -> None:
    other = signed_in(make_person("erin", subject="acct_erin"))
    assert other.post(reverse("memory-withhold", args=[knee.pk]), {"use": "no"}).status_code == 404
    assert other.get(reverse("memory-uses", args=[knee.pk]), **HTMX).status_code == 404
    knee.refresh_from_db()
    assert not knee.withheld


@pytest.mark.parametrize("data", [{}, {"use": "maybe"}, {"use": "no" * 500}])
def test_bad_input_is_said_not_a_500(knee: Memory, dana: User, data: dict[str, str]) -> None:
    client = signed_in(dana)
    response = client.post(reverse("memory-withhold", args=[knee.pk]), data, **HTMX)
    assert response.status_code == 400
    assert "Say whether the assistant may use it." in response.content.decode()
    # Without JavaScript: the page itself, with the same status and words.
    plain = client.post(reverse("memory-withhold", args=[knee.pk]), data)
    assert plain.status_code == 400
    assert "Say whether the assistant may use it." in plain.content.decode()
    knee.refresh_from_db()
    assert not knee.withheld


def test_get_is_not_allowed(knee: Memory, dana: User) -> None:
    assert signed_in(dana).get(reverse("memory-withhold", args=[knee.pk])).status_code == 405


def test_support_sees_the_label_but_no_button_and_is_refused(
    knee: Memory, dana: User, make_person: Callable[..., User]
) -> None:
    withhold(knee, dana)
    support = signed_in(make_person("sam", role="support"))
    page = support.get(reverse("subject", args=[SUBJECT])).content.decode()
    assert "not used by the assistant" in page
    assert "The person asked the assistant not to use this" in page
    assert "Use it again" not in page
    assert "Don’t use this" not in page
    response = support.post(reverse("memory-withhold", args=[knee.pk]), {"use": "yes"}, **HTMX)
    assert response.status_code == 403
    assert "Only the person this memory is about" in response.content.decode()
    plain = support.post(reverse("memory-withhold", args=[knee.pk]), {"use": "yes"})
    assert plain.status_code == 403
    assert "Only the person this memory is about" in plain.content.decode()
    knee.refresh_from_db()
    assert knee.withheld


# The audit


def test_history_page_and_api_history_say_who_and_why(
    api: APIClient, knee: Memory, dana: User
) -> None:
    client = signed_in(dana)
    client.post(reverse("memory-withhold", args=[knee.pk]), {"use": "no"}, **HTMX)
    client.post(reverse("memory-withhold", args=[knee.pk]), {"use": "yes"}, **HTMX)
    html = client.get(reverse("memory-history", args=[knee.pk])).content.decode()
    assert "Not to be used by the assistant</strong> by you" in html
    assert "Allowed to be used again</strong> by you" in html
    assert "True, but the person does not want the assistant to use it." in html

    rows = api.get(f"/api/v1/memories/{knee.pk}/history").json()["results"]
    withheld, allowed = rows[1], rows[0]
    assert (withheld["withheld"], withheld["actor"]) == (True, "user:dana")
    assert withheld["reason"] == "True, but the person does not want the assistant to use it."
    assert withheld["changed_fields"] == ["version", "withheld"]
    assert (allowed["withheld"], allowed["actor"]) == (False, "user:dana")


def test_the_api_shows_the_state_and_does_not_take_it(
    api: APIClient, knee: Memory, dana: User
) -> None:
    url = f"/api/v1/memories/{knee.pk}"
    assert api.get(url).json()["withheld"] is False
    withhold(knee, dana)
    data = api.get(url).json()
    assert data["withheld"] is True
    assert data["status"] == "active"
    assert api.patch(url, {"withheld": False}, format="json").status_code == 405
    knee.refresh_from_db()
    assert knee.withheld
    schema = APIClient().get("/api/schema/?format=json").json()
    field = schema["components"]["schemas"]["Memory"]["properties"]["withheld"]
    assert field["readOnly"] is True


def test_an_agent_told_of_a_conflict_learns_which_statement_it_must_not_use(
    api: APIClient, dana: User, remember: Callable[..., Memory]
) -> None:
    email = remember("Wants invoices by email.", key="invoice.channel")
    withhold(email, dana)
    response = api.post(
        "/api/v1/memories",
        {
            "subject": SUBJECT,
            "kind": "preference",
            "key": "invoice.channel",
            "statement": "Wants invoices by post.",
            "basis": "stated",
            "source": {"kind": "user_message", "ref": "msg_9"},
        },
        format="json",
    )
    assert response.status_code == 201
    statements = {s["statement"]: s["withheld"] for s in response.json()["conflict"]["statements"]}
    assert statements == {"Wants invoices by email.": True, "Wants invoices by post.": False}
    subject = api.get(f"/api/v1/subjects/{SUBJECT}").json()
    listed = {s["statement"]: s["withheld"] for s in subject["open_conflicts"][0]["statements"]}
    assert listed == statements


def test_a_withheld_guess_can_be_let_go_from_its_question_and_confirming_says_it_stays_unused(
    knee: Memory, dana: User, agent: Any
) -> None:
    withhold(knee, dana)
    # An agent's correction without the person's message is a guess, and stays withheld.
    guess = correct_memory(
        memory=knee, actor=Actor.for_agent(agent), statement="Had a hip operation.", reason=""
    )
    assert (guess.status, guess.withheld) == (Memory.Status.PENDING, True)
    client = signed_in(dana)
    page = client.get(reverse("subject", args=[SUBJECT])).content.decode()
    question = page.split(f'id="memory-{guess.pk}"')[1].split("</article>")[0]
    assert "Use it again" in question
    answered = client.post(reverse("memory-answer", args=[guess.pk]), {"answer": "yes"}, **HTMX)
    assert "still not used by the assistant" in answered.content.decode()
    assert "may now use" not in answered.content.decode()
