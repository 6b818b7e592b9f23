"""Keeping a slot honest: the locks every memory write takes, and the slot's conflict.

A slot is one subject + key. Two active memories in a slot that disagree are a conflict,
and nothing here picks a winner: a conflict stays open until a person's correction,
retraction or confirmation leaves one statement standing.

Beyond slots, a new memory whose words likely contradict a live memory or a commitment in
force (``ledger.rules.contradictions``) opens a *possible* conflict of the two, which a person
resolves the same way or dismisses as not a conflict.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

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
    Subquery,
    Value,
    When,
)
from django.utils import timezone

from ledger.actions._tracking import create_tracked, save_tracked
from ledger.actions.webhooks import emit
from ledger.actors import Actor
from ledger.choices import LedgerKind
from ledger.models import Conflict, LedgerEntry, Memory, Subject
from ledger.reads import retrieval
from ledger.rules import contradictions, webhooks
from ledger.rules.memories import LIVE_MEMORY

# Why a conflict a deletion closed by itself is open again, in its history.
REOPENED = "Reopened: the deletion that closed it was undone."

# A write is compared with at most this many live memories, and as many commitments, that
# share a word with it, so its cost does not grow with the subject's memories.
CANDIDATES_MAX = 50
_MEMORY, _COMMITMENT = "memory", "commitment"
# (id, text, side) of a statement a new memory's words may contradict, and its sides.
Candidate = tuple[Any, str, str]
CANDIDATE_SIDES = (_MEMORY, _COMMITMENT)


def lock_slot(memory: Memory) -> Memory:
    """Lock the memory's subject, then the memory, and return the memory as it is now.

    Every write that touches a slot takes the subject row first, as the write gate does, so
    two writes about one subject queue up instead of deadlocking.
    """
    Subject.objects.select_for_update().filter(pk=memory.subject_id).first()
    return Memory.objects.select_for_update().select_related("subject").get(pk=memory.pk)


def refresh_conflict(
    *, subject: Subject, key: str, actor: Actor, now: datetime | None = None
) -> Conflict | None:
    """Open, extend or close the conflict for one slot to match what is active in it; close
    the subject's possible conflicts that lost a side. ``now``: the moment of the change
    that calls it, which a conflict it closes keeps as its ``resolved_at``, so that undoing
    a deletion finds the conflicts that deletion closed (``reopen_conflicts``)."""
    settle_possible_conflicts(subject=subject, actor=actor, now=now)
    if not key:
        return None
    active = Memory.objects.in_slot(subject, key).filter(status=Memory.Status.ACTIVE)
    return settle_slot(
        subject=subject,
        key=key,
        active=list(active.values_list("pk", "normalized")),
        conflict=Conflict.objects.open().filter(subject=subject, key=key).first(),
        actor=actor,
        now=now,
    )


def settle_slot(
    *,
    subject: Subject,
    key: str,
    active: list[tuple[Any, str]],
    conflict: Conflict | None,
    actor: Actor,
    listening: bool | None = None,
    now: datetime | None = None,
) -> Conflict | None:
    """Open, extend or close ``conflict`` (the slot's open one, if any) to match ``active``,
    the id and normalized statement of every active memory in the slot. ``listening``: as
    ``emit`` takes it, for the conflict this opens."""
    now = now or timezone.now()
    if len({normalized for _pk, normalized in active}) > 1:
        opened = conflict is None
        if conflict is None:
            conflict = Conflict(subject=subject, key=key, opened_at=now)
            save_tracked(conflict, actor=actor, reason=f"Memories disagree in slot '{key}'.")
        conflict.memories.add(*(pk for pk, _normalized in active))
        if opened:
            _announce([conflict], [[pk for pk, _normalized in active]], listening)
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


def open_possible_conflicts(
    *,
    memory: Memory,
    actor: Actor,
    now: datetime,
    candidates: list[Candidate] | None = None,
    listening: bool | None = None,
) -> list[Conflict]:
    """Open a possible conflict between ``memory`` and each live memory or commitment in
    force about its subject that its words likely contradict: of ``candidates`` when the
    caller read them already (``possible_conflict_candidates``), else of one candidate
    query's. However many it opens, three statements write them."""
    if candidates is None:
        parts = possible_conflict_candidates(
            subject=memory.subject,
            statement=memory.statement,
            key=memory.key,
            now=now,
            exclude=memory.pk,
        )
        found = [part.values_list("id", "text", "side") for part in parts]
        candidates = list(found[0].union(*found[1:], all=True).order_by()) if found else []
    contradicted = [
        (pk, side)
        for pk, text, side in candidates
        if contradictions.contradiction(memory.statement, text) is not None
    ]
    conflicts = [
        Conflict(
            subject=memory.subject,
            possible=True,
            opened_at=now,
            commitment_id=pk if side == _COMMITMENT else None,
        )
        for pk, side in contradicted
    ]
    members = [[memory.pk] if side == _COMMITMENT else [memory.pk, pk] for pk, side in contradicted]
    return _open_possible(conflicts, members, actor, listening)


def open_commitment_conflicts(*, entry: LedgerEntry, actor: Actor, now: datetime) -> list[Conflict]:
    """Open a possible conflict between a new commitment and each live memory its words
    likely contradict. One candidate query."""
    terms = contradictions.search_terms(entry.fact)
    if entry.kind != LedgerKind.COMMITMENT or not terms:
        return []
    contradicted = [
        pk
        for pk, text in _memories_matching(entry.subject, terms).values_list("id", "statement")[
            :CANDIDATES_MAX
        ]
        if contradictions.contradiction(text, entry.fact) is not None
    ]
    conflicts = [
        Conflict(subject=entry.subject, possible=True, opened_at=now, commitment_id=entry.pk)
        for _pk in contradicted
    ]
    return _open_possible(conflicts, [[pk] for pk in contradicted], actor)


def _open_possible(
    conflicts: list[Conflict],
    members: list[list[Any]],
    actor: Actor,
    listening: bool | None = None,
) -> list[Conflict]:
    """Store ``conflicts`` with their memories (``members``, one list each), in bulk."""
    if not conflicts:
        return []
    create_tracked(
        conflicts,
        actor=actor,
        reasons=[
            "A memory's words likely contradict "
            + ("a ledger commitment in force." if c.commitment_id else "a live memory.")
            for c in conflicts
        ],
    )
    through = Conflict.memories.through
    through.objects.bulk_create(
        [
            through(conflict_id=conflict.pk, memory_id=pk)
            for conflict, pks in zip(conflicts, members, strict=True)
            for pk in pks
        ]
    )
    _announce(conflicts, members, listening)
    return conflicts


def _announce(conflicts: list[Conflict], members: list[list[Any]], listening: bool | None) -> None:
    """A ``conflict.opened`` event for each conflict just opened, with its memories."""
    for conflict, pks in zip(conflicts, members, strict=True):
        emit(
            webhooks.Event.CONFLICT_OPENED,
            webhooks.conflict_payload(conflict, pks),
            subject_id=conflict.subject_id,
            listening=listening,
        )


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


def possible_conflict_candidates(
    *, subject: Subject, statement: str, key: str, now: datetime, exclude: Any = None
) -> list[QuerySet[Any]]:
    """What a new memory saying ``statement`` is compared with: the subject's live memories
    outside its slot (``key``'s own rule decides within it) and commitments in force that
    share a term with it, at most ``CANDIDATES_MAX`` of each, annotated ``text`` and
    ``side``; none when it has no term to search for. Parts of one union: the write gate
    reads them in the same query as the rest of what decides a write."""
    terms = contradictions.search_terms(statement)
    if not terms:
        return []
    memories = _memories_matching(subject, terms)
    if exclude is not None:
        memories = memories.exclude(pk=exclude)
    if key:
        memories = memories.exclude(key=key)
    commitments = _commitments_matching(subject, terms, now)
    return [
        _capped(memories, text="statement", side=_MEMORY),
        _capped(commitments, text="fact", side=_COMMITMENT),
    ]


def _capped(rows: QuerySet[Any], *, text: str, side: str) -> QuerySet[Any]:
    """At most ``CANDIDATES_MAX`` of ``rows``, chosen in a subquery: SQLite allows no LIMIT
    on one part of a union, and the union holds other rows that must not be cut."""
    chosen: QuerySet[Any] = rows.model._default_manager.filter(
        pk__in=Subquery(rows.order_by().values("pk")[:CANDIDATES_MAX])
    )
    annotated: QuerySet[Any] = chosen.annotate(
        text=F(text), side=Value(side, output_field=CharField())
    )
    return annotated.order_by()


def _memories_matching(subject: Subject, terms: list[str]) -> QuerySet[Memory]:
    """The subject's live memories that share a term with ``terms``."""
    return Memory.objects.for_subject(subject).live().filter(_matches("statement", terms, subject))


def _commitments_matching(
    subject: Subject, terms: list[str], now: datetime
) -> QuerySet[LedgerEntry]:
    """The subject's commitments in force that share a term."""
    return (
        LedgerEntry.objects.in_force(now)
        .filter(subject=subject, kind=LedgerKind.COMMITMENT)
        .filter(_matches("fact", terms, subject))
    )


def _matches(field: str, terms: list[str], subject: Subject) -> Q:
    """``field`` shares a term with ``terms``, found as support's search finds words."""
    postgres = connections[subject._state.db or "default"].vendor == "postgresql"
    return retrieval.any_word(terms, field, postgres=postgres)


def settle_possible_conflicts(
    *, subject: Subject, actor: Actor, now: datetime | None = None
) -> None:
    """Close the subject's open possible conflicts that no longer have two sides: a memory
    that is no longer live, or a commitment no longer in force, leaves nothing to choose."""
    now = now or timezone.now()
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


def reopen_conflicts(
    *, memory: Memory, actor: Actor, closed_at: Collection[datetime]
) -> list[Conflict]:
    """Reopen the conflicts of ``memory``, just put back, that a deletion undone now closed
    by itself: closed at one of ``closed_at`` (the moments of the deletions undone) with no
    resolution a person chose. The same rows, so the work on them (assignee, ticket, notes)
    comes back with them. One still needs two sides to reopen: every other memory of a
    possible conflict live and its commitment in force; in a slot, another active statement
    and no conflict opened there since. Call it before the slot is refreshed, which would
    otherwise open a new conflict in place of the old."""
    if not closed_at or memory.status not in LIVE_MEMORY:
        return []
    # Few conflicts are closed at one deletion's moment: their sides are checked here.
    closed = list(
        Conflict.objects.filter(
            memories=memory,
            status=Conflict.Status.RESOLVED,
            resolution="",
            resolved_at__in=list(closed_at),
        )
        .annotate(
            in_force=Exists(
                LedgerEntry.objects.in_force(timezone.now()).filter(pk=OuterRef("commitment_id"))
            ),
            slot_taken=Exists(
                Conflict.objects.open().filter(
                    subject=OuterRef("subject"), key=OuterRef("key"), possible=False
                )
            ),
        )
        .select_related("subject")
        .prefetch_related("memories")
    )
    reopened = [conflict for conflict in closed if _two_sides(conflict, memory)]
    for conflict in reopened:
        conflict.status = Conflict.Status.OPEN
        conflict.resolved_at = None
        save_tracked(
            conflict, actor=actor, reason=REOPENED, update_fields=["status", "resolved_at"]
        )
    _announce(reopened, [[m.pk for m in c.memories.all()] for c in reopened], None)
    return reopened


def _two_sides(conflict: Any, memory: Memory) -> bool:
    """Whether ``conflict``, annotated by ``reopen_conflicts``, would have two sides again
    with ``memory`` back."""
    others = [other for other in conflict.memories.all() if other.pk != memory.pk]
    if conflict.possible:
        live = all(other.status in LIVE_MEMORY for other in others)
        # The other side: a live memory, or a commitment still in force.
        return live and (conflict.in_force if conflict.commitment_id else bool(others))
    return (
        memory.status == Memory.Status.ACTIVE
        and not conflict.slot_taken
        and any(
            other.status == Memory.Status.ACTIVE and other.normalized != memory.normalized
            for other in others
        )
    )
