"""Writes to the ledger of durable facts and commitments.

An entry's fact is kept verbatim. Immutable entries are never edited: they are
superseded by a successor, or nothing. A proposal becomes a commitment only by
promotion with the source of the person's agreement. An agent changes only the entries it
recorded, unless its key or the write policy lets it change another's
(``refuse_unless_own``).
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from ledger.actions._ownership import refuse_unless_own
from ledger.actions._tracking import save_tracked
from ledger.actions.slots import open_commitment_conflicts, settle_possible_conflicts
from ledger.actions.sources import SourceInput, add_source, run_for
from ledger.actors import Actor
from ledger.models import Agent, LedgerEntry, Source, Subject
from ledger.rules.holds import refuse_unheld_change, refuse_unsafe_text, refuse_untrusted_statement
from ledger.rules.ledger_entries import (
    LedgerMove,
    refuse_if_immutable,
    refuse_if_stale,
    refuse_ledger_move,
    refuse_unagreed_promotion,
    refuse_unless_proposal,
    refuse_unnamed_establishment,
)
from ledger.rules.refusals import Refusal


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
    # The ledger has no pending state: a restricted agent's entry is refused, not held.
    refuse_unheld_change(agent, what="a ledger entry")
    if kind == LedgerEntry.Kind.ESTABLISHED:
        refuse_untrusted_statement(agent, source_kind=source.kind, what="An established fact")
    refuse_unnamed_establishment(kind=kind, source_kind=source.kind, source_ref=source.ref)
    refuse_unsafe_text(fact, what="A ledger fact")
    actor = Actor.for_agent(agent)
    now = timezone.now()
    with transaction.atomic():
        entry = LedgerEntry(
            subject=subject,
            run=run_for(run_ref, agent=agent, subject=subject),
            agent=agent,
            key=key,
            fact=fact,
            kind=kind,
            source=add_source(data=source, agent=agent, subject=subject, now=now, actor=actor),
            immutable=immutable,
            expires_at=expires_at,
            recorded_at=now,
        )
        save_tracked(entry, actor=actor, reason=f"Recorded as {kind}.")
        open_commitment_conflicts(entry=entry, actor=actor, now=now)
    return entry


ENTRY = "This ledger entry"


def _locked(entry: LedgerEntry) -> LedgerEntry:
    return LedgerEntry.objects.select_for_update().get(pk=entry.pk)


def promote_ledger_entry(
    *, entry: LedgerEntry, agent: Agent, source: SourceInput, reason: str = ""
) -> LedgerEntry:
    """A proposal the person agreed to becomes a commitment; the agreement is its evidence."""
    refuse_unheld_change(agent, what="a ledger entry")
    refuse_untrusted_statement(agent, source_kind=source.kind, what="The person's agreement")
    actor = Actor.for_agent(agent)
    now = timezone.now()
    with transaction.atomic():
        locked = _locked(entry)
        refuse_unless_own(actor=actor, writer_id=locked.agent_id, what=ENTRY)
        refuse_unless_proposal(locked.kind)
        refuse_ledger_move(locked.status, LedgerMove.PROMOTE)
        refuse_if_stale(locked, now, "promoted")
        refuse_unagreed_promotion(source.kind)
        locked.promotion_source = add_source(
            data=source, agent=agent, subject=locked.subject, now=now, actor=actor
        )
        locked.kind = LedgerEntry.Kind.COMMITMENT
        agreed_in = Source.Kind(source.kind).label
        why = f"Promoted from proposal to commitment: agreed in a {agreed_in} ({source.ref})."
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
        refuse_unless_own(actor=actor, writer_id=old.agent_id, what=ENTRY)
        refuse_ledger_move(old.status, LedgerMove.SUPERSEDE)
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
    refuse_unheld_change(agent, what="a ledger entry")
    if fact is not None:
        refuse_unsafe_text(fact, what="A ledger fact")
    actor = Actor.for_agent(agent)
    with transaction.atomic():
        locked = _locked(entry)
        refuse_unless_own(actor=actor, writer_id=locked.agent_id, what=ENTRY)
        refuse_if_immutable(locked, "edited")
        refuse_ledger_move(locked.status, LedgerMove.EDIT)
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
    refuse_unheld_change(agent, what="a ledger entry")
    actor = Actor.for_agent(agent)
    with transaction.atomic():
        locked = _locked(entry)
        refuse_unless_own(actor=actor, writer_id=locked.agent_id, what=ENTRY)
        refuse_if_immutable(locked, "withdrawn")
        refuse_ledger_move(locked.status, LedgerMove.WITHDRAW)
        locked.status = LedgerEntry.Status.WITHDRAWN
        save_tracked(
            locked,
            actor=actor,
            reason=f"Withdrawn: {reason}",
            update_fields=["status"],
            bump_version=True,
        )
        settle_possible_conflicts(subject=locked.subject, actor=actor)
    return locked
