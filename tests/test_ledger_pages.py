"""The ledger, journal and notes pages: who sees what, and what stands out."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.contrib.auth.models import User
from django.test import Client

from ledger.actions.journal import journal_intent, record_outcome, run_for_agent
from ledger.actions.ledger_entries import (
    promote_ledger_entry,
    record_ledger_entry,
    supersede_ledger_entry,
    withdraw_ledger_entry,
)
from ledger.actions.notes import write_note
from ledger.actions.sources import SourceInput
from ledger.models import Agent, LedgerEntry, Memory, Subject
from tests.conftest import ARTIFACTS, SUBJECT, sign_in, signed_in

pytestmark = pytest.mark.django_db
START = datetime(2030, 3, 1, 9, 0, tzinfo=UTC)
LEDGER = f"/subjects/{SUBJECT}/ledger/"
TOOL = SourceInput(kind="tool_result", ref="crm:case-18", excerpt="status=closed")
MESSAGE = SourceInput(kind="user_message", ref="msg_agree_1", excerpt="yes, go ahead")


@pytest.fixture(autouse=True)
def frozen(db: None) -> Any:
    with time_machine.travel(START, tick=False):
        yield


@pytest.fixture
def subject(remember: Callable[..., Memory]) -> Subject:
    remember("Prefers email over telephone.")
    return Subject.objects.get(ref=SUBJECT)


@pytest.fixture
def ledger(subject: Subject, agent: Agent) -> dict[str, LedgerEntry]:
    def add(fact: str, kind: str, **fields: Any) -> LedgerEntry:
        source = fields.pop("source", TOOL)
        return record_ledger_entry(
            subject=subject, agent=agent, fact=fact, kind=kind, source=source, **fields
        )

    rows = {
        "never": add("Never e-mail the supplier Brandt & Söhne.", "commitment", immutable=True),
        "guess": add("Probably travels in March.", "interpretation"),
        "offer": add("Offer a 15 % discount on renewal.", "proposal"),
        "agreed": add("Refund 40.00 EUR for order 5521.", "proposal", run_ref="run_pages_1"),
        "stale": add(
            "Trial ends 2030-03-02.", "established", expires_at=START + timedelta(hours=1)
        ),
        "old": add("Credit limit 5,000 EUR.", "commitment"),
        "gone": add("Call back on Friday.", "commitment"),
        "paid": add("Invoice 1042 is paid.", "established", key="invoice.1042"),
        "unpaid": add("Invoice 1042 is unpaid.", "established", key="invoice.1042"),
    }
    promote_ledger_entry(entry=rows["agreed"], agent=agent, source=MESSAGE)
    rows["new"] = supersede_ledger_entry(
        entry=rows["old"],
        agent=agent,
        fact="Credit limit 7,500 EUR.",
        kind="commitment",
        source=MESSAGE,
        reason="raised",
    )
    withdraw_ledger_entry(entry=rows["gone"], agent=agent, reason="cancelled")
    return rows


def section(html: str, title: str) -> str:
    """The HTML of one section of the page, from its heading to the next one."""
    start = html.index(f">{title} <")
    end = html.find("<section", start)
    return html[start : end if end != -1 else None]


def test_support_sees_every_section_with_sources(
    ledger: dict[str, LedgerEntry], make_person: Callable[..., User]
) -> None:
    with time_machine.travel(START + timedelta(hours=2), tick=False):
        html = signed_in(make_person("sam", role="support")).get(LEDGER).content.decode()
    in_force = section(html, "In force")
    assert "Never e-mail the supplier Brandt &amp; Söhne." in in_force
    assert "Credit limit 7,500 EUR." in in_force
    assert "crm:case-18" in in_force and "status=closed" in in_force
    assert "Interpretation: the agent&#x27;s own inference, not verified." in in_force
    assert "Trial ends" not in in_force
    expired = section(html, "Expired")
    assert "Trial ends 2030-03-02." in expired and "Last true" in expired
    superseded = section(html, "Superseded")
    assert "Credit limit 5,000 EUR." in superseded and "Replaced by" in superseded
    assert "Call back on Friday." in section(html, "Withdrawn")
    assert "msg_agree_1" in in_force and "Agreed in" in in_force


def test_support_sees_established_facts_that_disagree(
    ledger: dict[str, LedgerEntry], make_person: Callable[..., User]
) -> None:
    html = signed_in(make_person("sam", role="support")).get(LEDGER).content.decode()
    banner = html[html.index("Established facts that disagree") : html.index("</section>")]
    assert "Invoice 1042 is paid." in banner and "Invoice 1042 is unpaid." in banner


def test_the_person_sees_only_commitments_and_proposals_about_them(
    ledger: dict[str, LedgerEntry], make_person: Callable[..., User]
) -> None:
    owner = make_person("dana", subject=SUBJECT)
    html = signed_in(owner).get(LEDGER).content.decode()
    agreed = section(html, "What was agreed with you")
    assert "Never e-mail the supplier" in agreed and "Refund 40.00 EUR" in agreed
    proposals = section(html, "Proposals you have not agreed to")
    assert "Offer a 15 % discount on renewal." in proposals and "not agreed" in proposals
    assert "Nothing happens unless you agree to it." in proposals
    for hidden in (
        "Probably travels",
        "Invoice 1042",
        "Trial ends",
        "Credit limit 5,000",
        "Call back",
        "crm:case-18",
    ):
        assert hidden not in html


def test_the_person_can_write_to_support_from_their_ledger(
    ledger: dict[str, LedgerEntry], make_person: Callable[..., User], settings: Any
) -> None:
    settings.MEMORYADMIN_SUPPORT_EMAIL = "help@bakery.example"
    html = signed_in(make_person("dana", subject=SUBJECT)).get(LEDGER).content.decode()
    assert "write to support at help@bakery.example</a>" in html
    assert (
        '<a href="mailto:help@bakery.example?subject=Something%20is%20wrong%20in%20what%20the'
        f'%20assistant%20recorded%20%28{SUBJECT}%29">'
    ) in html


def test_without_a_support_address_the_ledger_names_no_dead_end(
    ledger: dict[str, LedgerEntry], make_person: Callable[..., User], settings: Any
) -> None:
    settings.MEMORYADMIN_SUPPORT_EMAIL = ""
    html = signed_in(make_person("dana", subject=SUBJECT)).get(LEDGER).content.decode()
    assert "mailto:" not in html
    assert "contact support" not in html
    assert "ask the team that runs this assistant to correct it" in html


def test_the_person_cannot_filter_into_other_kinds(
    ledger: dict[str, LedgerEntry], make_person: Callable[..., User]
) -> None:
    owner = make_person("dana", subject=SUBJECT)
    html = signed_in(owner).get(LEDGER, {"kind": "interpretation"}).content.decode()
    assert "Probably travels" not in html


def test_someone_elses_ledger_is_404(
    ledger: dict[str, LedgerEntry], make_person: Callable[..., User]
) -> None:
    stranger = make_person("eve", subject="acct_someone_else")
    assert signed_in(stranger).get(LEDGER).status_code == 404
    support = signed_in(make_person("sam", role="support"))
    assert support.get("/subjects/acct_missing/ledger/").status_code == 404


def test_signed_out_visitors_are_sent_to_sign_in(ledger: dict[str, LedgerEntry]) -> None:
    response = Client().get(LEDGER)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_kind_filter_swaps_only_the_sections(
    ledger: dict[str, LedgerEntry], make_person: Callable[..., User]
) -> None:
    support = signed_in(make_person("sam", role="support"))
    fragment = support.get(LEDGER, {"kind": "proposal"}, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in fragment and 'id="ledger-sections"' in fragment
    assert "Offer a 15 % discount" in fragment and "Never e-mail" not in fragment
    page = support.get(LEDGER).content.decode()
    assert 'href="?kind=proposal" hx-get="?kind=proposal"' in page
    assert 'aria-current="true">Proposal<' in fragment


def test_a_fact_is_shown_as_text_never_as_markup(
    subject: Subject, agent: Agent, make_person: Callable[..., User]
) -> None:
    record_ledger_entry(
        subject=subject,
        agent=agent,
        fact="Discount only if 5 < total & total > 2.",
        kind="commitment",
        source=TOOL,
    )
    html = signed_in(make_person("dana", subject=SUBJECT)).get(LEDGER).content.decode()
    assert "5 < total & total > 2" not in html
    assert "5 &lt; total &amp; total &gt; 2" in html


@pytest.fixture
def journaled(agent: Agent) -> str:
    run = run_for_agent(ref="run_pages_9", agent=agent)
    assert run is not None
    intent = {"order": 5521, "amount": "-40.00"}
    for key in ("done-1", "unknown-1", "stale-1"):
        journal_intent(agent=agent, run=run, idempotency_key=key, action="refund", intent=intent)
    record_outcome(agent=agent, idempotency_key="done-1", state="done", verification={"ok": 1})
    record_outcome(agent=agent, idempotency_key="unknown-1", state="unknown", effect={"e": "t/o"})
    write_note(run=run, agent=agent, key="plan", value="refund, then e-mail")
    write_note(run=run, agent=agent, key="plan", value="refund only")
    return "/runs/run_pages_9/"


def test_journal_highlights_unknowns_and_intents_that_never_reported_back(
    journaled: str, make_person: Callable[..., User]
) -> None:
    support = signed_in(make_person("sam", role="support"))
    with time_machine.travel(START + timedelta(hours=1), tick=False):
        html = support.get(journaled + "journal/").content.decode()
    assert "2 actions may or may not have happened" in html
    assert html.count("journal-entry") == 3
    assert html.count(" attention") == 2
    assert "Outcome unknown:" in html and "never reported back" in html
    assert "&quot;amount&quot;: &quot;-40.00&quot;" in html


def test_fresh_intent_is_not_yet_highlighted(
    journaled: str, make_person: Callable[..., User]
) -> None:
    html = signed_in(make_person("sam", role="support")).get(journaled + "journal/")
    assert "never reported back" not in html.content.decode()


def test_journal_filter_shows_only_what_needs_resolving(
    journaled: str, make_person: Callable[..., User]
) -> None:
    support = signed_in(make_person("sam", role="support"))
    fragment = support.get(
        journaled + "journal/", {"needs_resolution": "1"}, HTTP_HX_REQUEST="true"
    ).content.decode()
    assert "<html" not in fragment
    assert "unknown-1" in fragment and "done-1" not in fragment


def test_notes_page_shows_current_values_and_every_change(
    journaled: str, make_person: Callable[..., User]
) -> None:
    html = signed_in(make_person("sam", role="support")).get(journaled + "notes/").content.decode()
    current = html[: html.index("Every change")]
    assert "refund only" in current and "refund, then e-mail" not in current
    changes = html[html.index("Every change") :]
    assert "refund, then e-mail" in changes and "Note overwritten." in changes


@pytest.mark.parametrize("page", ["journal/", "notes/"])
def test_run_pages_are_for_support_and_admins_only(
    journaled: str, make_person: Callable[..., User], page: str
) -> None:
    owner = make_person("dana", subject=SUBJECT)
    assert signed_in(owner).get(journaled + page).status_code == 404
    admin = signed_in(make_person("ada", role="admin"))
    assert admin.get(journaled + page).status_code == 200
    assert admin.get(f"/runs/run_missing/{page}").status_code == 404


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_support_narrows_the_journal_to_what_needs_resolving_in_a_browser(
    browser_page: Any, journaled: str, make_person: Callable[..., User]
) -> None:
    make_person("sam", role="support")
    page = browser_page
    sign_in(page, "sam")
    page.goto(journaled + "journal/")
    assert page.get_by_role("heading", level=1).inner_text() == "Journal of run run_pages_9"
    assert page.locator(".journal-entry").count() == 3
    assert page.locator(".journal-entry.attention").count() == 1
    page.get_by_role("link", name="Only what needs resolving").click()
    page.wait_for_url("**needs_resolution=1")
    assert page.locator(".journal-entry").count() == 1
    assert "unknown-1" in page.locator(".journal-entry").inner_text()
    current = page.locator("a[aria-current=true]")
    assert current.inner_text() == "Only what needs resolving"
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / "run-journal.png", full_page=True)
