"""Staff tables in a real browser: the search's state in the address and in its form after
Back, one history entry per search, sorting by a header,
memories ticked in the results deleted as one batch and put back, and every table stacked
as labelled cards on a phone."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from ledger.actions.sources import SourceInput
from ledger.models import Memory
from tests.conftest import sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

PHONED = "Happy to be phoned about deliveries."
EVENINGS = "Best reached by phone after 6 pm."


def test_search_sort_tick_delete_undo_and_tables_on_a_phone(
    browser_page: Any, make_person: Any, remember: Any
) -> None:
    make_person("ada", role="admin")
    misread = SourceInput(kind="user_message", ref="msg_0588", run="run_150", turn=3)
    remember(PHONED, subject="acct_b", key="contact.channel", source=misread)
    remember(EVENINGS, subject="acct_a", key="contact.hours", source=misread)
    page = browser_page
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    sign_in(page, "ada")

    # The box is ready to type in; what is typed goes into the address, and Back restores it.
    assert page.evaluate("document.activeElement.id") == "q"
    page.keyboard.type("phone")
    expect(page).to_have_url("/?q=phone")
    results = page.get_by_role("region", name="Memories, newest first")
    expect(results.get_by_role("row")).to_have_count(3)

    # A header sorts by its column, and says so; the order is in the address.
    results.get_by_role("link", name="Subject").click()
    expect(page).to_have_url("/?q=phone&sort=subject")
    header = page.locator("#search-results form table").get_by_role("columnheader", name="Subject")
    expect(header).to_have_attribute("aria-sort", "ascending")
    rows = page.locator("#search-results form table tbody tr")
    expect(rows.first).to_contain_text(EVENINGS)
    page.go_back()
    expect(page).to_have_url("/?q=phone")
    expect(page.locator("#q")).to_have_value("phone")

    # Typing refines one history entry, a filter applied adds one, and after Back the box
    # and the filters say what the results are for.
    page.goto("/")
    page.locator("#q").type("phon")
    expect(page).to_have_url("/?q=phon")
    page.locator("#q").type("e")
    expect(page).to_have_url("/?q=phone")
    with page.expect_response(lambda response: "/?q=phone&kind=" in response.url):
        page.locator("#q").press("Enter")
    expect(page).to_have_url("/?q=phone")
    page.get_by_text("Filters", exact=True).click()
    page.locator("#id_status").select_option("retracted")
    page.get_by_role("button", name="Search").click()
    expect(page).to_have_url("/?q=phone&status=retracted")
    expect(page.get_by_text("No memory matches “phone” with these filters.")).to_be_visible()
    page.go_back()
    expect(page).to_have_url("/?q=phone")
    expect(results.get_by_role("row")).to_have_count(3)
    expect(page.locator("#q")).to_have_value("phone")
    expect(page.locator("#id_status")).to_have_value("")
    page.go_back()
    expect(page).to_have_url("/")
    expect(page.locator("#q")).to_have_value("")
    page.go_forward()
    page.go_forward()
    expect(page).to_have_url("/?q=phone&status=retracted")
    expect(page.locator("#q")).to_have_value("phone")
    expect(page.locator("#id_status")).to_have_value("retracted")
    expect(page.locator("details.search-filters")).to_have_attribute("open", "")

    # Tick one memory, delete it with one reason, then undo: the heading follows.
    page.goto("/?q=phone")
    page.get_by_role("checkbox", name=f"Select: {PHONED}").check()
    page.get_by_role("button", name="Delete selected…").click()
    expect(page.get_by_role("heading", name="1 memory would be deleted")).to_be_visible()
    page.get_by_label("Why they are deleted").fill("The message was misread.")
    page.get_by_role("button", name="Delete 1 memory").click()
    expect(page.get_by_role("heading", name="1 memory deleted in one batch")).to_be_visible()
    assert Memory.objects.get(statement=PHONED).status == "retracted"
    page.get_by_label("Why they come back").fill("Deleted by mistake.")
    page.get_by_role("button", name="Undo this batch").click()
    expect(page.get_by_role("heading", level=1)).to_have_text(
        "Undone: the batch that deleted 1 memory"
    )
    assert Memory.objects.get(statement=PHONED).status == "active"

    # On a phone, every cell of the search's and the audit's tables is on screen, labelled
    # by its column; nothing is cut off and the page never scrolls sideways.
    page.set_viewport_size({"width": 390, "height": 800})
    for url, table in (("/?q=phone", "#search-results form table"), ("/audit/", "table.audit")):
        page.goto(url)
        row = page.locator(f"{table} tbody tr").first
        expect(row).to_be_visible()
        cells = row.locator("td").all()
        assert len(cells) > 3
        headers = page.locator(f"{table} thead th").all_text_contents()
        for cell, header in zip(cells, headers, strict=False):
            box = cell.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, url
            label = cell.get_attribute("data-label")
            assert label and label == header.replace("▲", "").replace("▼", "").strip(), url
        last = cells[-1]
        last.scroll_into_view_if_needed()
        expect(last).to_be_in_viewport()
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, url
    assert problems == []
