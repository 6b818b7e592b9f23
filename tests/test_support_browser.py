"""Support's job in a real browser: from the search box to the write that caused a
complaint, a correction with a reason, then every memory a misread message wrote deleted in
one batch and put back by its undo."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from ledger.actions.recalls import record_recall
from ledger.actions.sources import SourceInput
from ledger.models import Agent, Memory, Subject
from ledger.reads.recall import recall
from tests.conftest import sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

MARCO = "acct_1f6b0c93d2e84a71"
SAID = "Please don't ring me, I'm not happy to be phoned. E-mail is fine."
PHONED = "Happy to be phoned about deliveries."
EVENINGS = "Best reached by phone after 6 pm."


@pytest.fixture
def complaint(make_person: Any, remember: Any, agent: Agent) -> None:
    """Marco's message misread into two memories, which three later runs were given."""
    make_person("sam", role="support")
    misread = SourceInput(kind="user_message", ref="msg_0588", run="run_150", turn=3, excerpt=SAID)
    remember(PHONED, subject=MARCO, key="contact.channel", source=misread)
    remember(EVENINGS, subject=MARCO, key="contact.hours", source=misread)
    remember(
        "Wants invoices addressed to the finance team.",
        subject=MARCO,
        source=SourceInput(kind="user_message", ref="msg_2210", run="run_140"),
    )
    subject = Subject.objects.get(ref=MARCO)
    for run in ("run_151", "run_152", "run_153"):
        record_recall(agent=agent, result=recall(subject=subject, goal="phone", k=5), run_ref=run)


def _served_now() -> str:
    return recall(subject=Subject.objects.get(ref=MARCO), goal="contact", k=10).block


def test_support_traces_the_complaint_corrects_it_and_retracts_the_message_in_one_batch(
    browser_page: Any, complaint: None
) -> None:
    page = browser_page
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    sign_in(page, "sam")

    # A phrase from the complaint finds the memory, across every subject.
    page.get_by_label("A subject’s reference or name").fill("phone")
    results = page.get_by_role("region", name="Memories, newest first")
    expect(results.get_by_text(PHONED)).to_be_visible()
    results.get_by_role("row").filter(has_text=PHONED).get_by_role("link", name="Trace").click()

    # The trace: what was really said, and every run that was given the wrong memory.
    expect(page.get_by_role("heading", name="Trace of a memory")).to_be_visible()
    expect(page.get_by_text(SAID).first).to_be_visible()
    assert "Given to agents 3 times" in page.inner_text("main")
    page.get_by_role("link", name="The exact block").first.click()
    expect(page.locator("pre")).to_contain_text(PHONED)
    page.go_back()

    # A correction by support needs a reason, and is recorded as support's.
    page.get_by_role("link", name="Correct (support)").click()
    page.get_by_label("Correct what the assistant remembers").fill(
        "Does not want to be phoned; e-mail only."
    )
    page.get_by_label("Why (required for support)").fill("Ticket 4411: the message was misread.")
    page.get_by_role("button", name="Save correction").click()
    expect(page.get_by_text("Does not want to be phoned; e-mail only.")).to_be_visible()
    wrong = Memory.objects.get(statement=PHONED)
    assert wrong.status == Memory.Status.SUPERSEDED
    latest = wrong.history.order_by("-history_date").first()
    assert latest is not None and latest.history_actor == "user:sam"
    assert "Ticket 4411" in (latest.history_change_reason or "")

    # Everything else the message wrote goes in one batch, after a preview.
    page.goto("/")
    page.get_by_label("A subject’s reference or name").fill("msg_0588")
    page.get_by_role("button", name="Search").click()
    expect(page.get_by_role("heading", name="Everything written from msg_0588")).to_be_visible()
    page.get_by_role("link", name="Delete what it wrote, in one batch…").click()
    # The link arrives with the selection made, so the preview is already on the page.
    page.wait_for_url("**/retractions/new/?source_ref=msg_0588")
    expect(page.get_by_role("heading", name="1 memory would be deleted")).to_be_visible()
    assert EVENINGS in page.inner_text("#preview")
    page.get_by_label("Why they are deleted").fill("Misread message: he asked not to be phoned.")
    page.get_by_role("button", name="Delete 1 memory").click()
    expect(page.get_by_role("button", name="Undo this batch")).to_be_visible()
    assert Memory.objects.get(statement=EVENINGS).status == Memory.Status.RETRACTED
    assert EVENINGS not in _served_now()

    # Undone as one action: it is served again.
    page.get_by_label("Why they come back").fill("Checked with Marco: the evening hours are right.")
    page.get_by_role("button", name="Undo this batch").click()
    expect(page.get_by_role("heading", name="Batch undone")).to_be_visible()
    assert "1 memory is back as it was before the batch." in page.inner_text("#undo")
    assert Memory.objects.get(statement=EVENINGS).status == Memory.Status.ACTIVE
    assert EVENINGS in _served_now()

    # At phone width the dense tables scroll inside themselves; the page never does.
    page.set_viewport_size({"width": 390, "height": 800})
    for url in ("/?q=phone", "/sources/msg_0588/", "/queues/pending/"):
        page.goto(url)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, url
    assert problems == []
