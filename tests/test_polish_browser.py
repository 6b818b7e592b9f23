"""Small things a person notices, in a real browser: names wrap at spaces on a phone, the
compaction chart stays legible at phone width, and the staff search answers as one types."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ledger.actions.subjects import set_display_name
from ledger.actors import Actor
from ledger.models import Agent, Subject
from tests.conftest import ARTIFACTS, SUBJECT, sign_in
from tests.test_snapshot_checks import DOCUMENT
from tests.test_snapshot_pages import BUDGET, TIMELINE, compact, later_document

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

NAME = "Northwind Bakery"
# The lines a browser broke an element's text into, read from where each letter sits.
LINES = """el => {
  const text = el.firstChild, s = text.textContent, range = document.createRange();
  const lines = []; let line = "", top = null;
  for (let i = 0; i < s.length; i++) {
    range.setStart(text, i); range.setEnd(text, i + 1);
    const box = range.getClientRects()[0];
    if (box && top !== null && Math.abs(box.top - top) > 2) { lines.push(line); line = ""; }
    if (box) top = box.top;
    line += s[i];
  }
  lines.push(line);
  return lines;
}"""


@pytest.fixture
def phone(chromium: Any, live_server: Any) -> Any:
    context = chromium.new_context(
        viewport={"width": 390, "height": 844}, base_url=live_server.url, is_mobile=True
    )
    yield context.new_page()
    context.close()


@pytest.fixture
def bakery(make_person: Any, remember: Any) -> None:
    make_person("sam", role="support")
    remember("Orders flour on Mondays.")
    set_display_name(
        subject=Subject.objects.get(ref=SUBJECT), display_name=NAME, actor=Actor.system("t")
    )


def test_names_wrap_at_spaces_on_a_phone(phone: Any, bakery: None) -> None:
    sign_in(phone, "sam")
    phone.goto("/")
    link = phone.get_by_role("link", name=NAME)
    lines = [line.strip() for line in link.evaluate(LINES)]
    # Every line holds whole words: "Northwind" never becomes "Northwin" + "d".
    assert all(word in NAME.split() for line in lines for word in line.split()), lines
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    ARTIFACTS.mkdir(exist_ok=True)
    phone.screenshot(path=ARTIFACTS / "polish-home-phone.png", full_page=True, caret="initial")


def test_the_compaction_chart_is_legible_on_a_phone(
    phone: Any, make_person: Any, agent: Agent
) -> None:
    make_person("sam", role="support")
    compact(agent, copy.deepcopy(DOCUMENT), budget=BUDGET)
    compact(agent, later_document(), tokens_after=6_000)
    sign_in(phone, "sam")
    phone.goto(TIMELINE)
    chart = phone.get_by_role("img", name="Tokens before and after each compaction")
    assert chart.count() == 1  # the wide drawing is hidden, not squeezed
    label = chart.locator("text", has_text="Gen 2").bounding_box()
    values = chart.locator("text", has_text="48,000 → 6,000").bounding_box()
    # As large as the page's small print, and side by side inside the screen.
    assert label["height"] >= 12
    assert values["x"] + values["width"] <= 390
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    ARTIFACTS.mkdir(exist_ok=True)
    phone.screenshot(path=ARTIFACTS / "polish-chart-phone.png", full_page=True, caret="initial")


def test_the_staff_search_answers_as_one_types_and_on_the_button(
    browser_page: Any, bakery: None, make_person: Any, remember: Any
) -> None:
    remember("Likes rye.", subject="acct_other_0001")
    page = browser_page
    sign_in(page, "sam")
    page.evaluate("window.notReloaded = true")
    rows = page.locator("#subject-results tbody tr")
    assert rows.count() == 2
    page.get_by_label("A subject’s reference or name").fill("northwind")
    page.wait_for_url("**/?q=northwind")
    assert rows.count() == 1 and NAME in rows.inner_text()
    page.get_by_label("A subject’s reference or name").fill("acct_other")
    page.get_by_role("button", name="Search").click()
    page.wait_for_url("**/?q=acct_other")
    page.locator("#subject-results").get_by_role("link", name="acct_other_0001").wait_for()
    # The memory about that subject is listed too, with its trace one click away.
    memories = page.get_by_role("region", name="Memories, newest first")
    assert "Likes rye." in memories.inner_text()
    assert page.evaluate("window.notReloaded") is True
