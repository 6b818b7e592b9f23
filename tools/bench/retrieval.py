"""Retrieval's own figures, in-process, each beside its floor in the same run:

- backfill: the everyday subjects' memories embedded again from scratch, memories a second;
- the goal's embedding alone, and one new memory's (what the worker does after a write);
- recall's ranking (``recall_about``: the candidates query and the fused ranking) with
  meaning, beside the same recall with words alone, and their ratio;
- the memory of a process with the model loaded, beside one without it.

The HTTP paths (``paths.PATHS``) then measure recall with meaning end to end: its
subjects are embedded here first, so that no recall ranks a memory by its words for want
of a vector.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.test import override_settings

from ledger.actions import vectors
from ledger.embeddings import embedder
from ledger.models import Memory, MemoryVector
from ledger.reads.recall import recall_about
from tools.bench.paths import Fixture, recall_goal
from tools.bench.servers import ROOT

SAMPLES = 60


@dataclass
class RetrievalResult:
    model: str | None = None
    embedded: int = 0
    backfill_per_s: float | None = None
    goal_embed_ms: float | None = None
    memory_embed_ms: float | None = None
    hybrid_ms: float | None = None
    words_ms: float | None = None
    ratio: float | None = None
    model_rss_mib: float | None = None
    bare_rss_mib: float | None = None


def _p50(seconds: list[float]) -> float:
    return round(statistics.median(seconds) * 1000, 3)


def _timed(call: Callable[[], object], times: int) -> list[float]:
    spent = []
    for _ in range(times):
        started = time.perf_counter()
        call()
        spent.append(time.perf_counter() - started)
    return spent


def _each[T](items: Iterable[T], call: Callable[[T], object]) -> list[float]:
    spent = []
    for item in items:
        started = time.perf_counter()
        call(item)
        spent.append(time.perf_counter() - started)
    return spent


def measure(fixture: Fixture, say: Callable[[str], None]) -> RetrievalResult:
    result = RetrievalResult()
    backend = embedder()
    if backend is None:
        say("Embeddings are off: recall ranks by words; no retrieval figures.")
        return result
    result.model = backend.model
    ids = list(
        Memory.objects.filter(subject__ref__in=fixture.subjects).values_list("pk", flat=True)
    )
    MemoryVector.objects.filter(memory__in=ids).delete()
    started = time.perf_counter()
    result.embedded = vectors.embed(ids)
    if result.embedded:
        result.backfill_per_s = round(result.embedded / (time.perf_counter() - started))
    goals = [recall_goal(i) for i in range(SAMPLES)]
    backend.embed(goals[:1])
    result.goal_embed_ms = _p50(_each(goals, lambda goal: backend.embed([goal])))
    statement = Memory.objects.filter(pk__in=ids[:1]).values_list("statement", flat=True)
    result.memory_embed_ms = _p50(_timed(lambda: backend.embed(list(statement)), SAMPLES))

    def ranked(i: int) -> object:
        return recall_about(ref=fixture.subject(i), goal=recall_goal(i), k=5)

    hybrid = _each(range(SAMPLES), ranked)
    with override_settings(MEMORYADMIN_EMBEDDINGS="off"):
        words = _each(range(SAMPLES), ranked)
    result.hybrid_ms, result.words_ms = _p50(hybrid), _p50(words)
    result.ratio = round(result.hybrid_ms / result.words_ms, 2) if result.words_ms else None
    result.model_rss_mib = _rss(load_model=True)
    result.bare_rss_mib = _rss(load_model=False)
    say(
        f"Retrieval: backfill {result.backfill_per_s} memories/s; goal embedding "
        f"{result.goal_embed_ms} ms; ranking {result.hybrid_ms} ms with meaning, "
        f"{result.words_ms} ms by words; {result.model_rss_mib} MiB with the model."
    )
    return result


# VmHWM, this process's peak: ru_maxrss would carry the parent's over the fork.
_RSS = """
import os, django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
django.setup()
import ledger.urls  # what a web worker imports
if {load}:
    from ledger.embeddings import embedder
    embedder().embed(["a first goal"])
peak = [line for line in open("/proc/self/status") if line.startswith("VmHWM:")][0]
print(int(peak.split()[1]) / 1024)
"""


def _rss(*, load_model: bool) -> float:
    """Peak memory of a Django process that has (or has not) loaded the model, MiB."""
    done = subprocess.run(
        [sys.executable, "-c", _RSS.format(load=load_model)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return round(float(done.stdout.strip().splitlines()[-1]), 1)
