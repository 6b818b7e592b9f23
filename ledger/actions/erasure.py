"""Erasure, the right to be forgotten: every statement, fact and excerpt about a subject
goes, from the live rows and from their history, and a skeleton of what happened stays."""

from __future__ import annotations

from typing import Any

from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone

from ledger.actions._tracking import save_tracked
from ledger.actors import Actor
from ledger.models import (
    Erasure,
    IdempotencyRecord,
    JournalEntry,
    LedgerEntry,
    Memory,
    Recall,
    RunNote,
    Snapshot,
    Source,
    Subject,
)

ERASED_REASON = "Erased at the person's request."
# What a history row's free-text reason becomes: a person's reason may quote the content.
REASON_REMOVED = "Reason removed by an erasure."
# Source.ref may not be empty; an erased source keeps only this placeholder.
ERASED_REF = "erased"


def erase_subject(*, subject: Subject, actor: Actor, pause: bool = False) -> Erasure:
    """Remove every statement, fact and excerpt about ``subject``, live and in history.

    What is left is a skeleton: rows with their dates, statuses and actors, and one
    ``Erasure`` row saying it happened, when, by whom and how much. The subject's ``ref``
    (an opaque account id) and its owner stay so the person can still sign in and see that
    the erasure happened; its display name is personal and goes.
    """
    now = timezone.now()
    with transaction.atomic():
        # Locked first: the write gate locks the same row, so no write can slip in between.
        locked = Subject.objects.select_for_update().get(pk=subject.pk)
        memories = list(Memory.objects.select_for_update().filter(subject=locked))
        entries = list(LedgerEntry.objects.select_for_update().filter(subject=locked))
        source_ids = (
            Source.objects.filter(
                Q(memory__subject=locked)
                | Q(ledger_entries__subject=locked)
                | Q(promotions__subject=locked)
                | Q(memory__isnull=True, run__subject=locked)
            )
            .values_list("pk", flat=True)
            .distinct()
        )
        sources = list(Source.objects.select_for_update().filter(pk__in=list(source_ids)))
        journal = list(
            JournalEntry.objects.select_for_update(of=("self",)).filter(run__subject=locked)
        )
        notes = list(RunNote.objects.select_for_update(of=("self",)).filter(run__subject=locked))

        for memory in memories:
            memory.statement = ""
            memory.normalized = ""
            fields = ["statement", "normalized"]
            if memory.status != Memory.Status.ERASED:
                memory.status = Memory.Status.ERASED
                memory.status_changed_at = now
                fields += ["status", "status_changed_at"]
            save_tracked(memory, actor=actor, reason=ERASED_REASON, update_fields=fields)
        for entry in entries:
            entry.fact = ""
            entry.status = LedgerEntry.Status.ERASED
            save_tracked(entry, actor=actor, reason=ERASED_REASON, update_fields=["fact", "status"])
        for source in sources:
            source.excerpt = ""
            source.ref = ERASED_REF
            save_tracked(
                source, actor=actor, reason=ERASED_REASON, update_fields=["excerpt", "ref"]
            )
        for item in journal:
            item.intent = {}
            item.effect = None
            item.verification = None
            save_tracked(
                item,
                actor=actor,
                reason=ERASED_REASON,
                update_fields=["intent", "effect", "verification"],
            )
        for note in notes:
            note.value = ""
            save_tracked(note, actor=actor, reason=ERASED_REASON, update_fields=["value"])

        locked.display_name = ""
        fields = ["display_name"]
        if pause:
            locked.memory_paused = True
            fields.append("memory_paused")
        save_tracked(locked, actor=actor, reason=ERASED_REASON, update_fields=fields)

        # History rows are not themselves tracked, and erasure is the one change that must
        # reach into them: a raw update is right here (and only here). Every earlier version
        # loses its text and its free-text reason; dates, statuses and actors stay.
        _blank_history(Memory, {"subject_id": locked.pk}, statement="", normalized="")
        _blank_history(LedgerEntry, {"subject_id": locked.pk}, fact="")
        _blank_history(Source, {"id__in": [s.pk for s in sources]}, excerpt="", ref=ERASED_REF)
        # By run, not by the rows alive now: a note deleted earlier still has its versions.
        runs = list(locked.runs.values_list("pk", flat=True))
        _blank_history(
            JournalEntry,
            {"run_id__in": runs},
            intent={},
            effect=None,
            verification=None,
        )
        _blank_history(RunNote, {"run_id__in": runs}, value="")
        Subject.history.filter(id=locked.pk).update(display_name="")

        # Recalls and snapshots keep no history of their own: blank the copies they hold.
        Recall.objects.filter(subject=locked).update(block="", goal="")
        Snapshot.objects.filter(run__subject=locked).update(
            document={}, pinned=[], narrative="", problems=[]
        )
        # Stored API responses repeat the statements; a retry after an erasure writes anew.
        IdempotencyRecord.objects.filter(subject=locked).delete()

        return Erasure.objects.create(
            subject=locked,
            erased_by=actor.label,
            erased_at=now,
            memories=len(memories),
            ledger_entries=len(entries),
            sources=len(sources),
        )


def _blank_history(model: type[models.Model], where: dict[str, Any], **blank: Any) -> None:
    rows = model.history.filter(**where)  # type: ignore[attr-defined]
    rows.update(**blank)
    rows.exclude(history_change_reason=ERASED_REASON).update(history_change_reason=REASON_REMOVED)
