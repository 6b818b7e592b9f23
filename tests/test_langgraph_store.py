"""``MemoryAdminStore``, LangGraph's long-term memory kept by memoryadmin, against a live
server: put/get/search/delete through the write gate, corrections, TTL, refusals, recalls
recorded, the async methods, LangGraph's own store expectations, and a real graph."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypedDict
from urllib.parse import parse_qs, urlsplit

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore, GetOp, InvalidNamespaceError, Item, PutOp, SearchOp
from memoryadmin_client import MemoryClient, MemoryPaused, SystemOfRecord
from memoryadmin_client.langgraph import (
    SLOT_KEY,
    SUBJECT_REF,
    MemoryAdminStore,
    NotAMemory,
    NotASlot,
    NotASubject,
    SlotInConflict,
)

from ledger.actions.agents import create_agent
from ledger.actions.subjects import set_memory_paused
from ledger.actors import Actor
from ledger.api.fields import REF_PATTERN
from ledger.models import Memory, Recall, Subject
from ledger.rules.text import KEY_PATTERN
from tests.test_client import Proxy

pytestmark = pytest.mark.django_db(transaction=True)

SUBJECT = "acct_langgraph_7f3e"
NS = ("memories", SUBJECT)
RUN = "run_lg_1"
EMAIL = "Prefers email over telephone for billing questions."


def said(statement: str, ref: str = "msg_0192", **fields: Any) -> dict[str, Any]:
    """A value the person stated in a message."""
    source = {"kind": "user_message", "ref": ref, "excerpt": "please email me about invoices"}
    return {"statement": statement, "basis": "stated", "source": source, **fields}


@pytest.fixture
def key(transactional_db: None) -> str:
    return create_agent(name="langgraph-agent", scopes=["read", "write"], actor=Actor.system("t"))[
        1
    ]


@pytest.fixture
def make_store(live_server: Any, key: str) -> Iterator[Callable[..., MemoryAdminStore]]:
    made: list[MemoryAdminStore] = []

    def make(**options: Any) -> MemoryAdminStore:
        store = MemoryAdminStore(live_server.url, key, run=RUN, **options)
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


@pytest.fixture
def client(live_server: Any, key: str) -> Iterator[MemoryClient]:
    """The same agent straight through the Python client."""
    with MemoryClient(live_server.url, key) as client:
        yield client


@pytest.fixture
def store(make_store: Callable[..., MemoryAdminStore]) -> MemoryAdminStore:
    return make_store()


def live(key: str) -> list[Memory]:
    return list(Memory.objects.filter(subject__ref=SUBJECT, key=key, status="active"))


def test_put_then_get_returns_the_memory_with_its_provenance(store: MemoryAdminStore) -> None:
    store.put(NS, "contact.channel", said(EMAIL, kind="preference"))

    item = store.get(NS, "contact.channel")
    assert item is not None
    assert (item.namespace, item.key) == (NS, "contact.channel")
    assert item.value["statement"] == EMAIL
    assert item.value["basis"] == "stated"
    assert item.value["status"] == "active"
    assert item.value["source"]["ref"] == "msg_0192"
    # The store's run is the source's: the run page shows what the agent wrote.
    assert item.value["source"]["run"] == RUN
    (memory,) = live("contact.channel")
    assert memory.agent is not None and memory.agent.name == "langgraph-agent"
    assert memory.sources.get().ref == "msg_0192"
    assert store.get(NS, "delivery.window") is None


def test_a_value_without_basis_is_a_guess_and_reads_as_pending(store: MemoryAdminStore) -> None:
    guess = {
        "statement": "Probably works from the Lisbon office.",
        "kind": "account_fact",
        "source": {"kind": "tool_result", "ref": "crm_lookup_12"},
    }
    store.put(NS, "office", guess)

    item = store.get(NS, "office")
    assert item is not None
    assert (item.value["basis"], item.value["status"]) == ("inferred", "pending")
    # A pending guess is never recalled.
    assert store.search(NS, query="Lisbon office") == []


def test_put_again_corrects_the_live_memory(store: MemoryAdminStore) -> None:
    store.put(NS, "contact.channel", said(EMAIL))
    first = live("contact.channel")[0]

    store.put(
        NS,
        "contact.channel",
        said("Prefers a text message for billing questions.", ref="msg_0207", reason="Moved."),
    )

    item = store.get(NS, "contact.channel")
    assert item is not None
    assert item.value["statement"] == "Prefers a text message for billing questions."
    (now,) = live("contact.channel")
    first.refresh_from_db()
    assert first.status == "superseded" and first.statement == EMAIL
    assert now.supersedes_id == first.pk
    assert first.history.first().history_change_reason == "Corrected: Moved."
    assert Memory.objects.filter(subject__ref=SUBJECT).count() == 2


def test_the_same_words_again_add_evidence_not_a_second_memory(store: MemoryAdminStore) -> None:
    store.put(NS, "contact.channel", said(EMAIL))
    store.put(NS, "contact.channel", said(EMAIL.upper(), ref="msg_0300"))

    (memory,) = Memory.objects.filter(subject__ref=SUBJECT)
    assert sorted(memory.sources.values_list("ref", flat=True)) == ["msg_0192", "msg_0300"]


def test_a_correction_without_a_reason_records_the_stores(store: MemoryAdminStore) -> None:
    store.put(NS, "contact.channel", said(EMAIL))
    store.put(NS, "contact.channel", said("Prefers letters for billing questions."))

    old = Memory.objects.get(subject__ref=SUBJECT, status="superseded")
    assert old.history.first().history_change_reason == f"Corrected: {store.reason}"


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ({}, "statement"),
        ({"statement": EMAIL}, "source"),
        ({"statement": EMAIL, "source": {"kind": "user_message"}}, "source"),
        ({"statement": "   ", "source": {"kind": "user_message", "ref": "m1"}}, "statement"),
        ({"content": EMAIL}, "content"),
        ({**said(EMAIL), "status": "active"}, "status"),
        ({**said(EMAIL), "kind": 3}, "kind"),
    ],
)
def test_a_value_that_cannot_be_a_memory_is_refused_and_nothing_written(
    store: MemoryAdminStore, value: dict[str, Any], named: str
) -> None:
    with pytest.raises(NotAMemory, match=named) as refused:
        store.put(NS, "contact.channel", value)

    assert isinstance(refused.value, ValueError)
    assert not Memory.objects.exists()


def test_a_bad_op_leaves_the_whole_batch_unsent(store: MemoryAdminStore) -> None:
    with pytest.raises(NotAMemory):
        store.batch(
            [
                PutOp(NS, "contact.channel", said(EMAIL)),
                PutOp(NS, "delivery.window", {"statement": "No source."}),
            ]
        )

    assert not Memory.objects.exists()


def test_a_namespace_or_key_that_names_no_subject_or_slot_is_refused(
    store: MemoryAdminStore,
) -> None:
    with pytest.raises(NotASubject, match="not a subject reference"):
        store.put(("memories", "Dana Whitfield"), "contact.channel", said(EMAIL))
    with pytest.raises(NotASubject, match="names no subject"):
        store.search(())
    with pytest.raises(NotASlot, match="lower-case"):
        store.put(NS, "Contact Channel", said(EMAIL))
    # LangGraph's own rules for a namespace hold too.
    for namespace in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(namespace, "contact.channel", said(EMAIL))

    assert not Memory.objects.exists()


def test_subject_of_chooses_the_label_that_names_the_subject(
    make_store: Callable[..., MemoryAdminStore],
) -> None:
    # LangGraph's documentation writes (user_id, "memories").
    store = make_store(subject_of=lambda namespace: namespace[0])
    store.put((SUBJECT, "memories"), "contact.channel", said(EMAIL))

    assert live("contact.channel")[0].statement == EMAIL
    with pytest.raises(NotASubject, match="subject_of"):
        store.get((), "contact.channel")


def test_the_store_imports_nothing_of_django() -> None:
    # An agent's process has the client and LangGraph, no Django settings.
    script = "import sys, memoryadmin_client.langgraph; print('django' in sys.modules)"
    ran = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={"PATH": os.environ.get("PATH", "")},
        cwd=Path(__file__).resolve().parent.parent,
        timeout=60,
    )
    assert (ran.returncode, ran.stdout.strip()) == (0, "False"), ran.stderr


def test_the_patterns_are_the_servers() -> None:
    assert SUBJECT_REF.pattern == REF_PATTERN.pattern
    assert SLOT_KEY.pattern == KEY_PATTERN.pattern


def test_ttl_minutes_set_expires_at(make_store: Callable[..., MemoryAdminStore]) -> None:
    store = make_store()
    before = datetime.now(UTC)
    store.put(NS, "delivery.window", said("Deliveries only on weekday mornings."), ttl=90)
    after = datetime.now(UTC)

    (memory,) = live("delivery.window")
    assert memory.expires_at is not None
    assert before + timedelta(minutes=90) <= memory.expires_at <= after + timedelta(minutes=90)

    with_default = make_store(ttl={"default_ttl": 60.0})
    with_default.put(NS, "invoice.format", said("Wants invoices as PDF attachments."))
    (memory,) = live("invoice.format")
    assert memory.expires_at is not None
    assert memory.expires_at <= datetime.now(UTC) + timedelta(minutes=60)


def test_an_expired_memory_is_no_longer_got_or_found(store: MemoryAdminStore) -> None:
    store.put(NS, "delivery.window", said("Deliveries only on weekday mornings."), ttl=0.05)
    assert store.get(NS, "delivery.window") is not None

    deadline = time.monotonic() + 15
    while store.get(NS, "delivery.window") is not None:
        assert time.monotonic() < deadline, "the memory never expired"
        time.sleep(0.2)
    assert store.search(NS) == []
    assert store.search(NS, query="deliveries weekday") == []


def test_ttl_settings_memoryadmin_cannot_honour_are_refused(live_server: Any, key: str) -> None:
    with pytest.raises(ValueError, match="refresh_on_read"):
        MemoryAdminStore(live_server.url, key, ttl={"refresh_on_read": True})
    with pytest.raises(ValueError, match="sweep_interval_minutes"):
        MemoryAdminStore(live_server.url, key, ttl={"sweep_interval_minutes": 5})


def test_delete_retracts_with_a_reason(store: MemoryAdminStore) -> None:
    store.put(NS, "contact.channel", said(EMAIL))
    store.delete(NS, "contact.channel")

    assert store.get(NS, "contact.channel") is None
    memory = Memory.objects.get(subject__ref=SUBJECT)
    assert memory.status == "retracted"
    assert memory.history.first().history_change_reason == store.reason
    # Deleting what is not there is no error, as in LangGraph's InMemoryStore.
    store.delete(NS, "contact.channel")
    store.batch([PutOp(NS, "invoice.format", None)])


def test_search_with_a_query_is_a_recorded_recall_in_rank_order(
    store: MemoryAdminStore,
) -> None:
    store.put(NS, "contact.channel", said(EMAIL))
    store.put(NS, "delivery.window", said("Deliveries only on weekday mornings.", ref="m2"))
    store.put(NS, "invoice.format", said("Wants invoices as PDF attachments.", ref="m3"))

    found = store.search(NS, query="billing email")

    assert found[0].key == "contact.channel"
    assert found[0].value["statement"] == EMAIL
    scores = [item.score for item in found]
    assert all(isinstance(score, float) for score in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    recall = Recall.objects.get(subject__ref=SUBJECT)
    assert (recall.goal, recall.run.ref if recall.run else None) == ("billing email", RUN)
    assert recall.agent.name == "langgraph-agent"
    assert EMAIL in recall.block


def test_search_without_a_query_lists_live_memories(store: MemoryAdminStore) -> None:
    store.put(NS, "contact.channel", said(EMAIL))
    store.put(NS, "delivery.window", said("Deliveries only on weekday mornings.", ref="m2"))
    store.put(NS, "invoice.format", said("Wants invoices as PDF attachments.", ref="m3"))
    store.put(
        NS,
        "office",
        {"statement": "Works from Lisbon.", "source": {"kind": "tool_result", "ref": "crm_1"}},
    )
    store.delete(NS, "delivery.window")

    listed = store.search(NS)
    assert [item.key for item in listed] == ["office", "invoice.format", "contact.channel"]
    assert all(item.score is None for item in listed)
    assert [i.key for i in store.search(NS, filter={"status": "pending"})] == ["office"]
    assert [i.key for i in store.search(NS, filter={"source": {"kind": "user_message"}})] == [
        "invoice.format",
        "contact.channel",
    ]
    assert [i.key for i in store.search(NS, limit=1, offset=1)] == ["invoice.format"]
    assert [i.key for i in store.search(NS, filter={"version": {"$gte": 1}}, offset=2)] == [
        "contact.channel"
    ]
    # A listing puts nothing into a prompt by ranking: it is not a recall.
    assert not Recall.objects.exists()


@pytest.fixture
def counting_proxy(live_server: Any) -> Iterator[Proxy]:
    """A loopback proxy to the live server that keeps every request it forwards."""
    made = Proxy(upstream=live_server.url)
    server = ThreadingHTTPServer(("127.0.0.1", 0), made.handler())
    made.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield made
    server.shutdown()
    server.server_close()


def test_a_listing_reads_one_page_per_status_however_many_memories(
    counting_proxy: Proxy, key: str, remember: Callable[..., Memory]
) -> None:
    # More than the API's default page of 50, so reading them all takes a second page.
    for n in range(60):
        remember(f"Fact number {n} about the account.", subject=SUBJECT)
    remember("Probably based in Lisbon.", subject=SUBJECT, basis="inferred")
    with MemoryAdminStore(counting_proxy.url, key) as store:
        listed = store.search(NS, limit=2)
        assert [item.value["statement"] for item in listed] == [
            "Probably based in Lisbon.",
            "Fact number 59 about the account.",
        ]

        async def asynchronously() -> list[Any]:
            async with store:
                return await store.asearch(NS, limit=2, offset=1)

        assert [item.value["statement"] for item in asyncio.run(asynchronously())] == [
            "Fact number 59 about the account.",
            "Fact number 58 about the account.",
        ]

    pages = [parse_qs(urlsplit(path).query) for _, path, _ in counting_proxy.seen]
    # The API lists one status at a time: one first page of each, offset + limit long.
    assert pages == [
        {"subject": [SUBJECT], "status": ["active"], "page_size": ["2"]},
        {"subject": [SUBJECT], "status": ["pending"], "page_size": ["2"]},
        {"subject": [SUBJECT], "status": ["active"], "page_size": ["3"]},
        {"subject": [SUBJECT], "status": ["pending"], "page_size": ["3"]},
    ]


def test_a_filtered_listing_reads_on_until_enough_match(
    counting_proxy: Proxy, key: str, remember: Callable[..., Memory]
) -> None:
    for n in range(5):
        remember(f"Fact number {n} about the account.", subject=SUBJECT)
    with MemoryAdminStore(counting_proxy.url, key) as store:
        wanted = {"statement": "Fact number 2 about the account."}
        assert [i.value["statement"] for i in store.search(NS, filter=wanted, limit=1)] == [
            wanted["statement"]
        ]
    # Pages of one: 4, 3, then 2 matches; the oldest (1 and 0) are never read.
    active = [path for _, path, _ in counting_proxy.seen if "status=active" in path]
    assert len(active) == 3


def test_the_gates_refusals_are_raised(store: MemoryAdminStore) -> None:
    with pytest.raises(SystemOfRecord):
        store.put(NS, "billing.address", said("Lives at 1 Rua Augusta, Lisbon."))

    store.put(NS, "contact.channel", said(EMAIL))
    set_memory_paused(
        subject=Subject.objects.get(ref=SUBJECT), actor=Actor.system("test"), paused=True
    )
    with pytest.raises(MemoryPaused):
        store.put(NS, "invoice.format", said("Wants invoices as PDF attachments."))
    assert Memory.objects.count() == 1


def test_a_slot_in_conflict_is_not_overwritten(
    store: MemoryAdminStore, client: MemoryClient
) -> None:
    store.put(NS, "contact.channel", said(EMAIL))
    # Another write into the same slot, straight through the API, opens a conflict.
    client.remember(
        subject=SUBJECT,
        kind="preference",
        key="contact.channel",
        statement="Prefers a phone call for billing questions.",
        basis="stated",
        source={"kind": "user_message", "ref": "msg_0400"},
    )

    with pytest.raises(SlotInConflict, match="2 disagreeing"):
        store.put(NS, "contact.channel", said("Prefers letters."))
    item = store.get(NS, "contact.channel")
    assert item is not None and item.value["open_conflicts"]
    assert len(live("contact.channel")) == 2
    found = store.search(NS, query="billing questions")
    assert [i.key for i in found] == ["contact.channel", "contact.channel"]
    assert all(i.value["open_conflicts"] == item.value["open_conflicts"] for i in found)


def test_a_memory_without_a_slot_is_found_by_its_id(
    store: MemoryAdminStore, client: MemoryClient
) -> None:
    written = client.remember(
        subject=SUBJECT,
        kind="episode",
        statement="Closed the March books two days late.",
        basis="stated",
        source={"kind": "user_message", "ref": "msg_0500"},
    )
    (found,) = store.search(NS)
    assert found.key == written["memory"]["id"]

    item = store.get(NS, found.key)
    assert item is not None and item.value["statement"] == "Closed the March books two days late."
    store.delete(NS, found.key)
    assert Memory.objects.get().status == "retracted"


def test_list_namespaces_says_why_not(store: MemoryAdminStore) -> None:
    with pytest.raises(NotImplementedError, match="does not list its subjects"):
        store.list_namespaces()


def test_a_batch_runs_in_order(store: MemoryAdminStore) -> None:
    results = store.batch(
        [
            PutOp(NS, "contact.channel", said(EMAIL)),
            GetOp(NS, "contact.channel"),
            SearchOp(NS, query="email"),
        ]
    )

    assert results[0] is None
    assert isinstance(results[1], Item) and results[1].value["statement"] == EMAIL
    assert isinstance(results[2], list) and isinstance(results[2][0], Item)
    assert results[2][0].key == "contact.channel"


def test_the_async_methods(store: MemoryAdminStore) -> None:
    async def use() -> tuple[Any, ...]:
        await store.aput(NS, "contact.channel", said(EMAIL))
        await store.aput(NS, "contact.channel", said("Prefers letters for billing.", ref="m9"))
        got = await store.aget(NS, "contact.channel")
        found = await store.asearch(NS, query="letters billing")
        await store.adelete(NS, "contact.channel")
        gone = await store.aget(NS, "contact.channel")
        with pytest.raises(NotAMemory):
            await store.aput(NS, "invoice.format", {"statement": "No source."})
        with pytest.raises(InvalidNamespaceError):
            await store.aput(("langgraph", SUBJECT), "contact.channel", said(EMAIL))
        await store.aclose()
        return got, found, gone

    got, found, gone = asyncio.run(use())

    assert got.value["statement"] == "Prefers letters for billing."
    assert [item.key for item in found] == ["contact.channel"]
    assert gone is None
    statuses = sorted(Memory.objects.values_list("status", flat=True))
    assert statuses == ["retracted", "superseded"]
    assert Recall.objects.get().goal == "letters billing"


class Conversation(TypedDict):
    message: str
    reply: str


def test_a_langgraph_graph_writes_and_reads_through_the_store(store: MemoryAdminStore) -> None:
    def note_preference(state: Conversation, *, store: BaseStore) -> dict[str, str]:
        store.put(NS, "contact.channel", said(state["message"]))
        return {}

    def answer(state: Conversation, *, store: BaseStore) -> dict[str, str]:
        found = store.search(NS, query="how to contact about billing")
        return {"reply": f"I'll use what I know: {found[0].value['statement']}"}

    graph = StateGraph(Conversation)
    graph.add_node("note_preference", note_preference)
    graph.add_node("answer", answer)
    graph.add_edge(START, "note_preference")
    graph.add_edge("note_preference", "answer")
    graph.add_edge("answer", END)

    result = graph.compile(store=store).invoke({"message": EMAIL, "reply": ""})

    assert result["reply"] == f"I'll use what I know: {EMAIL}"
    assert live("contact.channel")[0].statement == EMAIL
    assert Recall.objects.get().goal == "how to contact about billing"
