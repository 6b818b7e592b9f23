"""Reverting a correction: an admin puts back the words a correction replaced.

A revert is a new memory, a copy of the one the correction replaced, that supersedes the
correction and names the memory whose words it puts back (``Memory.restores``). Nothing
is edited: the original stays superseded and unchanged for audit, and the correction is
superseded in turn. A revert is itself a correction of the slot, so it can be reverted the
same way, which puts the correction's words back. Every history row it writes says why.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from ledger import access
from ledger.actions._tracking import save_tracked
from ledger.actions.lifecycle import announce_change, supersede_memory
from ledger.actions.slots import lock_slot
from ledger.actors import Actor
from ledger.models import Memory, Policy, Source
from ledger.rules.gate import review_date_for, successor_expiry
from ledger.rules.memories import MemoryMove, refuse_revert, refuse_revert_to_live_words
from ledger.rules.reasons import refuse_without_reason
from ledger.rules.refusals import Refusal
from ledger.words import REVERT_OF

# The start of each history row's reason; the admin's own words follow.
REVERTED = "Reverted: "
EVIDENCE_COPIED = "Evidence copied for a revert: "


def revert_correction(*, memory: Memory, actor: Actor, reason: str) -> Memory:
    """Supersede ``memory`` (a correction or a revert, still the current version) with a
    copy of the memory it replaced, and return the copy.

    The copy is that memory as it was: the same words, kind, slot, basis and way of being
    stated, and copies of its sources, so its trace still leads to the message the words
    came from. It is written now, by ``actor``: it belongs to no agent run, gets the life
    the policy gives a new memory, and waits for confirmation again if the words were a
    guess waiting for it. The person's "don't use it" on the correction stays.
    """
    if not access.may_revert(actor):
        raise Refusal("not_an_admin", "Only an admin can revert a correction.", 403)
    refuse_without_reason(reason, why="this correction is reverted")
    reason = reason.strip()
    now = timezone.now()
    with transaction.atomic():
        replacement = lock_slot(memory)
        replaced = Memory.objects.filter(superseded_by=replacement).first()
        refuse_revert(
            is_correction=Memory.objects.corrections().filter(pk=replacement.pk).exists(),
            status=replacement.status,
            restored_status=replaced.status if replaced else "",
        )
        assert replaced is not None  # a correction always replaced something
        live_copy = (
            Memory.objects.for_subject(replacement.subject)
            .live()
            .filter(normalized=replaced.normalized)
            .exclude(pk=replacement.pk)
            .values_list("pk", flat=True)
            .first()
        )
        refuse_revert_to_live_words(str(live_copy) if live_copy else None)
        current = Policy.current()
        pending = _status_when_replaced(replaced) == Memory.Status.PENDING
        copy = Memory(
            subject=replacement.subject,
            kind=replaced.kind,
            key=replaced.key,
            statement=replaced.statement,
            normalized=replaced.normalized,
            basis=replaced.basis,
            stated_by=replaced.stated_by,
            status=Memory.Status.PENDING if pending else Memory.Status.ACTIVE,
            written_at=now,
            confirmed_at=None if pending else now,
            expires_at=successor_expiry(
                current,
                kind=replaced.kind,
                basis=replaced.basis,
                replaced_expires_at=replaced.expires_at,
                now=now,
            ),
            review_at=review_date_for(current, kind=replaced.kind, now=now),
            supersedes=replacement,
            restores=replaced,
            policy_version=current.version,
            withheld=replacement.withheld,
        )
        supersede_memory(
            old=replacement,
            new=copy,
            actor=actor,
            old_reason=f"{REVERTED}{reason}",
            new_reason=f"{REVERT_OF}{reason}",
            now=now,
        )
        for source in replaced.sources.order_by("received_at", "id"):
            evidence = Source(
                kind=source.kind,
                ref=source.ref,
                run_id=source.run_id,
                turn=source.turn,
                excerpt=source.excerpt,
                # When the message was received, not when it was copied: the trace says
                # when the person said it.
                received_at=source.received_at,
                memory=copy,
            )
            save_tracked(evidence, actor=actor, reason=f"{EVIDENCE_COPIED}{reason}")
        # Both rows changed: a mirror replaces each by its id and drops the superseded one.
        announce_change(MemoryMove.REVERT, [copy.pk, replacement.pk])
    memory.refresh_from_db()
    return copy


def _status_when_replaced(memory: Memory) -> str:
    """The status ``memory`` had just before a correction superseded it, from its history."""
    rows = memory.history.exclude(status=Memory.Status.SUPERSEDED)
    status = rows.order_by("-history_date", "-history_id").values_list("status", flat=True).first()
    return str(status or Memory.Status.ACTIVE)
