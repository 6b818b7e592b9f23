"""Reads, as chainable QuerySet methods. Views and the API ask these, never raw filters."""

from __future__ import annotations

import functools
import operator
import uuid
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict

from django.contrib.postgres.search import SearchQuery, SearchVector, SearchVectorExact
from django.db import connections, models
from django.db.models import Case, Count, Exists, F, Max, OuterRef, Q, Subquery, Value, When
from django.db.models.functions import Cast, Coalesce
from django.utils import timezone

from ledger import access
from ledger.choices import (
    CORRECTIONS,
    ActorRole,
    Audience,
    ConflictStatus,
    JournalState,
    LedgerKind,
    LedgerStatus,
    MemoryKind,
    MemoryStatus,
    Outcome,
)
from ledger.policy import ACTIONABLE_MEMORY, LIVE_MEMORY, RETRACTABLE_MEMORY
from ledger.webhooks import DeliveryStatus, quoted_event

if TYPE_CHECKING:
    # The models import this module, so it names them for the type checker only; the
    # QuerySet[...] parameters below are strings ruff does not count as uses.
    from ledger.models import (  # noqa: F401
        Agent,
        AgentKey,
        Conflict,
        JournalEntry,
        LedgerEntry,
        Memory,
        Recall,
        RecallItem,
        Reminder,
        RetractionBatch,
        Run,
        Source,
        Subject,
        WebhookDelivery,
        WebhookEndpoint,
        WriteDecision,
    )


def _between(field: str, start: datetime | None, end: datetime | None) -> Q:
    """``field`` at or after ``start`` and before ``end``: the half-open windows support asks
    about (``ledger.dates.day_window``); an end left as None is open."""
    window = Q()
    if start is not None:
        window &= Q(**{f"{field}__gte": start})
    if end is not None:
        window &= Q(**{f"{field}__lt": end})
    return window


# Rules a query may need to ask of a related row: ``via`` is the path to it ("memory__"),
# so that a query joining the row asks the same rule as the row's own QuerySet method.


def servable_memory(now: datetime, via: str = "") -> Q:
    """What an agent may be given: active, not past its expiry at ``now``, and not withheld
    by the person."""
    return Q(**{f"{via}status": MemoryStatus.ACTIVE, f"{via}withheld": False}) & (
        Q(**{f"{via}expires_at__isnull": True}) | Q(**{f"{via}expires_at__gt": now})
    )


def ledger_entry_in_force(now: datetime, via: str = "") -> Q:
    """Active and not past expiry at ``now``, whatever the sweep has done so far."""
    return Q(**{f"{via}status": LedgerStatus.ACTIVE}) & (
        Q(**{f"{via}expires_at__isnull": True}) | Q(**{f"{via}expires_at__gt": now})
    )


def open_conflict(via: str = "") -> Q:
    return Q(**{f"{via}status": ConflictStatus.OPEN})


class SubjectQuerySet(models.QuerySet["Subject"]):
    def visible_to(self, user: access.Person) -> SubjectQuerySet:
        return self.filter(access.visible_subjects(user))

    def with_memory_counts(self) -> SubjectQuerySet:
        """Each subject's ``active`` and ``pending`` memories, counted in the same query.

        Each count is a subquery of its row, so a list of the first subjects counts the
        memories of those alone, never of every subject before it is cut."""
        memories = self.model._meta.get_field("memories").related_model

        def counted(status: str) -> Coalesce:
            # COUNT(*): read from the index on (subject, status) alone, no row fetched.
            rows = (
                memories._default_manager.filter(subject=OuterRef("pk"), status=status)
                .order_by()
                .values("subject")
                .annotate(n=Count("*"))
                .values("n")
            )
            return Coalesce(Subquery(rows), 0)

        return self.annotate(
            active=counted(MemoryStatus.ACTIVE), pending=counted(MemoryStatus.PENDING)
        )

    def with_status_counts(self) -> SubjectQuerySet:
        """Each subject's memories counted by status (``count_<status>``, every status of
        ``MemoryStatus``) and whether it has an open conflict (``in_conflict``), in the
        same query as the subjects."""
        counts = {
            f"count_{status}": Count("memories", filter=Q(memories__status=status))
            for status in MemoryStatus.values
        }
        conflicted = self.model.objects.filter(
            pk=OuterRef("pk"), conflicts__status=ConflictStatus.OPEN
        )
        return self.annotate(**counts, in_conflict=Exists(conflicted))

    def named_in(self, batch: RetractionBatch) -> SubjectQuerySet:
        """The subjects a batch retraction took memories from."""
        return self.filter(memories__retraction_items__batch=batch).distinct()


class MemoryQuerySet(models.QuerySet["Memory"]):
    def visible_to(self, user: access.Person) -> MemoryQuerySet:
        return self.filter(access.visible_subjects(user, via="subject__"))

    def for_subject(self, subject: Subject) -> MemoryQuerySet:
        return self.filter(subject=subject)

    def live(self) -> MemoryQuerySet:
        """Active or pending: rows the gate compares new writes against."""
        return self.filter(status__in=LIVE_MEMORY)

    def servable(self, now: datetime | None = None) -> MemoryQuerySet:
        """What an agent may be given (``servable_memory``) at ``now``, by default this
        moment. The one rule every recall path (ranking, conflicts) asks."""
        return self.filter(servable_memory(now or timezone.now()))

    def in_slot(self, subject: Subject, key: str) -> MemoryQuerySet:
        return self.filter(subject=subject, key=key)

    def due_to_expire(self, now: datetime | None = None) -> MemoryQuerySet:
        now = now or timezone.now()
        return self.filter(status__in=LIVE_MEMORY, expires_at__lte=now)

    def due_for_review(self, now: datetime | None = None) -> MemoryQuerySet:
        now = now or timezone.now()
        return self.filter(status__in=LIVE_MEMORY, review_at__lte=now)

    def found_by(self, text: str) -> MemoryQuerySet:
        """Support's search box: memories matching any of ``search_matches(text)``."""
        return self.filter(functools.reduce(operator.or_, self.search_matches(text)))

    def search_matches(self, text: str, *, by_subject: bool = True) -> list[Q]:
        """Each way a memory matches support's search box, one condition each, every one
        served by an index of its own: its statement matches ``text``, its subject's
        reference or name contains it (unless ``by_subject`` is false: a page that found
        no such subject says so), or ``text`` names it by source, run or agent.

        A list, so that a page can find its first rows by each way apart and merge them
        (``ledger.views.paging.keyset_page``): ORed in one query, they would read every
        memory. A memory has many sources, so they are matched in a subquery: each once.
        """
        subjects = self.model._meta.get_field("subject").related_model._default_manager
        agents = self.model._meta.get_field("agent").related_model._default_manager
        agent = agents.filter(name__iexact=text)
        matches = [
            _statement_matches(self.db, text),
            Q(pk__in=self.filter(sources__ref=text).values("pk")),
            Q(run__ref=text),
            # The agent named is looked up first, once (the Exists): when none is, no
            # memory is read for this way at all.
            Q(Exists(agent), agent__in=agent),
        ]
        if by_subject:
            named = subjects.filter(Q(ref__icontains=text) | Q(display_name__icontains=text))
            matches.append(Q(subject__in=named))
        return matches

    def looked_up(self, text: str) -> MemoryQuerySet:
        """The Django admin's search: ``text`` exactly as a memory's id, a subject's
        reference or a slot key; when it is none of these, the words of the statement (as
        support's search matches them). Each an index lookup, never a substring test of
        every row."""
        if not text:
            return self
        try:
            return self.filter(pk=uuid.UUID(text))
        except ValueError:
            pass
        # A subquery of one value, run once: the lookup of the subject's memories is then
        # by index, as the slot's is.
        subject = self.model._meta.get_field("subject").related_model
        named = subject._default_manager.filter(ref=text).values("pk")[:1]
        exact = self.filter(Q(subject_id=Subquery(named)) | Q(key=text))
        return exact if exact.exists() else self.filter(_statement_matches(self.db, text))

    def written_between(self, start: datetime | None, end: datetime | None) -> MemoryQuerySet:
        """Written at or after ``start`` and before ``end``; either may be left open."""
        return self.filter(_between("written_at", start, end))

    def in_open_conflict(self) -> MemoryQuerySet:
        return self.filter(pk__in=self.filter(conflicts__status=ConflictStatus.OPEN).values("pk"))

    def pending(self) -> MemoryQuerySet:
        """Guesses waiting for the person's (or support's) confirmation."""
        return self.filter(status=MemoryStatus.PENDING)

    def expiring_within(self, now: datetime, until: datetime) -> MemoryQuerySet:
        """Live now, and dying after ``now`` but no later than ``until``."""
        return self.filter(status__in=LIVE_MEMORY, expires_at__gt=now, expires_at__lte=until)

    def shown_on_subject_page(self) -> MemoryQuerySet:
        """What a person's page lists by default: what they may still act on."""
        return self.filter(status__in=ACTIONABLE_MEMORY)

    def in_subject_page_order(self) -> MemoryQuerySet:
        """As the subject page lists them, a page at a time: the questions (pending) first,
        then each kind under its heading (``MemoryKind``'s order), newest first."""
        return self.alias(page_heading=_page_heading()).order_by(
            "page_heading", "-written_at", "-pk"
        )

    def subject_page_counts(self) -> dict[str, int]:
        """How many of these each heading of the subject page holds, in one query:
        ``pending`` (the questions), then each kind of the rest, in the page's order."""
        pending = Q(status=MemoryStatus.PENDING)
        counted = {MemoryStatus.PENDING.value: Count("pk", filter=pending)}
        for kind in MemoryKind.values:
            counted[kind] = Count("pk", filter=Q(kind=kind) & ~pending)
        return self.order_by().aggregate(**counted)

    def position_on_subject_page(self, memory: Memory) -> int | None:
        """How many of these come before ``memory`` in the subject page's order (so which
        page holds it), or None when it is not among them. One query."""
        heading = _heading_of(memory)
        before = (
            Q(page_heading__lt=heading)
            | Q(page_heading=heading, written_at__gt=memory.written_at)
            | Q(page_heading=heading, written_at=memory.written_at, pk__gt=memory.pk)
        )
        found = (
            self.order_by()
            .alias(page_heading=_page_heading())
            .aggregate(before=Count("pk", filter=before), here=Count("pk", filter=Q(pk=memory.pk)))
        )
        return found["before"] if found["here"] else None

    def written_in(self, run: Run) -> MemoryQuerySet:
        """What a run wrote: memories it created, and any whose evidence came from it (a
        repeat the gate merged into an earlier memory)."""
        # One subquery of both ways, each by its index on the run: ORed, the two would
        # have every memory read. A memory with many sources from the run comes once.
        created = self.model._default_manager.filter(run=run).values("pk")
        evidenced = self.model._default_manager.filter(sources__run=run).values("pk")
        return self.filter(pk__in=created.union(evidenced))

    def matching(self, text: str) -> MemoryQuerySet:
        """A person's search within their memories: every word must appear in the statement."""
        queryset = self
        for word in text.split():
            queryset = queryset.filter(statement__icontains=word)
        return queryset

    def selected_for_retraction(
        self,
        *,
        source_ref: str = "",
        run: str = "",
        agent: str = "",
        written_after: datetime | None = None,
        written_before: datetime | None = None,
    ) -> MemoryQuerySet:
        """What a batch retraction takes: memories a deletion may still reach, matching
        every criterion given. A source reference matches any of a memory's sources; a run,
        the run that wrote it or any source's run; an agent, the agent that wrote it.

        Criteria on sources are subqueries, so a memory with many sources appears once.
        """
        queryset = self.filter(status__in=RETRACTABLE_MEMORY)
        if source_ref:
            queryset = queryset.filter(pk__in=self.filter(sources__ref=source_ref).values("pk"))
        if run:
            from_run = self.filter(Q(run__ref=run) | Q(sources__run__ref=run)).values("pk")
            queryset = queryset.filter(pk__in=from_run)
        if agent:
            queryset = queryset.filter(agent__name=agent)
        if written_after is not None:
            queryset = queryset.filter(written_at__gt=written_after)
        if written_before is not None:
            queryset = queryset.filter(written_at__lt=written_before)
        return queryset

    def corrections(self) -> MemoryQuerySet:
        """Memories that replaced another on the dashboard: a person's or support's
        correction (``choices.CORRECTIONS``), or an admin's revert (``restores`` set). An
        agent's correction through the API is a write like any other, and not one of them."""
        return self.filter(supersedes__isnull=False).filter(
            Q(stated_by__in=CORRECTIONS) | Q(restores__isnull=False)
        )

    def written_by(self, *, role: str = "", actor: str = "") -> MemoryQuerySet:
        """First saved by someone then in ``role`` (``choices.ActorRole``) and, if given, by
        the actor labelled ``actor`` (``user:sam``), as each memory's first history row says."""
        first = self.model.history.filter(id=OuterRef("pk"), history_type="+")
        if role:
            first = first.filter(history_role=role)
        if actor:
            first = first.filter(history_actor=actor)
        return self.filter(Exists(first))

    def with_author(self) -> MemoryQuerySet:
        """Who first saved each memory, from its first history row: ``author`` (the actor's
        label), ``author_role`` (their role then) and ``author_reason`` (why)."""
        first = self.model.history.filter(id=OuterRef("pk")).order_by("history_date", "history_id")
        return self.annotate(
            author=Subquery(first.values("history_actor")[:1]),
            author_role=Subquery(first.values("history_role")[:1]),
            author_reason=Subquery(first.values("history_change_reason")[:1]),
        )


# The subject page's headings in order: its questions (pending), then each kind of the rest.
PAGE_HEADINGS: tuple[str, ...] = (MemoryStatus.PENDING, *MemoryKind.values)


def _page_heading() -> Case:
    """The place of a memory's heading among ``PAGE_HEADINGS``, in SQL."""
    return Case(
        When(status=MemoryStatus.PENDING, then=Value(0)),
        *(When(kind=kind, then=Value(n)) for n, kind in enumerate(MemoryKind.values, start=1)),
        default=Value(len(PAGE_HEADINGS)),
    )


def _heading_of(memory: Memory) -> int:
    """``_page_heading`` of one memory already loaded."""
    if memory.status == MemoryStatus.PENDING:
        return 0
    kinds = list(MemoryKind.values)
    return kinds.index(memory.kind) + 1 if memory.kind in kinds else len(PAGE_HEADINGS)


class SourceQuerySet(models.QuerySet["Source"]):
    def agent_count(self) -> int:
        """How many different agents gave these sources, as each source's first history row
        says. One agent's sources count once, however many messages or tools they name;
        evidence a person or an admin stored (a correction, a revert's copies) is no agent's."""
        first = self.model.history.filter(
            id__in=self.values("id"), history_type="+", history_role=ActorRole.AGENT
        )
        return int(first.values("history_actor").distinct().count())


# The text search configuration of recall, support's search and the GIN index in migration
# 0003: the planner uses the index only for this exact expression, so change them together.
SEARCH_CONFIG = "english"


def _statement_matches(db: str, text: str) -> Q:
    """The statement matches ``text``: the only database-specific part of support's search.

    PostgreSQL: full-text search (stems, so "phone" finds "phoned"), with the web search
    syntax people expect ("quoted phrases", -excluded) and never an error for odd input.
    Elsewhere: every word must appear, as on a person's own page.
    """
    if connections[db].vendor == "postgresql":
        vector = SearchVector("statement", config=SEARCH_CONFIG)
        query = SearchQuery(text, config=SEARCH_CONFIG, search_type="websearch")
        return Q(SearchVectorExact(vector, query))
    every_word = Q()
    for word in text.split():
        every_word &= Q(statement__icontains=word)
    return every_word


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
                conversations=Count("recall__run", distinct=True)
                + Count("pk", filter=Q(recall__run__isnull=True)),
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


class ConflictQuerySet(models.QuerySet["Conflict"]):
    def open(self) -> ConflictQuerySet:
        return self.filter(open_conflict())

    def visible_to(self, user: access.Person) -> ConflictQuerySet:
        return self.filter(access.visible_subjects(user, via="subject__"))


class LedgerEntryQuerySet(models.QuerySet["LedgerEntry"]):
    def in_force(self, now: datetime | None = None) -> LedgerEntryQuerySet:
        """In force (``ledger_entry_in_force``) at ``now``, by default this moment."""
        return self.filter(ledger_entry_in_force(now or timezone.now()))

    def stale(self, now: datetime | None = None) -> LedgerEntryQuerySet:
        now = now or timezone.now()
        return self.filter(
            Q(status=LedgerStatus.EXPIRED) | Q(status=LedgerStatus.ACTIVE, expires_at__lte=now)
        )

    def visible_to(self, user: access.Person) -> LedgerEntryQuerySet:
        return self.filter(access.visible_subjects(user, via="subject__"))

    def due_to_expire(self, now: datetime | None = None) -> LedgerEntryQuerySet:
        now = now or timezone.now()
        return self.filter(status=LedgerStatus.ACTIVE, expires_at__lte=now)

    def superseded(self) -> LedgerEntryQuerySet:
        return self.filter(status=LedgerStatus.SUPERSEDED)

    def withdrawn(self) -> LedgerEntryQuerySet:
        return self.filter(status=LedgerStatus.WITHDRAWN)

    def shown_to_owner(self, now: datetime | None = None) -> LedgerEntryQuerySet:
        """What an end user sees about themselves: commitments and proposals in force."""
        return self.in_force(now).filter(kind__in=(LedgerKind.COMMITMENT, LedgerKind.PROPOSAL))

    def contradictions(self, now: datetime | None = None) -> list[list[LedgerEntry]]:
        """Groups of in-force established entries on one subject and key whose facts differ.

        Nothing picks a winner: every entry in a group is returned, oldest first.
        """
        groups: dict[tuple[int, str], list[LedgerEntry]] = {}
        rows = (
            self.in_force(now)
            .filter(kind=LedgerKind.ESTABLISHED)
            .exclude(key="")
            .select_related("subject")
            .order_by("subject_id", "key", "recorded_at")
        )
        for entry in rows:
            groups.setdefault((entry.subject_id, entry.key), []).append(entry)
        return [
            group
            for group in groups.values()
            if len({" ".join(e.fact.casefold().split()) for e in group}) > 1
        ]

    def commitments_to_carry(
        self, subject: Subject | None, now: datetime | None = None
    ) -> list[str]:
        """The facts every compaction of a run about ``subject`` must carry word for word."""
        if subject is None:
            return []
        rows = self.in_force(now).filter(subject=subject, kind=LedgerKind.COMMITMENT)
        return list(rows.order_by("recorded_at").values_list("fact", flat=True))


class JournalEntryQuerySet(models.QuerySet["JournalEntry"]):
    def unresolved(self, intended_older_than: datetime) -> JournalEntryQuerySet:
        """Unknown outcomes, and intents that never reported back in time."""
        return self.filter(
            Q(state=JournalState.UNKNOWN)
            | Q(state=JournalState.INTENDED, created_at__lte=intended_older_than)
        )

    def of_agent(self, agent: Agent) -> JournalEntryQuerySet:
        return self.filter(agent=agent)

    def steps(self) -> models.QuerySet[Any]:
        """Every recorded version of these entries (intended, outcome unknown, done…), each
        entry's oldest first, in one query however many entries and steps there are."""
        history = self.model.history
        rows: models.QuerySet[Any] = history.filter(id__in=self.values("pk"))
        return rows.order_by("id", "history_date", "history_id")


class ReminderQuerySet(models.QuerySet["Reminder"]):
    def open(self) -> ReminderQuerySet:
        """Not yet cleared by a review of the memory."""
        return self.filter(cleared_at__isnull=True)

    def actionable(self) -> ReminderQuerySet:
        """Open, about a memory a person can still act on: one deleted, superseded or
        erased by any path needs no review any more."""
        return self.open().filter(memory__status__in=ACTIONABLE_MEMORY)

    def unread(self) -> ReminderQuerySet:
        return self.actionable().filter(read_at__isnull=True)

    def unsent(self) -> ReminderQuerySet:
        return self.actionable().filter(sent_at__isnull=True)

    def for_person(self, user: access.Person) -> ReminderQuerySet:
        """A person's own reminders, plus the support queue for support and admins.

        Always limited to memories the person may still see, so a former owner loses
        the reminders of a subject that changed hands.
        """
        if access.role_of(user) is None:
            return self.none()
        mine = Q(audience=Audience.OWNER, recipient=user)
        if access.is_staff(user):
            mine |= Q(audience=Audience.SUPPORT)
        return self.filter(mine, access.visible_subjects(user, via="memory__subject__"))


class RunQuerySet(models.QuerySet["Run"]):
    def of_agent(self, agent: Agent) -> RunQuerySet:
        """A run is the business of the agent that started it, and of nobody else's key."""
        return self.filter(agent=agent)


class AgentKeyQuerySet(models.QuerySet["AgentKey"]):
    def working_at(self, now: datetime) -> AgentKeyQuerySet:
        """Keys that authenticate at ``now``: their agent not revoked, their grace not over."""
        return self.filter(agent__is_active=True).filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=now)
        )


class WebhookEndpointQuerySet(models.QuerySet["WebhookEndpoint"]):
    def subscribed_to(self, event: str) -> WebhookEndpointQuerySet:
        """The active endpoints that asked for ``event``. Their events are read as JSON text,
        which holds each name in quotes: the same on PostgreSQL and SQLite (whose JSON has
        no containment lookup), and the table is a handful of rows."""
        return self.annotate(events_text=Cast("events", models.TextField())).filter(
            active=True, events_text__contains=quoted_event(event)
        )

    def with_counts(self) -> WebhookEndpointQuerySet:
        """Each endpoint with how many of its deliveries wait, and how many failed."""
        return self.annotate(
            pending=Count("deliveries", filter=Q(deliveries__status=DeliveryStatus.PENDING)),
            failed=Count("deliveries", filter=Q(deliveries__status=DeliveryStatus.FAILED)),
        )


class WebhookDeliveryQuerySet(models.QuerySet["WebhookDelivery"]):
    def due(self, now: datetime) -> WebhookDeliveryQuerySet:
        """Waiting, and due to be tried by ``now``."""
        return self.filter(status=DeliveryStatus.PENDING, next_attempt_at__lte=now)

    def settled_before(self, cutoff: datetime) -> WebhookDeliveryQuerySet:
        """Delivered or failed, and filed before ``cutoff``: nothing left to send."""
        return self.exclude(status=DeliveryStatus.PENDING).filter(created_at__lt=cutoff)

    def about_subject(self, subject_id: int) -> WebhookDeliveryQuerySet:
        """Every event about the subject: filed under it, or under one of its runs."""
        return self.filter(Q(subject_id=subject_id) | Q(run__subject_id=subject_id))


class WriteDecisionQuerySet(models.QuerySet["WriteDecision"]):
    def refused_during(self, run: Run) -> WriteDecisionQuerySet:
        """The writes the gate refused that named this run (their source's run)."""
        return self.filter(outcome=Outcome.REFUSED, run=run)
