"""What the admin's review of corrections reads: each correction with the memory it
replaced, who wrote each and why, the chain of versions it sits in, whether agents were
still given the replaced words after the correction was written, and the correction's own
reach: how often, and in which runs, agents were given its words since.

How that last question is answered: agents get memories only by recall, and every recall
is stored with each memory it served (``Recall``, ``RecallItem``). A correction supersedes
the original in the same transaction that writes it, and recall serves only active
memories, so a recall that starts afterwards never serves the original. A read already
under way when the correction was saved (or stamped by a server whose clock runs ahead)
can still carry it: those are the reads of the original recorded at or after the moment
the replacement was written, and they are what ``reads_after`` counts. The reads before
are the original's ordinary reach, counted apart.

Reads only, in a fixed number of queries whatever the length of a page or of a chain.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, Exists, OuterRef, Q

from ledger.models import ConversationRow, Memory, MemoryQuerySet, RecallItem
from ledger.models.erasable import REASON_REMOVED
from ledger.words import CORRECTION_OF, NO_REASON, REVERT_OF, given

# The most recalls (or runs) a correction's page lists one by one; counts are always exact.
READS_SHOWN = 50


def listing(memories: MemoryQuerySet) -> MemoryQuerySet:
    """Corrections (and reverts) among ``memories``, each with its author, what it
    replaced and whether a revert replaced it in turn (``reverted``), ready for a page:
    newest first is the caller's keyset order."""
    reverts = Memory.objects.filter(supersedes=OuterRef("pk"), restores__isnull=False)
    return (
        memories.corrections()
        .with_author()
        .annotate(reverted=Exists(reverts))
        .select_related("subject", "supersedes", "restores")
    )


def why(reason: str | None) -> str:
    """The corrector's own words in a correction's (or revert's) first history row."""
    text = reason or ""
    for prefix in (CORRECTION_OF, REVERT_OF):
        if text.startswith(prefix):
            return given(text.removeprefix(prefix))
    return "" if text == REASON_REMOVED else given(text)


def why_words(reason: str | None) -> str:
    """The why as the list says it, in the words history, the audit and the export use:
    the corrector's own, "no reason given" when they gave none, or the erasure's note."""
    if reason == REASON_REMOVED:
        return REASON_REMOVED
    return why(reason) or NO_REASON


def reads_after_each(corrections: Iterable[Memory]) -> dict[uuid.UUID, int]:
    """For each correction, how many recalls served the memory it replaced at or after the
    moment it was written, keyed by the correction's id; one query for the whole page."""
    since = {m.supersedes_id: m.written_at for m in corrections if m.supersedes_id is not None}
    replaced_by = {m.supersedes_id: m.pk for m in corrections}
    rows = RecallItem.objects.served_since(since).recalls_per_memory()
    return {replaced_by[row["memory_id"]]: row["recalls"] for row in rows}


@dataclass(frozen=True)
class Reads:
    """The recalls of a replaced memory, split at the moment its replacement was written."""

    since: datetime
    after: int
    before: int
    # The runs (and reads outside any run) that were given it after, latest first.
    runs: list[ConversationRow]
    # The latest reads after, at most ``READS_SHOWN``, each with its agent and run.
    latest: list[RecallItem]


def reads_after(original: Memory, since: datetime) -> Reads:
    """Who was given ``original`` at or after ``since`` (its replacement's writing), in
    three queries."""
    served = RecallItem.objects.filter(memory=original)
    after = served.recalled_between(since, None)
    counts = served.aggregate(
        after=Count("pk", filter=Q(recall__recalled_at__gte=since)),
        before=Count("pk", filter=Q(recall__recalled_at__lt=since)),
    )
    latest = after.select_related("recall__agent", "recall__run").order_by(
        "-recall__recalled_at", "-recall_id"
    )[:READS_SHOWN]
    return Reads(
        since=since,
        after=counts["after"],
        before=counts["before"],
        runs=list(after.conversations()),
        latest=list(latest),
    )


@dataclass(frozen=True)
class Reach:
    """How often agents were given a replacement's words: every recall that served it was
    made after it was written, since recall serves only what exists."""

    times: int
    # How many of those reads were made outside any run.
    outside: int
    # How many runs were given it, and the latest of them, at most ``READS_SHOWN``.
    runs_total: int
    runs: list[ConversationRow]


def reach_of(replacement: Memory) -> Reach:
    """Who was given ``replacement`` since it was written, in two queries."""
    served = RecallItem.objects.of_memories([replacement])
    counts = served.aggregate(
        times=Count("pk"),
        outside=Count("pk", filter=Q(recall__run__isnull=True)),
        runs=Count("recall__run", distinct=True),
    )
    in_runs = served.filter(recall__run__isnull=False).conversations()
    return Reach(
        times=counts["times"],
        outside=counts["outside"],
        runs_total=counts["runs"],
        runs=list(in_runs[:READS_SHOWN]),
    )


@dataclass(frozen=True)
class Version:
    """One memory in a slot's chain of versions, as the chain on a correction's page says it."""

    memory: Memory
    # Whether it is a correction or a revert, and so has a page of its own in this review.
    correction: bool


def version_ids(memory: Memory) -> list[uuid.UUID]:
    """The ids of every version linked to ``memory`` by supersession, oldest first.

    Corrections stay within one subject, so its links are read in one light query and
    walked here, whatever the length of the chain.
    """
    links = dict(Memory.objects.for_subject(memory.subject).values_list("pk", "supersedes_id"))
    following = {old: new for new, old in links.items() if old is not None}
    first = memory.pk
    while links.get(first) is not None:
        first = links[first]
    ids = [first]
    while ids[-1] in following:
        ids.append(following[ids[-1]])
    return ids


def chain_of(memory: Memory) -> list[Version]:
    """Every version linked to ``memory`` by corrections, oldest first: the first write,
    each correction, each revert and revert of a revert. Three queries, whatever its length.
    """
    ids = version_ids(memory)
    rows = {m.pk: m for m in Memory.objects.filter(pk__in=ids).with_author()}
    corrections = set(Memory.objects.filter(pk__in=ids).corrections().values_list("pk", flat=True))
    return [Version(rows[pk], pk in corrections) for pk in ids]
