"""What erasure blanks in each tracked model, and the words it leaves.

The one list: ``ledger.actions.erasure`` blanks it, and the audit chain's verifier
(``ledger.reads.audit_chain``) accepts a history row whose sealed content differs only in
exactly this shape.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import models
from django.db.models import CharField, Q, Value
from django.db.models.expressions import Combinable
from django.db.models.functions import Cast, Concat

from ledger.models.ledger_entries import LedgerEntry
from ledger.models.memories import Conflict, Memory, Source, Subject
from ledger.models.retractions import RetractionBatch, RetractionItem
from ledger.models.runs import JournalEntry, Run, RunNote
from ledger.models.work import QueueWork, work_about

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


def sources_about(subjects: Any) -> Q:
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


def _runs(subjects: Any) -> Q:
    # By the run's id, not its versions' subject: a run started before it knew its subject
    # has versions without one, and they carry the ref too.
    return Q(id__in=Run.objects.filter(subject__in=subjects).values("pk"))


def _batches(subjects: Any) -> Q:
    # A batch that took any memory about the subjects: its reason and selection may quote
    # the person (a message's ref, why it was wrong), whoever else it also took from.
    return Q(id__in=RetractionItem.objects.filter(memory__subject__in=subjects).values("batch_id"))


# The one list of what erasure removes: ``erase_subject`` blanks it, and the audit chain's
# verifier (``ledger.reads.audit_chain``) accepts a history row whose sealed content differs
# only in exactly this shape, and only if the row is dated at or before an erasure of a
# subject that reaches it.
ERASABLE: dict[type[models.Model], Erasable] = {
    # A slot's key is the agent's name for it, and names can carry what they are about.
    Memory: Erasable({"statement": "", "normalized": "", "key": ""}, lambda s: Q(subject_id__in=s)),
    LedgerEntry: Erasable({"fact": "", "key": ""}, lambda s: Q(subject_id__in=s)),
    Conflict: Erasable({"key": ""}, lambda s: Q(subject_id__in=s)),
    Source: Erasable(
        {"excerpt": "", "ref": ERASED_REF},
        lambda s: Q(id__in=Source.objects.filter(sources_about(s)).values("pk")),
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
    # An agent names its runs, and a name can say whom or what it is about
    # ("run_dana_refund"); the ref must stay unique, so it becomes the run's own id.
    Run: Erasable({"ref": ERASED_KEY}, _runs, depth=2),
    RetractionBatch: Erasable({"selection": {}, "reason": REASON_REMOVED}, _batches, depth=2),
    # Support's ticket reference is free text: it may name the person. By the live work
    # row: a journal entry's run may have learnt its subject after the work began.
    QueueWork: Erasable(
        {"ticket": ""},
        lambda s: Q(id__in=QueueWork.objects.filter(work_about(s)).values("pk")),
        depth=2,
    ),
}
