"""In a real browser: a person sees where a memory was used, says "Don't use this" (and the
assistant's recall stops serving it), then "Use it again" — in place, without a reload,
by keyboard as well as by mouse, at desktop and phone width, and without JavaScript."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect
from rest_framework.test import APIClient

from ledger.actions.recalls import record_recall
from ledger.models import Memory, Subject
from ledger.reads.recall import recall
from tests.conftest import ARTIFACTS, SUBJECT, sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]
KNEE = "Is recovering from a knee operation."
RECALL = f"/api/v1/subjects/{SUBJECT}/recall"


@pytest.fixture
def dana(make_person: Any, remember: Any, agent: Any) -> Memory:
    make_person("dana", subject=SUBJECT)
    remember("Prefers email over telephone for billing questions.")
    knee = remember(KNEE, kind="episode")
    subject = Subject.objects.get(ref=SUBJECT)
    for run in ("run_31", "run_32", "run_32"):
        record_recall(agent=agent, result=recall(subject=subject, goal="knee", k=5), run_ref=run)
    return knee


def served(api: APIClient) -> str:
    data = api.get(RECALL, {"goal": "knee operation", "k": 10}).json()
    return data["block"] + " ".join(m["statement"] for m in data["memories"])


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / f"withhold-{name}.png", full_page=True, caret="initial")


def test_the_person_sees_where_it_was_used_and_stops_and_restarts_its_use(
    browser_page: Any, dana: Memory, api: APIClient
) -> None:
    page = browser_page
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    sign_in(page, "dana")
    page.evaluate("window.notReloaded = true")
    card = page.locator(".memory", has_text=KNEE)
    other = page.locator(".memory", has_text="Prefers email")
    expect(other.get_by_text("Used in 2 conversations, last on")).to_be_visible()

    # Where it was used: the list loads in place when asked for.
    card.get_by_text("Used in 2 conversations, last on").click()
    listing = card.locator(".uses-list li")
    expect(listing).to_have_count(2)
    expect(listing.first).to_contain_text("run_32")
    expect(listing.first).to_contain_text("(2 times)")
    expect(listing.nth(1)).to_contain_text("run_31")
    shot(page, "01-uses-desktop")

    # Don't use this: kept, labelled, and no longer recalled.
    assert KNEE in served(api)
    card.get_by_role("button", name="Don’t use this").click()
    card = page.locator(".memory", has_text=KNEE)
    expect(card.get_by_text("not used by the assistant", exact=True)).to_be_visible()
    expect(card.get_by_text("The assistant will not use this any more.")).to_be_visible()
    use_again = card.get_by_role("button", name="Use it again")
    expect(use_again).to_be_visible()
    expect(card).to_be_focused()
    assert KNEE not in served(api)
    shot(page, "02-withheld-desktop")

    # At phone width the card and its buttons still fit.
    page.set_viewport_size({"width": 390, "height": 844})
    shot(page, "03-withheld-phone")
    page.set_viewport_size({"width": 1280, "height": 900})

    # Use it again, by keyboard.
    use_again.focus()
    page.keyboard.press("Enter")
    card = page.locator(".memory", has_text=KNEE)
    expect(card.get_by_text("The assistant may use this again.")).to_be_visible()
    expect(card.get_by_text("not used by the assistant", exact=True)).to_have_count(0)
    expect(card.get_by_role("button", name="Don’t use this")).to_be_visible()
    assert KNEE in served(api)
    assert page.evaluate("window.notReloaded") is True

    # The history says who and why.
    card.get_by_role("link", name="History").click()
    page.get_by_role("heading", name="History of a memory").wait_for()
    expect(page.get_by_text("Not to be used by the assistant", exact=True)).to_be_visible()
    expect(page.get_by_text("Allowed to be used again", exact=True)).to_be_visible()
    assert problems == []


def test_without_javascript(chromium: Any, live_server: Any, dana: Memory, api: APIClient) -> None:
    context = chromium.new_context(
        viewport={"width": 390, "height": 844}, base_url=live_server.url, java_script_enabled=False
    )
    page = context.new_page()
    try:
        sign_in(page, "dana")
        card = page.locator(".memory", has_text=KNEE)
        card.get_by_text("Used in 2 conversations").click()
        card.get_by_role("link", name="Show which conversations").click()
        card = page.locator(".memory", has_text=KNEE)
        expect(card.locator(".uses-list li")).to_have_count(2)
        shot(page, "04-uses-no-js-phone")

        card.get_by_role("button", name="Don’t use this").click()
        expect(page.get_by_text("The assistant will not use this any more.")).to_be_visible()
        card = page.locator(".memory", has_text=KNEE)
        expect(card.get_by_text("not used by the assistant", exact=True)).to_be_visible()
        assert KNEE not in served(api)
        card.get_by_role("button", name="Use it again").click()
        expect(page.get_by_text("The assistant may use this again.")).to_be_visible()
        assert KNEE in served(api)
    finally:
        context.close()
