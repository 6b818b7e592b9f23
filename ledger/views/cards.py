"""The card builder: a memory as the subject page shows it, in a fixed number of queries.

A page loads what its cards need once (``CardContext.load``), then describes each memory
from rows already in memory, so the page's query count never grows with its rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Prefetch
from django.urls import reverse
from django.utils import timezone

from ledger import access
from ledger.actors import Actor
from ledger.choices import CORRECTIONS, StatedBy
from ledger.models import Conflict, LedgerEntry, Memory, Policy, RecallItem, Subject
from ledger.rules.conflicts import ConflictMove, allows_conflict_move
from ledger.rules.holds import waiting_for_review
from ledger.rules.memories import (
    MemoryMove,
    allows,
    default_renew_period,
    is_actionable,
    renew_periods,
)
from ledger.views.presenting import ask_support, day, expiring_soon_days, origin, said_label

# A stand-in id: each address a card links to is reversed once a page with it, and each
# card's is that address with its own id (reversing ten addresses for each of fifty cards
# was a third of the page's time).
STAND_IN = str(uuid.UUID(int=0))


@dataclass(frozen=True)
class Links:
    """The addresses one card links to: its subject's page, and each of its actions."""

    page: str
    card: str
    edit: str
    delete: str
    undo: str
    answer: str
    renew: str
    withhold: str
    uses: str
    history: str


# ``Links``' fields beside ``page``, and the name of the address each is.
ACTIONS = {
    "card": "memory",
    "edit": "memory-edit",
    "delete": "memory-delete",
    "undo": "memory-undo",
    "answer": "memory-answer",
    "renew": "memory-renew",
    "withhold": "memory-withhold",
    "uses": "memory-uses",
    "history": "memory-history",
}


@dataclass(frozen=True)
class LinkMaker:
    """Every card's ``Links`` on one page, from addresses reversed once for the page."""

    page: str
    patterns: dict[str, str]

    @classmethod
    def for_subject(cls, subject: Subject) -> LinkMaker:
        patterns = {field: reverse(name, args=[STAND_IN]) for field, name in ACTIONS.items()}
        return cls(page=reverse("subject", args=[subject.ref]), patterns=patterns)

    def of(self, memory: Memory) -> Links:
        pk = str(memory.pk)
        actions = {field: pattern.replace(STAND_IN, pk) for field, pattern in self.patterns.items()}
        return Links(page=self.page, **actions)


@dataclass
class Card:
    """One memory as the subject page shows it."""

    memory: Memory
    links: Links
    said: str
    written: str
    excerpt: str
    expiry: str
    badges: list[tuple[str, str]] = field(default_factory=list)
    conflict_id: int | None = None
    expired: bool = False
    actionable: bool = True
    # How many conversations were given it, and when last; None when none ever was.
    usage: Usage | None = None
    # "Don't use this" or "Use it again", when the viewer may say so of this memory now.
    withhold_offer: str = ""
    # For an expired memory a person may renew: how long it may be kept for.
    renew_options: list[RenewOption] = field(default_factory=list)
    # The viewer's own words held for review: who must review them, and why.
    waiting: str = ""


@dataclass(frozen=True)
class RenewOption:
    days: int
    text: str  # "1 year (until 1 December 2027)"
    selected: bool


@dataclass(frozen=True)
class Usage:
    conversations: int
    last_read: datetime


@dataclass(frozen=True)
class Conversation:
    """One conversation (run) that was given a memory; ``run`` is None for a read made
    outside any run."""

    run: str | None
    agent: str
    reads: int
    last_read: datetime
    # What the agent said it was doing in its latest read of the memory (agent text).
    goal: str
    # A mailto: link that asks support about this memory in this conversation; "" when
    # no support address is set.
    ask_support: str


# A memory's conversations listed on request; the latest are the ones a person asks about.
CONVERSATIONS_SHOWN = 50


def conversations_of(memory: Memory) -> tuple[list[Conversation], int]:
    """The latest conversations that were given ``memory``, and how many there are in all.
    Three queries, however often it was read and however many conversations are listed."""
    items = RecallItem.objects.of_memories([memory])
    rows = list(items.conversations()[:CONVERSATIONS_SHOWN])
    usage = items.usage_per_memory().first()
    total = usage["conversations"] if usage else 0
    # Each conversation's goal is its latest read's: the reads made at a listed last read,
    # keyed as ``conversations`` keys them (a run by its ref, a read outside one by -id).
    goals: dict[str | int, str] = {}
    if rows:
        latest = (
            items.joined_in_month()
            .filter(recalled_at__in={row["last_read"] for row in rows})
            .order_by("recalled_at", "recall_id")
            .values_list("recall__run__ref", "recall_id", "recall__goal")
        )
        goals = {run or -recall: goal for run, recall, goal in latest}
    return [
        Conversation(
            run=row["run"],
            agent=row["agent"],
            reads=row["reads"],
            last_read=row["last_read"],
            goal=goals.get(row["run"] or row["conversation"], ""),
            ask_support=ask_support(memory, row["run"]),
        )
        for row in rows
    ], total


@dataclass(frozen=True)
class CardContext:
    """What every card on one page needs, loaded once for the page."""

    own: bool
    viewer_label: str
    # Memory id → its open conflict, and whether that conflict is only possible.
    open_conflicts: dict[str, tuple[int, bool]]
    # Correction id → who wrote it (its first history row's actor).
    corrected_by: dict[str, str]
    # Memory id → the conversations that were given it (memories never recalled are absent).
    usage: dict[str, Usage]
    # Whether the viewer may withhold this subject's memories (only the person may).
    may_withhold: bool
    now: datetime
    # The write policy in force, for the periods a memory may be renewed for.
    write_policy: Policy
    links: LinkMaker

    @classmethod
    def load(
        cls,
        *,
        viewer: access.Person,
        subject: Subject,
        memories: Iterable[Memory],
        conflicts: Iterable[Conflict],
        now: datetime | None = None,
        usage: bool = True,
    ) -> CardContext:
        """``usage=False`` leaves out how often each memory was used: a page that counts its
        reads itself (the trace, bounded) spares the count over every read of the memory."""
        memories = list(memories)
        corrections = [str(m.pk) for m in memories if m.stated_by in CORRECTIONS]
        corrected_by: dict[str, str] = {}
        if corrections:
            created = Memory.history.filter(id__in=corrections, history_type="+")
            corrected_by = {
                str(pk): actor for pk, actor in created.values_list("id", "history_actor")
            }
        used: dict[str, Usage] = {}
        if memories and usage:
            # One grouped query for every card, however many memories and reads.
            rows = RecallItem.objects.of_memories(memories).usage_per_memory()
            used = {
                str(row["memory_id"]): Usage(row["conversations"], row["last_read"]) for row in rows
            }
        return cls(
            own=access.acts_for_person(viewer, subject),
            viewer_label=Actor.label_for_user(viewer.get_username()),
            open_conflicts=conflict_map(conflicts),
            corrected_by=corrected_by,
            usage=used,
            may_withhold=access.may_withhold(viewer, subject),
            now=now or timezone.now(),
            write_policy=Policy.current(),
            links=LinkMaker.for_subject(subject),
        )


def open_conflicts(subject: Subject) -> list[Conflict]:
    """The subject's open conflicts, with every contender and its sources prefetched, and
    a possible conflict's commitment as ``commitment_in_force`` (None once it is not)."""
    return list(
        Conflict.objects.open()
        .filter(subject=subject)
        .order_by("possible", "opened_at", "id")
        .prefetch_related(
            "memories__sources__run",
            "memories__subject",
            Prefetch(
                "commitment", queryset=LedgerEntry.objects.in_force(), to_attr="commitment_in_force"
            ),
        )
    )


def conflict_map(conflicts: Iterable[Conflict]) -> dict[str, tuple[int, bool]]:
    """Memory id → its open conflict's id, and whether that conflict is only possible."""
    return {
        str(m.pk): (c.pk, c.possible)
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
        expiry = f"Expired on {day(memory.expires_at)}."
    else:
        expiry = f"Expires on {day(memory.expires_at)}."
    badges: list[tuple[str, str]] = []
    if memory.status == Memory.Status.PENDING:
        badges.append(("pending", "waiting for confirmation"))
    conflict_id, possible = context.open_conflicts.get(str(memory.pk), (None, False))
    if conflict_id is not None:
        badges.append(("conflict", "possible conflict" if possible else "conflicting"))
    if expired:
        badges.append(("expired", f"expired on {day(memory.expires_at or now)}"))
    elif memory.expires_at is not None and memory.expires_at <= now + timedelta(
        days=expiring_soon_days()
    ):
        badges.append(("expiring", "expiring soon"))
    if memory.status == Memory.Status.RETRACTED:
        badges.append(("retracted", "deleted"))
    if memory.withheld:
        badges.append(("withheld", "not used by the assistant"))
    withhold_offer = ""
    if context.may_withhold:
        move = MemoryMove.ALLOW if memory.withheld else MemoryMove.WITHHOLD
        if allows(memory.status, move):
            withhold_offer = "Use it again" if memory.withheld else "Don’t use this"
    return Card(
        memory=memory,
        links=context.links.of(memory),
        said=said_label(memory, own=context.own, created_by_viewer=created_by_viewer, source=first),
        written=f"Written {origin(first, own=context.own)}.",
        excerpt=next((s.excerpt for s in sources if s.excerpt), ""),
        expiry=expiry,
        badges=badges,
        conflict_id=conflict_id,
        expired=expired,
        actionable=is_actionable(memory.status),
        usage=context.usage.get(str(memory.pk)),
        withhold_offer=withhold_offer,
        renew_options=renew_options(memory, context) if expired else [],
        waiting=waiting_for_review(
            status=memory.status,
            statement=memory.statement,
            by_person=memory.stated_by == StatedBy.CORRECTION,
        )
        if created_by_viewer
        else "",
    )


def renew_options(memory: Memory, context: CardContext) -> list[RenewOption]:
    """The periods offered to renew ``memory``, each with the day it would then last until."""
    chosen = default_renew_period(context.write_policy, kind=memory.kind, basis=memory.basis)
    return [
        RenewOption(
            days=period.days,
            text=f"{period.words} (until {day(context.now + timedelta(days=period.days))})",
            selected=period == chosen,
        )
        for period in renew_periods(context.write_policy, basis=memory.basis)
    ]


@dataclass
class ConflictView:
    conflict: Conflict
    cards: list[Card]
    error: str = ""

    @property
    def commitment(self) -> LedgerEntry | None:
        """A possible conflict's ledger commitment, while it is in force."""
        return getattr(self.conflict, "commitment_in_force", None)

    @property
    def sides(self) -> int:
        return len(self.cards) + (self.commitment is not None)

    @property
    def may_keep_memory(self) -> bool:
        return self._allows(ConflictMove.KEEP_MEMORY)

    @property
    def may_keep_commitment(self) -> bool:
        return self._allows(ConflictMove.KEEP_COMMITMENT)

    @property
    def may_dismiss(self) -> bool:
        return self._allows(ConflictMove.DISMISS)

    def _allows(self, move: ConflictMove) -> bool:
        return allows_conflict_move(
            move, possible=self.conflict.possible, has_commitment=self.commitment is not None
        )


@dataclass
class Group:
    kind: str
    title: str
    # How many the heading holds on every page, and whether it began on an earlier one.
    total: int = 0
    continued: bool = False
    cards: list[Card] = field(default_factory=list)
