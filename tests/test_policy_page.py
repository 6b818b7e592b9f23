"""The write policy in the product: an admin changes it on its own page, with a reason, and
the change applies to the next write while every memory keeps the version that accepted it."""

from __future__ import annotations

import html
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from playwright.sync_api import expect

from ledger.actions.policy import change_policy
from ledger.actions.sources import SourceInput
from ledger.actors import Actor
from ledger.models import Memory, Policy
from ledger.rules.refusals import Refusal
from ledger.rules.write_policy import POLICY_SETTINGS, PolicyRefusal
from tests.conftest import sign_in, signed_in

pytestmark = pytest.mark.django_db

URL = "/policy/"
NOW = datetime(2027, 3, 4, 9, 0, tzinfo=UTC)
ADMIN = Actor.system("test")


@pytest.fixture
def ada(make_person: Callable[..., User]) -> Client:
    make_person("ada", role="admin")
    return signed_in("ada")


def form(**changes: Any) -> dict[str, Any]:
    """The policy page's form as the page fills it in, with some values typed over."""
    current = Policy.current()
    data: dict[str, Any] = {s.name: getattr(current, s.name) for s in POLICY_SETTINGS}
    data["system_of_record_keys"] = "\n".join(current.system_of_record_keys)
    data.update(version=current.version, reason="Guesses were kept too long.")
    data.update(changes)
    return data


def snapshot() -> tuple[int, int, dict[str, Any]]:
    current = Policy.current()
    values = {s.name: getattr(current, s.name) for s in POLICY_SETTINGS}
    return current.version, Policy.history.count(), values


def guess(remember: Callable[..., Memory], statement: str, ref: str) -> Memory:
    return remember(statement, basis="inferred", source=SourceInput(kind="user_message", ref=ref))


# The page.


def test_the_page_shows_every_setting_with_its_meaning_bounds_and_value(ada: Client) -> None:
    response = ada.get(URL)
    assert response.status_code == 200
    page = html.unescape(response.content.decode())
    assert "In force: <strong>version 1</strong>" in page
    for setting in POLICY_SETTINGS:
        assert setting.label in page
        assert setting.meaning in page
        assert setting.bounds.capitalize() in page
    assert "From 1 to 10 agents. In force now: 2 agents." in page
    assert "From 1 to 36500 days. In force now: 30 days." in page
    assert 'name="inferred_max_days" value="30" min="1" max="36500"' in page
    assert "billing.address\ncontact.email" not in page  # one key a line, as stored
    assert "billing.address\nbilling.email\ncontact.email" in page
    assert 'name="reason"' in page and "required" in page
    # Version 1 is what ships, listed in full, where a memory's trace links to.
    assert 'id="version-1"' in page
    assert "The settings memoryadmin ships with" in page
    assert 'style="' not in page


def test_a_change_is_saved_as_a_new_version_with_before_after_who_and_why(ada: Client) -> None:
    response = ada.post(URL, form(inferred_max_days=14, reason="Guesses went stale."))
    assert response.status_code == 302
    assert response["Location"] == "/policy/#version-2"
    current = Policy.current()
    assert (current.version, current.inferred_max_days) == (2, 14)
    latest = current.history.first()
    assert latest.history_actor == "user:ada"
    assert latest.history_role == "admin"
    assert latest.history_change_reason == "Guesses went stale."

    page = ada.get(response["Location"]).content.decode()
    assert "Saved as version 2. It applies to the next write" in page
    assert "memories already written keep the expiry and the version" in page
    assert "In force: <strong>version 2</strong>" in page
    assert "set by you (an admin)" in page
    assert "Why: Guesses went stale." in page
    assert "Longest life of a guess: <del>30 days</del> → <ins>14 days</ins>" in page


def test_the_history_lists_every_version_newest_first_each_against_the_one_before(
    ada: Client, make_person: Callable[..., User]
) -> None:
    change_policy(actor=ADMIN, reason="Fewer guesses in use.", inferred_sources_required=3)
    make_person("alex", role="admin")
    alex = Actor.for_user(User.objects.get(username="alex"))
    change_policy(
        actor=alex,
        reason="The CRM owns the channel now.",
        system_of_record_keys=["billing.address", "contact.channel"],
        recall_cap=10,
    )
    page = ada.get(URL).content.decode()
    third, second, first = (page.index(f'id="version-{n}"') for n in (3, 2, 1))
    assert third < second < first
    assert "alex (an admin)" in page[third:second]
    assert "Why: The CRM owns the channel now." in page[third:second]
    assert "Memories per recall: <del>20 memories</del> → <ins>10 memories</ins>" in page
    assert (
        "Slots another system owns: <del>billing.address, billing.email, contact.email, "
        "contact.phone, payment.method</del> → <ins>billing.address, contact.channel</ins>"
    ) in page[third:second]
    assert "Agents a guess needs: <del>2 agents</del> → <ins>3 agents</ins>" in page[second:first]
    assert "the system (test)" in page[second:first]
    # Each version says only what it changed.
    assert "Agents a guess needs" not in page[third:second].split("</h3>", 1)[1]


def test_keys_are_typed_one_a_line_and_a_write_to_a_new_one_is_refused(
    ada: Client, api: Any
) -> None:
    typed = "billing.address\r\n\r\n  contact.channel , payment.method\r\n"
    response = ada.post(URL, form(system_of_record_keys=typed))
    assert response.status_code == 302
    keys = ["billing.address", "contact.channel", "payment.method"]
    assert Policy.current().system_of_record_keys == keys
    refused = api.post(
        "/api/v1/memories",
        {
            "subject": "acct_1",
            "kind": "preference",
            "key": "contact.channel",
            "statement": "Prefers email.",
            "basis": "stated",
            "source": {"kind": "user_message", "ref": "msg_1"},
        },
        format="json",
    )
    assert refused.status_code == 422
    assert refused.json()["code"] == "system_of_record"


# The next write, and the memories already written.


def test_a_change_applies_to_the_next_write_and_not_to_memories_already_written(
    make_person: Callable[..., User],
    remember: Callable[..., Memory],
    clock: Callable[[datetime], None],
) -> None:
    clock(NOW)
    make_person("ada", role="admin")
    before = guess(remember, "Probably works night shifts.", "msg_1")
    assert before.policy_version == 1
    assert before.expires_at == NOW + timedelta(days=30)

    clock(NOW + timedelta(hours=1))
    response = signed_in("ada").post(URL, form(inferred_max_days=7, reason="Stale guesses."))
    assert response["Location"] == "/policy/#version-2"

    clock(NOW + timedelta(hours=2))
    after = guess(remember, "Probably has a dog.", "msg_2")
    assert after.policy_version == 2
    assert after.expires_at == NOW + timedelta(hours=2, days=7)
    before.refresh_from_db()
    assert before.policy_version == 1
    assert before.expires_at == NOW + timedelta(days=30)


# Bad input: a 400 in words beside the field, what was typed kept, nothing changed.


@pytest.mark.parametrize(
    ("field", "typed", "words"),
    [
        ("inferred_sources_required", "0", "Choose from 1 to 10 agents; 0 is outside that."),
        ("inferred_sources_required", "11", "Choose from 1 to 10 agents; 11 is outside that."),
        ("ttl_preference_days", "36501", "Choose from 1 to 36500 days; 36501 is outside that."),
        ("ttl_preference_days", "10000000", "Choose from 1 to 36500 days"),
        ("ttl_episode_days", "-5", "Choose from 1 to 36500 days; -5 is outside that."),
        ("review_episode_days", "0", "Choose from 1 to 36500 days; 0 is outside that."),
        ("subject_active_cap", "0", "Choose from 1 to 10000 memories; 0 is outside that."),
        ("recall_cap", "500", "Choose from 1 to 100 memories; 500 is outside that."),
        ("recall_cap", "ten", "Give a whole number of memories, such as 20."),
        ("ttl_episode_days", "1.5", "Give a whole number of days, such as 90."),
        ("ttl_episode_days", "", "Give a number of days."),
        ("ttl_episode_days", "9" * 5000, "Give a whole number of days, such as 90."),
        ("inferred_max_days", "100", "At most 90 days, the life of an episode"),
        ("system_of_record_keys", "Billing Address", "“Billing” is not a slot key"),
        ("system_of_record_keys", "billing.address\nbilling.address", "listed twice"),
        ("system_of_record_keys", "billing.address\u200b", "invisible character (U+200B)"),
        ("system_of_record_keys", "a" * 101, "at most 100 characters"),
        ("system_of_record_keys", "\n".join(f"k.{n}" for n in range(101)), "At most 100 keys"),
        ("reason", "   ", "Say why the policy changes"),
        ("reason", "why\x00", "invisible character"),
        ("reason", "why\u202e", "invisible character (U+202E)"),
    ],
)
def test_bad_values_are_refused_in_words_beside_the_field_and_nothing_changes(
    ada: Client, field: str, typed: str, words: str
) -> None:
    before = snapshot()
    response = ada.post(URL, form(**{field: typed}))
    assert response.status_code == 400
    page = response.content.decode()
    assert "Nothing was changed" in page
    error = page.split(f'id="error-{field}">', 1)[1].split("</p>", 1)[0]
    assert words in error.replace("&#x27;", "'")
    # What was typed stays in the field; the page never shows a database's words.
    if field != "reason" and len(typed) < 1000 and "\x00" not in typed:
        assert typed.strip() in page
    assert "constraint" not in page.lower()
    assert snapshot() == before


def test_every_problem_is_shown_at_once(ada: Client) -> None:
    response = ada.post(URL, form(inferred_sources_required=0, recall_cap=0, reason=""))
    assert response.status_code == 400
    page = response.content.decode()
    assert "2 settings need another value, shown beside them" in page
    assert 'id="error-inferred_sources_required"' in page
    assert 'id="error-recall_cap"' in page
    assert 'id="error-reason">Say why the policy changes' in page


def test_a_form_from_before_another_change_is_refused_and_then_accepted(ada: Client) -> None:
    stale = form(recall_cap=12)
    change_policy(actor=ADMIN, reason="Someone else first.", subject_active_cap=150)
    response = ada.post(URL, stale)
    assert response.status_code == 409
    page = response.content.decode()
    assert "The policy changed while you were editing it: it is now version 2, not 1." in page
    assert 'value="12"' in page  # what was typed is kept …
    assert 'name="version" value="2"' in page  # … and may now be sent against version 2
    assert (Policy.current().version, Policy.current().recall_cap) == (2, 20)
    # The stale form carried the old cap; sent again it is the admin's to decide.
    again = ada.post(URL, {**stale, "version": 2, "subject_active_cap": 150})
    assert again.status_code == 302
    assert (Policy.current().version, Policy.current().recall_cap) == (3, 12)


def test_saving_with_nothing_changed_makes_no_version(ada: Client) -> None:
    before = snapshot()
    response = ada.post(URL, form())
    assert response.status_code == 400
    assert "Nothing to save: every setting already has the value you gave" in (
        response.content.decode()
    )
    assert snapshot() == before


def test_an_unknown_field_is_refused(ada: Client) -> None:
    before = snapshot()
    response = ada.post(URL, form(version_bump="1"))
    assert response.status_code == 400
    assert "Unknown field: version_bump." in response.content.decode()
    assert snapshot() == before


# change_policy itself: no route can store a bad value or reach a database constraint.


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"inferred_sources_required": 0}, "Agents a guess needs (inferred_sources_required)"),
        ({"ttl_preference_days": 10_000_000}, "Life of a preference (ttl_preference_days)"),
        ({"recall_cap": 40_000}, "Memories per recall (recall_cap)"),
        ({"subject_active_cap": -1}, "Live memories per subject (subject_active_cap)"),
        ({"inferred_max_days": True}, "Longest life of a guess (inferred_max_days)"),
        ({"inferred_max_days": "7"}, "Longest life of a guess (inferred_max_days)"),
        ({"ttl_episode_days": 10}, "Longest life of a guess (inferred_max_days): At most 10"),
        ({"system_of_record_keys": "billing.address"}, "Slots another system owns"),
        ({"system_of_record_keys": ["billing.address\n"]}, "invisible character (U+000A)"),
        ({"system_of_record_keys": ["BILLING"]}, "“BILLING” is not a slot key"),
    ],
)
def test_change_policy_refuses_out_of_bounds_values_naming_the_setting(
    changes: dict[str, Any], named: str
) -> None:
    before = snapshot()
    with pytest.raises(PolicyRefusal) as refused:
        change_policy(actor=ADMIN, reason="test", **changes)
    assert refused.value.code == "policy_out_of_bounds"
    assert refused.value.status == 400
    assert named in refused.value.detail
    assert refused.value.detail.endswith("Nothing was changed.")
    assert snapshot() == before


@pytest.mark.parametrize(
    ("reason", "changes", "code"),
    [
        ("", {"recall_cap": 10}, "reason_required"),
        ("test", {"version": 9}, "policy_unknown_setting"),
        ("test", {"id": 2}, "policy_unknown_setting"),
        ("test", {"recall_cap": 20}, "policy_unchanged"),
    ],
)
def test_change_policy_refuses_a_change_without_reason_setting_or_difference(
    reason: str, changes: dict[str, Any], code: str
) -> None:
    before = snapshot()
    with pytest.raises(Refusal) as refused:
        change_policy(actor=ADMIN, reason=reason, **changes)
    assert refused.value.code == code
    assert snapshot() == before


def test_change_policy_refuses_a_stale_version() -> None:
    change_policy(actor=ADMIN, reason="first", recall_cap=10)
    with pytest.raises(Refusal) as refused:
        change_policy(actor=ADMIN, reason="second", expected_version=1, recall_cap=5)
    assert (refused.value.code, refused.value.status) == ("policy_changed", 409)
    assert Policy.current().recall_cap == 10


# Who may see it.


@pytest.mark.parametrize("role", ["support", "user"])
def test_only_admins_see_or_change_the_policy(make_person: Callable[..., User], role: str) -> None:
    make_person("sam", role=role)
    sam = signed_in("sam")
    before = snapshot()
    assert sam.get(URL).status_code == 404
    assert sam.post(URL, form(recall_cap=5)).status_code == 404
    assert snapshot() == before


def test_nobody_signed_in_is_sent_to_sign_in() -> None:
    response = Client().get(URL)
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]


# The memory's trace.


def test_the_trace_names_the_version_that_accepted_each_memory(
    ada: Client, remember: Callable[..., Memory], make_person: Callable[..., User]
) -> None:
    first = remember("Prefers email.")
    change_policy(actor=ADMIN, reason="Fewer guesses in use.", inferred_sources_required=3)
    second = remember("Likes short answers.")

    trace = ada.get(reverse("memory-history", args=[second.pk])).content.decode()
    assert 'Accepted under <a href="/policy/#version-2">policy version 2</a>.' in trace
    # The write gate's decision was under the same version: said once, beside the write.
    assert "(under policy version" not in trace
    trace = ada.get(reverse("memory-history", args=[first.pk])).content.decode()
    assert 'Accepted under <a href="/policy/#version-1">policy version 1</a>.' in trace
    assert "(under policy version" not in trace and "default policy" not in trace

    # Support reads the version, but the policy page is not theirs to open.
    make_person("sam", role="support")
    trace = signed_in("sam").get(reverse("memory-history", args=[second.pk])).content.decode()
    assert "Accepted under policy version 2." in trace
    assert "/policy/" not in trace


def test_a_memory_from_before_versions_says_unknown(
    ada: Client, remember: Callable[..., Memory]
) -> None:
    memory = remember("Prefers email.")
    # A memory written before versions were recorded: the column a migration added is empty.
    Memory.objects.filter(pk=memory.pk).update(policy_version=None)
    trace = ada.get(reverse("memory-history", args=[memory.pk])).content.decode()
    assert "Accepted under policy version: unknown (written before policy versions" in trace


# Its cost.


def test_the_page_costs_the_same_queries_however_many_versions(ada: Client) -> None:
    def cost() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert ada.get(URL).status_code == 200
        return len(captured)

    change_policy(actor=ADMIN, reason="one", recall_cap=10)
    few = cost()
    for n in range(12):
        change_policy(actor=ADMIN, reason=f"change {n}", recall_cap=11 + n, ttl_episode_days=60 + n)
    assert cost() == few


# In a browser.


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_admin_fixes_a_refused_value_saves_and_follows_a_trace_to_the_version(
    browser_page: Any, make_person: Callable[..., User], remember: Callable[..., Memory]
) -> None:
    page = browser_page
    problems: list[str] = []
    # The refused save is a 400 on purpose; anything else the console reports is a fault.
    page.on(
        "console",
        lambda m: (
            problems.append(m.text) if m.type == "error" and "status of 400" not in m.text else None
        ),
    )
    page.on("pageerror", lambda e: problems.append(str(e)))
    make_person("ada", role="admin")
    sign_in(page, "ada")
    page.goto(URL)

    # The browser's own check is set aside, as a script or an old browser would: the server
    # answers in words beside the field, and keeps what was typed.
    page.evaluate("document.querySelector('form.policy-form').noValidate = true")
    page.get_by_label("Agents a guess needs").fill("0")
    page.get_by_label("Why it changes").fill("Fewer guesses in use.")
    page.get_by_role("button", name="Save as version 2").click()
    expect(page.locator("#error-inferred_sources_required")).to_have_text(
        "Choose from 1 to 10 agents; 0 is outside that."
    )
    expect(page.get_by_label("Why it changes")).to_have_value("Fewer guesses in use.")

    page.get_by_label("Agents a guess needs").fill("3")
    page.get_by_role("button", name="Save as version 2").click()
    expect(page.get_by_role("status")).to_contain_text("applies to the next write")
    assert page.url.endswith("/policy/#version-2")

    memory = remember("Likes short answers.")
    page.goto(reverse("memory-history", args=[memory.pk]))
    page.get_by_role("link", name="policy version 2").click()
    page.wait_for_url("**/policy/#version-2")
    expect(page.locator("#version-2")).to_contain_text("Agents a guess needs: 2 agents → 3")
    assert problems == []
