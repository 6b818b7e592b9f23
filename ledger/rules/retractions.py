"""Batch retractions (support's workbench): what a selection may take, and undoing one."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from ledger.choices import (
    MemoryStatus,
)
from ledger.dates import when
from ledger.rules.refusals import Refusal

# One batch is one transaction holding a lock on every memory it takes: a selection wider
# than this is almost certainly a mistake, and would hold those locks for too long.
RETRACTION_BATCH_MAX = 1000
RETRACTION_CRITERIA = (
    "source_ref",
    "run",
    "agent",
    "written_after",
    "written_before",
    "memories",
)


def refuse_empty_selection(criteria: Mapping[str, object]) -> None:
    """At least one criterion: retracting everything is never what anyone meant."""
    if any(criteria.get(name) not in (None, "") for name in RETRACTION_CRITERIA):
        return
    raise Refusal(
        "selection_empty",
        "Choose at least one of: source reference, run, agent, written after, written "
        "before. Retracting every memory is never what anyone meant. Nothing was changed.",
        400,
    )


def refuse_backwards_window(after: datetime | None, before: datetime | None) -> None:
    if after is not None and before is not None and after >= before:
        raise Refusal(
            "window_backwards",
            "'Written after' must be earlier than 'written before'. Nothing was changed.",
            400,
        )


def refuse_batch_size(found: int, *, expected: int | None = None) -> None:
    """Nothing to take, too much to take in one go, or not what the person previewed."""
    if found == 0:
        raise Refusal(
            "selection_matches_nothing",
            "No memory that can still be deleted matches this selection. Nothing was changed.",
            409,
        )
    if found > RETRACTION_BATCH_MAX:
        raise Refusal(
            "selection_too_large",
            f"This selection matches more than {RETRACTION_BATCH_MAX} memories, the most one "
            "batch takes. Narrow it (a source, a run, a shorter time window). "
            "Nothing was changed.",
            400,
        )
    if expected is not None and expected != found:
        raise Refusal(
            "selection_changed",
            f"The selection now matches {found} memories, not the {expected} you previewed: "
            "check the preview again. Nothing was changed.",
            409,
        )


def undo_words(batch_id: object, reason: str) -> str:
    """What the undo of a batch records as each change's reason: the batch, then the person's
    own words, which ``undo_reason`` gives back."""
    return f"Batch {batch_id} undone: {reason}"


def undo_reason(batch_id: object, words: str) -> str:
    """The person's own reason for undoing a batch, from what ``undo_words`` recorded."""
    return words.removeprefix(undo_words(batch_id, ""))


def refuse_undone_twice(undone_at: datetime | None) -> None:
    if undone_at is not None:
        raise Refusal(
            "batch_already_undone",
            f"This batch was already undone ({when(undone_at)}); nothing was changed.",
            409,
        )


def left_as_batch_left_it(*, status: str, version: int, version_after: int) -> bool:
    """Whether a batch's undo may put a memory back: still deleted, and nobody touched it
    since the batch (its version is the one the batch left). Anything else was someone's
    later decision, which an undo must not overrule."""
    return status == MemoryStatus.RETRACTED and version == version_after
