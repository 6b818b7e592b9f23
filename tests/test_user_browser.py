"""An end user in a real browser: find, correct, delete and undo, confirm a guess, resolve a
conflict, pause (and see an agent's write refused), export and erase — at desktop and
phone width, with the keyboard, and without a single full page reload for the inline fixes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import expect

from ledger.actions.agents import create_agent
from ledger.actions.sources import SourceInput
from ledger.actions.subjects import set_display_name
from ledger.actors import Actor
from ledger.models import Erasure, Memory, Subject
from tests.conftest import ARTIFACTS, SUBJECT, body, sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

NAME = "Dana Whitfield"


@pytest.fixture
def dana(make_person, remember) -> Subject:
    make_person("dana", subject=SUBJECT)
    subject = set_display_name(
        subject=Subject.objects.get(ref=SUBJECT), display_name=NAME, actor=Actor.system("test")
    )
    remember("Closed the March books two days late.", kind="episode")
    remember("Works from the Lisbon office.", kind="account_fact")
    remember(
        "Prefers email over telephone for billing questions.",
        key="contact.channel",
        source=SourceInput(
            kind="user_message",
            ref="msg_0192",
            run="run_12",
            turn=4,
            excerpt="please email me about invoices, I never pick up the phone",
        ),
    )
    remember("Prefers a phone call for billing questions.", key="contact.channel")
    remember("Likes short answers.")
    remember("Runs a monthly close in the first week.", basis="inferred", kind="account_fact")
    return subject


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    # caret="initial": hiding the caret injects a style sheet, which the strict CSP blocks.
    page.screenshot(path=ARTIFACTS / f"user-{name}.png", full_page=True, caret="initial")


def card(page: Any, text: str) -> Any:
    return page.locator(".memory", has_text=text)


def test_end_user_walks_through_every_fix(browser_page, dana, live_server) -> None:
    page = browser_page
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    sign_in(page, "dana")
    heading = page.get_by_role("heading", level=1)
    assert heading.inner_text() == "What the assistant remembers about you"
    assert page.get_by_text("Memory is on").is_visible()
    assert page.get_by_text("These disagree. Which is right?").is_visible()
    shot(page, "01-overview-desktop")
    # Survives only if the page is never reloaded: every fix below is an htmx swap.
    page.evaluate("window.notReloaded = true")

    # Find a memory.
    page.get_by_label("Search your memories").fill("short")
    page.locator(".memory", has_text="Lisbon office").wait_for(state="detached")
    assert card(page, "Likes short answers.").is_visible()
    assert "q=short" in page.url
    shot(page, "02-search")
    page.get_by_label("Search your memories").fill("")
    page.locator(".memory", has_text="Lisbon office").wait_for()
    page.get_by_label("Kind").select_option("episode")
    page.locator(".memory", has_text="Lisbon office").wait_for(state="detached")
    assert card(page, "Closed the March books").is_visible()
    assert "kind=episode" in page.url
    page.get_by_label("Kind").select_option("")
    page.locator(".memory", has_text="Lisbon office").wait_for()

    # Correct it inline.
    card(page, "Likes short answers.").get_by_role("link", name="Correct this memory").click()
    box = page.get_by_label("Correct what the assistant remembers")
    box.wait_for()
    expect(box).to_be_focused()
    box.fill("Likes short answers with the summary first.")
    shot(page, "03-correct-inline")
    page.get_by_role("button", name="Save correction").click()
    saved = card(page, "Likes short answers with the summary first.")
    saved.get_by_text("Saved. The earlier version is in the history.").wait_for()
    assert saved.get_by_text("You corrected this").is_visible()
    assert page.evaluate("window.notReloaded") is True

    # Delete one, then undo.
    card(page, "Closed the March books").get_by_role("link", name="Delete this memory").click()
    page.get_by_role("heading", name="Delete this memory?").wait_for()
    assert Memory.objects.get(statement__startswith="Closed the March").status == "active"
    page.get_by_role("button", name="Yes, delete it").click()
    page.get_by_role("button", name="Undo").wait_for()
    assert Memory.objects.get(statement__startswith="Closed the March").status == "retracted"
    shot(page, "04-deleted-with-undo")
    page.get_by_role("button", name="Undo").click()
    card(page, "Closed the March books").get_by_text("Undone: it is back.").wait_for()
    assert Memory.objects.get(statement__startswith="Closed the March").status == "active"

    # Confirm a guess.
    question = page.get_by_text(
        "The assistant thinks “Runs a monthly close in the first week.” — is that right?"
    )
    assert question.is_visible()
    page.get_by_role("button", name="Yes, that’s right").click()
    page.get_by_text("Confirmed.").wait_for()
    guess = Memory.objects.get(statement__startswith="Runs a monthly close")
    assert (guess.status, guess.stated_by) == ("active", "confirmation")

    # Resolve the conflict by keeping one side.
    side = page.locator(".conflict .side", has_text="Prefers email over telephone")
    side.get_by_role("button", name="Keep this one").click()
    page.get_by_text("Resolved. The assistant now remembers").wait_for()
    assert not page.get_by_text("These disagree. Which is right?").is_visible()
    assert Memory.objects.get(statement__startswith="Prefers a phone call").status == "retracted"
    assert page.evaluate("window.notReloaded") is True

    # Pause memory: the page says so and an agent's write is refused.
    page.get_by_role("button", name="Pause memory").click()
    page.get_by_role("heading", name="Memory is paused").wait_for()
    _, key = create_agent(name="browser-agent", scopes=["read", "write"], actor=Actor.system("t"))
    refused = page.request.post(
        f"{live_server.url}/api/v1/memories",
        data=json.dumps(body(statement="Likes tea.")),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    assert refused.status == 423
    assert refused.json()["code"] == "memory_paused"
    page.reload()
    assert page.get_by_role("heading", name="Memory is paused").is_visible()
    shot(page, "05-paused")

    # Export everything.
    with page.expect_download() as download:
        page.get_by_role("link", name="Download everything (JSON)").click()
    document = json.loads(open(download.value.path(), encoding="utf-8").read())  # noqa: SIM115
    assert document["format"] == "memoryadmin.export/2"
    statements = {m["statement"] for m in document["memories"]}
    assert "Likes short answers." in statements
    assert "Likes short answers with the summary first." in statements

    # Erase everything, after typing the name.
    page.get_by_role("link", name="Erase everything…").click()
    page.get_by_label("To confirm, type").fill("Dana")
    page.get_by_role("button", name="Erase everything").click()
    assert "Nothing was erased." in page.get_by_role("alert").inner_text()
    shot(page, "06-erase-confirm")
    page.get_by_label("To confirm, type").fill(NAME)
    page.get_by_role("button", name="Erase everything").click()
    page.get_by_text("Everything was erased on").wait_for()
    assert page.get_by_text("Nothing is remembered about you right now.").is_visible()
    assert Erasure.objects.filter(subject=dana).exists()
    shot(page, "07-after-erasure")
    # The strict CSP held throughout: no blocked inline script or style, no htmx or script
    # error. The one 400 is the erase form refusing the wrong name, on purpose.
    assert [p for p in problems if "status of 400" not in p] == []
    assert len(problems) == 1


def test_history_page_shows_every_version_and_who(browser_page, dana) -> None:
    page = browser_page
    sign_in(page, "dana")
    card(page, "Likes short answers.").get_by_role("link", name="Correct this memory").click()
    page.get_by_label("Correct what the assistant remembers").fill("Likes very short answers.")
    page.get_by_label("Why (optional)").fill("They were still too long")
    page.get_by_role("button", name="Save correction").click()
    card(page, "Likes very short answers.").get_by_role("link", name="History").click()
    page.get_by_role("heading", name="History of a memory").wait_for()
    text = page.locator("main").inner_text()
    assert "Likes very short answers." in text
    assert "Likes short answers." in text
    assert "Replaced by a correction by you" in text
    assert "They were still too long" in text
    assert "the assistant (fixture-agent)" in text
    shot(page, "08-history")


def test_keyboard_only_correction(browser_page, dana) -> None:
    page = browser_page
    sign_in(page, "dana")
    link = card(page, "Likes short answers.").get_by_role("link", name="Correct this memory")
    link.focus()
    page.keyboard.press("Enter")
    box = page.get_by_label("Correct what the assistant remembers")
    box.wait_for()
    expect(box).to_be_focused()
    page.keyboard.press("Control+A")
    page.keyboard.type("Likes answers in bullet points.")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    # Focus follows the swap to the saved card, so the keyboard user is not lost.
    expect(card(page, "Likes answers in bullet points.")).to_be_focused()


def test_an_error_is_shown_inside_the_card(browser_page, dana) -> None:
    page = browser_page
    sign_in(page, "dana")
    card(page, "Likes short answers.").get_by_role("link", name="Correct this memory").click()
    page.get_by_label("Correct what the assistant remembers").fill("   ")
    page.get_by_role("button", name="Save correction").click()
    alert = page.locator(".memory.editing [role=alert]")
    alert.wait_for()
    assert "cannot be empty" in alert.inner_text()


def test_phone_width_has_no_sideways_scroll(chromium, live_server, dana) -> None:
    context = chromium.new_context(
        viewport={"width": 375, "height": 812}, base_url=live_server.url, is_mobile=True
    )
    page = context.new_page()
    try:
        sign_in(page, "dana")
        assert page.evaluate("document.documentElement.scrollWidth") <= 375
        shot(page, "09-overview-phone")
        card(page, "Likes short answers.").get_by_role("link", name="Correct this memory").click()
        page.get_by_label("Correct what the assistant remembers").wait_for()
        assert page.evaluate("document.documentElement.scrollWidth") <= 375
        page.screenshot(path=ARTIFACTS / "user-10-correct-phone.png")
    finally:
        context.close()
