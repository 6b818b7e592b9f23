"""Hybrid retrieval as an agent sees it: found by meaning, a floor, no near-duplicates, keys
and kinds first, words alone when the embedding backend fails, the log of why, erasure of
vectors, the backfill command, and goals of any shape.

The local model (all-MiniLM-L6-v2) really runs; the OpenAI-compatible backend is a real
HTTP server started here, serving the local model's vectors. Memories written inside a test
transaction are not embedded on commit: ``embed_missing()`` does it where meaning matters.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from ledger.actions.erasure import erase_subject
from ledger.actions.vectors import embed_missing
from ledger.actors import Actor
from ledger.embeddings.minilm import MiniLM
from ledger.models import Memory, MemoryVector, Recall, RecallItem, Subject
from tests.conftest import SUBJECT

pytestmark = pytest.mark.django_db
URL = f"/api/v1/subjects/{SUBJECT}/recall"

AISLE = "Likes aisle seats on flights."
EVERYDAY = [
    AISLE,
    "Has a dog called Rex.",
    "Pays by direct debit.",
    "Lives in Ghent.",
    "Allergic to peanuts.",
    "Prefers email for invoices.",
]
SEAT_GOAL = "pick where he sits on the plane"


def recall(client: APIClient, **params: Any) -> dict[str, Any]:
    response = client.get(URL, params)
    assert response.status_code == 200, response.content
    data: dict[str, Any] = response.json()
    return data


def statements(data: dict[str, Any]) -> list[str]:
    return [m["statement"] for m in data["memories"]]


def write_all(remember: Callable[..., Memory], texts: list[str], **fields: Any) -> None:
    for text in texts:
        remember(text, **fields)


def assert_valid_block(data: dict[str, Any]) -> None:
    """The block opens and closes with the same nonce, quotes each served statement once,
    and is what the log recorded."""
    block = data["block"]
    lines = block.splitlines()
    nonce = lines[0].split()[1]
    assert lines[0] == f'<<<MEMORY {nonce} about subject "{SUBJECT}">>>'
    assert lines[-1] == f"<<<END MEMORY {nonce}>>>" and block.endswith("\n")
    for statement in statements(data):
        assert block.count(f"  | {statement}\n") == 1
    if not data["memories"]:
        assert "No records about this subject may be used" in block
    assert Recall.objects.get(pk=data["recall"]).block == block


# Meaning


def test_a_paraphrase_is_found_by_meaning(api: APIClient, remember) -> None:
    write_all(remember, EVERYDAY)
    assert embed_missing() == len(EVERYDAY)
    data = recall(api, goal=SEAT_GOAL, k=1)
    assert statements(data) == [AISLE]
    assert data["semantic"] == "used" and data["model"] == "all-MiniLM-L6-v2"
    why = data["memories"][0]["why"]
    # Not a word in common ("sits" is not "seats"): meaning alone found it.
    assert why["via"] == "relevance" and why["matched"] == [] and why["lexical"] == 0
    assert isinstance(why["semantic"], float) and why["semantic"] > 0.3
    everything = recall(api, goal=SEAT_GOAL, k=6)["memories"]
    assert everything[0]["statement"] == AISLE
    assert all(why["semantic"] > m["why"]["semantic"] for m in everything[1:])


def test_memories_unrelated_to_the_goal_are_left_out_below_the_floor(
    api: APIClient, remember
) -> None:
    write_all(remember, EVERYDAY)
    embed_missing()
    data = recall(api, goal="renew the car insurance", k=5)
    assert data["semantic"] == "used"
    assert len(data["memories"]) < 5
    assert AISLE not in statements(data) and "Has a dog called Rex." not in statements(data)
    assert_valid_block(data)


def test_near_duplicates_do_not_take_two_places(api: APIClient, remember) -> None:
    write_all(
        remember,
        [
            "Prefers email for invoices.",
            "Prefers e-mail for invoices.",
            "Pays by direct debit.",
            "Has a dog called Rex.",
        ],
    )
    embed_missing()
    data = recall(api, goal="how to send invoices", k=5)
    served = statements(data)
    assert len({"Prefers email for invoices.", "Prefers e-mail for invoices."} & set(served)) == 1
    assert served[0] in ("Prefers email for invoices.", "Prefers e-mail for invoices.")
    assert "Pays by direct debit." in served
    assert data["block"].count("for invoices.") == 1


# Keys and kinds


def test_a_key_asked_for_is_served_first_whatever_the_goal(api: APIClient, remember) -> None:
    write_all(remember, EVERYDAY)
    remember("Wants parcels delivered after 6 pm.", key="delivery.window")
    embed_missing()
    data = recall(api, goal=SEAT_GOAL, k=2, keys="delivery.window")
    assert statements(data) == ["Wants parcels delivered after 6 pm.", AISLE]
    assert [m["why"]["via"] for m in data["memories"]] == ["key", "relevance"]


def test_a_kind_asked_for_comes_first_ranked_by_the_goal_and_never_beyond_k(
    api: APIClient, remember
) -> None:
    write_all(remember, EVERYDAY)
    episodes = ["Called about a late parcel.", "Returned a jacket.", "Disputed a charge."]
    write_all(remember, episodes, kind="episode")
    embed_missing()
    data = recall(api, goal="the parcel that came late", k=4, kinds="episode")
    # Every episode, the one the goal is about first, then the most relevant of the rest.
    assert statements(data)[0] == "Called about a late parcel."
    assert sorted(statements(data)[:3]) == sorted(episodes)
    assert [m["why"]["via"] for m in data["memories"]] == ["kind"] * 3 + ["relevance"]
    # k is the cap, whatever was asked for.
    assert statements(recall(api, goal="the parcel that came late", k=1, kinds="episode")) == [
        "Called about a late parcel."
    ]
    assert_valid_block(data)


@pytest.mark.parametrize(
    ("params", "named"), [({"keys": "Bad Key!"}, "keys"), ({"kinds": "feelings"}, "kinds")]
)
def test_a_bad_key_or_kind_gets_400_naming_it(api: APIClient, remember, params, named) -> None:
    remember(AISLE)
    response = api.get(URL, {"goal": SEAT_GOAL, **params})
    assert response.status_code == 400
    assert list(response.json()) == [named]
    assert not Recall.objects.exists()


# When the backend fails


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def use_endpoint(settings: Any, url: str, model: str = "served-minilm", ms: int = 300) -> None:
    settings.MEMORYADMIN_EMBEDDINGS = "endpoint"
    settings.MEMORYADMIN_EMBEDDINGS_URL = url
    settings.MEMORYADMIN_EMBEDDINGS_MODEL = model
    settings.MEMORYADMIN_EMBEDDINGS_TIMEOUT_MS = ms


def test_an_unreachable_backend_ranks_by_words_and_logs_without_the_goal(
    api: APIClient, remember, settings, caplog
) -> None:
    write_all(remember, EVERYDAY)
    use_endpoint(settings, f"http://127.0.0.1:{closed_port()}/v1")
    goal = "Remind him that Rex needs his vaccination"
    with caplog.at_level(logging.WARNING, logger="ledger.reads.retrieval"):
        data = recall(api, goal=goal, k=3)
    assert data["semantic"] == "unavailable" and data["model"] == "served-minilm"
    # Without meaning nothing is judged irrelevant: words rank, the rest fill.
    assert statements(data)[0] == "Has a dog called Rex." and len(data["memories"]) == 3
    assert data["memories"][0]["why"]["matched"] == ["rex"]
    assert all(m["why"]["semantic"] is None for m in data["memories"])
    [record] = [r for r in caplog.records if r.name == "ledger.reads.retrieval"]
    assert record.levelno == logging.WARNING
    assert "Rex" not in record.getMessage() and "vaccination" not in record.getMessage()
    assert_valid_block(data)


# An OpenAI-compatible endpoint: a real server, the local model's vectors


@cache
def local_model() -> MiniLM:
    return MiniLM(None)


class Embeddings(BaseHTTPRequestHandler):
    """POST /v1/embeddings as OpenAI answers it, or one of the ways a server misbehaves."""

    server: Any

    def do_POST(self) -> None:
        asked = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append((self.path, asked))
        behaviour = self.server.behaviour
        if behaviour == "slow":
            self.server.release.wait(5)
        if behaviour == "error":
            return self.answer(500, {"error": "overloaded"})
        vectors = local_model().embed(asked["input"]).tolist()
        answers = {
            "ok": {"data": [{"index": i, "embedding": v} for i, v in enumerate(vectors)]},
            "slow": {"data": [{"index": i, "embedding": v} for i, v in enumerate(vectors)]},
            "no data": {"embeddings": vectors},
            "strings": {"data": [{"index": 0, "embedding": "0.1 0.2"}]},
            "too few": {"data": []},
            "not json": None,
            "short vectors": {
                "data": [{"index": i, "embedding": [0.6, 0.8]} for i in range(len(vectors))]
            },
            "zero vectors": {
                "data": [{"index": i, "embedding": [0.0] * 384} for i in range(len(vectors))]
            },
        }
        self.answer(200, answers[behaviour])

    def answer(self, status: int, body: Any) -> None:
        payload = b"<html>busy</html>" if body is None else json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except OSError:
            pass  # the client gave up waiting: as it should

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def serve() -> Iterator[Callable[[str], ThreadingHTTPServer]]:
    """Start an embeddings server behaving as asked; its base URL is ``server.url``."""
    servers: list[ThreadingHTTPServer] = []

    def start(behaviour: str) -> ThreadingHTTPServer:
        server: Any = ThreadingHTTPServer(("127.0.0.1", 0), Embeddings)
        server.behaviour, server.requests, server.release = behaviour, [], threading.Event()
        server.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.release.set()
        server.shutdown()
        server.server_close()


def test_an_openai_compatible_endpoint_embeds_and_ranks(
    api: APIClient, remember, settings, serve
) -> None:
    server = serve("ok")
    use_endpoint(settings, server.url, ms=5000)
    write_all(remember, EVERYDAY)
    assert embed_missing() == len(EVERYDAY)
    assert MemoryVector.objects.filter(model="served-minilm").count() == len(EVERYDAY)
    assert not MemoryVector.objects.exclude(model="served-minilm").exists()
    path, asked = server.requests[0]
    assert path == "/v1/embeddings" and asked["model"] == "served-minilm"
    assert sorted(asked["input"]) == sorted(EVERYDAY)
    data = recall(api, goal=SEAT_GOAL, k=3)
    assert statements(data)[0] == AISLE
    assert data["semantic"] == "used" and data["model"] == "served-minilm"
    assert server.requests[-1][1]["input"] == [SEAT_GOAL]


@pytest.mark.parametrize(
    "behaviour",
    [
        "slow",
        "error",
        "no data",
        "strings",
        "too few",
        "not json",
        # Vectors of another length than the stored ones under the same model name (a
        # model swapped behind the endpoint): the stored ones are as good as none.
        "short vectors",
        "zero vectors",
    ],
)
def test_a_misbehaving_endpoint_never_fails_a_recall(
    api: APIClient, remember, settings, serve, behaviour: str
) -> None:
    # The memories were embedded by a server that worked, under the same model name.
    use_endpoint(settings, serve("ok").url, ms=5000)
    write_all(remember, EVERYDAY)
    embed_missing()
    use_endpoint(settings, serve(behaviour).url, ms=300)
    started = time.perf_counter()
    response = api.get(URL, {"goal": "Rex needs a walk", "k": 3})
    elapsed = time.perf_counter() - started
    assert response.status_code == 200, response.content
    data = response.json()
    # Ranked by words: a vector that cannot be compared is no vector ("partial").
    assert data["semantic"] in ("unavailable", "partial") and data["model"] == "served-minilm"
    assert data["semantic"] == "unavailable" or behaviour == "short vectors"
    assert statements(data)[0] == "Has a dog called Rex."
    assert elapsed < 2
    assert_valid_block(data)


# The log of why


def test_the_recall_log_keeps_why_and_erasure_blanks_it(api: APIClient, remember) -> None:
    write_all(remember, EVERYDAY)
    embed_missing()
    data = recall(api, goal="which seats does he book on flights", k=3)
    recall_row = Recall.objects.get(pk=data["recall"])
    assert (recall_row.semantic, recall_row.model) == ("used", "all-MiniLM-L6-v2")
    items = list(RecallItem.objects.filter(recall_id=recall_row.pk).order_by("position"))
    assert [str(i.memory_id) for i in items] == [m["id"] for m in data["memories"]]
    for item, served in zip(items, data["memories"], strict=True):
        why = served["why"]
        assert item.via == why["via"] == "relevance"
        assert item.lexical == pytest.approx(why["lexical"])
        assert item.matched == " ".join(why["matched"])
        assert item.semantic == pytest.approx(why["semantic"])
    assert items[0].matched == "seats flights"
    subject = Subject.objects.get(ref=SUBJECT)
    assert MemoryVector.objects.filter(memory__subject=subject).count() == len(EVERYDAY)

    erase_subject(subject=subject, actor=Actor.system("test"))

    assert set(RecallItem.objects.filter(subject=subject).values_list("matched", flat=True)) == {""}
    assert not MemoryVector.objects.filter(memory__subject=subject).exists()
    assert Recall.objects.get(pk=recall_row.pk).goal == ""


# The backfill command


def embed_command(*args: str) -> str:
    out, err = StringIO(), StringIO()
    call_command("embed_memories", *args, stdout=out, stderr=err)
    return out.getvalue()


def test_embed_memories_is_resumable_and_idempotent(remember, settings) -> None:
    write_all(remember, EVERYDAY[:5])
    first = embed_command("--limit", "2", "--no-progress")
    assert "5 live memories have no all-MiniLM-L6-v2 vector; embedding 2." in first
    assert "Embedded 2 memories with all-MiniLM-L6-v2; 3 left." in first
    assert MemoryVector.objects.count() == 2
    assert "Embedded 3 memories with all-MiniLM-L6-v2; 0 left." in embed_command("--no-progress")
    assert "Embedded 0 memories with all-MiniLM-L6-v2; 0 left." in embed_command("--no-progress")
    assert MemoryVector.objects.count() == 5
    settings.MEMORYADMIN_EMBEDDINGS = "off"
    with pytest.raises(CommandError, match="off"):
        embed_command("--no-progress")


# Goals of any shape


@pytest.mark.parametrize(
    "goal",
    [
        "",
        ("refund the order and check the seats " * 14)[:500],
        "🙂🙂🙂",
        "<script>alert(1)</script> refund",
        "Rückerstattung für die Bestellung",
        "座席の希望を確認する",
    ],
)
def test_any_goal_gets_a_valid_block(api: APIClient, remember, goal: str) -> None:
    write_all(remember, [*EVERYDAY, "Asked for a refund on order 1234."])
    embed_missing()
    data = recall(api, goal=goal, k=5)
    assert len(data["memories"]) <= 5
    assert data["semantic"] in ("used", "no goal")
    assert Recall.objects.get(pk=data["recall"]).goal == goal
    assert goal not in data["block"] or not goal
    if "refund" in goal:
        assert statements(data)[0] == "Asked for a refund on order 1234."
    assert_valid_block(data)


def test_a_spanish_statement_is_found_by_an_english_goal(api: APIClient, remember) -> None:
    write_all(
        remember,
        [
            "Paga con tarjeta de crédito.",
            "Tiene un perro llamado Rex.",
            "Prefiere asientos de pasillo en los vuelos.",
        ],
    )
    embed_missing()
    data = recall(api, goal="credit card payment", k=1)
    assert statements(data) == ["Paga con tarjeta de crédito."]
    assert data["memories"][0]["why"]["matched"] == []
    assert_valid_block(data)


def test_sentence_transformers_not_installed_ranks_by_words_and_says_how_to_get_it(
    api: APIClient, remember, settings, caplog: pytest.LogCaptureFixture
) -> None:
    # The extra needs torch, which this suite does not install: the backend is unavailable.
    settings.MEMORYADMIN_EMBEDDINGS = "sentence-transformers"
    write_all(remember, EVERYDAY)
    with caplog.at_level(logging.WARNING, logger="ledger.reads.retrieval"):
        data = recall(api, goal="Rex needs a walk", k=2)
    assert data["semantic"] == "unavailable"
    assert statements(data)[0] == "Has a dog called Rex."
    assert "pip install 'memoryadmin[sentence-transformers]'" in caplog.text
