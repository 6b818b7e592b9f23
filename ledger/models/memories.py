"""Subjects and what is remembered about them: memories, their sources, conflicts and
the write gate's decisions."""

from __future__ import annotations

import functools
import operator
import uuid
from collections.abc import Sequence
from datetime import datetime

from django.conf import settings
from django.contrib.postgres.search import SearchQuery, SearchVector, SearchVectorExact
from django.db import connections, models
from django.db.models import Case, Count, Exists, OuterRef, Q, Subquery, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from ledger import access, choices
from ledger.choices import (
    CORRECTIONS,
    ActorRole,
    ConflictStatus,
    MemoryKind,
    MemoryStatus,
    Outcome,
)
from ledger.models.agents import Agent
from ledger.models.history import tracked
from ledger.models.runs import Run
from ledger.rules.memories import ACTIONABLE_MEMORY, LIVE_MEMORY, RETRACTABLE_MEMORY


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


def open_conflict(via: str = "") -> Q:
    return Q(**{f"{via}status": ConflictStatus.OPEN})


class SubjectQuerySet(models.QuerySet["Subject"]):
    def visible_to(self, user: access.Person) -> SubjectQuerySet:
        return self.filter(access.visible_subjects(user))

    def with_memory_counts(self) -> SubjectQuerySet:
        """Each subject's ``active`` and ``pending`` memories, counted in the same query.

        Each count is a subquery of its row, so a list of the first subjects counts the
        memories of those alone, never of every subject before it is cut."""

        def counted(status: str) -> Coalesce:
            # COUNT(*): read from the index on (subject, status) alone, no row fetched.
            rows = (
                Memory.objects.filter(subject=OuterRef("pk"), status=status)
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
        agent = Agent.objects.filter(name__iexact=text)
        matches = [
            self._by_statement(text),
            Q(pk__in=self.filter(sources__ref=text).values("pk")),
            Q(run__ref=text),
            # The agent named is looked up first, once (the Exists): when none is, no
            # memory is read for this way at all.
            Q(Exists(agent), agent__in=agent),
        ]
        if by_subject:
            named = Subject.objects.filter(Q(ref__icontains=text) | Q(display_name__icontains=text))
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
        named = Subject.objects.filter(ref=text).values("pk")[:1]
        exact = self.filter(Q(subject_id=Subquery(named)) | Q(key=text))
        return exact if exact.exists() else self.filter(self._by_statement(text))

    def _by_statement(self, text: str) -> Q:
        """The statement matches ``text``, in the form PostgreSQL reads fastest for it. A
        list newest first walks the time index and tests each row for the words: a common
        word fills a page within a few hundred rows, but a rare one reads every memory
        (15 s at a million). So the matches are first taken from the words' index alone,
        unordered, up to ``RARE_WORD_ROWS``: when that is all of them, the list is read by
        their ids."""
        matches = _statement_matches(self.db, text)
        # The words alone: the list's own filters and joins would spoil the index's plan.
        words = self.model._default_manager.filter(matches)
        found = list(words.order_by().values_list("pk", flat=True)[: RARE_WORD_ROWS + 1])
        return Q(pk__in=found) if len(found) <= RARE_WORD_ROWS else matches

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
        memories: Sequence[uuid.UUID] = (),
    ) -> MemoryQuerySet:
        """What a batch retraction takes: memories a deletion may still reach, matching
        every criterion given. A source reference matches any of a memory's sources; a run,
        the run that wrote it or any source's run; an agent, the agent that wrote it;
        ``memories``, those ticked one by one.

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
        if memories:
            queryset = queryset.filter(pk__in=memories)
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
# How many memories a word may be in to be matched by their ids (``_by_statement``).
RARE_WORD_ROWS = 1_000


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


class ConflictQuerySet(models.QuerySet["Conflict"]):
    def open(self) -> ConflictQuerySet:
        return self.filter(open_conflict())

    def with_active_sides(self) -> ConflictQuerySet:
        """Each conflict's memories in use, as ``active_sides``: a memory waiting for a
        person (a guess, a held write) is no side yet, and the subject's page shows a
        conflict only once it has two sides (``ConflictView.sides``)."""
        return self.annotate(
            active_sides=Count(
                "memories", filter=Q(memories__status=MemoryStatus.ACTIVE), distinct=True
            )
        )

    def visible_to(self, user: access.Person) -> ConflictQuerySet:
        return self.filter(access.visible_subjects(user, via="subject__"))


class WriteDecisionQuerySet(models.QuerySet["WriteDecision"]):
    def refused_during(self, run: Run) -> WriteDecisionQuerySet:
        """The writes the gate refused that named this run (their source's run)."""
        return self.filter(outcome=Outcome.REFUSED, run=run)


class Subject(models.Model):
    """An account or a person that memories are about. Its owner is the end user."""

    ref = models.CharField(max_length=100, unique=True)
    display_name = models.CharField(max_length=200, blank=True, default="")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="subjects",
    )
    memory_paused = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    history = tracked()
    objects = SubjectQuerySet.as_manager()

    class Meta:
        ordering = ["ref"]

    def __str__(self) -> str:
        return self.display_name or self.ref

    @property
    def name(self) -> str:
        return self.display_name or self.ref


class Source(models.Model):
    """Where a claim came from: a message, a tool result, an operator, an import."""

    Kind = choices.SourceKind

    kind = models.CharField(max_length=20, choices=Kind.choices)
    ref = models.CharField(max_length=200)
    run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="sources"
    )
    turn = models.PositiveIntegerField(null=True, blank=True)
    excerpt = models.TextField(blank=True, default="")
    received_at = models.DateTimeField()
    # Evidence for a memory; a ledger entry points at its source instead.
    memory = models.ForeignKey(
        "Memory", null=True, blank=True, on_delete=models.CASCADE, related_name="sources"
    )

    history = tracked()
    objects = SourceQuerySet.as_manager()

    class Meta:
        ordering = ["received_at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=["user_message", "tool_result", "operator", "import"]),
                name="source_kind_valid",
            ),
            models.CheckConstraint(condition=~Q(ref=""), name="source_ref_not_empty"),
        ]
        indexes = [
            # Support finds everything one message or tool result wrote by its reference.
            models.Index(fields=["ref"], name="source_ref"),
            # Support's search looks among the newest excerpts first.
            models.Index(
                fields=["-received_at", "-id"], name="source_newest", condition=~Q(excerpt="")
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind}:{self.ref}"


class Memory(models.Model):
    """One claim somebody chose to keep about a subject."""

    Kind = choices.MemoryKind
    Basis = choices.Basis
    Status = choices.MemoryStatus

    STATEMENT_MAX = 200

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="memories")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    key = models.CharField(max_length=100, blank=True, default="")
    statement = models.CharField(max_length=STATEMENT_MAX)
    # Lower-cased, white space folded: what duplicate detection compares.
    normalized = models.CharField(max_length=STATEMENT_MAX)
    basis = models.CharField(max_length=10, choices=Basis.choices)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.ACTIVE)
    # How it became stated (``choices.StatedBy``): "" when the person said it,
    # "confirmation" when they confirmed a guess, "correction" when they rewrote it, and
    # "support_confirmation" / "support_correction" when support did.
    stated_by = models.CharField(max_length=20, blank=True, default="")
    written_at = models.DateTimeField()
    confirmed_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    review_at = models.DateTimeField(null=True, blank=True)
    status_changed_at = models.DateTimeField(null=True, blank=True)
    # The person's "true, but don't use it": kept and shown to them, and still live for the
    # gate (duplicates, conflicts, the cap, expiry), but never given to an agent.
    # A database default too: rows inserted in bulk outside the ORM are usable, not withheld.
    withheld = models.BooleanField(default=False, db_default=False)
    supersedes = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="superseded_by"
    )
    # A revert: this memory puts back the words of the one named here (the memory a
    # correction replaced, or the replacement a revert undid).
    restores = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="restored_by"
    )
    # The policy version (``Policy.version``) in force when the write gate accepted it.
    policy_version = models.PositiveIntegerField(null=True, blank=True)
    agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="memories"
    )
    run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="memories"
    )
    version = models.PositiveIntegerField(default=1)

    history = tracked()
    objects = MemoryQuerySet.as_manager()

    class Meta:
        ordering = ["-written_at"]
        verbose_name_plural = "memories"
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=["preference", "account_fact", "episode"]),
                name="memory_kind_valid",
            ),
            models.CheckConstraint(
                condition=Q(basis__in=["stated", "inferred"]), name="memory_basis_valid"
            ),
            models.CheckConstraint(
                condition=Q(
                    status__in=["active", "pending", "superseded", "retracted", "expired", "erased"]
                ),
                name="memory_status_valid",
            ),
            # Erasure blanks the statement; every other row must say something.
            models.CheckConstraint(
                condition=Q(status="erased") | ~Q(statement=""), name="memory_statement_not_empty"
            ),
            # A guess always has an end.
            models.CheckConstraint(
                condition=~Q(basis="inferred", expires_at__isnull=True),
                name="memory_inferred_expires",
            ),
        ]
        indexes = [
            # Support's search lists memories across subjects newest first, a page at a time.
            models.Index(fields=["-written_at", "-id"], name="memory_newest_first"),
            # Support's queue of guesses waiting for confirmation, oldest first.
            models.Index(
                fields=["written_at", "id"],
                name="memory_pending_queue",
                condition=Q(status="pending"),
            ),
            # Recall and the subject page: a subject's live memories by expiry.
            models.Index(fields=["subject", "status", "expires_at"], name="memory_subject_live"),
            models.Index(fields=["subject", "key"], name="memory_subject_key"),
            # The Django admin finds a slot's memories across subjects.
            models.Index(fields=["key"], name="memory_key", condition=~Q(key="")),
            models.Index(fields=["subject", "normalized"], name="memory_subject_normalized"),
            # The expiry sweep, in its order (expiry, then id), so that a batch reads its
            # rows and no more, however many share an expiry; and review reminders.
            models.Index(
                fields=["expires_at", "id"],
                name="memory_due",
                condition=Q(status__in=["active", "pending"]),
            ),
            models.Index(
                fields=["review_at"],
                name="memory_reviewable",
                condition=Q(status__in=["active", "pending", "expired"]),
            ),
        ]

    def __str__(self) -> str:
        return self.statement

    @property
    def etag(self) -> str:
        return f'"{self.version}"'


class Conflict(models.Model):
    """Two or more active memories in one subject + key slot that disagree; or, marked
    ``possible``, a new memory whose words likely contradict a live memory or a commitment
    in force (``ledger.rules.contradictions``), with or without a key."""

    Status = choices.ConflictStatus
    Resolution = choices.ConflictResolution

    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="conflicts")
    key = models.CharField(max_length=100, blank=True, default="")
    memories = models.ManyToManyField(Memory, related_name="conflicts")
    possible = models.BooleanField(default=False)
    # The ledger commitment a possible conflict's memory contradicts, when it is one.
    commitment = models.ForeignKey(
        "LedgerEntry", null=True, blank=True, on_delete=models.CASCADE, related_name="conflicts"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    opened_at = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolution = models.CharField(
        max_length=10, choices=choices.ConflictResolution.choices, blank=True, default=""
    )
    # The memory left standing when a person settled it: the one kept, or their rewrite.
    kept = models.ForeignKey(
        Memory, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    history = tracked()
    objects = ConflictQuerySet.as_manager()

    class Meta:
        ordering = ["-opened_at"]
        # Support's queue of conflicts to resolve, oldest first.
        indexes = [
            models.Index(
                fields=["opened_at", "id"], name="conflict_open_queue", condition=Q(status="open")
            )
        ]
        constraints = [
            # At most one open conflict per slot: new contenders join it. Possible conflicts
            # are pairs, not slots, so a slot may also have those.
            models.UniqueConstraint(
                fields=["subject", "key"],
                condition=Q(status="open", possible=False),
                name="conflict_one_open_per_slot",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.subject.ref}:{self.key}"


class WriteDecision(models.Model):
    """What the write gate decided for one request, and why. Append-only."""

    Outcome = choices.Outcome

    agent = models.ForeignKey(Agent, null=True, on_delete=models.SET_NULL, related_name="+")
    subject = models.ForeignKey(
        Subject, null=True, on_delete=models.CASCADE, related_name="write_decisions"
    )
    memory = models.ForeignKey(
        Memory, null=True, on_delete=models.SET_NULL, related_name="write_decisions"
    )
    source = models.ForeignKey(Source, null=True, on_delete=models.SET_NULL, related_name="+")
    # The run the write named, when it existed: a refused write stores no source, and the
    # run page lists what the gate refused during the run by this.
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    outcome = models.CharField(max_length=10, choices=Outcome.choices)
    code = models.CharField(max_length=40, blank=True, default="")
    reason = models.TextField()
    decided_at = models.DateTimeField()

    objects = WriteDecisionQuerySet.as_manager()

    class Meta:
        ordering = ["-decided_at", "-id"]
        # The Django admin lists every decision newest first, or those of one code.
        indexes = [
            models.Index(fields=["-decided_at", "-id"], name="write_decision_newest"),
            models.Index(fields=["code", "-decided_at", "-id"], name="write_decision_code"),
        ]

    def __str__(self) -> str:
        return f"{self.outcome}: {self.reason}"
