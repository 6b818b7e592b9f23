"""The header in a real browser at 1280 pixels: an admin's fits one line, the admin's pages
behind an "Admin" menu that the keyboard opens, walks and closes."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.conftest import sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

ADMIN_PAGES = (
    "Audit",
    "Corrections",
    "Erasure requests",
    "Policy",
    "Agents",
    "People",
    "Webhooks",
    "Permissions",
)


def test_an_admins_header_is_one_line_and_the_keyboard_reaches_every_page(
    browser_page: Any, make_person: Any
) -> None:
    make_person("ada", role="admin")
    page = browser_page
    sign_in(page, "ada")
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto("/agents/")

    # One line: the brand and every link of the header share a middle, and the header is
    # one line high (two lines were 96 pixels).
    middles = page.eval_on_selector_all(
        "header.site-header .brand, header.site-header nav > ul > li",
        "els => els.map(e => e.getBoundingClientRect()).map(r => r.top + r.height / 2)",
    )
    assert len(middles) == 9  # brand, Search, Queues, Complaints, Batch deletions, Admin, 3 own
    assert max(middles) - min(middles) < 6
    box = page.locator("header.site-header").bounding_box()
    assert box is not None and box["height"] < 64

    # Tab from the top of the page: "Admin" is in the order, Enter opens it, and each of the
    # admin's pages is the next Tab stop; Escape closes it again, back on "Admin".
    page.locator("body").focus()
    reached: list[str] = []
    for _ in range(30):
        page.keyboard.press("Tab")
        name = page.evaluate("document.activeElement.textContent.trim()")
        reached.append(name)
        if name == "Admin":
            page.keyboard.press("Enter")
        if name.startswith("Sign out"):
            break
    start = reached.index("Admin")
    assert reached[start + 1 : start + 1 + len(ADMIN_PAGES)] == list(ADMIN_PAGES)
    assert reached[-1] == "Sign out ada"
    # Tabbing on past the menu closed it.
    expect(page.get_by_role("link", name="Audit", exact=True)).to_be_hidden()
    page.get_by_text("Admin", exact=True).focus()
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent.trim()") == "Audit"
    page.keyboard.press("Escape")
    expect(page.locator(".nav-menu details")).not_to_have_attribute("open", "")
    assert page.evaluate("document.activeElement.textContent.trim()") == "Admin"
    expect(page.get_by_role("link", name="Audit", exact=True)).to_be_hidden()

    # Open, a click elsewhere closes it; open again, Permissions leads to its page.
    page.get_by_text("Admin", exact=True).click()
    expect(page.get_by_role("link", name="Audit", exact=True)).to_be_visible()
    page.locator("main").click()
    expect(page.get_by_role("link", name="Audit", exact=True)).to_be_hidden()
    page.get_by_text("Admin", exact=True).click()
    page.get_by_role("link", name="Permissions", exact=True).press("Enter")
    expect(page.get_by_role("heading", name="Permissions", level=1)).to_be_visible()
    # The permission page's tables fit the width: nothing to scroll sideways.
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    assert problems == []
