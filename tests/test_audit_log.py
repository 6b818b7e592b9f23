"""The audit log: every change by a person, support, an agent or the system, filtered in
the address bar, paged by keyset without repeats or gaps, and exported as a streamed CSV."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from itertools import count
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.http import StreamingHttpResponse
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from playwright.sync_api import expect

from ledger.actions.agents import restrict_agent
from ledger.actions.conflicts import resolve_conflict
from ledger.actions.expiry import expire_due
from ledger.actions.journal import run_for_agent
from ledger.actions.lifecycle import confirm_memory, correct_memory, retract_memory
from ledger.actions.notes import delete_note, write_note
from ledger.actions.people import change_role, create_person, link_subject, update_person
from ledger.actions.policy import change_policy
from ledger.actions.retractions import Selection, retract_batch
from ledger.actions.reverts import revert_correction
from ledger.actions.sources import SourceInput
from ledger.actions.subjects import set_display_name
from ledger.actions.webhooks import register_endpoint, rotate_endpoint_secret
from ledger.actors import Actor
from ledger.dates import when
from ledger.models import Agent, Conflict, Memory, PersonChange, Subject
from ledger.reads import audit
from ledger.rules.agents import Restriction
from ledger.views import audit as audit_views
from tests.conftest import ARTIFACTS, SUBJECT, sign_in, signed_in

pytestmark = pytest.mark.django_db

# In the past, so that people signed in now stay signed in when the clock is moved there.
START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
HTMX = {"HTTP_HX_REQUEST": "true"}
OTHER = "acct_9d3e1a77c05b4e62"


@pytest.fixture
def people(make_person: Callable[..., User]) -> dict[str, User]:
    return {
        "ada": make_person("ada", role="admin"),
        "sam": make_person("sam", role="support"),
        "dana": make_person("dana", subject=SUBJECT),
        # Owns no subject, so their role may change.
        "lee": make_person("lee"),
    }


@pytest.fixture
def ada(people: dict[str, User]) -> Client:
    return signed_in(people["ada"])


def rows(client: Client, query: str = "") -> list[Any]:
    response = client.get(f"{reverse('audit')}?{query}")
    assert response.status_code == 200, response.content.decode()[:2000]
    return list(response.context["rows"])


def csv_rows(client: Client, query: str = "") -> list[dict[str, str]]:
    response = client.get(f"{reverse('audit-export')}?{query}")
    assert response.status_code == 200
    assert isinstance(response, StreamingHttpResponse)
    text = b"".join(response.streaming_content).decode()  # type: ignore[arg-type]
    return list(csv.DictReader(io.StringIO(text)))


def role_change(person: User, *, by: User, role: str) -> None:
    change_role(person, actor=Actor.for_user(by), role=role, reason="Moved to another team.")


@pytest.fixture
def story(
    people: dict[str, User],
    remember: Callable[..., Memory],
    clock: Callable[[datetime], None],
) -> dict[str, Memory]:
    """An agent writes two memories; the person corrects one on the dashboard; support
    deletes the other with a reason; a day later expiry ends a third; an admin changes the
    policy and a person's role."""
    clock(START)
    written = remember("Prefers email over telephone for billing questions.", key="contact.channel")
    calls = remember("Happy to be phoned about deliveries.", key="contact.deliveries")
    brief = remember(
        "Asked about the March invoice.",
        kind="episode",
        expires_at=START + timedelta(hours=2),
        expires_omitted=False,
    )
    clock(START + timedelta(minutes=5))
    dana = signed_in(people["dana"])
    response = dana.post(
        reverse("memory-edit", args=[written.pk]),
        {"statement": "Prefers a phone call for urgent billing questions.", "reason": ""},
    )
    assert response.status_code in (200, 302)
    clock(START + timedelta(minutes=10))
    sam = signed_in(people["sam"])
    response = sam.post(
        reverse("memory-delete", args=[calls.pk]), {"reason": "The customer asked on the phone."}
    )
    assert response.status_code in (200, 302)
    clock(START + timedelta(hours=3))
    expire_due()
    clock(START + timedelta(hours=4))
    admin = Actor.for_user(people["ada"])
    change_policy(actor=admin, reason="Guesses need a third source.", inferred_sources_required=3)
    change_policy(actor=admin, reason="Guesses need a fourth source.", inferred_sources_required=4)
    role_change(people["lee"], by=people["ada"], role="support")
    written.refresh_from_db()
    return {"written": written, "calls": calls, "brief": brief}


def find(found: list[Any], *, kind: str, action: str, who: str) -> Any:
    matches = [
        r for r in found if r.entry.kind == kind and r.entry.action == action and r.who == who
    ]
    assert matches, [(r.entry.kind, r.entry.action, r.who) for r in found]
    return matches[0]


def changes(row: Any) -> dict[str, tuple[str, str]]:
    return {c.field: (c.before, c.after) for c in row.entry.changes}


def test_each_kind_of_actor_is_named_with_role_before_after_and_reason(
    story: dict[str, Memory], ada: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The whole story on one page: this is about names, not paging.
    monkeypatch.setattr(audit_views, "PAGE_SIZE", 100)
    found = rows(ada)
    agent = find(found, kind="memory", action="created", who="the assistant (fixture-agent)")
    assert agent.role == "an agent"
    assert changes(agent)["Basis"] == ("", "stated")

    person = find(found, kind="memory", action="changed", who="dana")
    assert person.role == "the person"
    assert changes(person)["Status"] == ("in use", "replaced by a correction")
    assert person.entry.reason == "Corrected: no reason given"

    support = find(found, kind="memory", action="changed", who="support (sam)")
    assert support.role == "support"
    assert changes(support)["Status"] == ("in use", "deleted")
    assert support.entry.reason == "The customer asked on the phone."

    expiry = find(found, kind="memory", action="changed", who="the expiry task")
    assert expiry.role == "the system"
    assert changes(expiry)["Status"] == ("in use", "expired")
    assert expiry.entry.reason.startswith("Expired: its expiry")

    policy = find(found, kind="policy", action="changed", who="you")
    assert policy.role == "an admin"
    assert changes(policy) == {"Agents a guess needs": ("3 agents", "4 agents")}
    assert policy.entry.reason == "Guesses need a fourth source."

    role = find(found, kind="person", action="changed", who="you")
    assert (role.entry.object_words, role.entry.action_words) == ("lee", "role")
    assert changes(role) == {"role": ("user", "support")}
    assert role.entry.reason == "Moved to another team."
    made = find(found, kind="person", action="created", who="the system (test)")
    assert made.entry.object_words in {"ada", "sam", "dana", "lee"}

    html = ada.get(reverse("audit")).content.decode()
    assert "support (sam)" in html
    assert '<del title="in use">in use</del> → <ins title="deleted">deleted</ins>' in html
    assert "The customer asked on the phone." in html
    assert "the expiry task" in html
    assert f'href="{reverse("memory-history", args=[story["calls"].pk])}"' in html
    assert f'href="{reverse("subject", args=[SUBJECT])}"' in html


def test_a_correction_and_a_revert_link_to_their_correction_page(
    story: dict[str, Memory],
    people: dict[str, User],
    ada: Client,
    clock: Callable[[datetime], None],
) -> None:
    original = story["written"]
    correction = Memory.objects.get(supersedes=original)
    clock(START + timedelta(hours=5))
    copy = revert_correction(
        memory=correction, actor=Actor.for_user(people["ada"]), reason="She wrote: email."
    )
    links = {
        (r.entry.object_id, r.entry.action): r.entry.link
        for r in rows(ada, "kind=memory&action=created")
    }
    for memory in (correction, copy):
        assert links[(str(memory.pk), "created")] == reverse("audit-correction", args=[memory.pk])
    # What the agent wrote is no correction: its entry leads to its trace.
    assert links[(str(original.pk), "created")] == reverse("memory-history", args=[original.pk])
    html = ada.get(f"{reverse('audit')}?kind=memory").content.decode()
    assert f'href="{reverse("audit-correction", args=[copy.pk])}"' in html
    # From the log to the page that reverts it.
    page = ada.get(reverse("audit-correction", args=[copy.pk])).content.decode()
    assert "Revert this revert</button>" in page


def test_subjects_are_named_as_the_other_pages_name_them(
    story: dict[str, Memory], remember: Callable[..., Memory], ada: Client
) -> None:
    subject = Subject.objects.get(ref=SUBJECT)
    set_display_name(subject=subject, display_name="Dana Whitfield", actor=Actor.system("test"))
    remember("Prefers letters.", subject=OTHER)
    found = rows(ada, "kind=memory&action=created")
    assert {(r.entry.subject, r.entry.subject_name) for r in found} == {
        (SUBJECT, "Dana Whitfield"),
        (OTHER, OTHER),
    }
    # A value pointing at the subject names it the same way.
    mine = next(r for r in found if r.entry.subject == SUBJECT)
    assert changes(mine)["Subject"] == ("", "Dana Whitfield")
    html = ada.get(f"{reverse('audit')}?kind=memory").content.decode()
    assert f'about <a href="{reverse("subject", args=[SUBJECT])}">Dana Whitfield</a>' in html
    assert f'about <a href="{reverse("subject", args=[OTHER])}">{OTHER}</a>' in html
    # The export keeps the reference, which finds the subject again.
    assert {line["subject"] for line in csv_rows(ada, "kind=memory")} == {SUBJECT, OTHER}


def test_a_subjects_owner_is_named_by_username(
    story: dict[str, Memory],
    people: dict[str, User],
    ada: Client,
    make_person: Callable[..., User],
) -> None:
    link_subject(
        make_person("priya"),
        actor=Actor.for_user(people["ada"]),
        subject_ref=OTHER,
        subject_name="",
        reason="Priya is the account holder.",
    )
    found = rows(ada, "kind=subject")
    owned = [changes(r)["Owner"] for r in found if "Owner" in changes(r)]
    # By their usernames, never by the account's id.
    assert {after for _, after in owned} == {"dana", "priya"}


def test_the_first_policy_change_is_compared_with_the_settings_it_ships_with(
    story: dict[str, Memory], people: dict[str, User], ada: Client
) -> None:
    second, first = rows(ada, "kind=policy")
    assert not first.entry.listed
    assert changes(first) == {"Agents a guess needs": ("2 agents", "3 agents")}
    assert first.entry.link == f"{reverse('policy')}#version-2"
    admin = Actor.for_user(people["ada"])
    change_policy(
        actor=admin,
        reason="Shorter blocks; billing keys are ours now.",
        recall_cap=10,
        system_of_record_keys=["contact.email"],
    )
    newest = rows(ada, "kind=policy")[0]
    assert changes(newest) == {
        "Memories per recall": ("20 memories", "10 memories"),
        "Slots another system owns": (
            "billing.address, billing.email, contact.email, contact.phone, payment.method",
            "contact.email",
        ),
    }
    html = ada.get(f"{reverse('audit')}?kind=policy").content.decode()
    assert "not recorded" not in html
    assert '<del title="2 agents">2 agents</del> → <ins title="3 agents">3 agents</ins>' in html


def test_values_are_said_in_words_not_stored_codes(
    story: dict[str, Memory],
    people: dict[str, User],
    agent: Agent,
    remember: Callable[..., Memory],
    ada: Client,
) -> None:
    # The person's correction on the dashboard: its source is said, not its reference.
    source = find(rows(ada, "kind=source"), kind="source", action="created", who="dana")
    assert source.entry.object_words == "corrected on the dashboard"
    assert changes(source)["Reference"] == ("", "corrected on the dashboard")
    assert changes(source)["Memory"] == (
        "",
        "“Prefers a phone call for urgent billing questions.”",
    )

    # A conflict settled by keeping one: the memory kept, by its words.
    email = remember("Wants invoices by email.", key="invoice.channel")
    remember("Wants invoices by post.", key="invoice.channel")
    dana = Actor.for_user(people["dana"])
    conflict = Conflict.objects.open().get(key="invoice.channel")
    resolve_conflict(conflict=conflict, actor=dana, keep=email, statement=None)
    settled = find(rows(ada, "kind=conflict"), kind="conflict", action="changed", who="dana")
    assert changes(settled)["Kept"] == ("", "“Wants invoices by email.”")
    assert changes(settled)["Resolution"] == ("", "one statement kept")

    # A guess support confirmed: who stated it, in the words of the stated-by choices.
    guess = remember("Runs payroll on Fridays.", basis="inferred")
    sam = Actor.for_user(people["sam"])
    confirm_memory(memory=guess, actor=sam, reason="Confirmed on the phone.")
    confirmed = find(rows(ada, "kind=memory"), kind="memory", action="changed", who="support (sam)")
    assert changes(confirmed)["Stated by"] == ("nobody (a guess)", "a confirmation by support")

    # A batch deletion is named once, by its moment, as its own page lists it.
    retract_batch(selection=Selection(source_ref="msg_1"), actor=sam, reason="Poisoned message.")
    html = ada.get(f"{reverse('audit')}?kind=retractionbatch").content.decode()
    batch = rows(ada, "kind=retractionbatch")[0]
    assert f'Retraction batch <a href="{batch.entry.link}">{when(batch.entry.at)}</a>' in html
    assert "batch batch" not in html.lower() and "batch deletion of" not in html


def test_a_restriction_says_what_changed_and_its_reason_once(
    people: dict[str, User], agent: Agent, ada: Client
) -> None:
    restrict_agent(
        agent=agent,
        actor=Actor.for_user(people["ada"]),
        restriction=Restriction.QUARANTINED,
        on=True,
        reason="Writes guesses as statements.",
    )
    held = find(rows(ada, "kind=agent"), kind="agent", action="changed", who="you")
    assert changes(held) == {"Quarantined": ("no", "yes")}
    assert held.entry.reason == "Quarantine started: Writes guesses as statements."
    html = ada.get(f"{reverse('audit')}?kind=agent").content.decode()
    assert html.count("Writes guesses as statements.") == 1


def test_a_webhook_endpoint_is_named_by_its_address_and_links_to_its_page(
    people: dict[str, User], ada: Client
) -> None:
    made = register_endpoint(
        url="https://hooks.example.com/memory",
        events=["memory.written"],
        description="CRM mirror",
        actor=Actor.for_user(people["ada"]),
    )
    rotate_endpoint_secret(endpoint=made.endpoint, actor=Actor.for_user(people["ada"]))

    html = ada.get(f"{reverse('audit')}?kind=webhookendpoint").content.decode()

    page = reverse("webhook", args=[made.endpoint.pk])
    assert html.count(f'href="{page}"') == 2
    assert "https://hooks.example.com/memory" in html
    # The secret is never kept in the history, so the audit cannot show it.
    assert made.secret not in html


def test_a_created_memory_says_what_was_written_above_every_field(
    story: dict[str, Memory], remember: Callable[..., Memory], ada: Client
) -> None:
    remember("Likely closes on Mondays.", kind="account_fact", basis="inferred", key="hours")
    found = rows(ada, "kind=memory&action=created")
    said = {r.entry.object_words: r.entry.summary for r in found}
    assert said["“Prefers email over telephone for billing questions.”"] == (
        "A stated preference, in slot contact.channel"
    )
    assert said["“Asked about the March invoice.”"] == "A stated past episode"
    assert said["“Likely closes on Mondays.”"] == (
        "An inferred fact about the account, in slot hours, waiting for confirmation"
    )
    assert all(r.entry.summary == "" for r in rows(ada, "action=changed"))
    html = ada.get(f"{reverse('audit')}?kind=memory&action=created").content.decode()
    # Beside its words, what it was written as; every field it set behind the disclosure.
    assert re.search(
        r'<p class="audit-summary">A stated preference, in slot contact\.deliveries</p>\s*'
        r"<details><summary>\d+ fields set</summary>",
        html,
    )


def test_the_export_writes_every_moment_in_iso_8601(story: dict[str, Memory], ada: Client) -> None:
    lines = csv_rows(ada, "kind=memory")
    brief = story["brief"]
    mine = [line for line in lines if line["object_id"] == str(brief.pk)]
    made = {line["field"]: line["after"] for line in mine if line["action"] == "created"}
    assert datetime.fromisoformat(made["Written at"]) == START
    assert datetime.fromisoformat(made["Expires at"]) == START + timedelta(hours=2)
    words = re.compile(r"\d{1,2} [A-Z][a-z]+ \d{4}")
    assert not [
        v for line in csv_rows(ada) for v in (line["before"], line["after"]) if words.search(v)
    ]
    # The page keeps the words.
    html = ada.get(f"{reverse('audit')}?kind=memory&action=created").content.decode()
    assert '<ins title="1 March 2026, 09:00 UTC">1 March 2026, 09:00 UTC</ins>' in html


def test_a_persons_creation_counts_as_created_with_all_it_gave_them(
    people: dict[str, User], ada: Client, clock: Callable[[datetime], None]
) -> None:
    admin = Actor.for_user(people["ada"])
    clock(START)
    erin = create_person(
        username="erin", role="user", subject_ref=OTHER, actor=admin, reason="A new customer."
    )
    # A minute later the same admin, for the same reason, gives her an e-mail: a change.
    clock(START + timedelta(minutes=1))
    update_person(erin, actor=admin, email="erin@example.com", reason="A new customer.")

    def hers(query: str) -> list[tuple[str, dict[str, tuple[str, str]]]]:
        return [
            (r.entry.action_words, changes(r))
            for r in rows(ada, query)
            if r.entry.object_words == "erin"
        ]

    assert sorted(hers("kind=person&action=created"), key=str) == sorted(
        [
            ("created", {}),
            ("created", {"role": ("", "user")}),
            ("created", {"subject": ("", OTHER)}),
        ],
        key=str,
    )
    assert hers("kind=person&action=changed") == [("email", {"email": ("", "erin@example.com")})]
    exported = {
        (line["action"], line["field"])
        for line in csv_rows(ada, "kind=person")
        if line["object"] == "erin"
    }
    assert exported == {
        ("created", ""),
        ("created", "role"),
        ("created", "subject"),
        ("changed", "email"),
    }


def test_bookkeeping_columns_are_not_shown_as_changes(
    story: dict[str, Memory], ada: Client
) -> None:
    for row in rows(ada):
        assert {"Version", "Normalized", "Hash", "Last used at"}.isdisjoint(changes(row))


def test_each_filter_narrows_the_log(story: dict[str, Memory], ada: Client) -> None:
    by_dana = rows(ada, "person=dana")
    assert by_dana and {r.entry.actor for r in by_dana} == {"user:dana"}

    support = rows(ada, "role=support")
    assert support and {r.who for r in support} == {"support (sam)"}

    agent = rows(ada, "agent=fixture-agent")
    assert agent and {r.entry.actor for r in agent} == {"agent:fixture-agent"}

    about = rows(ada, f"subject={SUBJECT}")
    assert about and {r.entry.subject for r in about if r.entry.kind != "subject"} == {SUBJECT}
    subject_id = str(Subject.objects.get(ref=SUBJECT).pk)
    assert {r.entry.object_id for r in about if r.entry.kind == "subject"} == {subject_id}
    assert not any(r.entry.kind in ("policy", "person", "agent") for r in about)

    created = rows(ada, "action=created")
    assert created and {r.entry.action for r in created} == {"created"}

    memories = rows(ada, "kind=memory")
    assert memories and {r.entry.kind for r in memories} == {"memory"}

    people = rows(ada, "kind=person&action=changed&role=admin")
    assert [(r.entry.object_words, r.entry.action_words) for r in people] == [("lee", "role")]
    made = rows(ada, "kind=person&action=created")
    assert {r.entry.object_words for r in made} == {"ada", "dana", "lee", "sam"}
    assert {r.entry.action_words for r in made} == {"created"}


def test_filters_combine(story: dict[str, Memory], ada: Client) -> None:
    found = rows(ada, "role=agent&kind=memory&action=created")
    assert len(found) == 3
    assert {r.entry.object_words for r in found} == {
        "“Prefers email over telephone for billing questions.”",
        "“Happy to be phoned about deliveries.”",
        "“Asked about the March invoice.”",
    }
    assert rows(ada, "person=dana&kind=policy") == []
    assert rows(ada, "role=system&action=changed&kind=memory")[0].who == "the expiry task"


def test_days_are_included_from_first_to_last(
    people: dict[str, User],
    remember: Callable[..., Memory],
    clock: Callable[[datetime], None],
    ada: Client,
) -> None:
    for offset in range(3):
        clock(START + timedelta(days=offset))
        remember(f"Statement of day {offset}.", subject=f"acct_day_{offset}")
    found = rows(ada, "kind=memory&start=2026-03-02&end=2026-03-02")
    assert [r.entry.object_words for r in found] == ["“Statement of day 1.”"]
    found = rows(ada, "kind=memory&start=2026-03-02")
    assert len(found) == 2
    found = rows(ada, "kind=memory&end=2026-03-01")
    assert [r.entry.object_words for r in found] == ["“Statement of day 0.”"]


def test_a_deletion_is_in_the_log(
    people: dict[str, User], agent: Agent, ada: Client, clock: Callable[[datetime], None]
) -> None:
    clock(START)
    run = run_for_agent(agent=agent, ref="run_notes_audit")
    assert run is not None
    write_note(run=run, agent=agent, key="plan", value="Call back on Monday.")
    clock(START + timedelta(minutes=1))
    delete_note(run=run, agent=agent, key="plan")
    deleted = rows(ada, "action=deleted")
    assert [(r.entry.kind, r.entry.reason, r.who) for r in deleted] == [
        ("runnote", "Note deleted.", "the assistant (fixture-agent)")
    ]


def walk(client: Client, query: str) -> Iterator[list[Any]]:
    """Every page of the log, following its "older" links."""
    url = f"{reverse('audit')}?{query}"
    while True:
        response = client.get(url, **HTMX)
        assert response.status_code == 200
        yield list(response.context["rows"])
        if not response.context["older"]:
            return
        url = f"{reverse('audit')}?{response.context['older']}"


def every_key() -> set[tuple[str, int]]:
    """Every history row and change to a person in the database, by kind and id."""
    keys = {("person", pk) for pk in PersonChange.objects.values_list("pk", flat=True)}
    for table in audit.tables():
        if isinstance(table, audit.HistoryTable):
            ids = table.rows._default_manager.values_list("history_id", flat=True)
            keys |= {(table.kind, pk) for pk in ids}
    return keys


def test_pages_neither_repeat_nor_skip_entries_written_at_the_same_moment(
    people: dict[str, User],
    remember: Callable[..., Memory],
    clock: Callable[[datetime], None],
    ada: Client,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The clock stands still: every entry has the same timestamp, across every table.
    clock(START)
    for n in range(6):
        written = remember(f"Statement {n}.", subject=f"acct_same_{n}", key="contact.channel")
        correct_memory(
            memory=written, actor=Actor.for_user(people["sam"]), statement=f"Now {n}.", reason="x"
        )
        role_change(people["lee"], by=people["ada"], role="support" if n % 2 == 0 else "user")
    monkeypatch.setattr(audit_views, "PAGE_SIZE", 7)
    seen: list[tuple[str, int]] = []
    pages = list(walk(ada, ""))
    for page in pages:
        assert len(page) <= 7
        seen.extend((r.entry.kind, r.entry.id) for r in page)
    assert len(pages) > 3
    assert len(seen) == len(set(seen))
    assert set(seen) == every_key()
    # Newest first, then by kind and id, the same order on every page.
    order = [(r.entry.at, r.entry.kind, r.entry.id) for page in pages for r in page]
    assert order == sorted(order, reverse=True)


def test_pages_follow_the_filters(
    story: dict[str, Memory], ada: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audit_views, "PAGE_SIZE", 2)
    pages = list(walk(ada, "kind=memory"))
    assert len(pages) > 2
    assert {r.entry.kind for page in pages for r in page} == {"memory"}
    total = sum(len(page) for page in pages)
    assert total == Memory.history.count()  # type: ignore[attr-defined]


@pytest.fixture
def grow(
    people: dict[str, User], remember: Callable[..., Memory], clock: Callable[[datetime], None]
) -> Callable[[int], None]:
    numbers = count(1)

    def more(times: int) -> None:
        """Each time: a new subject, a memory and its source from an agent in a run, the
        person's correction, and a change to a person."""
        for _ in range(times):
            n = next(numbers)
            # A minute apart, all on 2 March: the newest page holds every kind of entry.
            clock(START + timedelta(days=1, minutes=n))
            written = remember(
                f"Statement {n}.",
                subject=f"acct_grow_{n}",
                key="contact.channel",
                source=SourceInput(kind="user_message", ref=f"msg_{n}", run=f"run_{n}", turn=1),
            )
            correct_memory(
                memory=written,
                actor=Actor.for_user(people["sam"]),
                statement=f"Corrected {n}.",
                reason="wrong",
            )
            role_change(people["lee"], by=people["ada"], role="support" if n % 2 else "user")
            # Named subjects: their names are looked up with the page, not one by one.
            subject = Subject.objects.get(ref=f"acct_grow_{n}")
            set_display_name(
                subject=subject, display_name=f"Customer {n}", actor=Actor.system("test")
            )

    return more


def page_queries(client: Client, query: str) -> tuple[int, int]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(f"{reverse('audit')}?{query}")
    assert response.status_code == 200
    return len(captured), len(response.context["rows"])


def test_a_page_costs_the_same_queries_for_5_entries_and_a_full_page(
    grow: Callable[[int], None], ada: Client
) -> None:
    grow(1)
    # Only what ``grow`` wrote that day: the fixtures' agent and people were made today.
    few, shown = page_queries(ada, "start=2026-03-02&end=2026-03-02")
    assert 5 <= shown < 10
    grow(12)
    many, shown = page_queries(ada, "start=2026-03-02&end=2026-03-02")
    assert shown == audit_views.PAGE_SIZE
    assert many == few


def test_the_csv_streams_exactly_the_filtered_entries(
    story: dict[str, Memory], ada: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    response = ada.get(f"{reverse('audit-export')}?role=support")
    assert isinstance(response, StreamingHttpResponse)
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == (
        f'attachment; filename="memoryadmin-audit-{timezone.localdate():%Y-%m-%d}.csv"'
    )
    lines = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))  # type: ignore[arg-type]
    assert lines[0] == audit_views.CSV_HEADER
    data = [dict(zip(lines[0], line, strict=True)) for line in lines[1:]]
    assert {line["actor"] for line in data} == {"user:sam"}
    assert {line["who"] for line in data} == {"support (sam)"}
    status = [line for line in data if line["field"] == "Status"]
    assert [(s["before"], s["after"], s["reason"]) for s in status] == [
        ("in use", "deleted", "The customer asked on the phone.")
    ]
    # Read a few at a time, the export still holds every entry once, newest first.
    monkeypatch.setattr(audit_views, "CSV_CHUNK", 3)
    everything = csv_rows(ada)
    entries = [line["entry"] for line in everything]
    expected = {f"{kind}-{pk}" for kind, pk in every_key()}
    assert set(entries) == expected
    # An entry's lines are together: one entry's fields never interleave with another's.
    assert len([e for i, e in enumerate(entries) if i == 0 or entries[i - 1] != e]) == len(expected)
    whens = [line["when"] for line in everything]
    assert whens == sorted(whens, reverse=True)
    # One line per field changed: the person's correction of the status, in full.
    assert {
        "who": "dana",
        "field": "Status",
        "before": "in use",
        "after": "replaced by a correction",
    }.items() <= next(
        line
        for line in everything
        if line["actor"] == "user:dana"
        and line["field"] == "Status"
        and line["action"] == "changed"
    ).items()


def test_the_csv_neutralises_spreadsheet_formulas(
    people: dict[str, User], remember: Callable[..., Memory], ada: Client
) -> None:
    written = remember('=HYPERLINK("http://evil.example","click")', key="contact.channel")
    sam = Actor.for_user(people["sam"])
    corrected = correct_memory(
        memory=written, actor=sam, statement="@SUM(1+1) is what they typed.", reason="typo"
    )
    retract_memory(memory=corrected, actor=sam, reason="+1 the customer asked")
    lines = csv_rows(ada, "kind=memory")
    statements = {line["after"] for line in lines if line["field"] == "Statement"}
    assert statements == {
        '\'=HYPERLINK("http://evil.example","click")',
        "'@SUM(1+1) is what they typed.",
    }
    assert "'+1 the customer asked" in {line["reason"] for line in lines}
    for line in lines:
        for cell in line.values():
            assert not cell.startswith(("=", "+", "-", "@"))


def test_long_values_are_clipped_on_the_page_and_whole_in_the_csv(
    people: dict[str, User], remember: Callable[..., Memory], ada: Client
) -> None:
    long = "Prefers to be written to by post, " + "never by phone or e-mail, " * 5 + "thanks."
    written = remember(long, key="contact.channel")
    correct_memory(
        memory=written, actor=Actor.for_user(people["sam"]), statement="By post.", reason="x"
    )
    html = ada.get(f"{reverse('audit')}?kind=memory&action=created").content.decode()
    assert f'<ins title="{long}">{long[:79]}…</ins>' in html
    lines = csv_rows(ada, "kind=memory&action=created")
    assert long in {line["after"] for line in lines if line["field"] == "Statement"}


@pytest.mark.parametrize("url", ["audit", "audit-export"])
def test_only_admins_reach_the_log(people: dict[str, User], url: str) -> None:
    address = reverse(url)
    assert signed_in(people["sam"]).get(address).status_code == 404
    assert signed_in(people["dana"]).get(address).status_code == 404
    anonymous = Client().get(address)
    assert anonymous.status_code == 302
    assert "/accounts/login/" in anonymous["Location"]
    assert signed_in(people["ada"]).get(address).status_code == 200


def test_memory_text_is_escaped(
    people: dict[str, User], remember: Callable[..., Memory], ada: Client
) -> None:
    remember("<script>alert('x')</script> likes tea.")
    html = ada.get(reverse("audit")).content.decode()
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; likes tea." in html


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("role=boss", "Role: Select a valid choice."),
        ("action=renamed", "Action: Select a valid choice."),
        ("kind=erasure", "Kind of object: Select a valid choice."),
        ("person=nobody", "Person (username): Nobody is called “nobody”."),
        ("agent=ghost", "Agent (name): No agent is called “ghost”."),
        ("subject=acct_none", "Subject (reference): No subject has the reference “acct_none”."),
        ("start=2027-02-30", "From (day): Enter a valid date."),
        ("end=12000-01-01", "To (day, included): Enter a valid date."),
        ("start=2026-03-02&end=2026-03-01", "To (day, included): This day comes before"),
        ("person=dana&agent=fixture-agent", "Agent (name): Choose a person or an agent"),
        ("after=bm90LWEtY3Vyc29y", "Older entries: This “older” link is not one"),
        ("person=da%07na", "Person (username): It holds an invisible character (U+0007)."),
        ("colour=red", "Unknown filter: colour."),
    ],
)
def test_bad_filters_are_a_400_naming_the_field(
    people: dict[str, User], agent: Agent, ada: Client, query: str, words: str
) -> None:
    for url in ("audit", "audit-export"):
        response = ada.get(f"{reverse(url)}?{query}")
        assert response.status_code == 400
        assert words in response.content.decode()
    fragment = ada.get(f"{reverse('audit')}?{query}", **HTMX)
    assert fragment.status_code == 400
    assert words in fragment.content.decode()
    assert "<h1>" not in fragment.content.decode()


def test_a_bad_filter_keeps_what_was_typed_beside_its_error(
    people: dict[str, User], ada: Client
) -> None:
    html = ada.get(f"{reverse('audit')}?person=nobody&role=support").content.decode()
    assert 'value="nobody" aria-invalid="true" aria-describedby="id_person-error"' in html
    assert '<p class="error" id="id_person-error">Nobody is called “nobody”.</p>' in html
    assert '<option value="support" selected>' in html


def test_htmx_gets_the_rows_and_a_clean_address(story: dict[str, Memory], ada: Client) -> None:
    response = ada.get(f"{reverse('audit')}?person=&role=support&kind=", **HTMX)
    assert response.status_code == 200
    text = response.content.decode()
    assert '<div id="audit-results"' in text and "<h1>" not in text
    assert response["HX-Push-Url"] == f"{reverse('audit')}?role=support"
    assert f'href="{reverse("audit-export")}?role=support"' in text


def test_an_empty_log_says_so(people: dict[str, User], ada: Client) -> None:
    html = ada.get(f"{reverse('audit')}?kind=journalentry").content.decode()
    assert "No change matches these filters." in html


@pytest.mark.django_db(transaction=True)
@pytest.mark.browser
def test_an_admin_filters_and_pages_the_log_in_a_browser(
    browser_page: Any,
    people: dict[str, User],
    remember: Callable[..., Memory],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for n in range(4):
        written = remember(f"Statement {n}.", subject=f"acct_browser_{n}", key="contact.channel")
        retract_memory(memory=written, actor=Actor.for_user(people["sam"]), reason=f"Asked {n}.")
    monkeypatch.setattr(audit_views, "PAGE_SIZE", 3)
    page = browser_page
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    sign_in(page, "ada")
    page.goto(reverse("audit"))
    page.get_by_label("Role").select_option("support")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url(lambda url: "role=support" in url)
    table = page.locator("#audit-results table")
    expect(table.get_by_role("row")).to_have_count(4)  # the heading and three entries
    expect(table.get_by_text("Asked 3.")).to_be_visible()
    # At 1280 pixels the object and the reason get room to be read, not a word a line, and
    # the table fits the screen.
    for column in ("audit-what", "audit-why"):
        box = table.locator(f"tbody td.{column}").first.bounding_box()
        assert box is not None and box["width"] >= 160, (column, box)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    page.get_by_role("link", name="Older changes →").click()
    expect(table.get_by_text("Asked 0.")).to_be_visible()
    expect(table.get_by_text("Asked 3.")).to_have_count(0)
    export = page.get_by_role("link", name="Download CSV (these filters)")
    assert export.get_attribute("href") == f"{reverse('audit-export')}?role=support"
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "audit-log.png"), full_page=True)
    assert problems == []
