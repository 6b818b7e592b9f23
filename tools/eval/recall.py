"""Retrieval quality on the labelled personas of eval/recall: hit@5, MRR@5 and nDCG@5 by
style of goal, for today's lexical ranking and its baselines beside the hybrid.

The rankings compared, each over one persona's memories at a time:

- words shared: the share of the goal's words a statement contains (memoryadmin's SQLite
  ranking before retrieval; PostgreSQL's full-text rank ordered much the same);
- BM25: ``ledger.rules.ranking.lexical_scores`` alone;
- embedder: the cosine of the goal's and the statement's vectors alone;
- hybrid: ``ledger.rules.ranking.rank``, exactly as recall runs it (floor and
  near-duplicates included).

The ranking's constants were chosen on the ``dev`` personas (``--tune`` searches them);
the ``test`` personas only measure. Needs no database: the ranking is a pure function.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import math
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import django
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
PERSONAS = ROOT / "eval" / "recall" / "personas"
# Chosen before any constant was tuned, and never tuned on.
TEST_PERSONAS = frozenset({"claire-dubois", "kenji-watanabe", "rahul-mehta"})
STYLES = ("lexical", "paraphrase", "reasoning")
K = 5
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Goal:
    persona: str
    text: str
    style: str
    needs: frozenset[str]


@dataclass(frozen=True)
class Persona:
    name: str
    split: str
    memories: list[dict[str, object]]
    goals: list[Goal]


def load(folder: Path = PERSONAS) -> list[Persona]:
    personas = []
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        name = str(data["subject"])
        goals = [Goal(name, g["goal"], g["style"], frozenset(g["needs"])) for g in data["goals"]]
        split = "test" if name in TEST_PERSONAS else "dev"
        personas.append(Persona(name, split, data["memories"], goals))
    return personas


def _setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
    os.environ.setdefault("DEBUG", "1")
    django.setup()


Ranker = Callable[[Persona, Goal], list[str]]


class Rankers:
    """Every ranking compared, with each persona's and goal's vectors embedded once."""

    def __init__(self, personas: Sequence[Persona]) -> None:
        from ledger.embeddings import embedder
        from ledger.rules import ranking

        self.ranking = ranking
        backend = embedder()
        if backend is None:
            sys.exit("make eval needs embeddings: MEMORYADMIN_EMBEDDINGS is off.")
        self.model = backend.model
        self.vectors: dict[tuple[str, str], np.ndarray] = {}
        for persona in personas:
            texts = [str(m["statement"]) for m in persona.memories]
            for memory, vector in zip(persona.memories, backend.embed(texts), strict=True):
                self.vectors[(persona.name, str(memory["id"]))] = vector
        goals = [g for p in personas for g in p.goals]
        for goal, vector in zip(goals, backend.embed([g.text for g in goals]), strict=True):
            self.vectors[(goal.persona, goal.text)] = vector

    def candidates(self, persona: Persona) -> list[object]:
        return [
            self.ranking.Candidate(
                id=str(m["id"]),
                text=str(m["statement"]),
                stated=m["basis"] == "stated",
                newness=-float(m["days_ago"]),  # type: ignore[arg-type]
                vector=self.vectors[(persona.name, str(m["id"]))],
                kind=str(m["kind"]),
            )
            for m in persona.memories
        ]

    def words_shared(self, persona: Persona, goal: Goal) -> list[str]:
        from bm25s.stopwords import STOPWORDS_EN_PLUS

        wanted = list(dict.fromkeys(_WORD.findall(goal.text.casefold())))
        wanted = [w for w in wanted if w not in STOPWORDS_EN_PLUS] or wanted

        def share(m: dict[str, object]) -> float:
            words = set(_WORD.findall(str(m["statement"]).casefold()))
            return sum(w in words for w in wanted) / len(wanted)

        order = sorted(
            persona.memories,
            key=lambda m: (-share(m), m["basis"] != "stated", m["days_ago"]),
        )
        return [str(m["id"]) for m in order]

    def bm25(self, persona: Persona, goal: Goal) -> list[str]:
        scores, _ = self.ranking.lexical_scores(
            goal.text, [str(m["statement"]) for m in persona.memories]
        )
        pairs = zip(persona.memories, scores, strict=True)
        order = sorted(pairs, key=lambda p: (-p[1], p[0]["days_ago"]))
        return [str(m["id"]) for m, _ in order]

    def embedder(self, persona: Persona, goal: Goal) -> list[str]:
        wanted = self.vectors[(persona.name, goal.text)]
        order = sorted(
            persona.memories,
            key=lambda m: -float(np.dot(wanted, self.vectors[(persona.name, str(m["id"]))])),
        )
        return [str(m["id"]) for m in order]

    def hybrid(self, persona: Persona, goal: Goal, weights: object = None) -> list[str]:
        chosen = self.ranking.rank(
            goal.text,
            self.candidates(persona),  # type: ignore[arg-type]
            goal_vector=self.vectors[(persona.name, goal.text)],
            k=K,
            weights=weights or self.ranking.WEIGHTS,  # type: ignore[arg-type]
        )
        return [str(c.candidate.id) for c in chosen]


@dataclass
class Score:
    hits: float = 0.0
    reciprocal: float = 0.0
    ndcg: float = 0.0
    served: int = 0
    goals: int = 0

    def add(self, ranked: list[str], needs: frozenset[str]) -> None:
        top = ranked[:K]
        self.goals += 1
        self.served += len(top)
        self.hits += any(m in needs for m in top)
        first = next((i for i, m in enumerate(top) if m in needs), None)
        self.reciprocal += 0.0 if first is None else 1.0 / (first + 1)
        gain = sum(1.0 / math.log2(i + 2) for i, m in enumerate(top) if m in needs)
        ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(needs), K)))
        self.ndcg += gain / ideal

    def row(self) -> tuple[float, float, float]:
        n = max(self.goals, 1)
        return self.hits / n, self.reciprocal / n, self.ndcg / n


def measure(
    personas: Sequence[Persona], ranker: Ranker, split: str | None = None
) -> dict[str, Score]:
    scores = {style: Score() for style in (*STYLES, "all")}
    for persona in personas:
        if split is not None and persona.split != split:
            continue
        for goal in persona.goals:
            ranked = ranker(persona, goal)
            scores[goal.style].add(ranked, goal.needs)
            scores["all"].add(ranked, goal.needs)
    return scores


def table(personas: Sequence[Persona], rankers: Rankers, split: str | None) -> str:
    named: list[tuple[str, Ranker]] = [
        ("words shared (before)", rankers.words_shared),
        ("BM25 alone", rankers.bm25),
        (f"{rankers.model} alone", rankers.embedder),
        ("hybrid (recall)", rankers.hybrid),
    ]
    goals = sum(len(p.goals) for p in personas if split is None or p.split == split)
    lines = [
        f"| ranking ({goals} goals) | "
        + " | ".join(f"{s} hit@5" for s in STYLES)
        + " | hit@5 | MRR@5 | nDCG@5 | served |",
        "| --- | " + " | ".join("---:" for _ in range(len(STYLES) + 4)) + " |",
    ]
    for name, ranker in named:
        scores = measure(personas, ranker, split)
        hits = [f"{scores[s].row()[0]:.2f}" for s in STYLES]
        overall = scores["all"].row()
        served = scores["all"].served / max(scores["all"].goals, 1)
        lines.append(
            f"| {name} | "
            + " | ".join(hits)
            + " | "
            + " | ".join(f"{v:.2f}" for v in overall)
            + f" | {served:.2f} |"
        )
    return "\n".join(lines)


def tune(personas: Sequence[Persona], rankers: Rankers) -> None:
    """Search the ranking's constants on the dev personas; print the best few."""
    from ledger.rules.ranking import Weights

    results = []
    for lexical, half, floor in itertools.product(
        (0.0, 0.1, 0.2, 0.3, 0.4, 0.6), (0.5, 1.0, 2.0, 4.0), (0.0, 0.1, 0.15, 0.2, 0.25)
    ):
        weights = Weights(lexical=lexical, half=half, floor=floor)
        scores = measure(personas, functools.partial(rankers.hybrid, weights=weights), "dev")
        worst = min(scores[s].row()[0] for s in STYLES)
        results.append((scores["all"].row()[0], worst, -floor, weights, scores))
    results.sort(key=lambda r: (r[0], r[1], -r[2]), reverse=True)
    for total, worst, _, weights, scores in results[:10]:
        styles = " ".join(f"{s}={scores[s].row()[0]:.2f}" for s in STYLES)
        served = scores["all"].served / max(scores["all"].goals, 1)
        print(
            f"{weights}: hit@5 {total:.3f} (worst style {worst:.2f}; {styles}; served {served:.1f})"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.eval", description=__doc__)
    parser.add_argument("--tune", action="store_true", help="search the constants on dev")
    parser.add_argument("--personas", type=Path, default=PERSONAS)
    args = parser.parse_args(argv)
    _setup_django()
    personas = load(args.personas)
    if not personas:
        sys.exit(f"No personas in {args.personas}.")
    rankers = Rankers(personas)
    if args.tune:
        tune(personas, rankers)
        return
    memories = sum(len(p.memories) for p in personas)
    print(f"Retrieval on eval/recall: {len(personas)} personas, {memories} memories, k={K}.\n")
    for split, title in (
        ("dev", "Development personas (the constants were chosen here)"),
        ("test", "Held-out personas (never tuned on)"),
        (None, "All"),
    ):
        print(f"### {title}\n")
        print(table(personas, rankers, split))
        print()
