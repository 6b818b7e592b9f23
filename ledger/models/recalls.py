"""Every read an agent makes (a recall) and the memories each one served."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, TypedDict

from django.db import models
from django.db.models import Count, F, Max, Q
from django.db.models.functions import Coalesce

from ledger import access
from ledger.models.agents import Agent
from ledger.models.memories import Memory, Subject, _between
from ledger.models.runs import Run


class UsageRow(TypedDict):
    memory_id: uuid.UUID
    conversations: int
    last_read: datetime


class RecallsRow(TypedDict):
    memory_id: uuid.UUID
    recalls: int
    last_read: datetime


class ConversationRow(TypedDict):
    conversation: int
    run: str | None
    agent: str
    reads: int
    last_read: datetime


class RecallQuerySet(models.QuerySet["Recall"]):
    def readable_by(self, agent: Agent) -> RecallQuerySet:
        return self.filter(access.recalls_readable_by(agent))


class RecallItemQuerySet(models.QuerySet["RecallItem"]):
    """Which memories agents were given. A conversation is one run; a read made outside
    any run has nothing to group it with, so it counts as a conversation of its own."""

    def of_memories(self, memories: Iterable[Memory]) -> RecallItemQuerySet:
        return self.filter(memory__in=list(memories))

    def about(self, subject: Subject) -> RecallItemQuerySet:
        """Every memory of ``subject`` any agent was given (an item carries its recall's
        subject and time, so none of these reads needs the recall itself)."""
        return self.filter(subject=subject)

    def recalled_between(self, start: datetime | None, end: datetime | None) -> RecallItemQuerySet:
        """Served by recalls made at or after ``start`` and before ``end`` (either open): on
        PostgreSQL only the months in between are read."""
        return self.filter(_between("recalled_at", start, end))

    def served_since(self, moments: Mapping[uuid.UUID, datetime]) -> RecallItemQuerySet:
        """Each memory named in ``moments`` as served by recalls made at or after its own
        moment (a correction's original, since the correction was written), in one filter."""
        since = Q(pk__in=[])
        for memory_id, at in moments.items():
            since |= Q(memory_id=memory_id, recalled_at__gte=at)
        return self.filter(since)

    def recalls_per_memory(self) -> models.QuerySet[Any, RecallsRow]:
        """One row per memory, most recalled first: ``memory_id``, ``recalls`` (how many
        reads served it) and ``last_read``."""
        return (
            self.order_by()
            .values("memory_id")
            .annotate(recalls=Count("pk"), last_read=Max("recalled_at"))
            .order_by("-recalls", "-last_read", "memory_id")
        )

    def joined_in_month(self) -> RecallItemQuerySet:
        """Joined to their recalls on time as well as id (an item's time is its recall's), so
        that PostgreSQL looks for each recall in its own month of the partitioned log."""
        return self.filter(recall__recalled_at=F("recalled_at"))

    def usage_per_memory(self) -> models.QuerySet[Any, UsageRow]:
        """One row per memory: ``memory_id``, ``conversations`` and ``last_read``."""
        return (
            self.joined_in_month()
            .order_by()
            .values("memory_id")
            .annotate(
                # Counted by columns of ``recall_item_memory_reads``: the items are read
                # from that index alone, never from the table.
                conversations=Count("recall__run", distinct=True)
                + Count("recall_id", filter=Q(recall__run__isnull=True)),
                last_read=Max("recalled_at"),
            )
        )

    def conversations(self) -> models.QuerySet[Any, ConversationRow]:
        """One row per conversation, latest first: ``run`` (its ref, None outside any run),
        ``agent`` (its name), ``reads`` and ``last_read``."""
        return (
            self.joined_in_month()
            .annotate(conversation=Coalesce("recall__run_id", F("recall_id") * -1))
            .order_by()
            .values("conversation")
            .annotate(
                run=F("recall__run__ref"),
                agent=F("recall__agent__name"),
                reads=Count("pk"),
                last_read=Max("recalled_at"),
            )
            .order_by("-last_read", "-conversation")
        )


class Recall(models.Model):
    """One read an agent made: what it asked for and exactly what it was given."""

    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="recalls")
    run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="recalls"
    )
    turn = models.PositiveIntegerField(null=True, blank=True)
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="recalls")
    goal = models.TextField(blank=True, default="")
    k = models.PositiveSmallIntegerField()
    block = models.TextField()
    # Whether meaning ranked this read (``ledger.reads.retrieval.Semantic``) and with which
    # model: the as-of page replays a ranking with the model it had.
    semantic = models.CharField(max_length=20, blank=True, db_default="")
    model = models.CharField(max_length=200, blank=True, db_default="")
    # The partition key of the recall log on PostgreSQL (ledger.reads.recall_log): the database's
    # primary key is (id, recalled_at); ids still come from one sequence, unique.
    recalled_at = models.DateTimeField()

    objects = RecallQuerySet.as_manager()

    class Meta:
        ordering = ["-recalled_at", "-id"]
        indexes = [
            models.Index(fields=["subject", "-recalled_at"], name="recall_subject_recent"),
            # A read's run beside its key: the cards count a memory's conversations by
            # looking each of its reads up here alone, never in the log's rows.
            models.Index(fields=["id", "recalled_at"], include=["run"], name="recall_id_run"),
            # Support's search looks among the newest goals first.
            models.Index(fields=["-recalled_at", "-id"], name="recall_newest"),
        ]

    def __str__(self) -> str:
        return f"recall of {self.subject_id} at {self.recalled_at:%Y-%m-%d %H:%M}"


class RecallItem(models.Model):
    # On PostgreSQL the recall log is partitioned by month (ledger.reads.recall_log), and the
    # database links an item to its recall by (recall_id, recalled_at), cascading; Django
    # manages no constraint of its own here. ``recall_item_once`` (recall first) finds a
    # recall's items and ``recall_item_memory_reads`` a memory's, so neither key needs an
    # index of its own.
    recall = models.ForeignKey(
        Recall, on_delete=models.CASCADE, related_name="items", db_constraint=False, db_index=False
    )
    memory = models.ForeignKey(
        Memory, on_delete=models.CASCADE, related_name="recall_items", db_index=False
    )
    position = models.PositiveSmallIntegerField()
    rank = models.FloatField()
    # Why it was served (``ledger.rules.ranking.Why``): how it was chosen (a key, a kind,
    # relevance, or the newest for a recall without a goal), its lexical score and the
    # goal's words it contains, and its cosine with the goal (null: not compared).
    via = models.CharField(max_length=20, blank=True, db_default="")
    lexical = models.FloatField(null=True, blank=True)
    matched = models.CharField(max_length=500, blank=True, db_default="")
    semantic = models.FloatField(null=True, blank=True)
    # Copied from the recall: a memory's reads are listed newest first from an index of
    # its own, and the recall log is partitioned (and sharded) by these two columns.
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="+")
    recalled_at = models.DateTimeField()

    objects = RecallItemQuerySet.as_manager()

    class Meta:
        ordering = ["position"]
        constraints = [
            # The partition key is in it, as PostgreSQL requires; an item's time is its recall's.
            models.UniqueConstraint(
                fields=["recall", "memory", "recalled_at"], name="recall_item_once"
            )
        ]
        indexes = [
            # A memory's reads, newest first (its history page), and its reads' counts; with
            # the recall's id, so its cards count conversations from the index alone.
            models.Index(
                fields=["memory", "-recalled_at"],
                include=["recall"],
                name="recall_item_memory_reads",
            )
        ]

    def __str__(self) -> str:
        return f"#{self.position} (rank {self.rank:.3f})"
