"""Support opens a run's compaction timeline and compares two generations in a real browser."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ledger.models import Agent
from tests.conftest import ARTIFACTS, sign_in
from tests.test_snapshot_checks import DOCUMENT
from tests.test_snapshot_pages import BUDGET, DIFF, TIMELINE, compact, later_document

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


@pytest.fixture
def support_person(make_person: Any) -> None:
    make_person("sam", role="support")


@pytest.fixture
def history(agent: Agent) -> None:
    compact(agent, copy.deepcopy(DOCUMENT), budget=BUDGET)
    compact(agent, later_document(), tokens_after=6_000)
    compact(
        agent,
        copy.deepcopy(DOCUMENT),
        tokens_before=52_000,
        budget={**BUDGET, "recent_turns": 3_100},
    )


def test_support_reads_the_timeline_and_sees_why_a_compaction_was_rejected(
    browser_page: Any, support_person: None, history: None
) -> None:
    page = browser_page
    sign_in(page, "sam")
    page.goto(TIMELINE)
    assert page.get_by_role("heading", level=1).inner_text() == (
        "Compactions of run run_dora_research"
    )
    chart = page.get_by_role("img", name="Tokens before and after each compaction")
    assert chart.is_visible()
    rejected = page.locator("#generation-2")
    assert "Rejected" in rejected.get_by_role("heading", level=3).inner_text()
    assert "missing or no longer resolved: “Nordlys Betaling”" in rejected.inner_text()
    assert "Tokens: 52,000 → 10,400" in page.locator("#generation-3").inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / "snapshot-timeline.png", full_page=True)


def test_support_compares_two_generations_and_switches_them_in_place(
    browser_page: Any, support_person: None, history: None
) -> None:
    page = browser_page
    sign_in(page, "sam")
    page.goto(TIMELINE)
    page.get_by_role("link", name="What changed since generation 1").click()
    page.wait_for_url(f"**{DIFF}?a=1&b=2")
    result = page.locator("#diff-result")
    text = result.inner_text().replace("“", "").replace("”", "")
    assert "Finding for Nordlys Betaling is gone" in text
    assert "Adriatica Pay: open → findings (resolved)" in text
    reworded = result.locator(".rewordings li").inner_text()
    assert "order the user gave" in reworded
    assert "order given by the user" in reworded
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / "snapshot-diff.png", full_page=True)

    # Choosing another generation swaps the result in place and updates the address.
    page.get_by_label("To generation").select_option("3")
    page.wait_for_url(f"**{DIFF}?a=1&b=3")
    assert "Both documents put the same task items in findings and open" in result.inner_text()
