"""Four eyes on an erasure, in a real browser: support asks on the person's page, the
request waits, and an admin approves it on the queue, which runs the erasure."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from ledger.models import Erasure, ErasureRequest, Memory
from tests.conftest import sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

MARCO = "acct_b10c0ffee42b9d37"


@pytest.fixture
def marco(make_person: Any, remember: Any) -> None:
    make_person("sam", role="support")
    make_person("ada", role="admin")
    remember("Takes the early train on Mondays.", subject=MARCO)


def test_support_requests_an_erasure_and_an_admin_approves_it(
    browser_page: Any, marco: None
) -> None:
    page = browser_page
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))

    sign_in(page, "sam")
    page.goto(f"/subjects/{MARCO}/")
    page.get_by_role("link", name="Erase everything…").click()
    expect(page.get_by_text("Support cannot erase someone alone")).to_be_visible()
    page.get_by_label("To confirm, type").fill(MARCO)
    page.get_by_label("Who asked for it, and how").fill("the person, by phone, ticket 4411")
    page.get_by_role("button", name="Ask an admin to erase everything").click()
    expect(page.get_by_text("Erasure requested by you, waiting for an admin.")).to_be_visible()
    assert not Erasure.objects.exists()
    page.get_by_role("button", name="Sign out sam").click()

    sign_in(page, "ada")
    nav = page.get_by_role("navigation", name="Main")
    nav.get_by_text("Admin", exact=True).click()
    nav.get_by_role("link", name="Erasure requests").click()
    request = page.locator(".erasure-request").filter(has_text=MARCO)
    expect(request).to_contain_text("Requested by support (sam)")
    page.once("dialog", lambda dialog: dialog.accept())
    request.get_by_role("button", name="Approve and erase").click()
    # htmx moved the request from the waiting list to the decided one, and said so.
    expect(page.locator("#erasure-said")).to_contain_text(f"Approved: everything about {MARCO}")
    expect(request).to_have_count(0)
    expect(page.get_by_text("No erasure is waiting.")).to_be_visible()
    decided = page.locator("#erasure-decided tr").filter(has_text=MARCO)
    expect(decided).to_contain_text("Approved by you")
    expect(page.get_by_role("button", name="Approve and erase")).to_have_count(0)
    assert Erasure.objects.get().erased_by == "user:ada"
    assert ErasureRequest.objects.get().decision == "approved"
    assert Memory.objects.get().status == "erased"

    page.goto(f"/subjects/{MARCO}/")
    expect(page.get_by_text("Everything was erased on")).to_be_visible()
    assert problems == []
