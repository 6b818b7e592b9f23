"""The end user's page in a real browser, second pass (issue 31): a keyboard reaches the
first memory in three Tab presses, and deleting a memory that one side of a conflict shows
brings the conflict, the other side's badge and the heading's count up to date in place."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from ledger.actions.sources import SourceInput
from ledger.models import Memory
from tests.conftest import SUBJECT, sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

EMAIL = "Prefers email over telephone for billing questions."
PHONE = "Prefers a phone call for billing questions."


@pytest.fixture
def dana(make_person: Any, remember: Any) -> None:
    make_person("dana", subject=SUBJECT)
    remember("Works from the Lisbon office.", kind="account_fact")
    remember(
        EMAIL,
        key="contact.channel",
        source=SourceInput(kind="user_message", ref="msg_0192", excerpt="please email me"),
    )
    remember(PHONE, key="contact.channel")
    remember("Likes short answers.")
    remember("Runs a monthly close in the first week.", basis="inferred", kind="account_fact")


def test_three_tabs_reach_a_memory_and_a_deletion_refreshes_its_conflict_in_place(
    browser_page: Any, dana: None
) -> None:
    page = browser_page
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    sign_in(page, "dana")
    memories = page.locator("#memories")
    # The memories come before what waits for an answer (the conflict, the guess).
    order = page.evaluate(
        """() => [...document.querySelectorAll("#memories, .card.conflict, .question")]
                   .map((element) => element.id.split("-")[0])"""
    )
    assert order == ["memories", "conflict", "memory"]

    # Keyboard: Tab (skip to content), Tab (skip to your memories), Enter, Tab: three
    # presses of Tab from the page's load to the first memory's first control.
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to your memories"
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    first = memories.locator(".memory").first
    assert first.evaluate("(card) => card.contains(document.activeElement)")
    assert page.evaluate("document.activeElement.textContent").startswith("Correct")

    # Deleting one side of the conflict from its own card: no reload, and the rest follows.
    page.evaluate("window.notReloaded = true")
    conflict = page.locator(".card.conflict")
    expect(conflict).to_have_count(1)
    email = memories.locator(".memory", has_text=EMAIL)
    expect(email.locator(".badge.conflict")).to_have_text("conflicting")
    expect(page.locator("#group-preference .count")).to_have_text("3")
    phone = memories.locator(".memory", has_text=PHONE)
    phone.get_by_role("link", name="Delete this memory").click()
    page.get_by_role("button", name="Yes, delete it").click()
    expect(memories.get_by_text("Deleted.")).to_be_visible()
    expect(conflict).to_have_count(0)
    expect(page.get_by_role("heading", name="Statements that disagree")).to_have_count(0)
    expect(email.locator(".badge.conflict")).to_have_count(0)
    expect(page.locator("#group-preference .count")).to_have_text("2")
    assert page.evaluate("window.notReloaded") is True
    assert Memory.objects.get(statement=PHONE).status == Memory.Status.RETRACTED
    assert problems == []
