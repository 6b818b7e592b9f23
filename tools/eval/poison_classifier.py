"""Would a classifier over the local embeddings, beside the rules, meet the write gate's
target (at least 95% of attacks held, at most 5% of legitimate statements held, on ``test``
and on the held-out file)? A measurement, not a detector the gate uses.

Every choice is made on the ``dev`` split alone, by 5-fold cross-validation (folds
stratified by label, a text and its duplicates always in one fold): the regularisation and
threshold of a logistic regression, the similarity margin of a k-nearest-neighbour vote.
A threshold is the lowest whose out-of-fold figures wrongly hold at most 2% of ``dev``'s
legitimate statements. The models are then trained on the whole of ``dev`` and measured
once on ``test`` and on the held-out file. The ``dev`` column is the out-of-fold figure (the
rules' own ``dev`` figure is in-sample: they were written against it).

Variants:

- logistic regression (NumPy, Newton's method, L2 on the weights), each strength of a
  small grid, the one ``dev`` prefers marked;
- k-NN: the 5 nearest ``dev`` statements by cosine; held when at least 3 are attacks and
  the nearest attack among them is more similar than the nearest legitimate one by at least
  a margin, the margin chosen as above;
- each, alone and OR-ed with the rules: with the classifier's own threshold, and with the
  threshold at which the combination wrongly holds at most 2% of ``dev`` out of fold.

Then, added after the first run and reported whole: the dev-chosen logistic regression and
the k-NN at dev budgets of 1% to 5% of legitimate statements held (a trade-off curve, not a
choice), and the chosen logistic regression's figures by language.

Also the time to embed one statement, one at a time, as the gate would have to. Statement
texts are never printed. Needs no database.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

import django
import numpy as np
import numpy.typing as npt

from tools.eval.poison import HELDOUT_SPLIT, SPLITS, Statement, load_all, rules

Floats = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]

FOLDS = 5
MAX_LEGIT_HELD = 0.02
STRENGTHS = (0.01, 0.1, 1.0, 10.0)
K = 5
MAJORITY = 3
TIMED = 200
SEED = 0
BUDGETS = (0.01, 0.02, 0.03, 0.04, 0.05)


# ---- logistic regression -------------------------------------------------------------


def fit(x: Floats, y: Floats, strength: float, steps: int = 50) -> Floats:
    """Weights (bias last) minimising the log-loss plus ``strength / 2 * |w|^2`` (the bias
    unpenalised), by Newton's method."""
    design = np.hstack([x, np.ones((x.shape[0], 1))])
    width = design.shape[1]
    penalty = np.full(width, strength)
    penalty[-1] = 0.0
    w = np.zeros(width)
    for _ in range(steps):
        p = _sigmoid(design @ w)
        gradient = design.T @ (p - y) + penalty * w
        hessian = (design * (p * (1 - p))[:, None]).T @ design + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if float(np.max(np.abs(step))) < 1e-8:
            break
    return w


def predict(w: Floats, x: Floats) -> Floats:
    return _sigmoid(x @ w[:-1] + w[-1])


def _sigmoid(z: Floats) -> Floats:
    out: Floats = 1.0 / (1.0 + np.exp(-np.clip(z, -500, 500)))
    return out


# ---- k nearest neighbours --------------------------------------------------------------


def knn_scores(reference: Floats, labels: Bools, queries: Floats, exclude: Bools | None) -> Floats:
    """For each query: the margin (nearest attack's cosine minus nearest legitimate's, both
    among the K nearest; +inf when all K are attacks) when at least MAJORITY of its K
    nearest are attacks, else -inf. ``exclude[i, j]`` leaves reference j out for query i."""
    similarity = queries @ reference.T
    if exclude is not None:
        similarity = np.where(exclude, -np.inf, similarity)
    nearest = np.argsort(-similarity, axis=1)[:, :K]
    scores = np.full(len(queries), -np.inf)
    for i, row in enumerate(nearest):
        attack = labels[row]
        if attack.sum() < MAJORITY:
            continue
        sims = similarity[i, row]
        if attack.all():
            scores[i] = np.inf
        else:
            scores[i] = float(sims[attack].max() - sims[~attack].max())
    return scores


# ---- thresholds -----------------------------------------------------------------------


def threshold(
    scores: Floats,
    attack: Bools,
    forced: Bools | None = None,
    most: float = MAX_LEGIT_HELD,
) -> float:
    """The lowest threshold (held when score > it) whose legitimate statements held, with
    those ``forced`` held whatever the score, are at most ``most``."""
    forced = np.zeros(len(scores), dtype=bool) if forced is None else forced
    legit = ~attack
    budget = int(np.floor(most * legit.sum())) - int((forced & legit).sum())
    free = np.sort(scores[legit & ~forced])[::-1]
    if budget < 0:
        return float("inf")
    if budget >= len(free):
        return float("-inf")
    # Above the (budget+1)-th highest free legitimate score: at most `budget` held.
    return float(free[budget])


def folds(statements: Sequence[Statement]) -> npt.NDArray[np.int64]:
    """A fold per statement: stratified by label, identical texts together."""
    rng = np.random.default_rng(SEED)
    fold_of_text: dict[str, int] = {}
    for attack in (True, False):
        texts = list(dict.fromkeys(s.text for s in statements if s.attack == attack))
        texts = [t for t in texts if t not in fold_of_text]
        order = rng.permutation(len(texts))
        for rank, index in enumerate(order):
            fold_of_text[texts[index]] = rank % FOLDS
    return np.array([fold_of_text[s.text] for s in statements], dtype=np.int64)


# ---- scoring -----------------------------------------------------------------------------


@dataclass
class Row:
    name: str
    # split -> (attacks held, attacks, legit held, legit)
    figures: dict[str, tuple[int, int, int, int]]


def figures(held: Bools, attack: Bools) -> tuple[int, int, int, int]:
    return (
        int((held & attack).sum()),
        int(attack.sum()),
        int((held & ~attack).sum()),
        int((~attack).sum()),
    )


def _percent(part: int, whole: int) -> str:
    return f"{part / max(whole, 1):.1%}"


def render(rows: Sequence[Row], splits: Sequence[str]) -> str:
    names = {"dev": "dev (5-fold CV)"}
    header = "| variant | " + " | ".join(
        f"{names.get(s, s)}: attacks held | {names.get(s, s)}: legit wrongly held" for s in splits
    )
    lines = [header + " |", "| --- |" + " ---: |" * (2 * len(splits))]
    for row in rows:
        cells = []
        for split in splits:
            a_held, a, l_held, n_legit = row.figures[split]
            cells.append(f"{_percent(a_held, a)} | {_percent(l_held, n_legit)}")
        lines.append(f"| {row.name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# ---- the measurement ------------------------------------------------------------------


def embed_all(texts: list[str], batch: int = 32) -> dict[str, Floats]:
    from ledger.embeddings import embedder

    backend = embedder()
    if backend is None:
        raise SystemExit("embeddings are off (MEMORYADMIN_EMBEDDINGS): nothing to measure")
    vectors: dict[str, Floats] = {}
    # By length, so a batch pads little.
    ordered = sorted(texts, key=len)
    for start in range(0, len(ordered), batch):
        chunk = ordered[start : start + batch]
        for text, vector in zip(chunk, backend.embed(chunk), strict=True):
            vectors[text] = np.asarray(vector, dtype=np.float64)
    return vectors


def time_one_at_a_time(texts: Sequence[str]) -> list[float]:
    from ledger.embeddings import embedder

    backend = embedder()
    assert backend is not None
    backend.embed([texts[0]])  # warm
    seconds = []
    for text in texts[:TIMED]:
        started = time.perf_counter()
        backend.embed([text])
        seconds.append(time.perf_counter() - started)
    return seconds


def run(
    statements: Sequence[Statement],
) -> tuple[list[Row], list[Row], list[Row], list[str], str]:
    splits = [s for s in SPLITS if any(x.split == s for x in statements)]
    vectors = embed_all(list(dict.fromkeys(s.text for s in statements)))
    by_split = {split: [s for s in statements if s.split == split] for split in splits}
    dev = by_split["dev"]
    x_dev = np.stack([vectors[s.text] for s in dev])
    y_dev = np.array([s.attack for s in dev])
    fold = folds(dev)
    x = {split: np.stack([vectors[s.text] for s in by_split[split]]) for split in splits}
    y = {split: np.array([s.attack for s in by_split[split]]) for split in splits}
    ruled = {split: np.array([rules(s) for s in by_split[split]]) for split in splits}
    rows: list[Row] = []
    notes: list[str] = []

    def add(name: str, held: dict[str, Bools]) -> None:
        rows.append(Row(name, {split: figures(held[split], y[split]) for split in splits}))

    add("rules alone (dev in-sample)", ruled)

    # Out-of-fold and final scores of each classifier: split -> score per statement.
    candidates: list[tuple[str, dict[str, Floats]]] = []
    for strength in STRENGTHS:
        out_of_fold = np.zeros(len(dev))
        for f in range(FOLDS):
            train = fold != f
            w = fit(x_dev[train], y_dev[train].astype(np.float64), strength)
            out_of_fold[~train] = predict(w, x_dev[~train])
        w = fit(x_dev, y_dev.astype(np.float64), strength)
        scores = {split: predict(w, x[split]) for split in splits if split != "dev"}
        scores["dev"] = out_of_fold
        candidates.append((f"logistic regression, L2 {strength:g}", scores))

    # k-NN: out of fold on dev (neighbours from the other folds only), all of dev after.
    same_fold = fold[:, None] == fold[None, :]
    scores = {"dev": knn_scores(x_dev, y_dev, x_dev, same_fold)}
    for split in splits:
        if split != "dev":
            scores[split] = knn_scores(x_dev, y_dev, x[split], None)
    candidates.append((f"k-NN (k={K}, >= {MAJORITY} attacks, margin)", scores))

    # The logistic regression's strength: the highest out-of-fold recall at its threshold.
    def dev_recall(scores: dict[str, Floats]) -> float:
        t = threshold(scores["dev"], y_dev)
        return float((scores["dev"][y_dev] > t).mean())

    logistic = [c for c in candidates if c[0].startswith("logistic")]
    chosen = max(logistic, key=lambda c: dev_recall(c[1]))[0]
    for name, scores in candidates:
        mark = " ← chosen on dev" if name == chosen else ""
        alone = threshold(scores["dev"], y_dev)
        joint = threshold(scores["dev"], y_dev, forced=ruled["dev"])
        notes.append(
            f"- {name}: threshold {alone:.4g} alone, {joint:.4g} OR-ed with rules "
            f"(dev-chosen; k-NN's is the margin)"
        )
        add(f"(a) {name}{mark}", {s: scores[s] > alone for s in splits})
        add(
            f"(b) rules OR {name}, its own threshold{mark}",
            {s: ruled[s] | (scores[s] > alone) for s in splits},
        )
        if joint != alone:  # the same rows when the rules hold no dev legit statement
            add(
                f"(b′) rules OR {name}, threshold for ≤2% joint on dev{mark}",
                {s: ruled[s] | (scores[s] > joint) for s in splits},
            )
    # Added after the first run, reported whole: the same dev-chosen classifiers at other
    # dev budgets of legit wrongly held, a trade-off curve rather than a choice.
    sweep: list[Row] = []
    for name, scores in candidates:
        if name != chosen and not name.startswith("k-NN"):
            continue
        for most in BUDGETS:
            t = threshold(scores["dev"], y_dev, most=most)
            held = {s: ruled[s] | (scores[s] > t) for s in splits}
            sweep.append(
                Row(
                    f"rules OR {name}, ≤{most:.0%} of dev legit held by it",
                    {split: figures(held[split], y[split]) for split in splits},
                )
            )
            alone_held = {s: scores[s] > t for s in splits}
            sweep.append(
                Row(
                    f"{name} alone, ≤{most:.0%} of dev legit held",
                    {split: figures(alone_held[split], y[split]) for split in splits},
                )
            )
    by_language: list[Row] = []
    for name, scores in candidates:
        if name != chosen:
            continue
        t = threshold(scores["dev"], y_dev)
        for lang in ("en", "de"):
            lang_of = {
                split: np.array([s.lang == lang for s in by_split[split]]) for split in splits
            }
            for label, held in (
                ("rules alone", ruled),
                (f"rules OR {name}", {s: ruled[s] | (scores[s] > t) for s in splits}),
            ):
                by_language.append(
                    Row(
                        f"{lang}: {label}",
                        {
                            split: figures(held[split][lang_of[split]], y[split][lang_of[split]])
                            for split in splits
                        },
                    )
                )
    dev_texts = {s.text for s in dev}
    overlap = {
        split: sum(s.text in dev_texts for s in by_split[split])
        for split in splits
        if split != "dev"
    }
    notes.append(
        "- statements whose exact text is also in dev: "
        + ", ".join(f"{split} {n}" for split, n in overlap.items())
    )
    return rows, sweep, by_language, splits, "\n".join(notes)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tools.eval.poison_classifier", description=__doc__
    )
    parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
    os.environ.setdefault("DEBUG", "1")
    django.setup()
    statements = load_all()
    rows, sweep, by_language, splits, notes = run(statements)
    dev_texts = list(dict.fromkeys(s.text for s in statements if s.split == "dev"))
    seconds = time_one_at_a_time(dev_texts)
    counts = ", ".join(f"{split} {sum(s.split == split for s in statements)}" for split in splits)
    print(f"Classifiers over all-MiniLM-L6-v2 embeddings, chosen on dev only ({counts}).\n")
    print(render(rows, splits))
    print()
    print(notes)
    print()
    print("Added after the first run: the trade-off at other dev budgets.\n")
    print(render(sweep, splits))
    print()
    print("By language, the dev-chosen logistic regression at ≤2%:\n")
    print(render(by_language, splits))
    print()
    ms = sorted(1000 * s for s in seconds)
    print(
        f"Embedding one statement at a time ({len(ms)} dev statements, "
        f"{os.cpu_count()} CPUs): median {statistics.median(ms):.1f} ms, "
        f"p95 {ms[int(0.95 * (len(ms) - 1))]:.1f} ms, max {ms[-1]:.1f} ms."
    )
    if HELDOUT_SPLIT not in splits:
        print("(no held-out file)")


if __name__ == "__main__":
    main()
