"""A slice of make eval in the suite: on held-out personas of eval/recall, the hybrid
ranking recall uses finds what the goals need at least as often as the embedder alone, and
far more often than words alone (docs/recall.md has the whole table)."""

from __future__ import annotations

from tools.eval.recall import PERSONAS, STYLES, Rankers, load, measure

SLICE = {"claire-dubois", "rahul-mehta"}


def test_hybrid_is_never_below_the_embedder_alone_on_held_out_personas() -> None:
    personas = [p for p in load(PERSONAS) if p.name in SLICE]
    assert {p.name for p in personas} == SLICE and all(p.split == "test" for p in personas)
    rankers = Rankers(personas)
    hybrid = measure(personas, rankers.hybrid)
    embedder = measure(personas, rankers.embedder)
    words = measure(personas, rankers.words_shared)
    assert hybrid["all"].goals == 60
    assert hybrid["all"].row()[0] >= embedder["all"].row()[0]
    assert hybrid["all"].row()[0] >= words["all"].row()[0] + 0.3
    # Words find what shares a word; only meaning finds a paraphrase.
    assert hybrid["lexical"].row()[0] >= 0.95
    assert hybrid["paraphrase"].row()[0] >= 0.8 > words["paraphrase"].row()[0]
    assert set(STYLES) <= set(hybrid)
