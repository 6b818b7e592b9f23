"""Storing compaction snapshots: checked, numbered, and kept whether accepted or rejected."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from ledger.actions.runs import RunOfAnotherAgent, start_run
from ledger.actions.webhooks import emit
from ledger.models import Agent, LedgerEntry, Run, Snapshot, Subject
from ledger.rules import webhooks
from ledger.rules.refusals import Refusal
from ledger.rules.snapshots.checks import check_document


@dataclass(frozen=True)
class SnapshotInput:
    """A snapshot request the API has already found well-formed."""

    document: dict[str, Any]
    tokens_before: int
    tokens_after: int
    pinned: list[str] = field(default_factory=list)
    budget: dict[str, int] | None = None
    narrative: str = ""
    generation: int | None = None
    subject_ref: str | None = None


def store_snapshot(*, run_ref: str, agent: Agent, data: SnapshotInput) -> Snapshot:
    """Check the document and store it as accepted or rejected, under the next generation.

    The run row is locked while the generation is chosen, so concurrent posts for one run
    queue up and each takes its own number; the unique constraint backs that up.
    """
    with transaction.atomic():
        subject = _subject(data.subject_ref)
        try:
            run = start_run(ref=run_ref, agent=agent, subject=subject)
        except RunOfAnotherAgent:
            # Another agent's run is not this agent's to write into, nor to learn about.
            raise Refusal("not_found", "No run with this reference.", status=404) from None
        run = Run.objects.select_for_update().get(pk=run.pk)
        if subject is not None and run.subject_id != subject.pk:
            raise Refusal(
                "subject_mismatch",
                f"Run '{run.ref}' is about another subject; a run keeps one subject.",
                status=409,
            )

        generation = _generation(run, data.generation)
        previous = (
            run.snapshots.filter(status=Snapshot.Status.ACCEPTED, generation__lt=generation)
            .order_by("-generation")
            .first()
        )
        in_force = LedgerEntry.objects.commitments_to_carry(run.subject)
        problems = check_document(
            data.document,
            pinned=data.pinned,
            in_force=in_force,
            previous=previous.document if previous else None,
            previous_generation=previous.generation if previous else None,
        )
        snapshot = Snapshot(
            run=run,
            agent=agent,
            generation=generation,
            status=Snapshot.Status.REJECTED if problems else Snapshot.Status.ACCEPTED,
            document=data.document,
            pinned=data.pinned,
            tokens_before=data.tokens_before,
            tokens_after=data.tokens_after,
            budget=data.budget,
            narrative=data.narrative,
            problems=[problem.as_dict() for problem in problems],
            created_at=timezone.now(),
        )
        snapshot.save()
        if problems:
            emit(
                webhooks.Event.SNAPSHOT_REJECTED,
                webhooks.snapshot_payload(snapshot),
                subject_id=run.subject_id,
                run_id=run.pk,
            )
    return snapshot


def _subject(ref: str | None) -> Subject | None:
    if ref is None:
        return None
    subject: Subject | None = Subject.objects.filter(ref=ref).first()
    if subject is None:
        raise Refusal("unknown_subject", f"No subject '{ref}'.", status=400)
    return subject


def _generation(run: Run, requested: int | None) -> int:
    """The requested generation if it is free, else the next after the highest stored."""
    if requested is None:
        highest = run.snapshots.aggregate(highest=Max("generation"))["highest"] or 0
        return highest + 1
    if run.snapshots.filter(generation=requested).exists():
        raise Refusal(
            "generation_exists",
            f"Run '{run.ref}' already has generation {requested}; generations are never "
            "replaced. Omit generation to take the next one.",
            status=409,
        )
    return requested
