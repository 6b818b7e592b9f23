"""Recall through the API: only servable memories, capped, ranked, with conflicts, recorded."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from ledger.actions import vectors
from ledger.actions.erasure import erase_subject
from ledger.actions.expiry import expire_due
from ledger.actions.gate import MemoryInput, write_memory
from ledger.actions.lifecycle import confirm_memory, correct_memory, retract_memory
from ledger.actions.policy import change_policy
from ledger.actions.sources import SourceInput
from ledger.actors import Actor
from ledger.models import Agent, Memory, Recall, RecallItem, Run, Subject
from ledger.reads.retrieval import rank_memories
from tests.conftest import SUBJECT, agent_client

pytestmark = pytest.mark.django_db
URL = f"/api/v1/subjects/{SUBJECT}/recall"
PERSON = Actor.system("test")


def get(client: APIClient, url: str = URL, **params: Any) -> Any:
    return client.get(url, params)


def statements(response: Any) -> list[str]:
    return [m["statement"] for m in response.json()["memories"]]


def infer(remember: Callable[..., Memory], statement: str, **fields: Any) -> Memory:
    """An inferred memory two agents wrote, so agents may use it."""
    remember(
        statement, basis="inferred", source=SourceInput(kind="user_message", ref="msg_a"), **fields
    )
    other = Agent.objects.filter(name="second-opinion").first()
    if other is None:
        other = agent_client("second-opinion", ["write"])[1]
    data = MemoryInput(
        subject=fields.pop("subject", SUBJECT),
        kind=fields.pop("kind", "preference"),
        basis="inferred",
        statement=statement,
        source=SourceInput(kind="user_message", ref="msg_b"),
        **fields,
    )
    memory = write_memory(agent=other, data=data).memory
    assert memory is not None
    memory.refresh_from_db()
    assert memory.status == "active"
    return memory


def set_recall_cap(cap: int) -> None:
    change_policy(actor=PERSON, reason="test", recall_cap=cap)


# What is served


def test_active_memory_is_served_with_its_labels(api: APIClient, remember) -> None:
    memory = remember("Prefers email over telephone.", key="contact.channel")
    response = get(api)
    assert response.status_code == 200
    data = response.json()
    assert data["subject"] == SUBJECT
    [served] = data["memories"]
    assert served["id"] == str(memory.pk)
    assert served["kind"] == "preference"
    assert served["key"] == "contact.channel"
    assert served["basis"] == "stated"
    assert served["written_at"] and served["expires_at"]
    assert served["rank"] == 0.0
    assert "Prefers email over telephone." in data["block"]


def test_pending_retracted_superseded_expired_and_erased_are_never_served(
    api: APIClient, remember
) -> None:
    remember("A guess with one source.", basis="inferred")
    retract_memory(memory=remember("Retracted fact."), actor=PERSON, reason="wrong")
    correct_memory(memory=remember("Old wording."), actor=PERSON, statement="New.", reason="x")
    soon = timezone.now() + timedelta(minutes=1)
    remember("Swept by expiry.", expires_at=soon, expires_omitted=False)
    expire_due(now=soon + timedelta(minutes=1))
    response = get(api, goal="guess retracted old wording swept erased fact", k=20)
    assert statements(response) == ["New."]
    for gone in ("A guess", "Retracted", "Old wording", "Swept"):
        assert gone not in response.json()["block"]


def test_erased_memories_are_never_served(api: APIClient, remember) -> None:
    remember("Erased fact.")
    erase_subject(subject=Subject.objects.get(ref=SUBJECT), actor=PERSON)
    response = get(api, goal="erased fact", k=20)
    assert statements(response) == []
    assert "Erased" not in response.json()["block"]


def test_memory_past_its_expiry_is_not_served_before_the_sweep_runs(
    api: APIClient, remember
) -> None:
    soon = timezone.now() + timedelta(days=1)
    remember("Lives in Ghent until Friday.", expires_at=soon, expires_omitted=False)
    remember("Prefers email.")
    assert len(get(api).json()["memories"]) == 2
    with time_machine.travel(soon + timedelta(seconds=1), tick=False):
        response = get(api)
    assert Memory.objects.get(statement__startswith="Lives").status == "active"
    assert statements(response) == ["Prefers email."]
    assert "Ghent" not in response.json()["block"]


def test_other_subjects_memories_are_not_served(api: APIClient, remember) -> None:
    remember("About somebody else.", subject="acct_other")
    remember("About this subject.")
    assert statements(get(api)) == ["About this subject."]


def test_subject_without_servable_memories_gets_an_empty_block(api: APIClient, remember) -> None:
    remember("A guess with one source.", basis="inferred")
    response = get(api)
    assert response.status_code == 200
    assert response.json()["memories"] == []
    assert "No records about this subject may be used" in response.json()["block"]


# The cap


def test_default_k_is_five(api: APIClient, remember) -> None:
    for n in range(7):
        remember(f"Fact number {n}.")
    response = get(api)
    assert len(response.json()["memories"]) == 5
    assert response.json()["k"] == 5


def test_k_at_the_policy_cap_is_served_and_never_more(api: APIClient, remember) -> None:
    set_recall_cap(3)
    for n in range(5):
        remember(f"Fact number {n}.")
    assert len(get(api, k=3).json()["memories"]) == 3
    response = get(api, k=4)
    assert response.status_code == 400
    assert "recall cap" in response.json()["k"][0]
    assert not Recall.objects.filter(k=4).exists()


def test_fewer_memories_than_k_are_all_served(api: APIClient, remember) -> None:
    remember("Only fact.")
    assert statements(get(api, k=10)) == ["Only fact."]


# Ordering


def test_relevance_to_the_goal_orders_the_memories(api: APIClient, remember) -> None:
    remember("Refund for order 1234 was promised by email on Monday.")
    remember("Has a dog called Rex.")
    remember("Asked about a refund once.")
    vectors.embed_missing()
    response = get(api, goal="Chase the promised refund for order 1234")
    # The dog has nothing to do with it: below the floor, it is not served to fill k.
    assert statements(response) == [
        "Refund for order 1234 was promised by email on Monday.",
        "Asked about a refund once.",
    ]
    ranks = [m["rank"] for m in response.json()["memories"]]
    assert ranks[0] > ranks[1] > 0
    assert response.json()["semantic"] == "used"


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's English stemming")
def test_english_stemming_matches_other_forms_of_a_word(api: APIClient, remember) -> None:
    remember("Has a dog called Rex.")
    remember("Was refunded twice in March.")
    assert statements(get(api, goal="refunds", k=1)) == ["Was refunded twice in March."]


def test_words_alone_rank_by_bm25_then_stated_then_newer(remember, settings) -> None:
    settings.MEMORYADMIN_EMBEDDINGS = "off"
    remember("Asked about a refund.")
    infer(remember, "Wants a refund by bank transfer.")
    remember("Refund for order 1234 was promised.")
    remember("Has a dog called Rex.")
    candidates = Memory.objects.filter(subject__ref=SUBJECT).servable(timezone.now())
    ranking = rank_memories(candidates=candidates, goal="Chase the refund for order 1234", k=5)
    assert [r.memory.statement for r in ranking.memories] == [
        "Refund for order 1234 was promised.",
        "Asked about a refund.",
        "Wants a refund by bank transfer.",
        # Without meaning nothing can tell it is irrelevant: it fills the last place.
        "Has a dog called Rex.",
    ]
    first, second, third, last = (r.why for r in ranking.memories)
    assert last.lexical == 0 and last.matched == ()
    assert first.matched == ("refund", "order", "1234") and second.matched == ("refund",)
    # The shorter statement weighs its one shared word more (BM25's length norm).
    assert first.lexical > second.lexical > third.lexical > 0
    assert ranking.semantic == "off"


def test_a_rare_word_outweighs_common_ones(remember, settings) -> None:
    settings.MEMORYADMIN_EMBEDDINGS = "off"
    for statement in (
        "Training four times a week for the autumn race.",
        "Long run every week on Sunday mornings.",
        "Training plan changes every week in spring.",
        "Had an Achilles injury two years ago.",
    ):
        remember(statement)
    candidates = Memory.objects.filter(subject__ref=SUBJECT).servable(timezone.now())
    goal = "Adjust this week's training for his Achilles flare-up"
    ranking = rank_memories(candidates=candidates, goal=goal, k=1)
    assert [r.memory.statement for r in ranking.memories] == [
        "Had an Achilles injury two years ago."
    ]


def test_stated_outranks_inferred_at_equal_relevance(api: APIClient, remember) -> None:
    # The same number of words: the same weight for "refund" in each.
    remember("Asked about a refund for jackets.")
    infer(remember, "Wants a refund by transfer.")  # newer, but only a guess
    response = get(api, goal="refund")
    memories = response.json()["memories"]
    assert [m["basis"] for m in memories] == ["stated", "inferred"]
    assert memories[0]["rank"] == memories[1]["rank"] > 0


def test_more_relevant_inferred_memory_still_comes_first(api: APIClient, remember) -> None:
    remember("Asked about a refund.")
    infer(remember, "Wants the jacket refund sent by bank transfer.")
    memories = get(api, goal="jacket refund").json()["memories"]
    assert [m["basis"] for m in memories] == ["inferred", "stated"]


def test_newer_comes_before_older_at_equal_relevance(api: APIClient, remember) -> None:
    start = datetime(2026, 1, 5, tzinfo=UTC)
    with time_machine.travel(start, tick=False):
        remember("Refund asked in January.")
    with time_machine.travel(start + timedelta(days=30), tick=False):
        remember("Refund asked in February.")
    assert statements(get(api, goal="refund")) == [
        "Refund asked in February.",
        "Refund asked in January.",
    ]


def test_without_a_goal_the_most_recently_confirmed_come_first(api: APIClient, remember) -> None:
    start = datetime(2026, 1, 5, tzinfo=UTC)
    with time_machine.travel(start, tick=False):
        first = remember("Written first.")
    with time_machine.travel(start + timedelta(days=1), tick=False):
        remember("Written second.")
    with time_machine.travel(start + timedelta(days=2), tick=False):
        confirm_memory(memory=first, actor=PERSON)
    assert statements(get(api)) == ["Written first.", "Written second."]


def test_without_a_goal_a_guess_never_comes_before_a_stated_memory(
    api: APIClient, remember
) -> None:
    remember("Said by the person.")
    infer(remember, "Guessed and corroborated later.")
    assert [m["basis"] for m in get(api).json()["memories"]] == ["stated", "inferred"]


# Conflicts


def test_open_conflict_appears_with_all_its_statements(api: APIClient, remember) -> None:
    remember("Prefers email.", key="contact.channel")
    remember("Prefers telephone.", key="contact.channel")
    remember("Prefers letters by post.", key="contact.channel")
    remember("Has a dog called Rex.")
    response = get(api, k=1, goal="dog")
    data = response.json()
    assert statements(response) == ["Has a dog called Rex."]
    [conflict] = data["conflicts"]
    assert conflict["key"] == "contact.channel"
    assert {s["statement"] for s in conflict["statements"]} == {
        "Prefers email.",
        "Prefers telephone.",
        "Prefers letters by post.",
    }
    block = data["block"]
    assert "UNRESOLVED CONFLICT in slot contact.channel: these 3 records disagree" in block
    assert "ask the person" in block
    for statement in ("Prefers email.", "Prefers telephone.", "Prefers letters by post."):
        assert block.count(f"| {statement}") == 1


def test_conflict_statement_no_longer_servable_is_left_out(api: APIClient, remember) -> None:
    remember("Prefers email.", key="contact.channel")
    remember("Prefers telephone.", key="contact.channel")
    retract_memory(
        memory=remember("Prefers fax.", key="contact.channel"), actor=PERSON, reason="wrong"
    )
    [conflict] = get(api).json()["conflicts"]
    assert {s["statement"] for s in conflict["statements"]} == {
        "Prefers email.",
        "Prefers telephone.",
    }
    assert "fax" not in get(api).json()["block"]


def test_resolved_conflict_is_not_shown(api: APIClient, remember) -> None:
    remember("Prefers email.", key="contact.channel")
    retract_memory(
        memory=remember("Prefers telephone.", key="contact.channel"), actor=PERSON, reason="x"
    )
    response = get(api)
    assert response.json()["conflicts"] == []
    assert "UNRESOLVED" not in response.json()["block"]


# The block as text


def test_accept_text_plain_returns_the_block_alone(api: APIClient, remember) -> None:
    remember("Prefers email.")
    response = api.get(URL, HTTP_ACCEPT="text/plain")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    text = response.content.decode()
    assert text.startswith("<<<MEMORY ") and text.endswith(">>>\n")
    assert text == Recall.objects.get().block


def test_format_text_returns_the_block_alone(api: APIClient, remember) -> None:
    remember("Prefers email.")
    response = get(api, format="text")
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response.content.decode() == Recall.objects.get().block


def test_error_asked_for_as_text_names_the_parameter(api: APIClient) -> None:
    response = api.get(URL, {"k": "0"}, HTTP_ACCEPT="text/plain")
    assert response.status_code == 400
    assert response.content.decode().startswith("k: ")


def test_block_labels_each_memory_with_basis_dates_and_expiry(api: APIClient, remember) -> None:
    with time_machine.travel(datetime(2026, 3, 1, 12, tzinfo=UTC), tick=False):
        remember(
            "Prefers email.",
            expires_at=datetime(2027, 3, 1, tzinfo=UTC),
            expires_omitted=False,
            key="contact.channel",
        )
        remember("Was born in Leuven.", kind="account_fact", expires_omitted=False, permanent=True)
        infer(remember, "Probably works night shifts.")
        block = get(api).json()["block"]
    assert (
        "- slot contact.channel · preference · stated by the person · written 2026-03-01 · "
        "expires 2027-03-01\n  | Prefers email.\n"
    ) in block
    assert (
        "- fact about the account · stated by the person · written 2026-03-01 · no expiry\n"
        "  | Was born in Leuven.\n"
    ) in block
    assert "inferred by an agent, never confirmed by the person · written 2026-03-01" in block
    assert "may be out of date" in block
    assert "never confirmed" in block
    assert "trust the tool result" in block


# The record of reads


def test_every_recall_is_recorded_with_ranks_and_the_exact_block(api_agent, remember) -> None:
    client, agent = api_agent
    remember("Refund for order 1234 was promised.")
    remember("Has a dog called Rex.")
    response = get(client, goal="refund order", run="run_recall_1", turn="7", k="2")
    data = response.json()
    recall = Recall.objects.get()
    assert data["recall"] == recall.pk
    assert recall.agent == agent
    assert recall.run.ref == "run_recall_1" and recall.run.agent == agent
    assert recall.turn == 7
    assert recall.subject.ref == SUBJECT
    assert recall.goal == "refund order"
    assert recall.k == 2
    assert recall.block == data["block"]
    items = list(recall.items.values_list("memory_id", "position", "rank"))
    assert [(str(m), p, r) for m, p, r in items] == [
        (m["id"], n, m["rank"]) for n, m in enumerate(data["memories"], start=1)
    ]
    assert items[0][2] > 0


def test_recall_without_run_or_turn_is_recorded_too(api: APIClient, remember) -> None:
    remember("Prefers email.")
    get(api)
    recall = Recall.objects.get()
    assert recall.run is None and recall.turn is None and recall.goal == ""


def test_same_run_reading_twice_reuses_the_run(api_agent, remember) -> None:
    client, _ = api_agent
    remember("Prefers email.")
    get(client, run="run_twice", turn="1")
    get(client, run="run_twice", turn="2")
    assert Run.objects.filter(ref="run_twice").count() == 1
    assert list(Recall.objects.order_by("turn").values_list("turn", flat=True)) == [1, 2]


def test_conflict_contenders_beyond_k_are_recorded_after_the_ranked_ones(
    api: APIClient, remember
) -> None:
    remember("Has a dog called Rex.")
    remember("Prefers email.", key="contact.channel")
    remember("Prefers telephone.", key="contact.channel")
    get(api, k=1, goal="dog")
    items = list(RecallItem.objects.order_by("position"))
    assert [i.memory.statement for i in items] == [
        "Has a dog called Rex.",
        "Prefers email.",
        "Prefers telephone.",
    ]
    assert [i.position for i in items] == [1, 2, 3]
    assert items[0].rank > 0 and items[1].rank == items[2].rank == 0.0


def test_run_of_another_agent_is_refused_and_nothing_recorded(api: APIClient, remember) -> None:
    remember("Prefers email.")
    other, _ = agent_client("other-agent", ["read"])
    assert get(other, run="run_shared").status_code == 200
    response = get(api, run="run_shared")
    assert response.status_code == 409
    assert response.json()["code"] == "run_of_another_agent"
    assert Recall.objects.count() == 1


def test_each_recall_block_has_its_own_nonce(api: APIClient, remember) -> None:
    remember("Prefers email.")
    first, second = get(api).json()["block"], get(api).json()["block"]
    assert first.splitlines()[0] != second.splitlines()[0]


# Who may read


def test_key_without_read_scope_gets_403(writer: APIClient, remember) -> None:
    remember("Prefers email.")
    response = get(writer)
    assert response.status_code == 403
    assert "read" in response.json()["detail"]
    assert not Recall.objects.exists()


def test_request_without_key_is_refused(remember) -> None:
    remember("Prefers email.")
    assert get(APIClient()).status_code == 401
    assert not Recall.objects.exists()


def test_unknown_subject_gets_404(api: APIClient) -> None:
    response = get(api, "/api/v1/subjects/acct_nobody/recall")
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
    assert not Recall.objects.exists()


def test_person_session_is_not_accepted(client, make_person, remember) -> None:
    remember("Prefers email.")
    make_person("support1", role="support")
    client.login(username="support1", password="a-long-test-password")
    assert client.get(URL).status_code in (401, 403)
    assert not Recall.objects.exists()


# Bad input


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"k": "0"}, "k"),
        ({"k": "-1"}, "k"),
        ({"k": "abc"}, "k"),
        ({"k": "2.5"}, "k"),
        ({"k": " 3"}, "k"),
        ({"k": "99999999999999999999"}, "k"),
        ({"k": "21"}, "k"),
        ({"k": ""}, "k"),
        ({"turn": "-1"}, "turn"),
        ({"turn": "one"}, "turn"),
        ({"turn": "1000001"}, "turn"),
        ({"run": "bad ref!"}, "run"),
        ({"run": "../x"}, "run"),
        ({"run": "r" * 101}, "run"),
        ({"goal": "g" * 501}, "goal"),
        ({"goal": "line one\nline two"}, "goal"),
        ({"goal": "rtl\u202eoverride"}, "goal"),
        ({"query": "refund"}, "query"),
    ],
)
def test_bad_parameter_gets_400_naming_it(api: APIClient, remember, params, named) -> None:
    remember("Prefers email.")
    response = get(api, **params)
    assert response.status_code == 400, response.content
    assert list(response.json()) == [named]
    assert not Recall.objects.exists()


def test_parameter_given_twice_gets_400(api: APIClient, remember) -> None:
    remember("Prefers email.")
    response = api.get(URL + "?k=1&k=2")
    assert response.status_code == 400
    assert response.json() == {"k": ["Give this parameter once."]}


def test_goal_of_500_characters_is_accepted(api: APIClient, remember) -> None:
    remember("Prefers email.")
    assert get(api, goal="refund " * 71 + "abc").status_code == 200


@pytest.mark.parametrize(
    "goal",
    [
        "refund:* & !(order) <-> 'x'",
        "'; DROP TABLE ledger_memory; --",
        "返金 の 注文",
        "١٢٣ café naïve",
        "x" * 500,
    ],
)
def test_any_goal_text_is_searched_safely(api: APIClient, remember, goal: str) -> None:
    remember("Prefers email.")
    response = get(api, goal=goal)
    assert response.status_code == 200
    assert statements(response) == ["Prefers email."]
    assert Recall.objects.get().goal == goal


def test_goal_of_punctuation_only_is_treated_as_no_goal(api: APIClient, remember) -> None:
    remember("Prefers email.")
    response = get(api, goal="?!& | :* ()")
    assert response.status_code == 200
    assert statements(response) == ["Prefers email."]


# Which runs read a memory


def recalls_url(memory: Memory) -> str:
    return f"/api/v1/memories/{memory.pk}/recalls"


def test_memory_recalls_list_the_runs_newest_first(api: APIClient, remember) -> None:
    memory = remember("Prefers email.")
    remember("Has a dog called Rex.")
    start = datetime(2026, 11, 1, tzinfo=UTC)
    for n in range(3):
        with time_machine.travel(start + timedelta(hours=n), tick=False):
            get(api, run=f"run_{n}", turn=str(n), goal="dog email", k="2")
    with time_machine.travel(start + timedelta(hours=5), tick=False):
        get(api, run="run_dog_only", goal="dog", k="1")
    response = api.get(recalls_url(memory), {"page_size": 2})
    assert response.status_code == 200
    page = response.json()
    assert [r["run"] for r in page["results"]] == ["run_2", "run_1"]
    first = page["results"][0]
    assert first["agent"] == "test-agent"
    assert first["turn"] == 2 and first["goal"] == "dog email" and first["k"] == 2
    assert first["position"] in (1, 2) and first["rank"] > 0
    assert "| Prefers email." in first["block"]
    assert page["next"]
    rest = api.get(page["next"]).json()
    assert [r["run"] for r in rest["results"]] == ["run_0"]
    assert rest["next"] is None


def test_memory_never_read_has_no_recalls(api: APIClient, remember) -> None:
    memory = remember("Prefers email.")
    response = api.get(recalls_url(memory))
    assert response.status_code == 200
    assert response.json()["results"] == []


def test_recalls_of_unknown_memory_get_404(api: APIClient) -> None:
    assert (
        api.get("/api/v1/memories/0b7c2f9e-0000-4000-8000-000000000000/recalls").status_code == 404
    )
    assert api.get("/api/v1/memories/not-a-uuid/recalls").status_code == 404


def test_recalls_of_a_memory_need_the_read_scope(writer: APIClient, remember) -> None:
    memory = remember("Prefers email.")
    assert writer.get(recalls_url(memory)).status_code == 403


def test_recall_endpoints_are_in_the_openapi_schema(api: APIClient) -> None:
    schema = APIClient().get("/api/schema/", HTTP_ACCEPT="application/json").json()
    assert "/api/v1/subjects/{ref}/recall" in schema["paths"]
    assert "/api/v1/memories/{id}/recalls" in schema["paths"]
    params = {
        p["name"] for p in schema["paths"]["/api/v1/subjects/{ref}/recall"]["get"]["parameters"]
    }
    assert {"goal", "k", "run", "turn", "format"} <= params
