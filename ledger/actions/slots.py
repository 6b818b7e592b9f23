"""Keeping a slot honest: the locks every memory write takes, and the slot's conflict.

A slot is one subject + key. Two active memories in a slot that disagree are a conflict,
and nothing here picks a winner: a conflict stays open until a person's correction,
retraction or confirmation leaves one statement standing.

Beyond slots, a new memory whose words likely contradict a live memory or a commitment in
force (``ledger.contradictions``) opens a *possible* conflict of the two, which a person
resolves the same way or dismisses as not a conflict.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.postgres.search import SearchQuery, SearchVector, SearchVectorExact
from django.db import connections
from django.db.models import (
    Case,
    CharField,
    Count,
    Exists,
    F,
    OuterRef,
    Q,
    QuerySet,
    Value,
    When,
)
from django.utils import timezone

from ledger import contradictions
from ledger.actions._tracking import save_tracked
from ledger.actors import Actor
from ledger.choices import LedgerKind
from ledger.models import Conflict, LedgerEntry, Memory, Subject
from ledger.policy import LIVE_MEMORY
from ledger.querysets import SEARCH_CONFIG

# A write is compared with at most this many statements that share a word with it, so its
# cost does not grow with the subject's memories.
CANDIDATES_MAX = 50
_MEMORY, _COMMITMENT = "memory", "commitment"


def lock_slot(memory: Memory) -> Memory:
    """Lock the memory's subject, then the memory, and return the memory as it is now.

    Every write that touches a slot takes the subject row first, as the write gate does, so
    two writes about one subject queue up instead of deadlocking.
    """
    Subject.objects.select_for_update().filter(pk=memory.subject_id).first()
    return Memory.objects.select_for_update().select_related("subject").get(pk=memory.pk)


def refresh_conflict(*, subject: Subject, key: str, actor: Actor) -> Conflict | None:
    """Open, extend or close the conflict for one slot to match what is active in it; close
    the subject's possible conflicts that lost a side."""
    settle_possible_conflicts(subject=subject, actor=actor)
    if not key:
        return None
    active = list(Memory.objects.in_slot(subject, key).filter(status=Memory.Status.ACTIVE))
    disagree = len({m.normalized for m in active}) > 1
    conflict = Conflict.objects.open().filter(subject=subject, key=key).first()
    now = timezone.now()
    if disagree:
        if conflict is None:
            conflict = Conflict(subject=subject, key=key, opened_at=now)
            save_tracked(conflict, actor=actor, reason=f"Memories disagree in slot '{key}'.")
        conflict.memories.add(*active)
        return conflict
    if conflict is not None:
        close_conflict(
            conflict, actor=actor, reason="Only one statement is left active in the slot.", now=now
        )
    return None


def close_conflict(conflict: Conflict, *, actor: Actor, reason: str, now: datetime) -> None:
    """Mark ``conflict`` resolved at ``now``; its resolution, if any, is the caller's."""
    conflict.status = Conflict.Status.RESOLVED
    conflict.resolved_at = now
    save_tracked(conflict, actor=actor, reason=reason, update_fields=["status", "resolved_at"])


def open_possible_conflicts(*, memory: Memory, actor: Actor, now: datetime) -> list[Conflict]:
    """Open a possible conflict between ``memory`` and each live memory or commitment in
    force about its subject that its words likely contradict. One candidate query."""
    terms = contradictions.search_terms(memory.statement)
    if not terms:
        return []
    memories = _memories_matching(memory.subject, terms).exclude(pk=memory.pk)
    if memory.key:
        # Within one slot the slot's own rule decides.
        memories = memories.exclude(key=memory.key)
    commitments = _commitments_matching(memory.subject, terms, now)
    candidates = memories.union(commitments, all=True).order_by()[:CANDIDATES_MAX]
    opened = []
    for pk, text, side in candidates:
        if contradictions.contradiction(memory.statement, text) is None:
            continue
        commitment = pk if side == _COMMITMENT else None
        other = [] if commitment else [pk]
        opened.append(_open_possible(memory.subject, [memory, *other], commitment, actor, now))
    return opened


def open_commitment_conflicts(*, entry: LedgerEntry, actor: Actor, now: datetime) -> list[Conflict]:
    """Open a possible conflict between a new commitment and each live memory its words
    likely contradict. One candidate query."""
    terms = contradictions.search_terms(entry.fact)
    if entry.kind != LedgerKind.COMMITMENT or not terms:
        return []
    return [
        _open_possible(entry.subject, [pk], entry.pk, actor, now)
        for pk, text, _side in _memories_matching(entry.subject, terms)[:CANDIDATES_MAX]
        if contradictions.contradiction(text, entry.fact) is not None
    ]


def _open_possible(
    subject: Subject, memories: list[Any], commitment: Any, actor: Actor, now: datetime
) -> Conflict:
    conflict = Conflict(subject=subject, possible=True, opened_at=now, commitment_id=commitment)
    what = "a ledger commitment in force" if commitment else "a live memory"
    save_tracked(conflict, actor=actor, reason=f"A memory's words likely contradict {what}.")
    conflict.memories.add(*memories)
    return conflict


def possible_conflicts_note(conflicts: list[Conflict]) -> str:
    """What a write's reason adds when its words opened possible conflicts: "" if none."""
    if not conflicts:
        return ""
    sides = [
        "a ledger commitment in force" if any(c.commitment_id for c in conflicts) else "",
        "a live memory" if any(not c.commitment_id for c in conflicts) else "",
    ]
    what = " and ".join(side for side in sides if side)
    opened = (
        "a possible conflict is"
        if len(conflicts) == 1
        else f"{len(conflicts)} possible conflicts are"
    )
    return (
        f" Its words likely contradict {what}; every statement is kept and {opened} open for a "
        "person to resolve."
    )


def _memories_matching(subject: Subject, terms: list[str]) -> QuerySet[Any]:
    """(id, text, side) of the subject's live memories that share a term with ``terms``."""
    return (
        Memory.objects.for_subject(subject)
        .live()
        .filter(_matches("statement", terms, subject))
        .annotate(text=F("statement"), side=Value(_MEMORY, output_field=CharField()))
        .values_list("id", "text", "side")
        .order_by()
    )


def _commitments_matching(subject: Subject, terms: list[str], now: datetime) -> QuerySet[Any]:
    """(id, text, side) of the subject's commitments in force that share a term."""
    return (
        LedgerEntry.objects.in_force(now)
        .filter(subject=subject, kind=LedgerKind.COMMITMENT)
        .filter(_matches("fact", terms, subject))
        .annotate(text=F("fact"), side=Value(_COMMITMENT, output_field=CharField()))
        .values_list("id", "text", "side")
        .order_by()
    )


def _matches(field: str, terms: list[str], subject: Subject) -> Q:
    """``field`` shares a term with ``terms``: full-text search on PostgreSQL, shared words
    elsewhere."""
    if connections[subject._state.db or "default"].vendor == "postgresql":
        # The same expression as recall's ranking and the GIN index of migration 0003.
        query = SearchQuery(" | ".join(terms), config=SEARCH_CONFIG, search_type="raw")
        return Q(SearchVectorExact(SearchVector(field, config=SEARCH_CONFIG), query))
    any_word = Q()
    for term in terms:
        any_word |= Q(**{f"{field}__icontains": term})
    return any_word


def settle_possible_conflicts(*, subject: Subject, actor: Actor) -> None:
    """Close the subject's open possible conflicts that no longer have two sides: a memory
    that is no longer live, or a commitment no longer in force, leaves nothing to choose."""
    now = timezone.now()
    in_force = LedgerEntry.objects.in_force(now).filter(pk=OuterRef("commitment_id"))
    one_sided = (
        Conflict.objects.open()
        .filter(subject=subject, possible=True)
        .alias(
            live=Count("memories", filter=Q(memories__status__in=LIVE_MEMORY)),
            commitment_sides=Case(When(Exists(in_force), then=1), default=0),
        )
        .filter(live__lt=2 - F("commitment_sides"))
    )
    for conflict in one_sided:
        close_conflict(
            conflict, actor=actor, reason="One of the two statements is no longer in use.", now=now
        )
