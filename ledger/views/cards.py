"""The card builder: a memory as the subject page shows it, in a fixed number of queries.

A page loads what its cards need once (``CardContext.load``), then describes each memory
from rows already in memory, so the page's query count never grows with its rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.utils import timezone

from ledger import access, policy
from ledger.actors import Actor
from ledger.choices import StatedBy
from ledger.models import Conflict, Memory, Subject
from ledger.views.presenting import day, expiring_soon_days, origin, said_label


@dataclass
class Card:
    """One memory as the subject page shows it."""

    memory: Memory
    said: str
    written: str
    excerpt: str
    expiry: str
    badges: list[tuple[str, str]] = field(default_factory=list)
    conflict_id: int | None = None
    expired: bool = False
    actionable: bool = True


@dataclass(frozen=True)
class CardContext:
    """What every card on one page needs, loaded once for the page."""

    own: bool
    viewer_label: str
    # Memory id → its open conflict.
    open_conflicts: dict[str, int]
    # Correction id → who wrote it (its first history row's actor).
    corrected_by: dict[str, str]
    now: datetime

    @classmethod
    def load(
        cls,
        *,
        viewer: access.Person,
        subject: Subject,
        memories: Iterable[Memory],
        conflicts: Iterable[Conflict],
        now: datetime | None = None,
    ) -> CardContext:
        corrections = [str(m.pk) for m in memories if m.stated_by == StatedBy.CORRECTION]
        corrected_by: dict[str, str] = {}
        if corrections:
            created = Memory.history.filter(id__in=corrections, history_type="+")
            corrected_by = {
                str(pk): actor for pk, actor in created.values_list("id", "history_actor")
            }
        return cls(
            own=access.acts_for_person(viewer, subject),
            viewer_label=Actor.label_for_user(viewer.get_username()),
            open_conflicts=conflict_map(conflicts),
            corrected_by=corrected_by,
            now=now or timezone.now(),
        )


def open_conflicts(subject: Subject) -> list[Conflict]:
    """The subject's open conflicts, with every contender and its sources prefetched."""
    return list(
        Conflict.objects.open()
        .filter(subject=subject)
        .prefetch_related("memories__sources__run", "memories__subject")
    )


def conflict_map(conflicts: Iterable[Conflict]) -> dict[str, int]:
    return {
        str(m.pk): c.pk
        for c in conflicts
        for m in c.memories.all()
        if m.status == Memory.Status.ACTIVE
    }


def card_for(memory: Memory, context: CardContext) -> Card:
    """Describe ``memory`` from rows already loaded (its sources must be prefetched)."""
    now = context.now
    sources = list(memory.sources.all())
    first = sources[0] if sources else None
    created_by_viewer = context.corrected_by.get(str(memory.pk)) == context.viewer_label
    expired = memory.status == Memory.Status.EXPIRED or (
        memory.expires_at is not None and memory.expires_at <= now
    )
    if memory.expires_at is None:
        expiry = "Does not expire."
    elif expired:
        expiry = f"Expired on {day(memory.expires_at, now)}."
    else:
        expiry = f"Expires on {day(memory.expires_at, now)}."
    badges: list[tuple[str, str]] = []
    if memory.status == Memory.Status.PENDING:
        badges.append(("pending", "waiting for confirmation"))
    conflict_id = context.open_conflicts.get(str(memory.pk))
    if conflict_id is not None:
        badges.append(("conflict", "conflicting"))
    if expired:
        badges.append(("expired", f"expired on {day(memory.expires_at or now, now)}"))
    elif memory.expires_at is not None and memory.expires_at <= now + timedelta(
        days=expiring_soon_days()
    ):
        badges.append(("expiring", "expiring soon"))
    if memory.status == Memory.Status.RETRACTED:
        badges.append(("retracted", "deleted"))
    return Card(
        memory=memory,
        said=said_label(memory, own=context.own, created_by_viewer=created_by_viewer),
        written=f"Written {origin(first, own=context.own, now=now)}.",
        excerpt=next((s.excerpt for s in sources if s.excerpt), ""),
        expiry=expiry,
        badges=badges,
        conflict_id=conflict_id,
        expired=expired,
        actionable=policy.is_actionable(memory.status),
    )
