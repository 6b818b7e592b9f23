"""An admin's job in a real browser: from the audit log to support's correction on the wrong
account, reverted with a reason and seen in the log, then an agent's key created, used
against the live API, rotated with a grace period and revoked."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from ledger.actions.lifecycle import correct_memory
from ledger.actions.recalls import record_recall
from ledger.actions.sources import SourceInput
from ledger.actors import Actor
from ledger.models import Agent, Memory
from ledger.reads.recall import recall
from tests.conftest import sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

PRIYA = "acct_9c2e47b1f06d3a58"
SAID = "Prefers to be called Priya."
WRONG = "Prefers to be addressed as Mrs Shah."
TICKET = "Customer asked on the phone (ticket 4471)."
WHY_REVERTED = "Ticket 4471 was about another customer: Priya asked to be called Priya."
# Straight to the server: no proxy from the environment stands between the test and it.
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))
# Chromium reports every blocked inline script or style as a console error, and this listener
# names each violation too, so a CSP problem cannot pass unseen.
CSP_LISTENER = """
document.addEventListener("securitypolicyviolation", (event) => {
  console.error(`CSP violation: ${event.violatedDirective} ${event.blockedURI}`);
});
"""


@pytest.fixture
def wrong_account(
    make_person: Callable[..., User], remember: Callable[..., Memory], agent: Agent
) -> Memory:
    """Support corrected Priya's memory from a ticket about somebody else, and an agent was
    given the wrong words (not hers) once since. Returns the correction."""
    make_person("alex", role="admin")
    sam = make_person("sam", role="support")
    said = remember(
        SAID,
        subject=PRIYA,
        key="name.address_as",
        source=SourceInput(
            kind="user_message",
            ref="msg_3310",
            run="run_170",
            turn=1,
            excerpt="Please just call me Priya.",
        ),
    )
    correction = correct_memory(
        memory=said, actor=Actor.for_user(sam), statement=WRONG, reason=TICKET
    )
    served = recall(subject=correction.subject, goal="greeting", k=5)
    record_recall(agent=agent, result=served, run_ref="run_171", turn=1)
    return correction


def api_answer(base: str, key: str) -> tuple[int, str]:
    """The live server's status and body for an agent's request with ``key``."""
    request = urllib.request.Request(
        f"{base}/api/v1/memories", headers={"Authorization": f"Bearer {key}"}
    )
    try:
        with DIRECT.open(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def nav(page: Any, name: str) -> None:
    main = page.get_by_role("navigation", name="Main")
    link = main.get_by_role("link", name=name, exact=True)
    if not link.is_visible():
        # The admin's pages wait behind the header's "Admin" menu.
        main.get_by_text("Admin", exact=True).click()
    link.click()


def test_an_admin_reverts_a_wrong_correction_and_creates_rotates_and_revokes_a_key(
    browser_page: Any, live_server: Any, wrong_account: Memory
) -> None:
    page = browser_page
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.context.add_init_script(CSP_LISTENER)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    sign_in(page, "alex")

    # The audit log, narrowed to what support did: the correction, with its reason.
    nav(page, "Audit")
    expect(page.get_by_role("heading", name="Audit log")).to_be_visible()
    page.get_by_label("Role").select_option(label="support")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url(re.compile(r"/audit/\?role=support$"))
    results = page.locator("#audit-results")
    corrected = results.get_by_role("row").filter(
        has_text=f"Correction of an earlier memory: {TICKET}"
    )
    expect(corrected).to_contain_text(WRONG)
    expect(corrected).to_contain_text("support (sam)")
    roles = results.locator("tbody tr td:nth-child(3)").all_inner_texts()
    assert roles and set(roles) == {"support"}

    # Corrections have their own page, to compare and revert: narrowed to support's too.
    page.get_by_role("main").get_by_role("link", name="Corrections").click()
    page.get_by_label("Role").select_option(label="support")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url(re.compile(r"/audit/corrections/\?who=support"))
    row = page.get_by_role("row").filter(has_text=WRONG)
    expect(row).to_contain_text(SAID)
    expect(row).to_contain_text("support (sam)")
    row.get_by_role("cell").first.get_by_role("link").click()

    # Both statements side by side, who corrected it and why, and who was given it since.
    expect(page.get_by_role("heading", name=re.compile("^A correction"))).to_be_visible()
    original = page.get_by_role("region", name=re.compile("^Original"))
    replacement = page.get_by_role("region", name=re.compile("^Replacement"))
    expect(original).to_contain_text(SAID)
    expect(replacement).to_contain_text(WRONG)
    left, right = original.bounding_box(), replacement.bounding_box()
    assert left is not None and right is not None
    assert left["x"] + left["width"] <= right["x"] and abs(left["y"] - right["y"]) < 2
    expect(page.get_by_role("region", name="Who corrected it, and why")).to_contain_text(TICKET)
    # The recall since the correction was given the replacement, never the original.
    reach = page.get_by_role("region", name="Was the replacement given to agents?")
    expect(reach).to_contain_text(
        "Agents given the replacement since it was written: 1 time, in run run_171."
    )
    reads = page.get_by_role("region", name="Was the original still given to agents?")
    expect(reads).to_contain_text("No: no agent was given the original")

    # Without a reason: refused in words beside the field, and nothing changes.
    memories = Memory.objects.count()
    page.get_by_role("button", name="Revert this correction").click()
    error = page.locator("#revert-error")
    expect(error).to_contain_text("Say why this correction is reverted")
    expect(error).to_contain_text("Nothing was changed.")
    expect(page.get_by_label("Why it is reverted")).to_have_attribute("aria-invalid", "true")
    assert Memory.objects.count() == memories
    wrong_account.refresh_from_db()
    assert wrong_account.status == Memory.Status.ACTIVE

    # With one: the page updates in place, and Priya's own words are current again.
    page.get_by_label("Why it is reverted").fill(WHY_REVERTED)
    page.get_by_role("button", name="Revert this correction").click()
    expect(page.get_by_role("status").filter(has_text="Reverted.")).to_contain_text(SAID)
    expect(replacement.locator(".badge")).to_have_text("Replaced by a revert")
    expect(original.locator(".badge")).to_have_text("Replaced by a correction")
    expect(page.get_by_role("region", name="Reverted")).to_contain_text(WHY_REVERTED)
    expect(page.get_by_role("button", name="Revert this correction")).to_have_count(0)
    wrong_account.refresh_from_db()
    assert wrong_account.status == Memory.Status.SUPERSEDED
    current = Memory.objects.get(supersedes=wrong_account)
    assert current.statement == SAID and current.status == Memory.Status.ACTIVE
    assert current.restores_id == wrong_account.supersedes_id

    # The log holds both, each with its reason, the revert as an admin's and newer.
    nav(page, "Audit")
    rows = page.locator("#audit-results tbody tr")
    correction = rows.filter(has_text=f"Correction of an earlier memory: {TICKET}")
    expect(correction).to_contain_text(WRONG)
    expect(correction).to_contain_text("support (sam)")
    revert = rows.filter(has_text=f"Revert of a correction: {WHY_REVERTED}")
    expect(revert).to_contain_text(SAID)
    expect(revert).to_contain_text("an admin")
    expect(rows.filter(has_text=f"Reverted: {WHY_REVERTED}")).to_contain_text(WRONG)
    texts = rows.all_inner_texts()
    at = {
        reason: next(i for i, t in enumerate(texts) if reason in t)
        for reason in (TICKET, WHY_REVERTED)
    }
    assert at[WHY_REVERTED] < at[TICKET]

    # A new agent's key: shown once, copied, and it opens the API.
    nav(page, "Agents")
    page.get_by_role("link", name="New agent…").click()
    page.get_by_label("Name").fill("billing-assistant")
    page.get_by_label(re.compile("^Read:")).check()
    page.get_by_role("button", name="Create the agent and its key").click()
    expect(page.get_by_text("Store it now, it is never shown again.")).to_be_visible()
    first = page.get_by_label("API key of billing-assistant").input_value()
    page.get_by_role("button", name="Copy the key").click()
    expect(page.get_by_role("status").filter(has_text="Copied")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()") == first
    assert api_answer(live_server.url, first)[0] == 200

    # Rotated with a grace period: the old key still works beside the new one.
    page.get_by_label(re.compile("^Grace period")).fill("2")
    page.locator("#id_rotate_reason").fill("Moving the agent to the new vault.")
    page.get_by_role("button", name="Make a new key").click()
    expect(page.get_by_role("heading", name="The new key")).to_be_visible()
    expect(page.get_by_text("The older key keeps working until")).to_be_visible()
    second = page.get_by_label("API key of billing-assistant").input_value()
    assert second != first
    assert api_answer(live_server.url, second)[0] == 200
    assert api_answer(live_server.url, first)[0] == 200

    # Revoked with a reason: both keys fail at once, and the page no longer shows either.
    page.goto("/agents/billing-assistant/")
    assert first not in page.content() and second not in page.content()
    page.locator("#id_revoke_reason").fill("The agent is retired.")
    page.get_by_label("I understand every key of this agent stops working at once.").check()
    page.get_by_role("button", name="Revoke billing-assistant").click()
    expect(page.get_by_text("Revoked: every key of this agent stopped working.")).to_be_visible()
    for key in (first, second):
        status, body = api_answer(live_server.url, key)
        assert status == 401 and "revoked" in body
    expect(page.get_by_role("region", name="History")).to_contain_text("The agent is retired.")

    # At phone width the audit's wide table scrolls inside itself; the page never does.
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto("/audit/")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390

    # The one refusal is the revert without a reason, on purpose; nothing else failed or
    # was blocked by the Content-Security-Policy.
    assert [p for p in problems if "status of 400" not in p] == []
    assert len(problems) == 1
