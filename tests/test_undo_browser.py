"""The Undo button after a deletion goes when its window has passed, in a real browser."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from ledger.models import Memory
from tests.conftest import SUBJECT, sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_undo_button_goes_when_the_undo_window_has_passed(
    browser_page: Any, make_person: Any, remember: Any, settings: Any
) -> None:
    settings.MEMORYADMIN_UNDO_SECONDS = 2
    make_person("dana", subject=SUBJECT)
    remember("Likes short answers.")
    page = browser_page
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    sign_in(page, "dana")

    page.get_by_role("link", name="Delete this memory").click()
    page.get_by_role("button", name="Yes, delete it").click()
    undo = page.get_by_role("button", name="Undo")
    expect(undo).to_be_visible()
    assert page.get_by_text("for 2 seconds").is_visible()

    # Gone once the window has passed, without a reload, and the page says why.
    expect(undo).to_have_count(0, timeout=6000)
    expect(page.get_by_text("It can no longer be undone")).to_be_visible()
    assert page.get_by_role("link", name="memory’s history").is_visible()
    assert Memory.objects.get(statement="Likes short answers.").status == "retracted"
    assert problems == []


def test_undo_still_works_inside_the_window(
    browser_page: Any, make_person: Any, remember: Any, settings: Any
) -> None:
    settings.MEMORYADMIN_UNDO_SECONDS = 30
    make_person("dana", subject=SUBJECT)
    remember("Likes short answers.")
    page = browser_page
    sign_in(page, "dana")
    page.get_by_role("link", name="Delete this memory").click()
    page.get_by_role("button", name="Yes, delete it").click()
    page.get_by_role("button", name="Undo").click()
    page.get_by_text("Undone: it is back.").wait_for()
    assert Memory.objects.get(statement="Likes short answers.").status == "active"
