"""How retrieval ranks: words and meaning fused, with the reasons kept for each choice.

Pure: it is given the candidates (a subject's servable memories, or what support's search
found), the goal, and the vectors, and decides. ``ledger.reads.retrieval`` fetches them, and
``make eval`` runs this same function on the labelled set (eval/recall).

- Lexical: BM25 over the candidates themselves (bm25s), on Snowball stems without stop
  words, so a rare word ("Achilles") outweighs common ones ("week", "training").
- Semantic: the cosine of the goal's and the statement's vectors.
- Fused: ``semantic + lexical_weight * bm25 / (bm25 + half)``: a saturating lexical term
  that adds to meaning without drowning it. A candidate without a vector (not yet
  embedded) stands on its words alone, at the floor.
- A floor: a candidate that shares no word with the goal and whose fused score is below
  it is not served, however few others there are. Only meaning can judge that: without
  the goal's vector (embeddings off or down) or the candidate's (not yet embedded), words
  rank and the rest fill, as before.
- Near-duplicates: a candidate whose cosine with one already chosen reaches
  ``duplicate`` (or whose words are the same) does not take a second place.
- Keys and kinds an agent names are served first, ranked among themselves, within ``k``.
- At equal relevance a stated memory comes before an inferred one, then the newer.

The constants were chosen on the development personas of eval/recall (docs/recall.md
shows the table); the held-out personas only measure them.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Literal

import bm25s
import numpy as np
import numpy.typing as npt
import Stemmer
from bm25s.stopwords import STOPWORDS_EN_PLUS

# bm25s sets its own logger to DEBUG when imported, and says so for every index it builds
# (here, one per ranking).
logging.getLogger("bm25s").setLevel(logging.WARNING)


@dataclass(frozen=True)
class Weights:
    """The ranking's constants, one object so that ``make eval`` can try others."""

    lexical: float = 0.08
    half: float = 2.0
    floor: float = 0.2
    duplicate: float = 0.95


WEIGHTS = Weights()

Via = Literal["key", "kind", "relevance", "recent", "conflict"]
_WORD = re.compile(r"[^\W_]+")
_STOP = frozenset(STOPWORDS_EN_PLUS)


@dataclass(frozen=True)
class Candidate:
    """One thing that may be served. ``newness`` orders equals: higher is newer."""

    id: Hashable
    text: str
    stated: bool
    newness: float
    vector: npt.NDArray[np.float32] | None = None
    key: str = ""
    kind: str = ""


@dataclass(frozen=True)
class Why:
    """Why a candidate was chosen: what the API returns, the log keeps and the trace shows."""

    score: float
    lexical: float
    matched: tuple[str, ...]
    semantic: float | None
    via: Via


@dataclass(frozen=True)
class Chosen:
    candidate: Candidate
    why: Why


@cache
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


def stems(text: str) -> dict[str, str]:
    """Each stem of ``text``'s words (stop words left out) → the first word that gave it."""
    words = [w for w in _WORD.findall(text.casefold()) if w not in _STOP]
    found: dict[str, str] = {}
    for stem, word in zip(_stemmer().stemWords(words), words, strict=True):
        found.setdefault(stem, word)
    return found


def lexical_scores(
    goal: str, texts: Sequence[str]
) -> tuple[npt.NDArray[np.float64], list[tuple[str, ...]]]:
    """BM25 of ``goal`` against each of ``texts`` (term weights from ``texts`` themselves),
    and the goal's words each text contains."""
    wanted = stems(goal)
    documents = [list(stems(text)) for text in texts]
    matched = [tuple(wanted[s] for s in wanted if s in set(doc)) for doc in documents]
    if not wanted or not any(matched):
        return np.zeros(len(texts)), matched
    retriever = bm25s.BM25()
    # An empty document would leave bm25s nothing to index: a word no goal has stands in.
    retriever.index([doc or ["\x00"] for doc in documents], show_progress=False)
    scores = retriever.get_scores(list(wanted))
    return np.asarray(scores, dtype=np.float64), matched


def rank(
    goal: str,
    candidates: Sequence[Candidate],
    *,
    goal_vector: npt.NDArray[np.float32] | None,
    k: int,
    keys: frozenset[str] = frozenset(),
    kinds: frozenset[str] = frozenset(),
    weights: Weights = WEIGHTS,
) -> list[Chosen]:
    """At most ``k`` of ``candidates`` for ``goal``, best first, each with why: first those
    in the slots (``keys``) and kinds asked for, then the most relevant of the rest."""
    asked = [c for c in candidates if (c.key and c.key in keys) or c.kind in kinds]
    taken = {c.id for c in asked}
    rest = [c for c in candidates if c.id not in taken]
    chosen: list[Chosen] = []
    # What was asked for is served whatever its relevance, ranked by it among itself.
    first = [
        replace(c, why=replace(c.why, via="key" if c.candidate.key in keys else "kind"))
        for c in _ranked(goal, asked, goal_vector, weights, floor=False)
    ]
    for scored in [*first, *_ranked(goal, rest, goal_vector, weights, floor=True)]:
        if len(chosen) >= k:
            break
        if not _near_duplicate(scored.candidate, chosen, weights.duplicate):
            chosen.append(scored)
    return chosen


def _ranked(
    goal: str,
    candidates: Sequence[Candidate],
    goal_vector: npt.NDArray[np.float32] | None,
    weights: Weights,
    *,
    floor: bool,
) -> list[Chosen]:
    if stems(goal) or goal_vector is not None:
        return _by_relevance(goal, candidates, goal_vector, weights, floor=floor)
    # No goal to rank by: the newest, what the person said before any guess.
    newest = sorted(candidates, key=_newest_stated_first)
    return [Chosen(c, Why(0.0, 0.0, (), None, "recent")) for c in newest]


def _newest_stated_first(candidate: Candidate) -> tuple[bool, float]:
    return (not candidate.stated, -candidate.newness)


def _by_relevance(
    goal: str,
    candidates: Sequence[Candidate],
    goal_vector: npt.NDArray[np.float32] | None,
    weights: Weights,
    *,
    floor: bool = True,
) -> list[Chosen]:
    """Candidates (at or above the floor, if ``floor``) most relevant first."""
    if not candidates:
        return []
    lexical, matched = lexical_scores(goal, [c.text for c in candidates])
    scored = []
    for candidate, words, lex in zip(candidates, matched, lexical, strict=True):
        semantic = None
        if goal_vector is not None and candidate.vector is not None:
            semantic = float(np.dot(goal_vector, candidate.vector))
        score = fused(float(lex), semantic, goal_vector is not None, weights)
        # Only meaning can tell that a memory is irrelevant: one not yet embedded, or any
        # in a recall without the goal's vector, is ranked by its words and may fill a place.
        # And a word of the goal it holds is evidence enough: a one-word goal ("refund")
        # is too short for its meaning to clear the floor against a whole sentence.
        if not floor or semantic is None or words or score >= weights.floor:
            cosine = None if semantic is None else round(semantic, 6)
            why = Why(round(score, 6), round(float(lex), 6), words, cosine, "relevance")
            scored.append(Chosen(candidate, why))
    scored.sort(key=lambda c: (-c.why.score, *_newest_stated_first(c.candidate)))
    return scored


def fused(
    lexical: float, semantic: float | None, semantic_available: bool, weights: Weights = WEIGHTS
) -> float:
    """One relevance from the two scores. Without the goal's vector only words rank; a
    memory without its own vector stands at the floor, plus its words."""
    words = weights.lexical * lexical / (lexical + weights.half) if lexical > 0 else 0.0
    if not semantic_available:
        return words
    return (weights.floor if semantic is None else semantic) + words


def _near_duplicate(candidate: Candidate, chosen: list[Chosen], duplicate: float) -> bool:
    for other in chosen:
        if other.candidate.text.casefold() == candidate.text.casefold():
            return True
        mine, theirs = candidate.vector, other.candidate.vector
        if mine is not None and theirs is not None and np.dot(mine, theirs) >= duplicate:
            return True
    return False
