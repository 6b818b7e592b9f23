"""The compaction timeline and the diff between generations, as support staff see them."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from django.test import Client

from ledger.actions.runs import start_run
from ledger.actions.snapshots import SnapshotInput, store_snapshot
from ledger.models import Agent, Snapshot
from tests.conftest import PASSWORD, SUBJECT
from tests.test_snapshot_checks import COMMITMENT, DOCUMENT

RUN = "run_dora_research"
TIMELINE = f"/runs/{RUN}/snapshots/"
DIFF = f"/runs/{RUN}/snapshots/diff/"
BUDGET = {"system_prompt": 1_200, "tool_definitions": 2_300, "summary": 2_900, "reserve": 4_000}


def later_document() -> dict[str, Any]:
    """Generation 2: one item answered, one finding lost, a commitment reworded, report bumped."""
    document = copy.deepcopy(DOCUMENT)
    document["open"] = [{"item": "Vlaamse Clearing", "blocked_by": "not started"}]
    document["findings"] = [
        document["findings"][0],
        {"item": "Adriatica Pay", "status": "resolved", "evidence": "the PDF commits to a 2h RTO"},
    ]
    document["commitments"] = ["report.md keeps one H2 per company in the order given by the user"]
    document["queries_run"].append("Adriatica Pay DORA PDF")
    document["artifacts"][0]["revision"] = 15
    return document


def compact(agent: Agent, document: dict[str, Any], **fields: Any) -> Snapshot:
    data = SnapshotInput(
        document=document,
        tokens_before=fields.pop("tokens_before", 48_000),
        tokens_after=fields.pop("tokens_after", 10_400),
        **fields,
    )
    return store_snapshot(run_ref=RUN, agent=agent, data=data)


@pytest.fixture
def run_with_history(agent: Agent) -> list[Snapshot]:
    return [
        compact(agent, copy.deepcopy(DOCUMENT), budget=BUDGET),
        compact(agent, later_document(), tokens_after=6_000),  # loses a resolved finding
        compact(agent, copy.deepcopy(DOCUMENT), budget=BUDGET, narrative="Back on track."),
    ]


@pytest.fixture
def support(make_person: Any) -> Client:
    make_person("sam", role="support")
    client = Client()
    assert client.login(username="sam", password=PASSWORD)
    return client


def test_the_timeline_shows_each_generation_with_status_and_tokens(
    support: Client, run_with_history: list[Snapshot]
) -> None:
    response = support.get(TIMELINE)
    assert response.status_code == 200
    page = response.content.decode()
    assert "Compactions of run run_dora_research" in page
    assert "3 generations: 2 accepted, 1 rejected" in page
    assert page.count("Tokens: 48,000 → 10,400") == 2
    assert "Tokens: 48,000 → 6,000" in page


def test_the_timeline_lists_the_problems_of_a_rejected_generation(
    support: Client, run_with_history: list[Snapshot]
) -> None:
    page = support.get(TIMELINE).content.decode()
    assert "Why it was rejected" in page
    assert "1 item resolved in generation 1 is missing or no longer resolved" in page
    assert "Nordlys Betaling" in page


def test_the_timeline_draws_the_budget_as_an_accessible_chart(
    support: Client, run_with_history: list[Snapshot]
) -> None:
    page = support.get(TIMELINE).content.decode()
    # Drawn beside its labels for wide screens and stacked under them for phones.
    assert '<svg class="budget-chart wide"' in page
    assert '<svg class="budget-chart stacked"' in page
    assert 'role="img"' in page
    assert "<title>Summary: 2900 tokens</title>" in page
    assert "<title>After, not split by part: 6000 tokens</title>" in page
    assert "Gen 2 ✗ rejected" in page
    assert "style=" not in page
    assert "<script>" not in page


def test_the_timeline_links_each_generation_to_its_diff(
    support: Client, run_with_history: list[Snapshot]
) -> None:
    page = support.get(TIMELINE).content.decode()
    assert f'href="{DIFF}?a=2&amp;b=3"' in page


def test_document_text_is_escaped(support: Client, agent: Agent) -> None:
    document = copy.deepcopy(DOCUMENT)
    document["relational_note"] = "<script>alert('x')</script>"
    compact(agent, document, narrative="<img src=x onerror=alert(1)>")
    page = support.get(TIMELINE).content.decode()
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "<img src=x" not in page


def test_end_users_get_404_even_for_a_run_about_them(
    make_person: Any, run_with_history: list[Snapshot]
) -> None:
    make_person("dana", subject=SUBJECT)
    client = Client()
    client.login(username="dana", password=PASSWORD)
    assert client.get(TIMELINE).status_code == 404
    assert client.get(DIFF).status_code == 404


def test_people_who_are_not_signed_in_are_sent_to_sign_in(db: None) -> None:
    response = Client().get(TIMELINE)
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]


def test_an_unknown_run_is_404(support: Client) -> None:
    assert support.get("/runs/run_nope/snapshots/").status_code == 404


def test_a_run_with_no_snapshots_says_so(support: Client, agent: Agent) -> None:
    start_run(ref="run_quiet", agent=agent)
    page = support.get("/runs/run_quiet/snapshots/").content.decode()
    assert "No compaction has been stored for this run yet" in page


def test_the_diff_defaults_to_the_last_two_generations(
    support: Client, run_with_history: list[Snapshot]
) -> None:
    response = support.get(DIFF)
    assert response.status_code == 200
    assert "From generation 2" in response.content.decode()


def test_the_diff_shows_what_the_later_generation_lost_and_moved(
    support: Client, run_with_history: list[Snapshot]
) -> None:
    page = support.get(DIFF, {"a": 1, "b": 2}).content.decode()
    assert "Finding for <q>Nordlys Betaling</q> is gone" in page
    assert "<q>Adriatica Pay</q>: open → findings (resolved)" in page
    assert f"<del>{COMMITMENT}</del>" in page
    assert "<ins>report.md keeps one H2 per company in the order given by the user</ins>" in page
    assert "<code>Adriatica Pay DORA PDF</code>" in page
    assert "<code>report.md</code>: revision 14 → revision 15" in page


def test_two_identical_generations_have_an_empty_diff(
    support: Client, run_with_history: list[Snapshot]
) -> None:
    page = support.get(DIFF, {"a": 1, "b": 3}).content.decode()
    assert "Both documents put the same task items in findings and open" in page
    assert "was rejected" not in page


def test_htmx_gets_only_the_diff_fragment(
    support: Client, run_with_history: list[Snapshot]
) -> None:
    response = support.get(DIFF, {"a": 2, "b": 3}, headers={"HX-Request": "true"})
    page = response.content.decode()
    assert response.status_code == 200
    assert page.lstrip().startswith('<section id="diff-result"')
    assert "<html" not in page
    assert "Adriatica Pay" in page


@pytest.mark.parametrize("query", [{"a": "x", "b": "1"}, {"a": "1", "b": "9"}, {"a": "1"}])
def test_a_generation_the_run_does_not_have_is_a_400_with_a_message(
    support: Client, run_with_history: list[Snapshot], query: dict[str, str]
) -> None:
    response = support.get(DIFF, query)
    assert response.status_code == 400
    assert "Choose two generations this run has." in response.content.decode()


def test_a_run_with_one_generation_cannot_be_diffed_yet(support: Client, agent: Agent) -> None:
    compact(agent, copy.deepcopy(DOCUMENT))
    page = support.get(DIFF).content.decode()
    assert "A diff needs two generations" in page


def test_a_rejected_document_is_kept_for_people_to_read(
    support: Client, run_with_history: list[Snapshot]
) -> None:
    page = support.get(TIMELINE).content.decode()
    assert "The state document, as it was rejected" in page
    assert "&quot;blocked_by&quot;: &quot;not started&quot;" in page


def _text(html: str) -> str:
    """What a person reads: the page without its tags."""
    return re.sub(r"<[^>]+>", " ", html)


def test_a_rejected_generation_is_not_said_to_carry_the_same_items(
    support: Client, agent: Agent
) -> None:
    compact(agent, copy.deepcopy(DOCUMENT))
    # The same findings, open items, commitments, queries and artifacts, but a task item
    # added to neither list: the diff of the two documents is empty, the check is not.
    document = copy.deepcopy(DOCUMENT)
    document["task"]["items"].append("Baltic Settle")
    rejected = compact(agent, document)
    assert rejected.status == Snapshot.Status.REJECTED
    page = " ".join(_text(support.get(DIFF, {"a": 1, "b": 2}).content.decode()).split())
    assert "carry the same items" not in page
    assert "Generation 2 was rejected" in page
    assert "The agent never worked from it: below is what it would have changed." in page
    assert "1 task item is in neither findings nor open: “Baltic Settle”." in page
    assert "What got generation 2 rejected is above" in page


def test_comparing_from_a_rejected_generation_says_what_it_is_compared_with(
    support: Client, run_with_history: list[Snapshot]
) -> None:
    page = " ".join(_text(support.get(DIFF, {"a": 2, "b": 3}).content.decode()).split())
    assert "Generation 2 was rejected" in page
    assert "not from what the agent last worked from" in page
    assert "Tokens 6,000 → 10,400 after compaction." in page


def test_the_timeline_names_a_subject_without_a_display_name_once(
    support: Client, agent: Agent, remember: Any
) -> None:
    remember("Likes short answers.")
    compact(agent, copy.deepcopy(DOCUMENT), subject_ref=SUBJECT)
    page = " ".join(_text(support.get(TIMELINE).content.decode()).split())
    assert f"Agent fixture-agent · subject {SUBJECT} · 1 generation" in page
