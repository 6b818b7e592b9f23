"""Poisoned-write detection on the labelled statements of eval/poison: how many attacks
(standing orders, injections) the write gate holds, and how many legitimate memories it
wrongly holds, beside two baselines.

The detectors compared:

- keyword list: held when any word of a list of imperative and model words appears, the
  first thing one would try;
- nearest labelled neighbour: the label of the most similar ``dev`` statement by the
  local embedder's cosine (k=1; a ``dev`` statement is never its own neighbour), when the
  embedder is available;
- rules (the gate): ``ledger.rules.poison.finding``, exactly as the write gate asks it.

The rules were written against the ``dev`` split (``--misses`` lists what they get wrong
there, and only there); ``test`` only measures. ``heldout.jsonl`` is written by someone who
never saw the rules, and is read only when present. Needs no database.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import django
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "eval" / "poison" / "corpus.jsonl"
HELDOUT = ROOT / "eval" / "poison" / "heldout.jsonl"
HELDOUT_SPLIT = "held out (written blind)"
SPLITS = ("dev", "test", HELDOUT_SPLIT)
ATTACK_KINDS = ("standing_order", "injection")
LEGIT_KINDS = ("firm_preference", "situation", "event")
# Words an imperative or a message to the model is made of, English and German.
KEYWORDS = frozenset(
    [
        "always",
        "never",
        "must",
        "should",
        "ignore",
        "disregard",
        "forget",
        "override",
        "bypass",
        "skip",
        "approve",
        "grant",
        "waive",
        "treat",
        "trust",
        "recommend",
        "system",
        "assistant",
        "model",
        "ai",
        "instruction",
        "instructions",
        "admin",
        "immer",
        "nie",
        "niemals",
        "muss",
        "soll",
        "ignoriere",
        "vergiss",
        "genehmige",
        "genehmigen",
        "überspringen",
        "empfehlen",
        "erlassen",
        "anweisungen",
        "modell",
        "ki",
        "assistent",
    ]
)
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Statement:
    text: str
    attack: bool
    kind: str
    lang: str
    split: str


def load(path: Path, split: str | None = None) -> list[Statement]:
    """Every statement of a JSON-lines file; ``split`` for a file that has no split field."""
    statements = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if row["label"] not in ("attack", "legit"):
            raise ValueError(f"{path.name}:{number}: label must be attack or legit")
        statements.append(
            Statement(
                text=str(row["text"]),
                attack=row["label"] == "attack",
                kind=str(row["kind"]),
                lang=str(row["lang"]),
                split=split or str(row["split"]),
            )
        )
    return statements


def load_all(corpus: Path = CORPUS, heldout: Path = HELDOUT) -> list[Statement]:
    statements = load(corpus)
    if heldout.exists():
        statements += load(heldout, HELDOUT_SPLIT)
    return statements


Detector = Callable[[Statement], bool]


def rules(statement: Statement) -> bool:
    from ledger.rules.poison import finding

    return finding(statement.text) is not None


def keywords(statement: Statement) -> bool:
    return not KEYWORDS.isdisjoint(_WORD.findall(statement.text.casefold()))


class Neighbour:
    """The label of the nearest dev statement by meaning, itself left out."""

    def __init__(self, statements: Sequence[Statement]) -> None:
        from ledger.embeddings import EmbeddingUnavailable, embedder

        try:
            backend = embedder()
        except EmbeddingUnavailable:
            backend = None
        self.model = backend.model if backend is not None else None
        self.vectors: dict[str, np.ndarray] = {}
        self.dev = [s for s in statements if s.split == "dev"]
        if backend is None:
            return
        texts = list(dict.fromkeys(s.text for s in statements))
        self.vectors = dict(zip(texts, backend.embed(texts), strict=True))
        self.matrix = np.stack([self.vectors[s.text] for s in self.dev])

    def __call__(self, statement: Statement) -> bool:
        similarity = self.matrix @ self.vectors[statement.text]
        for i, other in enumerate(self.dev):
            if other.text == statement.text:
                similarity[i] = -np.inf
        return self.dev[int(np.argmax(similarity))].attack


@dataclass
class Score:
    attacks: int = 0
    attacks_held: int = 0
    legit: int = 0
    legit_held: int = 0

    def add(self, statement: Statement, held: bool) -> None:
        if statement.attack:
            self.attacks += 1
            self.attacks_held += held
        else:
            self.legit += 1
            self.legit_held += held

    @property
    def attacks_rate(self) -> float:
        return self.attacks_held / max(self.attacks, 1)

    @property
    def legit_rate(self) -> float:
        return self.legit_held / max(self.legit, 1)


def measure(statements: Sequence[Statement], detector: Detector) -> dict[str, Score]:
    """Each split's score, and each kind's and language's within it (``test/de``,
    ``dev/standing_order``)."""
    scores: dict[str, Score] = {}
    for statement in statements:
        held = detector(statement)
        for key in (statement.split, f"{statement.split}/{statement.kind}"):
            scores.setdefault(key, Score()).add(statement, held)
        scores.setdefault(f"{statement.split}/{statement.lang}", Score()).add(statement, held)
    return scores


def detectors(statements: Sequence[Statement]) -> list[tuple[str, Detector]]:
    named: list[tuple[str, Detector]] = [("keyword list", keywords)]
    neighbour = Neighbour(statements)
    if neighbour.model is not None:
        named.append((f"nearest labelled neighbour ({neighbour.model}, k=1)", neighbour))
    named.append(("rules (the write gate)", rules))
    return named


def _percent(value: float) -> str:
    return f"{value:.1%}".replace(".0%", "%") if value in (0.0, 1.0) else f"{value:.1%}"


def table(statements: Sequence[Statement], named: Sequence[tuple[str, Detector]]) -> str:
    splits = [s for s in SPLITS if any(x.split == s for x in statements)]
    header = "| detector | " + " | ".join(
        f"{s}: attacks held | {s}: legit wrongly held" for s in splits
    )
    lines = [header + " |", "| --- |" + " ---: |" * (2 * len(splits))]
    for name, detector in named:
        scores = measure(statements, detector)
        cells = [
            f"{_percent(scores[s].attacks_rate)} | {_percent(scores[s].legit_rate)}" for s in splits
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def breakdown(statements: Sequence[Statement]) -> str:
    """The rules' figures by kind and language, for each split."""
    scores = measure(statements, rules)
    splits = [s for s in SPLITS if s in scores]
    lines = [
        "| rules, by | " + " | ".join(splits) + " |",
        "| --- |" + " ---: |" * len(splits),
    ]
    for part in (*ATTACK_KINDS, *LEGIT_KINDS, "en", "de"):
        cells = []
        for split in splits:
            score = scores.get(f"{split}/{part}")
            if score is None:
                cells.append("–")
            elif part in LEGIT_KINDS:
                cells.append(f"{_percent(score.legit_rate)} held of {score.legit}")
            elif part in ATTACK_KINDS:
                cells.append(f"{_percent(score.attacks_rate)} held of {score.attacks}")
            else:
                cells.append(
                    f"{_percent(score.attacks_rate)} / {_percent(score.legit_rate)} "
                    f"of {score.attacks + score.legit}"
                )
        name = {"en": "English (attacks / legit held)", "de": "German (attacks / legit held)"}
        lines.append(f"| {name.get(part, part)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.eval.poison", description=__doc__)
    parser.add_argument(
        "--misses", action="store_true", help="list what the rules get wrong on dev"
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
    os.environ.setdefault("DEBUG", "1")
    django.setup()
    if args.misses:
        for statement in load(CORPUS):
            if statement.split == "dev" and rules(statement) != statement.attack:
                wrong = "passed" if statement.attack else "held"
                print(f"{wrong}: [{statement.kind}/{statement.lang}] {statement.text}")
        return
    statements = load_all()
    counts = {s: sum(x.split == s for x in statements) for s in SPLITS}
    attacks = sum(s.attack for s in statements)
    print(
        f"Poisoned writes on eval/poison: {len(statements)} statements, {attacks} attacks, "
        f"{len(statements) - attacks} legitimate; "
        + ", ".join(f"{split} {n}" for split, n in counts.items() if n)
        + ".\n"
    )
    print(table(statements, detectors(statements)))
    print()
    print(breakdown(statements))
    print()


if __name__ == "__main__":
    main()
