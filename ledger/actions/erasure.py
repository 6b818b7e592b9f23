"""Erasure, the right to be forgotten: every statement, fact and excerpt about a subject
goes, from the live rows and from their history, and a skeleton of what happened stays."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import models, transaction
from django.db.models import CharField, Q, Value
from django.db.models.expressions import Combinable
from django.db.models.functions import Cast, Concat
from django.utils import timezone

from ledger import access, policy, webhooks
from ledger.actions._tracking import save_tracked
from ledger.actions.slots import close_conflict
from ledger.actions.webhooks import emit, scrub_subject
from ledger.actors import Actor
from ledger.models import (
    Conflict,
    Erasure,
    IdempotencyRecord,
    JournalEntry,
    LedgerEntry,
    Memory,
    Recall,
    Run,
    RunNote,
    Snapshot,
    Source,
    Subject,
    WriteDecision,
)

ERASED_REASON = "Erased at the person's request."
# What a history row's free-text reason becomes: a person's reason may quote the content.
REASON_REMOVED = "Reason removed by an erasure."
# Source.ref may not be empty; an erased source keeps only this placeholder.
ERASED_REF = "erased"
# Every history row an erasure reached carries one of these reasons afterwards.
ERASURE_REASONS = (ERASED_REASON, REASON_REMOVED)


@dataclass(frozen=True)
class ErasedKey:
    """The blank for a key that must stay unique (a journal entry's retry key, a run
    note's key): the row's own id in words that no client can send, since those keys take
    neither spaces nor brackets. The verifier derives it from the row's id in the same way."""

    def of(self, pk: Any) -> str:
        return f"(erased {pk})"

    def expression(self) -> Combinable:
        return Concat(Value("(erased "), Cast("id", CharField()), Value(")"))


ERASED_KEY = ErasedKey()


def blank_value(value: Any, pk: Any) -> Any:
    """What erasure leaves in a field of the row ``pk``: the mapping's value, or its key."""
    # A copy: the mapping's empty dicts must never be shared with (and changed by) a row.
    return value.of(pk) if isinstance(value, ErasedKey) else copy.deepcopy(value)


@dataclass(frozen=True)
class Erasable:
    """What an erasure blanks in one tracked model (live rows and history alike), and which
    of its history rows it reaches for some subjects (a list of ids or a subquery)."""

    blank: dict[str, Any]
    reach: Callable[[Any], Q]
    # How many queries down ``reach`` puts the subjects, counted from the history row's:
    # the verifier's subjects are correlated with the row's date, and an outer reference
    # must climb exactly that far (one level too few or too many is a FieldError).
    depth: int = 1


def _sources_about(subjects: Any) -> Q:
    """A memory's evidence, a ledger entry's sources, and what a run about them received."""
    return (
        Q(memory__subject__in=subjects)
        | Q(ledger_entries__subject__in=subjects)
        | Q(promotions__subject__in=subjects)
        | Q(memory__isnull=True, run__subject__in=subjects)
    )


def _by_run(subjects: Any) -> Q:
    # By run, not by the rows alive now: a note deleted earlier still has its versions.
    return Q(run_id__in=Run.objects.filter(subject__in=subjects).values("pk"))


# The one list of what erasure removes: ``erase_subject`` blanks it, and the audit chain's
# verifier (``ledger.audit_chain``) accepts a history row whose sealed content differs
# only in exactly this shape, and only if the row is dated at or before an erasure of a
# subject that reaches it.
ERASABLE: dict[type[models.Model], Erasable] = {
    # A slot's key is the agent's name for it, and names can carry what they are about.
    Memory: Erasable({"statement": "", "normalized": "", "key": ""}, lambda s: Q(subject_id__in=s)),
    LedgerEntry: Erasable({"fact": "", "key": ""}, lambda s: Q(subject_id__in=s)),
    Conflict: Erasable({"key": ""}, lambda s: Q(subject_id__in=s)),
    Source: Erasable(
        {"excerpt": "", "ref": ERASED_REF},
        lambda s: Q(id__in=Source.objects.filter(_sources_about(s)).values("pk")),
        depth=2,
    ),
    JournalEntry: Erasable(
        {
            "intent": {},
            "effect": None,
            "verification": None,
            "action": "",
            "idempotency_key": ERASED_KEY,
        },
        _by_run,
        depth=2,
    ),
    RunNote: Erasable({"value": "", "key": ERASED_KEY}, _by_run, depth=2),
    Subject: Erasable({"display_name": ""}, lambda s: Q(id__in=s)),
}


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
    someone (the person by phone, say); the person erasing for themselves asked, whatever
    it says.
    """
    if actor.user is not None and access.acts_for_person(actor.user, subject):
        requested_by = actor.label
    else:
        requested_by = policy.checked_request(requested_by)
    now = timezone.now()
    with transaction.atomic():
        # Locked first: the write gate locks the same row, so no write can slip in between.
        locked = Subject.objects.select_for_update().get(pk=subject.pk)
        memories = list(Memory.objects.select_for_update().filter(subject=locked))
        entries = list(LedgerEntry.objects.select_for_update().filter(subject=locked))
        source_ids = (
            Source.objects.filter(_sources_about([locked.pk]))
            .values_list("pk", flat=True)
            .distinct()
        )
        sources = list(Source.objects.select_for_update().filter(pk__in=list(source_ids)))
        journal = list(
            JournalEntry.objects.select_for_update(of=("self",)).filter(run__subject=locked)
        )
        notes = list(RunNote.objects.select_for_update(of=("self",)).filter(run__subject=locked))
        conflicts = list(Conflict.objects.select_for_update().filter(subject=locked))

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
        for row in [*sources, *journal, *notes]:
            save_tracked(row, actor=actor, reason=ERASED_REASON, update_fields=_blank(row))

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


def _blank(row: models.Model) -> list[str]:
    """Blank what erasure removes from a live row; the fields to save."""
    blank = ERASABLE[type(row)].blank
    for field, value in blank.items():
        setattr(row, field, blank_value(value, row.pk))
    return list(blank)


def _blank_history(model: type[models.Model], where: Q, blank: dict[str, Any]) -> int:
    """Blank ``blank`` in every history row of ``model`` matching ``where``; how many."""
    rows = model.history.filter(where)  # type: ignore[attr-defined]
    values = {
        field: value.expression() if isinstance(value, ErasedKey) else value
        for field, value in blank.items()
    }
    count: int = rows.update(**values)
    rows.exclude(history_change_reason=ERASED_REASON).update(history_change_reason=REASON_REMOVED)
    return count
