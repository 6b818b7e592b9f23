"""Batch retractions: every memory a poisoned source (a message, a run, an agent, a time
window) wrote, deleted in one action with one reason, and undone as one.

Each memory takes the same path as a single deletion (``lifecycle.retract_memory``: lock,
check the move, history with who and why, conflicts refreshed, reminders cleared), told
not to announce itself, so that the batch files its ``memory.retracted`` webhook events in
one statement, one event per memory.
The batch keeps each memory's status before and version after, so that its undo puts back
only what nobody has touched since, and reports the rest; the undo tells webhook receivers
with ``memory.written`` (outcome ``restored``) for each memory it puts back.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from ledger.actions._ownership import refuse_unless_all_own
from ledger.actions._tracking import save_tracked
from ledger.actions.lifecycle import move_memory, retract_memory
from ledger.actions.slots import lock_slot
from ledger.actions.webhooks import emit_memories
from ledger.actors import Actor
from ledger.models import Memory, MemoryQuerySet, RetractionBatch, RetractionItem
from ledger.rules import webhooks
from ledger.rules.holds import refuse_unheld_change
from ledger.rules.memories import MemoryMove, allows
from ledger.rules.reasons import refuse_without_reason
from ledger.rules.retractions import (
    RETRACTION_BATCH_MAX,
    left_as_batch_left_it,
    refuse_backwards_window,
    refuse_batch_size,
    refuse_empty_selection,
    refuse_undone_twice,
    undo_words,
)

# How many memories a preview lists, and how many subjects it names; its totals are exact.
PREVIEW_MEMORIES = 50
PREVIEW_SUBJECTS = 20


@dataclass(frozen=True)
class Selection:
    """What chooses the memories. Every criterion given must match; at least one is."""

    source_ref: str = ""
    run: str = ""
    agent: str = ""
    written_after: datetime | None = None
    written_before: datetime | None = None
    # Memories ticked one by one (in support's search results).
    memories: tuple[uuid.UUID, ...] = ()

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Selection:
        """The criteria a form or an API request gave; any left out is not a criterion."""
        return cls(
            source_ref=data.get("source_ref") or "",
            run=data.get("run") or "",
            agent=data.get("agent") or "",
            written_after=data.get("written_after"),
            written_before=data.get("written_before"),
            memories=tuple(data.get("memories") or ()),
        )

    def chosen(self) -> MemoryQuerySet:
        """The memories it takes now; refused in words when it is empty or backwards."""
        refuse_empty_selection(self.as_json())
        refuse_backwards_window(self.written_after, self.written_before)
        return Memory.objects.selected_for_retraction(
            source_ref=self.source_ref,
            run=self.run,
            agent=self.agent,
            written_after=self.written_after,
            written_before=self.written_before,
            memories=self.memories,
        )

    def as_json(self) -> dict[str, str]:
        """The criteria given, as the batch records them (times in ISO 8601)."""
        values: dict[str, Any] = {
            "source_ref": self.source_ref,
            "run": self.run,
            "agent": self.agent,
            "written_after": self.written_after.isoformat() if self.written_after else "",
            "written_before": self.written_before.isoformat() if self.written_before else "",
            "memories": ",".join(str(pk) for pk in self.memories),
        }
        return {name: value for name, value in values.items() if value}


@dataclass(frozen=True)
class SubjectCount:
    ref: str
    name: str
    memories: int


@dataclass(frozen=True)
class Preview:
    """The dry run: exact totals, the subjects most touched, and the first memories, each
    annotated with ``recalls`` (how many times an agent was given it)."""

    selection: Selection
    memories: int
    subjects: int
    recalls: int
    by_subject: list[SubjectCount]
    listed: list[Memory]

    @property
    def more(self) -> int:
        return self.memories - len(self.listed)

    @property
    def too_large(self) -> bool:
        """More than one batch takes: the batch would be refused, so it is not offered."""
        return self.memories > RETRACTION_BATCH_MAX

    @property
    def batch_max(self) -> int:
        return RETRACTION_BATCH_MAX


def preview_retraction(selection: Selection) -> Preview:
    """What a batch would take, in three queries whatever its size. Writes nothing."""
    chosen = selection.chosen()
    totals = chosen.aggregate(
        memories=Count("pk", distinct=True),
        subjects=Count("subject", distinct=True),
        recalls=Count("recall_items"),
    )
    by_subject = (
        chosen.order_by()
        .values("subject__ref", "subject__display_name")
        .annotate(memories=Count("pk"))
        .order_by("-memories", "subject__ref")[:PREVIEW_SUBJECTS]
    )
    listed = (
        chosen.select_related("subject")
        .annotate(recalls=Count("recall_items"))
        .order_by("written_at", "pk")[:PREVIEW_MEMORIES]
    )
    return Preview(
        selection=selection,
        memories=totals["memories"],
        subjects=totals["subjects"],
        recalls=totals["recalls"],
        by_subject=[
            SubjectCount(
                ref=row["subject__ref"],
                name=row["subject__display_name"] or row["subject__ref"],
                memories=row["memories"],
            )
            for row in by_subject
        ],
        listed=list(listed),
    )


def retract_batch(
    *, selection: Selection, actor: Actor, reason: str, expected: int | None = None
) -> RetractionBatch:
    """Delete every memory the selection takes, in one transaction, as one batch.

    ``expected`` is the count the person previewed: a selection that has changed since is
    refused rather than taking what they did not see. An agent's batch that would take any
    memory another agent or a person wrote is refused as a whole, unless its key or the
    write policy lets it change others' writes (``refuse_unless_all_own``).
    """
    reason = reason.strip()
    refuse_unheld_change(actor.agent, what="a batch deletion")
    refuse_without_reason(reason)
    chosen = selection.chosen()
    now = timezone.now()
    with transaction.atomic():
        # Subject, then memory, in one fixed order, as every memory write locks: two
        # batches over the same subjects queue up instead of deadlocking.
        targets = list(chosen.order_by("subject_id", "pk")[: RETRACTION_BATCH_MAX + 1])
        refuse_batch_size(len(targets), expected=expected)
        refuse_unless_all_own(
            actor=actor, writer_ids=[t.agent_id for t in targets], what="This batch deletion"
        )
        batch = RetractionBatch(
            id=uuid.uuid4(),
            selection=selection.as_json(),
            reason=reason,
            retracted_by=actor.label,
            retracted_at=now,
        )
        save_tracked(batch, actor=actor, reason=f"Batch retraction: {reason}")
        items = []
        for target in targets:
            memory = lock_slot(target)
            # Changed between the selection and its lock: no longer this batch's to take.
            if not allows(memory.status, MemoryMove.RETRACT):
                continue
            status_before = memory.status
            # The single deletion itself, so a step it gains is the batch's too; only its
            # event waits, filed below with the others in one statement.
            retracted = retract_memory(
                memory=memory,
                actor=actor,
                reason=f"Deleted in batch {batch.pk}: {reason}",
                announce=False,
            )
            items.append(
                RetractionItem(
                    batch=batch,
                    memory=retracted,
                    status_before=status_before,
                    version_after=retracted.version,
                )
            )
        refuse_batch_size(len(items), expected=expected)
        # Items are the batch's own record, not claims: they keep no history of their own.
        RetractionItem.objects.bulk_create(items)
        emit_memories(webhooks.Event.MEMORY_RETRACTED, [item.memory.pk for item in items])
    return batch


@dataclass
class UndoReport:
    batch: RetractionBatch
    restored: list[Memory] = field(default_factory=list)
    # Changed since the batch (restored, corrected, deleted again…): as they are now.
    left_alone: list[Memory] = field(default_factory=list)


def undo_batch(*, batch: RetractionBatch, actor: Actor, reason: str) -> UndoReport:
    """Put back every memory of the batch that is still as the batch left it, with the
    status it had before; report the ones changed since, and leave them alone.

    Undone once: a second undo is refused (409), so nobody undoes someone's later fix. It
    changes other people's memories, so it says why, as the batch did.
    """
    reason = reason.strip()
    refuse_unheld_change(actor.agent, what="undoing a batch deletion")
    refuse_without_reason(reason, why="these memories come back")
    now = timezone.now()
    with transaction.atomic():
        locked = RetractionBatch.objects.select_for_update().get(pk=batch.pk)
        refuse_undone_twice(locked.undone_at)
        report = UndoReport(batch=locked)
        items = locked.items.select_related("memory").order_by("memory__subject_id", "memory_id")
        refuse_unless_all_own(
            actor=actor,
            writer_ids=[item.memory.agent_id for item in items],
            what="Undoing this batch deletion",
        )
        why = undo_words(locked.pk, reason)
        # The batch's deletions closed conflicts at their moments; a conflict between two of
        # its memories closed at the first's, so each restore looks for all of them.
        undoing = {item.memory.status_changed_at for item in items if item.memory.status_changed_at}
        for item in items:
            memory = lock_slot(item.memory)
            if not left_as_batch_left_it(
                status=memory.status, version=memory.version, version_after=item.version_after
            ):
                report.left_alone.append(memory)
                continue
            restored = move_memory(
                memory=memory,
                actor=actor,
                move=MemoryMove.RESTORE,
                status=item.status_before,
                reason=why,
                undoing=undoing,
            )
            report.restored.append(restored)
        # A receiver that mirrors memories dropped these on memory.retracted: it is told
        # they are back as it is told of any memory written, with what they are now.
        emit_memories(
            webhooks.Event.MEMORY_WRITTEN,
            [memory.pk for memory in report.restored],
            extra={"outcome": webhooks.RESTORED},
        )
        locked.undone_by = actor.label
        locked.undone_at = now
        save_tracked(locked, actor=actor, reason=why, update_fields=["undone_by", "undone_at"])
    return report
