"""Every path the benchmark measures, in one table (``PATHS``): a new page joins by one line.

A path says who asks (the bench agent, or a support or admin person), what its i-th
request is, and which floors are measured beside it in the same run:

- ``replay``: the SQL of one request, captured in-process, replayed raw through psycopg;
- ``ranking``: recall's candidates SELECT alone (the subject's servable memories with
  their vectors: the statement joining ``ledger_memoryvector``);
- ``trivial``: the trivial authenticated endpoint, over HTTP like the path itself;
- ``inserts``: a memory, its source and its history row inserted raw (what a write must do).

The expiry sweep is not an HTTP path; ``ledger.actions.expiry`` is measured on its own
(``run.measure_sweep``), beside one UPDATE and one history INSERT … SELECT.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote

from tools.bench.vocabulary import WORDS

Who = Literal["agent", "support", "admin"]
Floor = Literal["replay", "ranking", "trivial", "inserts"]


@dataclass(frozen=True)
class Fixture:
    """The rows of a dataset that requests name: read from it once, before the run."""

    big_subject: str
    history_memory: str
    # Ordinary subjects (a handful of memories, memory not paused), for the agent's calls.
    subjects: list[str]
    # A word many statements hold, for the searches.
    word: str = "invoices"
    # Different on every run, so a write's statement is never a duplicate of a past run's.
    run_token: str = field(default_factory=lambda: uuid.uuid4().hex[:8])

    def subject(self, i: int) -> str:
        return self.subjects[i % len(self.subjects)]


@dataclass(frozen=True)
class Ask:
    method: Literal["GET", "POST"]
    url: str
    body: dict[str, Any] | None = None


@dataclass(frozen=True)
class BenchPath:
    name: str
    who: Who
    ask: Callable[[Fixture, int], Ask]
    floors: tuple[Floor, ...] = ("replay",)
    status: int = 200


def _word(name: str, i: int) -> str:
    words = WORDS[name]
    return words[i % len(words)]


def recall_goal(i: int) -> str:
    return f"{_word('goal_verb', i)} {_word('goal_topic', i // 3)}"


def recall(f: Fixture, i: int) -> Ask:
    goal = recall_goal(i)
    return Ask("GET", f"/api/v1/subjects/{f.subject(i)}/recall?k=5&goal={quote(goal)}")


def write(f: Fixture, i: int) -> Ask:
    statement = (
        f"{_word('pref_verb', i)} {_word('pref_object', i // 2)} {_word('qualifier', i // 5)} "
        f"(bench {f.run_token}-{i})."
    )
    body = {
        "subject": f.subject(i),
        "kind": "preference",
        "statement": statement,
        "basis": "stated",
        "source": {
            "kind": "user_message",
            "ref": f"msg_bench_{f.run_token}_{i}",
            "turn": 1 + i % 40,
            "excerpt": statement.lower(),
        },
    }
    return Ask("POST", "/api/v1/memories", body)


def trivial(f: Fixture, i: int) -> Ask:
    return Ask("GET", f"/api/v1/subjects/{f.subject(i)}")


PATHS: tuple[BenchPath, ...] = (
    BenchPath("recall k=5", "agent", recall, ("replay", "ranking", "trivial")),
    BenchPath("write through the gate", "agent", write, ("inserts",), status=201),
    BenchPath("trivial GET /api/v1/subjects/{ref}", "agent", trivial),
    BenchPath(
        "subject page, 600 memories",
        "support",
        lambda f, i: Ask("GET", f"/subjects/{f.big_subject}/"),
    ),
    BenchPath(
        "memory history page, 800 versions",
        "support",
        lambda f, i: Ask("GET", f"/memories/{f.history_memory}/history/"),
    ),
    BenchPath("staff search", "support", lambda f, i: Ask("GET", f"/?q={f.word}")),
    BenchPath("audit list", "admin", lambda f, i: Ask("GET", "/audit/")),
    BenchPath(
        "Django admin memory list", "admin", lambda f, i: Ask("GET", "/admin/ledger/memory/")
    ),
    BenchPath(
        "Django admin memory list, searched",
        "admin",
        lambda f, i: Ask("GET", f"/admin/ledger/memory/?q={f.word}"),
    ),
)
