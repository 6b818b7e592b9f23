"""Erasure, the right to be forgotten: every statement, fact and excerpt about a subject
goes, from the live rows and from their history, and a skeleton of what happened stays."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone

from ledger import access
from ledger.actions import vectors
from ledger.actions._reasons import needs_reason
from ledger.actions._tracking import save_tracked
from ledger.actions.slots import close_conflict
from ledger.actions.webhooks import emit, scrub_subject
from ledger.actors import Actor
from ledger.models import (
    Conflict,
    Erasure,
    ErasureRequest,
    IdempotencyRecord,
    JournalEntry,
    LedgerEntry,
    Memory,
    QueueNote,
    QueueWork,
    Recall,
    RecallItem,
    RetractionBatch,
    Run,
    RunNote,
    Snapshot,
    Source,
    Subject,
    WriteDecision,
)
from ledger.models.audit import MAC_FIELD
from ledger.models.erasable import (
    ERASABLE,
    ERASED_REASON,
    REASON_REMOVED,
    blank_value,
    sources_about,
)
from ledger.models.history import stamp_mac
from ledger.rules import webhooks
from ledger.rules.people import checked_request
from ledger.rules.refusals import Refusal

# History rows rewritten per statement.
HISTORY_BATCH = 500


def erase_subject(
    *, subject: Subject, actor: Actor, pause: bool = False, requested_by: str = ""
) -> Erasure:
    """Remove every statement, fact and excerpt about ``subject``, live and in history.

    What is left is a skeleton: rows with their dates, statuses and actors, and one
    ``Erasure`` row saying it happened, when, who asked, who carried it out and how many
    rows of each kind were blanked. The subject's ``ref`` (an opaque account id) and its
    owner stay so the person can still sign in and see that the erasure happened; its
    display name is personal and goes.

    ``requested_by`` is who asked and how, in the words of staff carrying it out for
    someone (the person by phone, say), who must give it; the person erasing for themselves
    asked, whatever it says.
    """
    if actor.user is not None and access.erasure_needs_approval(actor.user, subject):
        # Support files a request instead (``actions.erasure_requests``): an admin erases.
        raise Refusal(
            "erasure_needs_admin",
            "Support's erasure of someone takes effect when an admin approves it: file an "
            "erasure request. Nothing was erased.",
            403,
        )
    if actor.user is not None and access.acts_for_person(actor.user, subject):
        requested_by = actor.label
    else:
        requested_by = checked_request(requested_by, required=needs_reason(actor, subject))
    now = timezone.now()
    with transaction.atomic():
        # Locked first: the write gate locks the same row, so no write can slip in between.
        locked = Subject.objects.select_for_update().get(pk=subject.pk)
        memories = list(Memory.objects.select_for_update().filter(subject=locked))
        entries = list(LedgerEntry.objects.select_for_update().filter(subject=locked))
        source_ids = (
            Source.objects.filter(sources_about([locked.pk]))
            .values_list("pk", flat=True)
            .distinct()
        )
        sources = list(Source.objects.select_for_update().filter(pk__in=list(source_ids)))
        journal = list(
            JournalEntry.objects.select_for_update(of=("self",)).filter(run__subject=locked)
        )
        notes = list(RunNote.objects.select_for_update(of=("self",)).filter(run__subject=locked))
        conflicts = list(Conflict.objects.select_for_update().filter(subject=locked))
        runs = list(Run.objects.select_for_update(of=("self",)).filter(subject=locked))
        batches = list(
            RetractionBatch.objects.select_for_update().filter(
                ERASABLE[RetractionBatch].reach([locked.pk])
            )
        )
        work = list(QueueWork.objects.select_for_update(of=("self",)).about([locked.pk]))

        for memory in memories:
            fields = _blank(memory)
            if memory.status != Memory.Status.ERASED:
                memory.status = Memory.Status.ERASED
                memory.status_changed_at = now
                fields += ["status", "status_changed_at"]
            save_tracked(memory, actor=actor, reason=ERASED_REASON, update_fields=fields)
        for entry in entries:
            fields = _blank(entry)
            entry.status = LedgerEntry.Status.ERASED
            save_tracked(
                entry, actor=actor, reason=ERASED_REASON, update_fields=[*fields, "status"]
            )
        for conflict in conflicts:
            save_tracked(
                conflict, actor=actor, reason=ERASED_REASON, update_fields=_blank(conflict)
            )
            # Nothing is left to disagree about; with the keys blank, open ones would also
            # share one slot.
            if conflict.status == Conflict.Status.OPEN:
                close_conflict(conflict, actor=actor, reason=ERASED_REASON, now=now)
        # A batch may also have taken memories about others: it keeps its count, who and
        # when for them, and loses its reason and selection, which may quote this person.
        for row in [*sources, *journal, *notes, *runs, *batches, *work]:
            save_tracked(row, actor=actor, reason=ERASED_REASON, update_fields=_blank(row))
        # Support's internal notes on the subject's queue items may quote the person.
        QueueNote.objects.filter(work__in=work).delete()
        _overtake_requests(locked, actor=actor, now=now)

        fields = _blank(locked)
        if pause:
            locked.memory_paused = True
            fields.append("memory_paused")
        save_tracked(locked, actor=actor, reason=ERASED_REASON, update_fields=fields)

        # History rows are not themselves tracked, and erasure is the one change that must
        # reach into them: a raw update is right here (and only here). Every earlier version
        # loses its text and its free-text reason; dates, statuses and actors stay.
        # Only rows dated at or before ``erased_at``, which the verifier excuses: a blanked
        # row dated after every erasure of its subject was blanked by hand. Taken here, last,
        # it is later than every version written before this update, this erasure's own too.
        erased_at = timezone.now()
        history_rows = sum(
            _blank_history(
                model, erasable.reach([locked.pk]) & Q(history_date__lte=erased_at), erasable.blank
            )
            for model, erasable in ERASABLE.items()
        )

        # Recalls and snapshots keep no history of their own: blank the copies they hold.
        recalls = Recall.objects.filter(subject=locked).update(block="", goal="")
        # The goal's words each served memory contained, and the memories' vectors.
        RecallItem.objects.filter(subject=locked).update(matched="")
        vectors.forget(Memory.objects.filter(subject=locked).values("pk"))
        snapshots = Snapshot.objects.filter(run__subject=locked).update(
            document={}, pinned=[], narrative="", problems=[]
        )
        # The gate's decisions keep no history; their reasons quote the key and statement.
        # The outcome and its code (a word from a fixed list) stay.
        decisions = WriteDecision.objects.filter(subject=locked).update(reason=REASON_REMOVED)
        # Stored API responses repeat the statements; a retry after an erasure writes anew.
        # Those filed under a run before it had a subject are found by the run, and those
        # naming several subjects (a batch retraction) by any of them.
        answers = IdempotencyRecord.objects.filter(
            Q(subject=locked) | Q(run__subject=locked) | Q(subjects=locked)
        ).values("pk")
        # Counted alone: the delete's total also counts the rows linking them to subjects.
        _, deleted = IdempotencyRecord.objects.filter(pk__in=answers).delete()
        stored_responses = deleted.get(IdempotencyRecord._meta.label, 0)

        # Earlier events about the subject quote its statements: sent or waiting, each keeps
        # its id, type and time, and loses its payload.
        scrub_subject(locked.pk)
        erasure = Erasure.objects.create(
            subject=locked,
            erased_by=actor.label,
            erased_by_role=actor.role,
            requested_by=requested_by,
            erased_at=erased_at,
            memories=len(memories),
            ledger_entries=len(entries),
            sources=len(sources),
            journal_entries=len(journal),
            run_notes=len(notes),
            recalls=recalls,
            snapshots=snapshots,
            history_rows=history_rows,
            stored_responses=stored_responses,
            conflicts=len(conflicts),
            write_decisions=decisions,
        )
        # Filed under no subject: it holds nothing personal, so no later erasure scrubs it.
        emit(webhooks.Event.SUBJECT_ERASED, webhooks.erasure_payload(erasure, locked.ref))
        return erasure


def _overtake_requests(subject: Subject, *, actor: Actor, now: datetime) -> None:
    """A request still waiting for an admin has nothing left to decide once the subject is
    erased by another route (the person, an admin directly): it closes, saying so. An
    approval marks its own request approved before it erases, so it is not among these."""
    for request in ErasureRequest.objects.select_for_update().filter(subject=subject).waiting():
        request.decision = ErasureRequest.Decision.OVERTAKEN
        request.decided_by = actor.label
        request.decided_at = now
        save_tracked(
            request,
            actor=actor,
            reason="Erased before an admin decided.",
            update_fields=["decision", "decided_by", "decided_at"],
        )


def _blank(row: models.Model) -> list[str]:
    """Blank what erasure removes from a live row; the fields to save."""
    blank = ERASABLE[type(row)].blank
    for field, value in blank.items():
        setattr(row, field, blank_value(value, row.pk))
    return list(blank)


def _blank_history(model: type[models.Model], where: Q, blank: dict[str, Any]) -> int:
    """Blank ``blank`` in every history row of ``model`` matching ``where``; how many.

    Each row gets the MAC of what it holds afterwards, made here (the application's word
    for the rewritten row; ``ledger.models.audit``), so it is written row by row in bulk
    rather than as one ``UPDATE`` the database could compute alone."""
    rows = list(model.history.filter(where))  # type: ignore[attr-defined]
    pk = model._meta.pk.attname
    for row in rows:
        for name, value in blank.items():
            setattr(row, name, blank_value(value, getattr(row, pk)))
        if row.history_change_reason != ERASED_REASON:
            row.history_change_reason = REASON_REMOVED
        stamp_mac(row)
    history = model.history.model  # type: ignore[attr-defined]
    fields = [*blank, "history_change_reason", MAC_FIELD]
    history._default_manager.bulk_update(rows, fields, batch_size=HISTORY_BATCH)
    return len(rows)
