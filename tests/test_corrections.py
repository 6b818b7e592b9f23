"""The admin's review of corrections: the list, a correction side by side with its original,
who was still given the original afterwards, and reverting (and reverting the revert)."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from playwright.sync_api import expect

from ledger.actions.agents import restrict_agent
from ledger.actions.erasure import erase_subject
from ledger.actions.lifecycle import correct_memory
from ledger.actions.policy import change_policy
from ledger.actions.recalls import record_recall
from ledger.actions.reverts import revert_correction
from ledger.actions.sources import SourceInput
from ledger.actors import Actor
from ledger.models import Agent, Memory, Source, Subject
from ledger.reads import audit
from ledger.reads import corrections as correction_reads
from ledger.reads.recall import recall
from ledger.rules.agents import Restriction
from ledger.rules.refusals import Refusal
from ledger.views import corrections as corrections_view
from tests.conftest import ARTIFACTS, SUBJECT, sign_in, signed_in

pytestmark = pytest.mark.django_db

SAID = "Prefers a phone call after 6 pm about deliveries."
CORRECTED = "Prefers e-mail about deliveries, never a phone call."
MESSAGE = SourceInput(
    kind="user_message", ref="msg_0192", run="run_40", turn=4, excerpt="call me after six"
)
T0 = datetime(2027, 3, 1, 9, 0, tzinfo=UTC)
LIST = "/audit/corrections/"
HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "correction"}


def detail(memory: Memory) -> str:
    return reverse("audit-correction", args=[memory.pk])


def revert_url(memory: Memory) -> str:
    return reverse("audit-correction-revert", args=[memory.pk])


@pytest.fixture
def people(make_person: Callable[..., User]) -> dict[str, User]:
    return {
        "dana": make_person("dana", subject=SUBJECT),
        "eve": make_person("eve", subject="acct_other_person"),
        "sam": make_person("sam", role="support"),
        "ada": make_person("ada", role="admin"),
    }


@pytest.fixture
def corrected(
    remember: Callable[..., Memory],
    people: dict[str, User],
    clock: Callable[[datetime], None],
) -> tuple[Memory, Memory]:
    """An agent wrote what Dana said; a day later she corrected it on the dashboard."""
    clock(T0)
    original = remember(SAID, key="contact.channel", source=MESSAGE)
    clock(T0 + timedelta(days=1))
    replacement = correct_memory(
        memory=original,
        actor=Actor.for_user(people["dana"]),
        statement=CORRECTED,
        reason="I never want calls",
    )
    original.refresh_from_db()
    return original, replacement


def counts() -> tuple[int, int, int]:
    """Memories, their history rows and sources: what a refused revert must leave alone."""
    return Memory.objects.count(), Memory.history.count(), Source.objects.count()


def block() -> str:
    return recall(subject=Subject.objects.get(ref=SUBJECT), goal="deliveries phone", k=10).block


def test_revert_puts_the_original_words_back_as_the_current_memory(
    corrected: tuple[Memory, Memory], people: dict[str, User], clock: Callable[[datetime], None]
) -> None:
    original, replacement = corrected
    before = (original.statement, original.status, original.version)
    clock(T0 + timedelta(days=2))
    ada = signed_in(people["ada"])
    response = ada.post(
        revert_url(replacement), {"reason": "Dana confirmed by phone that calls are fine"}
    )
    assert response.status_code == 302
    assert response["Location"] == detail(replacement)

    replacement.refresh_from_db()
    copy = Memory.objects.get(supersedes=replacement)
    assert (copy.status, copy.statement, copy.restores) == ("active", SAID, original)
    assert (copy.basis, copy.stated_by, copy.key) == ("stated", "", "contact.channel")
    assert copy.written_at == T0 + timedelta(days=2)
    assert copy.agent is None and copy.run is None
    assert replacement.status == "superseded"
    original.refresh_from_db()
    assert (original.statement, original.status, original.version) == before
    # The copy's trace still leads to the message the words came from.
    evidence = copy.sources.get()
    assert (evidence.kind, evidence.ref, evidence.run.ref, evidence.turn, evidence.excerpt) == (
        "user_message",
        "msg_0192",
        "run_40",
        4,
        "call me after six",
    )
    assert evidence.received_at == original.sources.get().received_at
    # Agents are given the original words again, not the correction.
    served = block()
    assert SAID in served and CORRECTED not in served

    # Every row the revert wrote says who, in which role, and why.
    why = "Dana confirmed by phone that calls are fine"
    replaced_row = replacement.history.order_by("-history_date", "-history_id").first()
    copy_row = copy.history.get()
    source_row = evidence.history.get()
    assert replaced_row.history_change_reason == f"Reverted: {why}"
    assert copy_row.history_change_reason == f"Revert of a correction: {why}"
    assert source_row.history_change_reason == f"Evidence copied for a revert: {why}"
    for row in (replaced_row, copy_row, source_row):
        assert (row.history_actor, row.history_role) == ("user:ada", "admin")

    response = ada.get(detail(replacement))
    page = response.content.decode()
    assert "Reverted: the words this correction replaced are the current memory again" in page
    assert revert_url(replacement) not in page
    # The box says plainly who reverted it, when and why, and leads to the revert's page,
    # where the revert can be reverted: no refusal, and no doubled full stop.
    box = page.split('id="revert"')[1]
    assert "This correction was reverted by an admin (ada)" in box
    assert "3 March 2027" in box and why in box
    assert f'<a href="{detail(copy)}">The revert’s own page</a>' in box
    assert "can revert the revert" in box
    for refusal in ("no longer the current memory", "Nothing was changed", "”."):
        assert refusal not in box
    # A revert replaced it, not a correction; and the original was replaced by a correction.
    replaced = {title: side.status for title, side in response.context["sides"]}
    assert replaced == {
        "Original": "Replaced by a correction",
        "Replacement": "Replaced by a revert",
    }
    assert [step.status for step in response.context["chain"]] == [
        "Replaced by a correction",
        "Replaced by a revert",
        "In use",
    ]


def test_reverting_the_revert_puts_the_correction_words_back(
    corrected: tuple[Memory, Memory], people: dict[str, User]
) -> None:
    original, replacement = corrected
    copy = revert_correction(
        memory=replacement, actor=Actor.for_user(people["ada"]), reason="calls are fine"
    )
    ada = signed_in(people["ada"])
    page = ada.get(detail(copy)).content.decode()
    assert "A revert of a correction" in page
    assert "Revert this revert" in page

    response = ada.post(revert_url(copy), {"reason": "Dana wrote again: no calls"}, **HTMX)
    assert response.status_code == 200
    fragment = response.content.decode()
    assert fragment.lstrip().startswith('<div id="correction">')
    again = Memory.objects.get(supersedes=copy)
    assert "Reverted." in fragment and detail(again) in fragment
    assert (again.statement, again.restores, again.status) == (CORRECTED, replacement, "active")
    # The words are the person's correction again, said as such everywhere.
    assert again.stated_by == "correction"
    copy.refresh_from_db()
    replacement.refresh_from_db()
    assert (copy.status, replacement.status, original.status) == ("superseded",) * 3
    assert again.history.get().history_change_reason == (
        "Revert of a correction: Dana wrote again: no calls"
    )
    served = block()
    assert CORRECTED in served and SAID not in served

    # The correction's page says it was reverted, and that its revert, reverted in turn, no
    # longer can be: the latest version can.
    box = ada.get(detail(replacement)).content.decode().split('id="revert"')[1]
    assert "This correction was reverted by an admin (ada)" in box and "calls are fine" in box
    assert f'<a href="{detail(copy)}">The revert’s own page</a>' in box
    assert "can revert the revert" not in box
    assert f'only the latest version, <a href="{detail(again)}">“{CORRECTED}”</a>, can be' in box
    box = ada.get(detail(copy)).content.decode().split('id="revert"')[1]
    assert "This revert was reverted by an admin (ada)" in box
    assert "can revert the revert" in box

    # The chain on each page tells the whole story, oldest first.
    chain = ada.get(detail(again)).context["chain"]
    assert [(step.what, step.version.memory, step.here) for step in chain] == [
        ("First written", original, False),
        ("Corrected", replacement, False),
        ("Reverted: earlier words put back", copy, False),
        ("Reverted: earlier words put back", again, True),
    ]


def test_a_guess_waiting_for_confirmation_comes_back_waiting(
    remember: Callable[..., Memory], people: dict[str, User]
) -> None:
    guess = remember("Probably works nights.", basis="inferred", key="work.hours")
    assert guess.status == "pending"
    fixed = correct_memory(
        memory=guess, actor=Actor.for_user(people["sam"]), statement="Works days.", reason="asked"
    )
    copy = revert_correction(memory=fixed, actor=Actor.system("test"), reason="sam guessed too")
    assert (copy.status, copy.basis, copy.statement) == ("pending", "inferred", guess.statement)
    assert copy.expires_at is not None


def test_a_held_statement_put_back_by_a_revert_is_still_the_agents_claim(
    remember: Callable[..., Memory], people: dict[str, User], agent: Agent
) -> None:
    restrict_agent(
        agent=agent,
        actor=Actor.system("test"),
        restriction=Restriction.QUARANTINED,
        on=True,
        reason="wrote guesses as statements",
    )
    agent.refresh_from_db()
    held = remember(SAID, key="contact.channel")
    fixed = correct_memory(
        memory=held, actor=Actor.for_user(people["sam"]), statement=CORRECTED, reason="asked"
    )
    copy = revert_correction(memory=fixed, actor=Actor.for_user(people["ada"]), reason="undo")
    assert (copy.status, copy.basis) == ("pending", "stated")
    page = signed_in(people["ada"]).get(detail(copy)).content.decode()
    # Still waiting for the person: the agent's report of what they said, not their word.
    assert page.count("stated: the assistant says the person said this") == 1
    assert "stated: the person said this" not in page


@pytest.mark.parametrize(
    ("reason", "says"),
    [
        ("", "Say why this correction is reverted"),
        ("   ", "Say why this correction is reverted"),
        ("nul\x00byte", "Null characters are not allowed"),
        ("x" * 501, "Keep the reason to 500 characters"),
    ],
)
def test_a_revert_without_a_usable_reason_writes_nothing(
    corrected: tuple[Memory, Memory], people: dict[str, User], reason: str, says: str
) -> None:
    _, replacement = corrected
    before = counts()
    response = signed_in(people["ada"]).post(revert_url(replacement), {"reason": reason}, **HTMX)
    assert response.status_code == 400
    page = response.content.decode()
    assert says in page
    # The form is still there, with what was typed.
    assert 'name="reason"' in page and 'aria-invalid="true"' in page
    if reason.strip() and "\x00" not in reason:
        assert reason in page
    assert counts() == before
    replacement.refresh_from_db()
    assert replacement.status == "active"


def let_agents_change_others() -> None:
    change_policy(
        actor=Actor.system("test"),
        reason="Agents may rewrite what people corrected.",
        agents_change_others=True,
    )


def test_what_is_not_a_current_correction_cannot_be_reverted(
    corrected: tuple[Memory, Memory], people: dict[str, User], agent: Agent
) -> None:
    original, replacement = corrected
    ada = signed_in(people["ada"])
    # The original is no correction at all; nor is an agent's rewrite through the API (of a
    # person's correction: the policy must let agents change what others wrote).
    let_agents_change_others()
    rewritten = correct_memory(
        memory=Memory.objects.get(pk=replacement.pk),
        actor=Actor.for_agent(agent),
        statement="Prefers e-mail, and texts on weekends.",
        reason="the person said so in chat",
        source=SourceInput(kind="user_message", ref="msg_0200"),
    )
    before = counts()
    for memory in (original, rewritten):
        response = ada.post(revert_url(memory), {"reason": "try"})
        assert response.status_code == 409
        assert "is not a correction" in response.content.decode()
        assert ada.get(detail(memory)).status_code == 404
    # The person's correction was replaced since: no longer the current memory.
    response = ada.post(revert_url(replacement), {"reason": "try"}, **HTMX)
    assert response.status_code == 409
    assert "no longer the current memory (it is now replaced by a correction)" in (
        response.content.decode()
    )
    assert counts() == before
    # The correction's page points to the latest version, with one full stop after it.
    box = ada.get(detail(replacement)).content.decode().split('id="revert"')[1]
    latest = reverse("memory-history", args=[rewritten.pk])
    assert f'The latest version is <a href="{latest}">“{rewritten.statement}”</a></p>' in box


def test_an_erased_subject_has_no_words_to_put_back(
    corrected: tuple[Memory, Memory], people: dict[str, User]
) -> None:
    _, replacement = corrected
    erase_subject(subject=replacement.subject, actor=Actor.for_user(people["dana"]))
    before = counts()
    response = signed_in(people["ada"]).post(revert_url(replacement), {"reason": "undo"})
    assert response.status_code == 409
    assert "This subject was erased" in response.content.decode()
    assert counts() == before
    with pytest.raises(Refusal) as refused:
        revert_correction(memory=replacement, actor=Actor.system("test"), reason="undo")
    assert refused.value.code == "subject_erased"


def test_only_an_admin_sees_or_reverts_corrections(
    corrected: tuple[Memory, Memory], people: dict[str, User], agent: Agent
) -> None:
    _, replacement = corrected
    before = counts()
    for who in ("dana", "eve", "sam"):
        client = signed_in(people[who])
        for url in (LIST, detail(replacement), "/audit/erasures/"):
            assert client.get(url).status_code == 404, (who, url)
        assert client.post(revert_url(replacement), {"reason": "mine"}).status_code == 404
    anonymous = Client()
    assert anonymous.get(LIST).status_code == 302
    assert anonymous.post(revert_url(replacement), {"reason": "x"}).status_code == 302
    # Only an admin, or the command line, reverts through the action too.
    for actor in (Actor.for_user(people["sam"]), Actor.for_agent(agent)):
        with pytest.raises(Refusal) as refused:
            revert_correction(memory=replacement, actor=actor, reason="x")
        assert refused.value.status == 403
    assert counts() == before


def test_reads_of_the_original_after_the_replacement_are_counted_with_their_runs(
    remember: Callable[..., Memory],
    people: dict[str, User],
    agent: Agent,
    clock: Callable[[datetime], None],
) -> None:
    subject_of = lambda: Subject.objects.get(ref=SUBJECT)  # noqa: E731
    clock(T0)
    original = remember(SAID, key="contact.channel", source=MESSAGE)
    # Read twice before anyone corrected it: its ordinary reach, not counted.
    for run in ("run_41", "run_42"):
        record_recall(
            agent=agent, result=recall(subject=subject_of(), goal="call", k=5), run_ref=run
        )
    fixed_at = T0 + timedelta(hours=5)
    clock(fixed_at)
    # Three reads were under way while the correction was saved (one stamped by a server
    # whose clock ran a second ahead): each was given the original words.
    in_flight = [
        recall(subject=subject_of(), goal="call", k=5, now=fixed_at + timedelta(seconds=s))
        for s in (0, 1, 2)
    ]
    replacement = correct_memory(
        memory=original, actor=Actor.for_user(people["sam"]), statement=CORRECTED, reason="call"
    )
    for result, run in zip(in_flight, ("run_43", "run_43", None), strict=True):
        record_recall(agent=agent, result=result, run_ref=run, turn=7)
    # Later reads are given the replacement, never the original.
    clock(fixed_at + timedelta(hours=1))
    record_recall(
        agent=agent, result=recall(subject=subject_of(), goal="call", k=5), run_ref="run_44"
    )

    ada = signed_in(people["ada"])
    response = ada.get(detail(replacement))
    reads = response.context["reads"]
    assert (reads.after, reads.before) == (3, 2)
    assert [(row["run"], row["reads"]) for row in reads.runs] == [(None, 1), ("run_43", 2)]
    assert len(reads.latest) == 3
    page = response.content.decode()
    original_part = page.split('id="reads-title"')[1].split('id="chain-title"')[0]
    assert "Yes: 3 times" in original_part and "in 2 conversations" in original_part
    assert reverse("run", args=["run_43"]) in original_part
    assert reverse("run", args=["run_44"]) not in original_part
    for item in reads.latest:
        assert reverse("recall", args=[item.recall_id]) in original_part
    assert "Before this correction, agents were given the original 2 times: <a href=" in page
    # The correction's own reach: the later read was given the replacement's words.
    reach_part = page.split('id="reach-title"')[1].split('id="reads-title"')[0]
    assert (
        "Agents given the replacement since it was written: <strong>1 time</strong>, in run "
        f'<a href="{reverse("run", args=["run_44"])}">run_44</a>.'
    ) in reach_part
    listing = ada.get(LIST).content.decode()
    assert "<strong>3 times</strong>" in listing


def test_a_correction_nobody_read_afterwards_says_no(
    corrected: tuple[Memory, Memory], people: dict[str, User]
) -> None:
    _, replacement = corrected
    page = signed_in(people["ada"]).get(detail(replacement)).content.decode()
    assert "no agent was given the original after the replacement was written" in page
    assert "Agents given the replacement since it was written: none yet." in page
    assert "Before this correction, no agent had been given the original." in page
    assert "0 times" not in page


def test_the_replacements_reach_names_its_runs_in_a_fixed_number_of_queries(
    corrected: tuple[Memory, Memory],
    people: dict[str, User],
    agent: Agent,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, replacement = corrected
    ada = signed_in(people["ada"])

    def given(runs: list[str | None]) -> None:
        for run in runs:
            record_recall(
                agent=agent,
                result=recall(subject=replacement.subject, goal="deliveries", k=5),
                run_ref=run,
            )

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert ada.get(detail(replacement)).status_code == 200
        return len(captured)

    given(["run_60"])
    few = queries()
    given(["run_61", "run_61", None, "run_62", "run_63", None, "run_64"])
    assert queries() == few
    page = ada.get(detail(replacement)).content.decode()
    reach = page.split('id="reach-title"')[1].split('id="reads-title"')[0]
    assert "<strong>8 times</strong>, in runs " in reach
    for run in ("run_60", "run_61", "run_62", "run_63", "run_64"):
        assert f'<a href="{reverse("run", args=[run])}">{run}</a>' in reach
    assert "and 2 times outside any run." in reach
    # Past the most it names, it says how many runs there are in all.
    monkeypatch.setattr(correction_reads, "READS_SHOWN", 2)
    page = ada.get(detail(replacement)).content.decode()
    assert "(the latest 2 of 5 runs)" in page


def test_the_page_shows_both_sides_with_who_said_it_and_why(
    corrected: tuple[Memory, Memory], people: dict[str, User]
) -> None:
    original, replacement = corrected
    response = signed_in(people["ada"]).get(detail(replacement))
    assert response.status_code == 200
    page = response.content.decode()
    assert page.index(SAID) < page.index(CORRECTED)
    assert "the assistant wrote this, citing the person’s message" in page
    assert "corrected by the person" in page
    assert "the assistant (fixture-agent)" in page and "The person (dana)" in page
    assert "I never want calls" in page
    assert reverse("source", args=["msg_0192"]) in page
    assert reverse("run", args=["run_40"]) in page and "turn 4" in page
    assert "call me after six" in page
    assert "Corrected on the dashboard by the person (dana)" in page
    assert 'hx-post="' + revert_url(replacement) + '"' in page
    assert "csrfmiddlewaretoken" in page


def test_memory_text_is_escaped_everywhere(
    remember: Callable[..., Memory], people: dict[str, User]
) -> None:
    hostile = remember('<script>alert("said")</script> likes <b>bold</b>', key="x.y")
    fixed = correct_memory(
        memory=hostile,
        actor=Actor.for_user(people["sam"]),
        statement='<img src=x onerror="alert(1)">',
        reason="<i>why</i>",
    )
    ada = signed_in(people["ada"])
    for url in (LIST, detail(fixed)):
        page = ada.get(url).content.decode()
        assert "<script>alert" not in page and "<img src=x" not in page and "<i>why" not in page
        assert "&lt;script&gt;alert" in page and "&lt;img src=x" in page


@pytest.fixture
def many(
    remember: Callable[..., Memory],
    people: dict[str, User],
    clock: Callable[[datetime], None],
) -> dict[str, Memory]:
    """One correction by each kind of person, on different days, and a revert."""
    fixes: dict[str, Memory] = {}
    for day, who in enumerate(("dana", "sam", "ada"), start=1):
        clock(T0 + timedelta(days=day))
        written = remember(f"What {who} saw wrong.", key=f"k.{who}")
        fixes[who] = correct_memory(
            memory=written,
            actor=Actor.for_user(people[who]),
            statement=f"What {who} put right.",
            reason=f"{who} knew",
        )
    clock(T0 + timedelta(days=4))
    fixes["revert"] = revert_correction(
        memory=fixes["sam"], actor=Actor.for_user(people["ada"]), reason="sam was wrong"
    )
    return fixes


def shown(client: Client, **params: Any) -> list[Memory]:
    response = client.get(LIST, params)
    assert response.status_code == 200, response.content.decode()
    return [entry.memory for entry in response.context["entries"]]


def test_the_list_is_newest_first_and_filters_by_who_subject_and_day(
    many: dict[str, Memory], people: dict[str, User], agent: Agent
) -> None:
    let_agents_change_others()
    correct_memory(
        memory=Memory.objects.get(statement="What dana put right."),
        actor=Actor.for_agent(agent),
        statement="An agent's rewrite is not in the review.",
        reason="chat",
        source=SourceInput(kind="user_message", ref="msg_9"),
    )
    ada = signed_in(people["ada"])
    assert shown(ada) == [many["revert"], many["ada"], many["sam"], many["dana"]]
    assert shown(ada, who="user") == [many["dana"]]
    assert shown(ada, who="support") == [many["sam"]]
    assert shown(ada, who="admin") == [many["revert"], many["ada"]]
    assert shown(ada, person="ada", who="admin") == [many["revert"], many["ada"]]
    assert shown(ada, person="sam") == [many["sam"]]
    assert shown(ada, subject=SUBJECT, written_from="2027-03-02", written_to="2027-03-03") == [
        many["sam"],
        many["dana"],
    ]
    assert shown(ada, written_from="2027-03-05") == [many["revert"]]
    assert shown(ada, subject="acct_other_person") == []
    page = ada.get(LIST).content.decode()
    assert "support (sam)" in page and "the person (dana)" in page and "an admin (ada)" in page
    assert "sam was wrong" in page and "dana knew" in page
    assert '<span class="badge revert">revert</span>' in page
    # Sam's correction was reverted: a revert replaced it, not someone's correction.
    now = {entry.memory: entry.status for entry in ada.get(LIST).context["entries"]}
    assert now[many["sam"]] == "Replaced by a revert"
    assert now[many["revert"]] == now[many["ada"]] == "In use"


def row_of(page: str, memory: Memory) -> str:
    """The list's row of ``memory``, its whitespace collapsed."""
    rows = " ".join(page.split()).split("<tr>")
    return next(row.split("</tr>")[0] for row in rows if f'"{detail(memory)}"' in row)


def test_each_row_says_why_as_history_does_and_offers_a_clear_link_to_open_it(
    many: dict[str, Memory], people: dict[str, User], remember: Callable[..., Memory]
) -> None:
    written = remember("What dana said lately.", key="k.lately")
    silent = correct_memory(
        memory=written,
        actor=Actor.for_user(people["dana"]),
        statement="What dana says now.",
        reason="",
    )
    ada = signed_in(people["ada"])
    page = ada.get(LIST).content.decode()
    # No reason: said as the subject's history and the audit log say it, not a dash.
    row = row_of(page, silent)
    assert '<td class="ref">no reason given</td>' in row and "—" not in row
    history = signed_in(people["dana"]).get(reverse("memory-history", args=[silent.pk]))
    assert "no reason given" in history.content.decode()
    assert "no reason given" in ada.get(reverse("audit")).content.decode()
    assert "dana knew" in row_of(page, many["dana"])
    # Each row opens its correction with a link that says what it is for: the current ones
    # can be compared and reverted, the one a revert replaced only opened.
    link = '<a class="button" href="{}" aria-label="{} the '
    for memory, words in (
        (silent, "Compare and revert"),
        (many["revert"], "Compare and revert"),
        (many["sam"], "Open"),
    ):
        assert link.format(detail(memory), words) in row_of(page, memory)
    assert f">{words}</a>" in row_of(page, many["sam"])


def labels(page: str) -> set[str]:
    return set(re.findall(r'<label for="[^"]+">([^<]+)</label>', page))


def options(page: str, name: str) -> list[str]:
    select = page.split(f'name="{name}"')[1].split("</select>")[0]
    return re.findall(r"<option [^>]*>([^<]+)</option>", select)


def test_the_filters_are_worded_as_the_audit_logs(people: dict[str, User]) -> None:
    ada = signed_in(people["ada"])
    corrections = ada.get(LIST).content.decode()
    audit_log = ada.get(reverse("audit")).content.decode()
    assert labels(corrections) == {
        "Role",
        "Person (username)",
        "Subject (reference)",
        "From (day)",
        "To (day, included)",
    }
    assert labels(corrections) <= labels(audit_log)
    roles = options(corrections, "who")
    assert roles == ["Any", "the person", "support", "an admin"]
    assert set(roles) <= set(options(audit_log, "role"))


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"subject": "acct_nobody"}, "No subject has the reference “acct_nobody”."),
        ({"written_from": "yesterday"}, "Enter a valid date."),
        ({"written_from": "2027-03-05", "written_to": "2027-03-01"}, "“To” is before “from”."),
        ({"who": "everyone"}, "Select a valid choice."),
        ({"colour": "red"}, "Unknown filter: colour."),
        ({"after": "not-a-cursor"}, "is not one this page gave out"),
    ],
)
def test_bad_filters_are_a_400_that_names_the_problem(
    many: dict[str, Memory], people: dict[str, User], params: dict[str, str], says: str
) -> None:
    response = signed_in(people["ada"]).get(LIST, params)
    assert response.status_code == 400
    assert says in response.content.decode()


def test_the_list_pages_by_keyset_without_repeating_or_skipping(
    many: dict[str, Memory], people: dict[str, User], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(corrections_view, "PAGE_SIZE", 3)
    ada = signed_in(people["ada"])
    first = ada.get(LIST, {"who": "admin"})
    assert [e.memory for e in first.context["entries"]] == [many["revert"], many["ada"]]
    assert first.context["next_query"] == ""
    first = ada.get(LIST)
    assert len(first.context["entries"]) == 3
    assert "Older corrections" in first.content.decode()
    second = ada.get(
        LIST + "?" + first.context["next_query"],
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="correction-rows",
    )
    assert [e.memory for e in second.context["entries"]] == [many["dana"]]
    fragment = second.content.decode()
    assert fragment.lstrip().startswith('<div id="correction-rows"')
    assert "← Newest" in fragment


def test_the_list_costs_the_same_queries_for_few_or_many(
    remember: Callable[..., Memory], people: dict[str, User], agent: Agent
) -> None:
    def grow(times: int, start: int) -> None:
        for n in range(start, start + times):
            written = remember(f"Statement {n} as written.", key=f"k.{n}")
            subject = Subject.objects.get(ref=SUBJECT)
            in_flight = recall(subject=subject, goal="statement", k=20)
            fixed = correct_memory(
                memory=written,
                actor=Actor.for_user(people["sam"]),
                statement=f"Fixed {n}.",
                reason="wrong",
            )
            record_recall(agent=agent, result=in_flight, run_ref=f"run_{n}")
            if n % 2:
                revert_correction(memory=fixed, actor=Actor.for_user(people["ada"]), reason="no")

    ada = signed_in(people["ada"])

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert ada.get(LIST).status_code == 200
        return len(captured)

    grow(2, 0)
    few = queries()
    grow(8, 2)
    assert queries() == few
    with CaptureQueriesContext(connection) as captured:
        assert (
            ada.get(LIST, {"subject": SUBJECT, "who": "admin", "person": "ada"}).status_code == 200
        )
    assert len(captured) <= few + 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.browser
def test_an_admin_reverts_in_the_browser_and_the_page_updates_in_place(
    browser_page: Any, corrected: tuple[Memory, Memory], people: dict[str, User]
) -> None:
    _, replacement = corrected
    page = browser_page
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    sign_in(page, "ada")
    page.goto(LIST)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "admin-corrections.png"), full_page=True)
    row = page.get_by_role("row").filter(has_text=CORRECTED)
    row.get_by_role("link", name=re.compile("^Compare and revert the correction")).click()
    expect(page.get_by_role("heading", name="A correction", level=1)).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "admin-correction.png"), full_page=True)

    # No reason: refused in words beside the field, nothing written, the page stays.
    page.get_by_label("Why it is reverted").fill("  ")
    page.get_by_role("button", name="Revert this correction").click()
    expect(page.get_by_role("alert").filter(has_text="Say why")).to_be_visible()
    assert Memory.objects.count() == 2
    # The browser logs the refusal's 400 as it logs any; htmx swapped it in as the answer.
    assert problems == [
        "Failed to load resource: the server responded with a status of 400 (Bad Request)"
    ]
    problems.clear()

    page.get_by_label("Why it is reverted").fill("Dana asked for calls again")
    page.get_by_role("button", name="Revert this correction").click()
    expect(page.get_by_role("status").filter(has_text="Reverted.")).to_be_visible()
    assert page.url.endswith(detail(replacement))
    expect(page.get_by_role("button", name="Revert this correction")).to_have_count(0)
    copy = Memory.objects.get(supersedes=replacement)
    assert copy.statement == SAID
    reverted = page.get_by_role("region", name="Reverted")
    expect(reverted).to_contain_text("This correction was reverted by an admin (ada)")
    expect(reverted).to_contain_text("Dana asked for calls again")
    expect(reverted).not_to_contain_text("Nothing was changed")
    reverted.get_by_role("link", name="The revert’s own page").click()
    expect(page.get_by_role("button", name="Revert this revert")).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "admin-revert.png"), full_page=True)
    assert problems == []


def test_a_correction_its_revert_and_the_reverts_revert_are_in_the_audit_with_reasons(
    corrected: tuple[Memory, Memory], people: dict[str, User], clock: Callable[[datetime], None]
) -> None:
    _, replacement = corrected
    ada = Actor.for_user(people["ada"])
    clock(T0 + timedelta(days=2))
    copy = revert_correction(memory=replacement, actor=ada, reason="calls are fine after all")
    clock(T0 + timedelta(days=3))
    again = revert_correction(memory=copy, actor=ada, reason="Dana wrote: no calls")
    subject = Subject.objects.get(ref=SUBJECT)
    found = audit.page(audit.Filters(subject_id=subject.pk, kind="memory"), size=100).entries
    said = {(entry.object_id, entry.action, entry.actor, entry.reason) for entry in found}
    assert {
        (
            str(replacement.pk),
            "created",
            "user:dana",
            "Correction of an earlier memory: I never want calls",
        ),
        (str(copy.pk), "created", "user:ada", "Revert of a correction: calls are fine after all"),
        (str(replacement.pk), "changed", "user:ada", "Reverted: calls are fine after all"),
        (str(again.pk), "created", "user:ada", "Revert of a correction: Dana wrote: no calls"),
        (str(copy.pk), "changed", "user:ada", "Reverted: Dana wrote: no calls"),
    } <= said
    page = signed_in(people["ada"]).get("/audit/", {"subject": SUBJECT}).content.decode()
    for reason in ("I never want calls", "calls are fine after all", "Dana wrote: no calls"):
        assert reason in page
