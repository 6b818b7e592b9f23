"""The audit chain on the Audit page: when it was last verified, by whom and with what result;
Verify now (a Celery task, once however often it is clicked, with its progress); a mark on
every row whose seal fails; and the admins told of a failed verification, by e-mail and by a
banner on every page until one passes."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from celery import current_app
from django.contrib.auth.models import User
from django.core import mail
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from playwright.sync_api import expect

from ledger.actions import audit_verified
from ledger.actions.lifecycle import correct_memory
from ledger.actions.people import create_person
from ledger.actors import Actor
from ledger.models import Memory
from ledger.reads.audit_verified import (
    last_verification,
    progress,
    progress_path,
    verification_path,
)
from tests.conftest import PASSWORD, SUBJECT, sign_in, signed_in
from tests.test_audit_chain import WRITTEN, sql
from tests.test_audit_tamper import HISTORY, forge_copy

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
LISBON = "Works from Lisbon."


@pytest.fixture
def eager() -> Iterator[None]:
    """Celery with no worker, as ``make run`` has it: Verify now runs in the request."""
    before = current_app.conf.task_always_eager
    current_app.conf.task_always_eager = True
    try:
        yield
    finally:
        current_app.conf.task_always_eager = before


@pytest.fixture
def people(db: None) -> dict[str, User]:
    made = {}
    for username, role, email in [
        ("ada", "admin", "ada@example.com"),
        ("root", "admin", "root@example.com"),
        ("sam", "support", "sam@example.com"),
    ]:
        made[username] = create_person(
            username=username,
            password=PASSWORD,
            role=role,
            email=email,
            actor=Actor.system("test"),
        )
    return made


@pytest.fixture
def ada(people: dict[str, User]) -> Client:
    return signed_in("ada")


@pytest.fixture
def story(remember: Callable[..., Memory], people: dict[str, User], clock: Any) -> Memory:
    clock(WRITTEN)
    memory = remember("Prefers email over telephone.", key="contact.channel")
    remember(LISBON)
    correct_memory(
        memory=memory,
        actor=Actor.for_user(people["sam"]),
        statement="Prefers letters over email.",
        reason="Phone ticket 4411",
    )
    clock(WRITTEN + timedelta(minutes=5))
    return Memory.objects.get(pk=memory.pk)


def chain_status(client: Client) -> str:
    html = client.get(reverse("audit")).content.decode()
    found = re.search(r'<section id="audit-chain".*?</section>', html, re.S)
    assert found, html
    return " ".join(re.sub(r"<[^>]+>", "", found.group(0)).split())


def verify_now(client: Client, **headers: str) -> Any:
    return client.post(reverse("audit-verify"), **headers)


def tamper(story: Memory) -> tuple[int, int]:
    """A history row inserted with SQL (a copy of the story's first version, its words
    changed), and another memory's live row changed with SQL: the forged row's id, and the
    id of the newest version that live row no longer equals."""
    real = Memory.history.filter(id=story.pk).order_by("history_id").first()
    other = Memory.objects.get(statement=LISBON)
    newest = Memory.history.filter(id=other.pk).order_by("-history_id").first()
    assert real is not None and newest is not None
    forged = forge_copy(real.history_id, statement="'FORGED'")
    sql("UPDATE ledger_memory SET statement = 'Call at night.' WHERE id = %s", [other.pk])
    return forged, newest.history_id


def repair(forged: int) -> None:
    sql(f'DELETE FROM "{HISTORY._meta.db_table}" WHERE history_id = %s', [forged])
    sql("UPDATE ledger_memory SET statement = %s WHERE statement = 'Call at night.'", [LISBON])


# --- the chain's status, and Verify now ---------------------------------------------------


def test_the_page_says_when_the_chain_was_verified_by_whom_and_what_it_found(
    story: Memory, ada: Client, eager: None
) -> None:
    assert "Not verified yet" in chain_status(ada)

    call_command("verify_audit", stdout=open("/dev/null", "w"))  # noqa: SIM115
    status = chain_status(ada)
    held = r"Last verified .* by command line: \d+ rows checked, every check held"
    assert re.search(held, status), status

    response = verify_now(ada)
    assert response.status_code == 302 and response["Location"] == reverse("audit")
    status = chain_status(ada)
    assert re.search(r"by ada: \d+ rows checked, every check held", status), status
    recorded = last_verification()
    assert recorded is not None and recorded.ok and recorded.by == "user:ada"
    assert recorded.checked >= Memory.history.count()
    assert not progress_path().exists(), "the claim is given up once it is done"


def test_verify_now_is_for_admins_and_a_post(story: Memory, people: dict[str, User]) -> None:
    sam = signed_in("sam")
    assert sam.post(reverse("audit-verify")).status_code == 404
    assert sam.get(reverse("audit-chain"), **HTMX).status_code == 404
    assert signed_in("ada").get(reverse("audit-verify")).status_code == 405
    assert last_verification() is None
    csrf = Client(enforce_csrf_checks=True)
    assert csrf.login(username="ada", password=PASSWORD)
    assert csrf.post(reverse("audit-verify")).status_code == 403
    assert last_verification() is None and not progress_path().exists()


def test_a_second_click_while_one_runs_starts_nothing_and_the_page_shows_its_progress(
    story: Memory, ada: Client
) -> None:
    # The first click's claim, its task queued and not yet taken by a worker.
    assert audit_verified.claim_verification("user:root")
    status = chain_status(ada)
    assert "Verifying, started by root" in status and "queued, waiting for a worker" in status
    assert f'action="{reverse("audit-verify")}"' not in ada.get(reverse("audit")).content.decode()

    again = verify_now(ada, **HTMX)
    assert again.status_code == 409
    text = again.content.decode()
    assert "A verification is already running" in text
    assert 'hx-trigger="every 2s"' in text
    running = progress()
    assert running is not None and running.by == "user:root", "the first one's claim stands"
    assert last_verification() is None, "nothing ran"

    # The worker reports how far it got, and the page says so.
    reporter = audit_verified.Reporter("user:root", total=40)
    reporter.start("checking the seals")
    reporter.tick(10)
    reporter.write()
    status = chain_status(ada)
    assert "checking the seals, 10 of 40 rows" in status
    assert '<progress max="40" value="10">' in ada.get(reverse("audit")).content.decode()

    # While it runs, the page polls the status; once it is done, it reloads for the marks.
    poll = ada.get(f"{reverse('audit-chain')}?polling=1", **HTMX)
    assert 'hx-trigger="every 2s"' in poll.content.decode() and "HX-Refresh" not in poll
    progress_path().unlink()
    done = ada.get(f"{reverse('audit-chain')}?polling=1", **HTMX)
    assert done["HX-Refresh"] == "true"
    assert "hx-trigger" not in done.content.decode()


def test_a_claim_nobody_took_for_ten_minutes_does_not_block_the_button(
    story: Memory, ada: Client, eager: None
) -> None:
    import os
    import time

    assert audit_verified.claim_verification("user:root")
    old = time.time() - 11 * 60
    os.utime(progress_path(), (old, old))
    assert verify_now(ada).status_code == 302
    recorded = last_verification()
    assert recorded is not None and recorded.by == "user:ada"


def test_with_the_task_queue_down_verify_now_says_so_and_can_be_clicked_again(
    story: Memory, ada: Client
) -> None:
    from tests.test_probes import celery_broker

    with celery_broker("redis://127.0.0.1:9/0"):
        response = verify_now(ada, **HTMX)
    assert response.status_code == 409
    assert "could not be queued" in response.content.decode()
    assert progress() is None and not progress_path().exists()
    assert f'action="{reverse("audit-verify")}"' in response.content.decode()


# --- the marks, the e-mail and the banner ---------------------------------------------------


def test_a_failed_verification_marks_its_rows_mails_the_admins_and_warns_on_every_page(
    story: Memory, ada: Client, people: dict[str, User], eager: None
) -> None:
    forged, _ = tamper(story)
    verify_now(ada)

    recorded = last_verification()
    assert recorded is not None and not recorded.ok
    status = chain_status(ada)
    assert "by ada" in status and "it failed: 2 rows marked “seal fails” below" in status
    assert "History rows the application did not write:" in status
    assert "Live rows that differ from their history:" in status

    html = ada.get(reverse("audit")).content.decode()
    rows = re.findall(r"<tr[^>]*>.*?</tr>", html, re.S)
    marked = [row for row in rows if "seal fails:" in row]
    assert len(marked) == 2, "only the two rows that fail"
    assert all('class="seal-fails"' in row for row in marked)
    assert any("its MAC does not match its content" in row and "FORGED" in row for row in marked)
    assert any(
        "the live memory&#x27;s statement differ from this version" in row and LISBON in row
        for row in marked
    )
    assert "seal fails:" not in "".join(row for row in rows if row not in marked)

    # Each admin with an address is e-mailed once; support is not.
    assert sorted(to for message in mail.outbox for to in message.to) == [
        "ada@example.com",
        "root@example.com",
    ]
    message = mail.outbox[0]
    assert message.subject.startswith("The audit failed its verification")
    assert "started by ada" in message.body
    assert "History rows the application did not write:\n  memory history row" in message.body
    assert "FORGED" not in message.body and "Call at night" not in message.body

    # Every page an admin opens says so; support's do not.
    banner = "The audit failed its verification"
    for page in (reverse("people"), reverse("policy"), reverse("audit-corrections")):
        assert banner in signed_in("root").get(page).content.decode(), page
    assert banner not in signed_in("sam").get(reverse("complaints")).content.decode()

    # Until a later verification passes.
    repair(forged)
    mail.outbox.clear()
    verify_now(ada)
    assert banner not in signed_in("root").get(reverse("people")).content.decode()
    assert "seal fails:" not in ada.get(reverse("audit")).content.decode()
    assert mail.outbox == []


def test_the_command_line_records_its_failures_for_the_page_too(story: Memory, ada: Client) -> None:
    forged, _ = tamper(story)
    with pytest.raises(Exception, match="History rows the application did not write"):
        call_command("verify_audit", stdout=open("/dev/null", "w"))  # noqa: SIM115
    recorded = last_verification()
    assert recorded is not None and recorded.by == "command line"
    data = json.loads(verification_path().read_text())
    assert [HISTORY._meta.db_table, forged] in [failure[:2] for failure in data["failures"]]
    assert "by command line" in chain_status(ada)
    assert len(mail.outbox) == 2


def audit_queries(client: Client, query: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(f"{reverse('audit')}?{query}")
    assert response.status_code == 200
    return len(captured)


@pytest.mark.parametrize(
    "query", ["", "role=support", f"subject={SUBJECT}", "kind=memory&action=changed"]
)
def test_the_marks_cost_no_query(story: Memory, ada: Client, query: str, eager: None) -> None:
    verify_now(ada)
    passed = audit_queries(ada, query)
    tamper(story)
    verify_now(ada)
    assert not last_verification().ok  # type: ignore[union-attr]
    assert audit_queries(ada, query) == passed


# --- filters in the address bar, and the order ------------------------------------------------


def whens(html: str) -> list[str]:
    return re.findall(r'<td><time datetime="([^"]+)"', html)


def test_the_log_sorts_by_when_either_way_and_pages_on_in_that_order(
    story: Memory, ada: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ledger.views import audit as audit_views

    newest = ada.get(reverse("audit")).content.decode()
    assert '<th scope="col" aria-sort="descending"><a href="?sort=when">When' in newest
    every = whens(newest)
    assert every == sorted(every, reverse=True) and len(every) > 4

    monkeypatch.setattr(audit_views, "PAGE_SIZE", 3)
    first = ada.get(f"{reverse('audit')}?sort=when&role=system").content.decode()
    assert '<th scope="col" aria-sort="ascending"><a href="?role=system">When' in first
    assert '<input type="hidden" name="sort" value="when">' in first
    later = re.search(r'href="\?([^"]+)"[^>]*>Later changes →', first)
    assert later, first
    second = ada.get(f"{reverse('audit')}?{later.group(1).replace('&amp;', '&')}").content.decode()
    shown = whens(first) + whens(second)
    assert shown == sorted(shown) and shown[0] < every[0]
    assert "← Oldest" in second
    csv = b"".join(ada.get(f"{reverse('audit-export')}?sort=when").streaming_content).decode()
    moments = [line.split(",")[1] for line in csv.splitlines()[1:]]
    assert moments == sorted(moments)

    refused = ada.get(f"{reverse('audit')}?sort=who")
    assert refused.status_code == 400
    assert "This list cannot be sorted by “who”: only by “when”." in refused.content.decode()


def test_back_to_a_filtered_view_gets_the_whole_page(story: Memory, ada: Client) -> None:
    """htmx asks again for a pushed address it has no copy of (Back after a reload): the
    whole page, with the filters it names, not the fragment alone."""
    restore = {**HTMX, "HTTP_HX_HISTORY_RESTORE_REQUEST": "true"}
    html = ada.get(f"{reverse('audit')}?role=support", **restore).content.decode()
    assert "<h1>Audit log</h1>" in html
    assert '<option value="support" selected>' in html
    assert "Prefers letters over email." in html


@pytest.mark.django_db(transaction=True)
@pytest.mark.browser
def test_an_admin_verifies_in_a_browser_and_the_page_follows_one_running(
    browser_page: Any, people: dict[str, User], remember: Callable[..., Memory], eager: None
) -> None:
    remember(LISBON)
    page = browser_page
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    sign_in(page, "ada")
    page.goto(f"{reverse('audit')}?role=system")
    box = page.locator("#audit-chain")
    expect(box).to_contain_text("Not verified yet")
    page.get_by_role("button", name="Verify now").click()
    expect(box).to_contain_text("by ada:")
    expect(box).to_contain_text("every check held")
    assert page.url.endswith("?role=system"), "the click swapped the box, nothing else"

    # Another admin's, queued: the page follows it, and reloads with its result when done.
    assert audit_verified.claim_verification("user:root")
    page.reload()
    expect(box).to_contain_text("Verifying, started by root")
    expect(page.get_by_role("button", name="Verify now")).to_have_count(0)
    audit_verified.verify_reporting(by="user:root")  # as the worker does
    expect(box).to_contain_text("by root:", timeout=10_000)
    expect(page.get_by_role("button", name="Verify now")).to_be_visible()
    assert page.url.endswith("?role=system")
    assert problems == []
