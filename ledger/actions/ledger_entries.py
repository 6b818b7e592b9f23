"""Writes to the ledger of durable facts and commitments.

An entry's fact is kept verbatim. Immutable entries are never edited: they are
superseded by a successor, or nothing. A proposal becomes a commitment only by
promotion with the source of the person's agreement.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from ledger.actions.memories import SourceInput, _add_source_row, _run_for
from ledger.actions.tracking import save_tracked
from ledger.actors import Actor
from ledger.models import Agent, LedgerEntry, Source, Subject
from ledger.policy import Refusal

FACT_MAX = 2000
# Sources that name where a fact was verified. An operator's say-so is not evidence.
NAMED_SOURCE_KINDS = (Source.Kind.USER_MESSAGE, Source.Kind.TOOL_RESULT, Source.Kind.IMPORT)
# Only the person can agree to a proposal, so only their message can promote one.
AGREEMENT_SOURCE_KINDS = (Source.Kind.USER_MESSAGE,)


# How each kind must be read, wherever an entry is shown: to an agent or to a person.
KIND_LABELS = {
    LedgerEntry.Kind.ESTABLISHED: "Established: verified against the named source.",
    LedgerEntry.Kind.INTERPRETATION: "Interpretation: the agent's own inference, not verified.",
    LedgerEntry.Kind.PROPOSAL: "Proposal: not agreed. Do not act on it as if it were agreed.",
    LedgerEntry.Kind.COMMITMENT: "Commitment: agreed; a constraint on future actions.",
}


def effective_status(entry: LedgerEntry, now: datetime) -> str:
    """An active entry past its expiry is expired now, whether or not the sweep has run."""
    if entry.status == LedgerEntry.Status.ACTIVE and entry.expires_at and entry.expires_at <= now:
        return LedgerEntry.Status.EXPIRED
    return entry.status


def refuse_unnamed_establishment(*, kind: str, source: SourceInput) -> None:
    if kind != LedgerEntry.Kind.ESTABLISHED:
        return
    if source.kind not in NAMED_SOURCE_KINDS or not source.ref.strip():
        raise Refusal(
            "established_needs_named_source",
            "An established fact needs a named source: a message from the person, a tool "
            "result or an import, with its reference. Record it as an interpretation instead.",
        )


def refuse_if_not_current(entry: LedgerEntry, verb: str) -> None:
    if entry.status != LedgerEntry.Status.ACTIVE:
        raise Refusal(
            f"ledger_entry_{entry.status}",
            f"This entry is {entry.status}; only an active entry can be {verb}.",
            status=409,
        )


def refuse_if_immutable(entry: LedgerEntry, verb: str) -> None:
    if entry.immutable:
        raise Refusal(
            "ledger_entry_immutable",
            f"This entry is immutable and cannot be {verb}: supersede it with a new entry "
            f"(POST /api/v1/ledger/{entry.pk}/supersede).",
            status=409,
        )


def refuse_if_stale(entry: LedgerEntry, now: datetime, verb: str) -> None:
    if entry.expires_at is not None and entry.expires_at <= now:
        raise Refusal(
            "ledger_entry_expired",
            f"This entry stopped being true at {entry.expires_at.isoformat()}; "
            f"an expired entry cannot be {verb}. Supersede it with a current one.",
            status=409,
        )


def record_ledger_entry(
    *,
    subject: Subject,
    agent: Agent,
    fact: str,
    kind: str,
    source: SourceInput,
    run_ref: str | None = None,
    key: str = "",
    expires_at: datetime | None = None,
    immutable: bool = False,
) -> LedgerEntry:
    """Record one entry, verbatim, with its source."""
    refuse_unnamed_establishment(kind=kind, source=source)
    actor = Actor.for_agent(agent)
    now = timezone.now()
    with transaction.atomic():
        entry = LedgerEntry(
            subject=subject,
            run=_run_for(run_ref, agent=agent, subject=subject),
            agent=agent,
            key=key,
            fact=fact,
            kind=kind,
            source=_add_source_row(data=source, agent=agent, subject=subject, now=now, actor=actor),
            immutable=immutable,
            expires_at=expires_at,
            recorded_at=now,
        )
        save_tracked(entry, actor=actor, reason=f"Recorded as {kind}.")
    return entry


def _locked(entry: LedgerEntry) -> LedgerEntry:
    return LedgerEntry.objects.select_for_update().get(pk=entry.pk)


def promote_ledger_entry(
    *, entry: LedgerEntry, agent: Agent, source: SourceInput, reason: str = ""
) -> LedgerEntry:
    """A proposal the person agreed to becomes a commitment; the agreement is its evidence."""
    actor = Actor.for_agent(agent)
    now = timezone.now()
    with transaction.atomic():
        locked = _locked(entry)
        if locked.kind != LedgerEntry.Kind.PROPOSAL:
            raise Refusal(
                "not_a_proposal",
                f"Only a proposal can be promoted; this entry is a {locked.kind}.",
                status=409,
            )
        refuse_if_not_current(locked, "promoted")
        refuse_if_stale(locked, now, "promoted")
        if source.kind not in AGREEMENT_SOURCE_KINDS:
            raise Refusal(
                "agreement_needs_person",
                "A proposal becomes a commitment only with the person's agreement: give the "
                "source as their message (kind 'user_message').",
            )
        locked.promotion_source = _add_source_row(
            data=source, agent=agent, subject=locked.subject, now=now, actor=actor
        )
        locked.kind = LedgerEntry.Kind.COMMITMENT
        why = f"Promoted from proposal to commitment: agreed in {source.kind} {source.ref}."
        save_tracked(
            locked,
            actor=actor,
            reason=f"{why} {reason}".strip(),
            update_fields=["kind", "promotion_source"],
            bump_version=True,
        )
    return locked


def supersede_ledger_entry(
    *,
    entry: LedgerEntry,
    agent: Agent,
    fact: str,
    kind: str,
    source: SourceInput,
    reason: str,
    key: str | None = None,
    run_ref: str | None = None,
    expires_at: datetime | None = None,
    immutable: bool | None = None,
) -> LedgerEntry:
    """A successor replaces ``entry``, which stays readable, linked to it, unchanged."""
    actor = Actor.for_agent(agent)
    with transaction.atomic():
        old = _locked(entry)
        if old.status not in (LedgerEntry.Status.ACTIVE, LedgerEntry.Status.EXPIRED):
            raise Refusal(
                f"ledger_entry_{old.status}",
                f"This entry is {old.status}; only an active or expired entry can be superseded.",
                status=409,
            )
        if old.kind == LedgerEntry.Kind.PROPOSAL and kind == LedgerEntry.Kind.COMMITMENT:
            raise Refusal(
                "use_promote",
                "A proposal cannot become a commitment by supersession; it needs the person's "
                f"agreement: POST /api/v1/ledger/{old.pk}/promote with their message as source.",
                status=409,
            )
        new = record_ledger_entry(
            subject=old.subject,
            agent=agent,
            fact=fact,
            kind=kind,
            source=source,
            run_ref=run_ref,
            key=old.key if key is None else key,
            expires_at=expires_at,
            immutable=old.immutable if immutable is None else immutable,
        )
        new.supersedes = old
        save_tracked(
            new, actor=actor, reason=f"Supersedes {old.pk}: {reason}", update_fields=["supersedes"]
        )
        old.status = LedgerEntry.Status.SUPERSEDED
        save_tracked(
            old,
            actor=actor,
            reason=f"Superseded by {new.pk}: {reason}",
            update_fields=["status"],
            bump_version=True,
        )
    return new


def edit_ledger_entry(
    *,
    entry: LedgerEntry,
    agent: Agent,
    reason: str,
    fact: str | None = None,
    key: str | None = None,
    expires_at: datetime | None = None,
    clear_expiry: bool = False,
) -> LedgerEntry:
    """Change a mutable entry in place; history keeps every earlier version."""
    actor = Actor.for_agent(agent)
    with transaction.atomic():
        locked = _locked(entry)
        refuse_if_immutable(locked, "edited")
        refuse_if_not_current(locked, "edited")
        # Past its date it is no longer in force: extending it in place would revive it.
        refuse_if_stale(locked, timezone.now(), "edited")
        if fact is not None and locked.kind == LedgerEntry.Kind.ESTABLISHED:
            # Its source verified the old text, not a new one: a new fact needs its own source.
            raise Refusal(
                "use_supersede",
                "An established fact is changed by superseding it with its new source.",
                status=409,
            )
        changed = []
        if fact is not None:
            locked.fact = fact
            changed.append("fact")
        if key is not None:
            locked.key = key
            changed.append("key")
        if expires_at is not None or clear_expiry:
            locked.expires_at = expires_at
            changed.append("expires_at")
        save_tracked(
            locked,
            actor=actor,
            reason=f"Edited: {reason}",
            update_fields=changed,
            bump_version=True,
        )
    return locked


def withdraw_ledger_entry(*, entry: LedgerEntry, agent: Agent, reason: str) -> LedgerEntry:
    """Take a mutable entry out of force, with the reason; it stays readable as withdrawn."""
    actor = Actor.for_agent(agent)
    with transaction.atomic():
        locked = _locked(entry)
        refuse_if_immutable(locked, "withdrawn")
        if locked.status not in (LedgerEntry.Status.ACTIVE, LedgerEntry.Status.EXPIRED):
            raise Refusal(
                f"ledger_entry_{locked.status}",
                f"This entry is already {locked.status}.",
                status=409,
            )
        locked.status = LedgerEntry.Status.WITHDRAWN
        save_tracked(
            locked,
            actor=actor,
            reason=f"Withdrawn: {reason}",
            update_fields=["status"],
            bump_version=True,
        )
    return locked
