"""Working a queue in a real browser: take an item, leave a note, see only "mine"."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from ledger.models import QueueNote, QueueWork
from tests.conftest import sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_support_takes_an_item_notes_it_and_filters_mine(
    browser_page: Any, make_person: Any, remember: Any
) -> None:
    make_person("sam", role="support")
    tulips = remember("Might like tulips.", basis="inferred", key="flowers")
    remember("Might work nights.", basis="inferred", key="shifts")
    page = browser_page
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))

    sign_in(page, "sam")
    page.goto("/queues/pending/")
    row = page.locator(f"#memory-row-{tulips.pk}")
    row.get_by_role("button", name="Take it").click()
    # htmx swapped the item's work box in place: no reload, the other row untouched.
    expect(row).to_contain_text("Assigned to you (sam)")
    expect(row.get_by_role("button", name="Give back")).to_be_visible()

    row.get_by_text("Internal notes (0)").click()
    row.get_by_label("New note").fill("Dana will call back on Monday.")
    row.get_by_role("button", name="Add note").click()
    expect(row).to_contain_text("Internal notes (1)")
    expect(row.locator(".work-notes")).to_contain_text("Dana will call back on Monday.")
    assert QueueNote.objects.get().author == "user:sam"
    assert QueueWork.objects.get().assignee is not None

    page.get_by_label("Show").select_option("mine")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**/queues/pending/?assigned=mine**")
    expect(page.get_by_text("Might like tulips.")).to_be_visible()
    expect(page.get_by_text("Might work nights.")).to_have_count(0)
    expect(page.get_by_label("Show")).to_have_value("mine")

    # On a phone the rows stack as cards: the work box wraps inside the screen, its labels
    # whole words and its buttons reachable, with no sideways scroll.
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/queues/pending/")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    row = page.locator(f"#memory-row-{tulips.pk}")
    for name in ("Hand over", "Save ticket"):
        box = row.get_by_role("button", name=name).bounding_box()
        assert box is not None and box["x"] + box["width"] <= 390, (name, box)
    for label in ("Hand to", "Ticket"):
        box = row.locator("label", has_text=label).bounding_box()
        # One line: a label broken letter by letter is taller than it is wide.
        assert box is not None and box["height"] < 2 * 16 and box["width"] > box["height"]
    assert problems == []
