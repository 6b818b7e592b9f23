"""Retrieval: the one way memoryadmin finds memories for a goal or a complaint.

Recall, support's search, the complaint page and the MCP and client searches all come
here. The database narrows (a subject's servable memories; rows whose words match); the
ranking itself is ``ledger.rules.ranking``, words and meaning fused, the same on
PostgreSQL and SQLite. The goal's vector comes from ``ledger.embeddings``; when the
backend cannot give it (down, slow, not installed), ranking goes on by words alone and
says so (``Semantic.UNAVAILABLE``), with a log line: never an error.

``search_everything`` is support's search across every type that holds words (memories,
the ledger, excerpts, run goals, compactions): each type's candidates by words from the
database, ranked by the same function.
"""

from __future__ import annotations

import functools
import logging
import operator
import re
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

import numpy as np
import numpy.typing as npt
from django.contrib.postgres.search import (
    SearchConfig,
    SearchQuery,
    SearchVector,
    SearchVectorExact,
    SearchVectorField,
)
from django.db import OperationalError, connections, transaction
from django.db.models import (
    BigIntegerField,
    Count,
    F,
    Func,
    JSONField,
    Max,
    Model,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
)
from django.db.models.expressions import Combinable, OrderBy
from django.db.models.functions import Cast, Coalesce

from ledger import access
from ledger.choices import Basis
from ledger.embeddings import EmbeddingUnavailable, configured_model, embedder, from_bytes
from ledger.models import (
    SEARCH_CONFIG,
    LedgerEntry,
    Memory,
    Recall,
    Run,
    Snapshot,
    Source,
    Subject,
)
from ledger.rules import ranking
from ledger.rules.ranking import Candidate, Why

logger = logging.getLogger(__name__)

# A goal is a sentence or two; more words than this add nothing to the ranking.
GOAL_TERMS_MAX = 64
_WORD = re.compile(r"[^\W_]+")


class Semantic(StrEnum):
    """Whether meaning took part in a ranking, as the API, the log and the trace say."""

    USED = "used"
    # Some candidates have no vector yet (just written, or a model change in progress):
    # those were ranked by their words.
    PARTIAL = "partial"
    # The backend could not embed the goal: words alone.
    UNAVAILABLE = "unavailable"
    OFF = "off"
    # No goal: the newest memories, stated first.
    NO_GOAL = "no goal"


@dataclass(frozen=True)
class Ranked:
    memory: Memory
    rank: float
    why: Why | None = None


@dataclass(frozen=True)
class Ranking:
    memories: list[Ranked]
    semantic: Semantic
    model: str


def goal_terms(goal: str) -> list[str]:
    """The distinct words of a goal, lower-cased, letters and digits only."""
    terms = dict.fromkeys(_WORD.findall(goal.casefold()))
    return list(terms)[:GOAL_TERMS_MAX]


def goal_vector(goal: str) -> tuple[npt.NDArray[np.float32] | None, Semantic, str]:
    """The goal's vector, whether meaning can rank, and the model's name."""
    model = configured_model()
    if model is None:
        return None, Semantic.OFF, ""
    try:
        backend = embedder()
        assert backend is not None
        return backend.embed([goal])[0], Semantic.USED, backend.model
    except EmbeddingUnavailable as error:
        # The reason only: the goal is the agent's words about a person.
        logger.warning("Ranking by words alone: %s", error)
        return None, Semantic.UNAVAILABLE, model


def candidates_of(memories: Iterable[Memory], model: str, dimensions: int) -> list[Candidate]:
    """``memories`` as ranking candidates, each with its vector when it has one of
    ``model`` and ``dimensions`` (annotated by ``with_vectors``): a vector of another shape
    (a model swapped behind an unchanged name) is as good as none."""
    return [
        Candidate(
            id=memory.pk,
            text=memory.statement,
            stated=memory.basis == Basis.STATED,
            newness=(memory.confirmed_at or memory.written_at).timestamp(),
            vector=_vector(memory, model, dimensions),
            key=memory.key,
            kind=memory.kind,
        )
        for memory in memories
    ]


def _vector(memory: Memory, model: str, dimensions: int) -> npt.NDArray[np.float32] | None:
    stored = getattr(memory, "embedding", None)
    if stored is None or getattr(memory, "embedding_model", "") != model:
        return None
    vector = from_bytes(stored)
    return vector if len(vector) == dimensions else None


def with_vectors(memories: QuerySet[Memory]) -> QuerySet[Memory]:
    """Each memory with its stored vector and the vector's model, in the same query."""
    return memories.annotate(embedding=F("vector__vector"), embedding_model=F("vector__model"))


def rank_memories(
    *,
    candidates: QuerySet[Memory],
    goal: str,
    k: int,
    keys: frozenset[str] = frozenset(),
    kinds: frozenset[str] = frozenset(),
) -> Ranking:
    """At most ``k`` of ``candidates`` (a subject's servable memories) for ``goal``, best
    first, each with why; in one query."""
    has_goal = bool(goal_terms(goal))
    vector, semantic, model = goal_vector(goal) if has_goal else (None, Semantic.NO_GOAL, "")
    memories: dict[Hashable, Memory] = {m.pk: m for m in with_vectors(candidates)}
    # Without the goal's vector no other vector is compared.
    dimensions = 0 if vector is None else len(vector)
    offered = candidates_of(memories.values(), model, dimensions)
    if vector is not None and any(c.vector is None for c in offered):
        semantic = Semantic.PARTIAL
    chosen = ranking.rank(goal, offered, goal_vector=vector, k=k, keys=keys, kinds=kinds)
    return Ranking(
        [Ranked(memories[c.candidate.id], c.why.score, c.why) for c in chosen], semantic, model
    )


# Support's search across everything written down: memories, the ledger, what people and
# tools said, what agents were doing, and their compactions.

# The newest rows of each type whose words match are ranked; an older match past these is
# found by narrowing (a subject, some days).
CANDIDATES_PER_TYPE = 200
# Where each type looks first: its newest rows, this many (``_Kinds._recent_first``). A word in
# one row of fifty fills its candidates there, at the same cost however big the table.
# Then, while too few match, among ten times as many: a word rare among the newest rows
# (a busy agent writing without it) may be common further on.
RECENT_ROWS = 10_000
# How much of a compaction a hit shows: the pieces of it that hold the query's words.
SNAPSHOT_EXCERPT = 300
# Where a compaction keeps text besides its narrative; a rejected one's problems name what
# the compaction dropped.
_SNAPSHOT_JSON = ("problems", "document", "pinned")
# Quotes or a leading minus: the person wrote web search syntax, and means it.
_SEARCH_SYNTAX = re.compile(r'"|(?:^|\s)-\w')


@dataclass(frozen=True)
class Hit:
    """One thing found, why it was, and the page that shows it (``page`` is a URL name,
    ``ref`` its argument): the template links it, so this layer knows no addresses."""

    text: str
    why: Why
    page: str
    ref: str
    label: str
    at: datetime
    subject_ref: str = ""
    subject_name: str = ""
    detail: str = ""


@dataclass(frozen=True)
class Group:
    kind: str
    title: str
    hits: list[Hit]
    # Memories only: whether meaning took part in their ranking.
    semantic: Semantic | None = None
    # Its words matched more rows than could be ranked in time: narrow to see them.
    too_many: bool = False


@dataclass(frozen=True)
class _Row:
    """A row fetched, as ranking sees it (``text``) and as the page shows it (``hit``)."""

    text: str
    newness: float
    hit: Hit
    stated: bool = True
    vector: npt.NDArray[np.float32] | None = None


# Until ranking has said why, a row's hit carries this.
_NOT_RANKED = Why(0.0, 0.0, (), None, "recent")


def search_everything(
    query: str,
    viewer: access.Person,
    *,
    subject: Subject | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
    per_type: int = 10,
) -> list[Group]:
    """What ``query``'s words find in each type ``viewer`` may see, best first, at most
    ``per_type`` of each; only the types that found something. ``subject`` and the
    half-open window ``start``–``end`` narrow it. One query per type, whatever is found.

    A row matches when it holds any of the query's words (a complaint's sentence is never
    all in one row); ranking puts the rows holding more, and rarer, of them first.
    """
    if not ranking.stems(query):
        return []
    kinds = _Kinds(query, viewer, subject, start, end)
    groups = [_memory_group(query, kinds, per_type)]
    for kind, title, rows in (
        ("ledger", "Ledger entries and commitments", kinds.ledger),
        ("excerpts", "What people and tools said", kinds.excerpts),
        ("goals", "What agents were doing (run goals)", kinds.goals),
        ("snapshots", "Compactions", kinds.snapshots),
    ):
        found = _in_time(rows, kinds.postgres)
        if found is None:
            groups.append(Group(kind, title, [], too_many=True))
        else:
            groups.append(Group(kind, title, _ranked(query, found, per_type)))
    return [group for group in groups if group.hits or group.too_many]


# How long one type's query may take on PostgreSQL before that type is left out and the
# page asks to narrow it: a word in every recall of a big log would hold the page for
# seconds (2.8 s at a million memories).
TYPE_TIMEOUT_MS = 400


def _in_time[T](fetch: Callable[[], list[T]], postgres: bool) -> list[T] | None:
    """``fetch()``, or None when PostgreSQL cancelled it for taking longer than
    ``TYPE_TIMEOUT_MS``. The limit is local to a savepoint: rolled back with it when the
    query is cancelled, set back when it is not."""
    if not postgres:
        return fetch()
    try:
        using = Memory.objects.db
        with transaction.atomic(using=using), connections[using].cursor() as cursor:
            cursor.execute("SELECT current_setting('statement_timeout')")
            (previous,) = cursor.fetchone() or ("0",)
            cursor.execute("SELECT set_config('statement_timeout', %s, true)", [LIMIT])
            found: list[T] = fetch()
            cursor.execute("SELECT set_config('statement_timeout', %s, true)", [previous])
            return found
    except OperationalError as error:
        if getattr(error.__cause__, "sqlstate", "") == _QUERY_CANCELED:
            logger.warning("A search type took over %s ms and was left out.", TYPE_TIMEOUT_MS)
            return None
        raise


_QUERY_CANCELED = "57014"
LIMIT = f"{TYPE_TIMEOUT_MS}ms"


def _memory_group(query: str, kinds: _Kinds, per_type: int) -> Group:
    memories = kinds.memories()
    if not memories:
        return Group("memories", "Memories", [])
    vector, semantic, model = goal_vector(query)
    # Without the query's vector no other vector is compared.
    dimensions = 0 if vector is None else len(vector)
    rows = [_memory_row(memory, model, dimensions) for memory in memories]
    if vector is not None and any(row.vector is None for row in rows):
        semantic = Semantic.PARTIAL
    return Group("memories", "Memories", _ranked(query, rows, per_type, vector), semantic)


def _memory_row(memory: Memory, model: str, dimensions: int) -> _Row:
    return _Row(
        text=memory.statement,
        newness=(memory.confirmed_at or memory.written_at).timestamp(),
        stated=memory.basis == Basis.STATED,
        vector=_vector(memory, model, dimensions),
        hit=Hit(
            text=memory.statement,
            why=_NOT_RANKED,
            page="memory-history",
            ref=str(memory.pk),
            label="Trace",
            at=memory.written_at,
            subject_ref=memory.subject.ref,
            subject_name=memory.subject.name,
            detail=memory.get_status_display(),
        ),
    )


def _ranked(
    query: str,
    rows: Sequence[_Row],
    k: int,
    vector: npt.NDArray[np.float32] | None = None,
) -> list[Hit]:
    """At most ``k`` of ``rows`` (newest first), best first, each with why.

    Ranking gives one place to one wording: rows saying the same words (one goal over many
    runs, one memory in two subjects) are ranked once and each listed, newest first, so a
    subject or a run is never hidden behind another's identical row. A row that shares no
    word with the query and could not be compared by meaning is not a match.
    """
    same: dict[Hashable, list[_Row]] = {}
    for row in rows:
        same.setdefault(" ".join(row.text.casefold().split()), []).append(row)
    candidates = [
        Candidate(
            id=key,
            text=group[0].text,
            stated=group[0].stated,
            newness=group[0].newness,
            vector=group[0].vector,
        )
        for key, group in same.items()
    ]
    hits: list[Hit] = []
    for chosen in ranking.rank(query, candidates, goal_vector=vector, k=k):
        if chosen.why.matched or chosen.why.semantic is not None:
            hits.extend(replace(row.hit, why=chosen.why) for row in same[chosen.candidate.id])
    return hits[:k]


class _Kinds:
    """Each type's candidates: the newest rows holding the query's words that the viewer
    may see, in the subject and the window when given; one query each."""

    def __init__(
        self,
        query: str,
        viewer: access.Person,
        subject: Subject | None,
        start: datetime | None,
        end: datetime | None,
    ) -> None:
        self.query = query
        self.viewer = viewer
        self.subject = subject
        self.start = start
        self.end = end
        self.postgres = connections[Memory.objects.db].vendor == "postgresql"
        self.wanted = frozenset(ranking.stems(query))

    def _matching(self, *fields: str, vector: Combinable | None = None) -> Q:
        """Any of the query's words is in one of ``fields``. PostgreSQL: full-text search
        on ``vector`` (by default the fields'), with the web search syntax kept when the
        query uses it. Elsewhere: each word's stem root anywhere in the text, so that
        "delivery" finds "deliveries" (both stem to "deliveri"; its root "deliver" is in
        both), as PostgreSQL's stems would."""
        if self.postgres and _SEARCH_SYNTAX.search(self.query):
            words = vector if vector is not None else SearchVector(*fields, config=SEARCH_CONFIG)
            asked = SearchQuery(self.query, config=SEARCH_CONFIG, search_type="websearch")
            return Q(SearchVectorExact(words, asked))
        words_of = list(ranking.stems(self.query).values())
        return any_word(words_of, *fields, postgres=self.postgres, vector=vector)

    def _window(self, field: str) -> Q:
        window = Q()
        if self.start is not None:
            window &= Q(**{f"{field}__gte": self.start})
        if self.end is not None:
            window &= Q(**{f"{field}__lt": self.end})
        return window

    def _about(self, via: str) -> Q:
        """Visible to the viewer, and about the subject when one is asked."""
        visible = access.visible_subjects(self.viewer, via=via)
        return (
            visible
            if self.subject is None
            else visible & Q(**{via.removesuffix("__"): self.subject})
        )

    def _recent_first[M: Model, T](
        self,
        rows: QuerySet[M],
        field: str,
        take: Callable[[QuerySet[M], str], list[T]],
        worded: Q | None = None,
    ) -> list[T]:
        """What ``take`` makes of ``rows`` (at most ``CANDIDATES_PER_TYPE`` of them, newest
        by ``field`` first), looked for among the table's ``RECENT_ROWS`` newest rows first,
        then, while too few match, among the next ``9 × RECENT_ROWS``, then the oldest.

        A common word's matches are then a bounded handful of rows, whatever the size of the
        table: PostgreSQL intersects the words' GIN index with the time index's range (its
        edge read first from that index) rather than reading and sorting every match.
        A rare word matches few rows in each part. A subject or days asked narrow by their
        own index: the type is read at once. ``worded`` narrows the rows counted to those
        that can hold words at all, as the type's time index does."""
        if self.subject is not None or self.start is not None or self.end is not None:
            return take(rows, field)
        # Said in every part too, so that the time index, partial on it, serves the parts.
        rest = worded or Q()
        newest = rows.model._default_manager.filter(rest).order_by(f"-{field}", "-pk")
        found: list[T] = []
        for offset in (RECENT_ROWS, RECENT_ROWS * 10):
            edge = list(newest.values_list(field, "pk")[offset : offset + 1])
            if not edge:
                break
            at, pk = edge[0]
            # The pk breaks ties on the time: rows written in one batch share it.
            since = Q(**{f"{field}__gt": at}) | Q(**{field: at, "pk__gte": pk})
            found += take(rows.filter(rest & since), field)[: CANDIDATES_PER_TYPE - len(found)]
            if len(found) >= CANDIDATES_PER_TYPE:
                return found
            rest &= ~since
        return found + take(rows.filter(rest), field)[: CANDIDATES_PER_TYPE - len(found)]

    def memories(self) -> list[Memory]:
        """Memories of any status: the one a complaint is about may have been corrected
        or deleted since (an erased one has no words left to match)."""
        rows = (
            with_vectors(Memory.objects.all())
            .filter(
                self._about("subject__"), self._matching("statement"), self._window("written_at")
            )
            .select_related("subject")
        )
        return self._recent_first(rows, "written_at", _newest_rows)

    def ledger(self) -> list[_Row]:
        rows = LedgerEntry.objects.filter(
            self._about("subject__"), self._matching("fact"), self._window("recorded_at")
        ).select_related("subject")
        return [
            _Row(
                text=entry.fact,
                newness=entry.recorded_at.timestamp(),
                hit=Hit(
                    text=entry.fact,
                    why=_NOT_RANKED,
                    page="subject-ledger",
                    ref=entry.subject.ref,
                    label="Ledger",
                    at=entry.recorded_at,
                    subject_ref=entry.subject.ref,
                    subject_name=entry.subject.name,
                    detail=_ledger_detail(entry),
                ),
            )
            for entry in self._recent_first(rows, "recorded_at", _newest_rows)
        ]

    def excerpts(self) -> list[_Row]:
        """Excerpts of messages and tool results. A source belongs to a memory, or is cited
        by ledger entries: its subject is the memory's, else the first citing entry's."""
        citing = LedgerEntry.objects.filter(
            Q(source=OuterRef("pk")) | Q(promotion_source=OuterRef("pk"))
        ).order_by("recorded_at", "pk")
        sources = Source.objects.annotate(
            about=Coalesce(
                F("memory__subject_id"),
                Subquery(citing.values("subject_id")[:1]),
                output_field=BigIntegerField(),
            ),
            about_ref=Coalesce(
                F("memory__subject__ref"), Subquery(citing.values("subject__ref")[:1])
            ),
            about_name=Coalesce(
                F("memory__subject__display_name"),
                Subquery(citing.values("subject__display_name")[:1]),
            ),
        ).filter(about__in=Subject.objects.visible_to(self.viewer).values("pk"))
        if self.subject is not None:
            sources = sources.filter(about=self.subject.pk)
        rows = self._recent_first(
            sources.filter(self._matching("excerpt"), self._window("received_at")),
            "received_at",
            _newest_rows,
            # Most writes quote nothing: the newest sources may have no words for a while.
            worded=~Q(excerpt=""),
        )
        # One message is the source of every memory written from it: its excerpt once.
        seen: set[tuple[str, str]] = set()
        found: list[_Row] = []
        for source in rows:
            if (source.ref, source.excerpt) in seen:
                continue
            seen.add((source.ref, source.excerpt))
            turn = f", turn {source.turn}" if source.turn else ""
            subject_ref: str = getattr(source, "about_ref", None) or ""
            subject_name: str = getattr(source, "about_name", None) or subject_ref
            found.append(
                _Row(
                    text=source.excerpt,
                    newness=source.received_at.timestamp(),
                    hit=Hit(
                        text=source.excerpt,
                        why=_NOT_RANKED,
                        page="source",
                        ref=source.ref,
                        label=source.ref,
                        at=source.received_at,
                        subject_ref=subject_ref,
                        subject_name=subject_name,
                        detail=f"{source.get_kind_display()}{turn}",
                    ),
                )
            )
        return found

    def goals(self) -> list[_Row]:
        """What agents asked to recall: each goal once per run (an agent asks again every
        turn), with how often and when last."""
        matching = Recall.objects.filter(
            self._about("subject__"), self._matching("goal"), self._window("recalled_at")
        )
        # A run's goal found among the newest recalls and again among the older ones is
        # one goal: its newest finding says when last.
        groups: dict[tuple[str, int | None, int], dict[str, Any]] = {}
        for group in self._recent_first(matching, "recalled_at", take=_goals_by_run):
            groups.setdefault((group["goal"], group["run_id"], group["subject_id"]), group)
        reads = self._reads(groups.keys())
        found = []
        for key, row in groups.items():
            run = row["run__ref"]
            asked = reads.get(key, 0)
            found.append(
                _Row(
                    text=row["goal"],
                    newness=row["last"].timestamp(),
                    hit=Hit(
                        text=row["goal"],
                        why=_NOT_RANKED,
                        # A read outside any run has only itself to show.
                        page="run" if run else "recall",
                        ref=run or str(row["latest"]),
                        label=run or "The read",
                        at=row["last"],
                        subject_ref=row["subject__ref"],
                        subject_name=row["subject__display_name"] or row["subject__ref"],
                        detail=f"asked {asked} time{'s' if asked != 1 else ''}",
                    ),
                )
            )
        return found

    def _reads(
        self, groups: Iterable[tuple[str, int | None, int]]
    ) -> dict[tuple[str, int | None, int], int]:
        """How often each run asked each goal, in the window: counted apart, by run, since a
        run's first asks may be older than the newest recalls its goal was found among."""
        keys = list(groups)
        if not keys:
            return {}
        runs = {run for _, run, _ in keys if run is not None}
        runless = {subject for _, run, subject in keys if run is None}
        counted = (
            Recall.objects.filter(
                Q(run_id__in=runs) | Q(run=None, subject_id__in=runless),
                goal__in={goal for goal, _, _ in keys},
                **({"subject": self.subject} if self.subject is not None else {}),
            )
            .filter(self._window("recalled_at"))
            .order_by()
            .values("goal", "run_id", "subject_id")
            .annotate(reads=Count("pk"))
        )
        return {(row["goal"], row["run_id"], row["subject_id"]): row["reads"] for row in counted}

    def snapshots(self) -> list[_Row]:
        """Compactions: their narrative and every string of their document, pinned texts
        and problems (a rejected one's name what it dropped)."""
        words = _snapshot_words() if self.postgres else None
        rows = (
            Snapshot.objects.filter(
                self._about("run__subject__"),
                self._matching("narrative", *_SNAPSHOT_JSON, vector=words),
                self._window("created_at"),
            )
            .select_related("run__subject")
            .order_by(_newest("created_at"), "-pk")[:CANDIDATES_PER_TYPE]
        )
        found = []
        for snapshot in rows:
            pieces = _snapshot_pieces(snapshot)
            subject = snapshot.run.subject
            found.append(
                _Row(
                    text="\n".join(pieces),
                    newness=snapshot.created_at.timestamp(),
                    hit=Hit(
                        text=_holding(pieces, self.wanted),
                        why=_NOT_RANKED,
                        page="run",
                        ref=snapshot.run.ref,
                        label=snapshot.run.ref,
                        at=snapshot.created_at,
                        subject_ref=subject.ref if subject else "",
                        subject_name=subject.name if subject else "",
                        detail=f"generation {snapshot.generation}, {snapshot.status}",
                    ),
                )
            )
        return found


def _newest_rows[M: Model](rows: QuerySet[M], field: str) -> list[M]:
    return list(rows.order_by(_newest(field), "-pk")[:CANDIDATES_PER_TYPE])


def _goals_by_run(recalls: QuerySet[Recall], field: str) -> list[dict[str, Any]]:
    """Each goal once per run, newest asked first, with when last (how often is counted
    apart: ``_Kinds._reads``)."""
    subject = Subject.objects.filter(pk=OuterRef("subject_id")).order_by()
    # The run's and the subject's names are looked up for each goal found, not joined to
    # every recall matched: a join would read the runs and subjects tables whole.
    groups = (
        recalls.order_by()
        .values("goal", "run_id", "subject_id")
        .annotate(
            last=Max(field),
            latest=Max("pk"),
            run__ref=Subquery(Run.objects.filter(pk=OuterRef("run_id")).order_by().values("ref")),
            subject__ref=Subquery(subject.values("ref")),
            subject__display_name=Subquery(subject.values("display_name")),
        )
        .order_by("-last", "-latest")[:CANDIDATES_PER_TYPE]
    )
    return [dict(group) for group in groups]


def _newest(field: str) -> OrderBy:
    """Newest first, in a form no index serves. With an index on the time, PostgreSQL
    walks it from the newest row and tests each for the words, betting that matches are
    many: for a rare word it reads every row (4.3 s at a million memories, measured). This
    way it takes the matches from the words' GIN index and sorts those (5 ms for a rare
    word, 135 ms for one in every statement)."""
    return Coalesce(field, field).desc()


def any_word(
    words: Sequence[str], *fields: str, postgres: bool, vector: Combinable | None = None
) -> Q:
    """Any of ``words`` is in one of ``fields``: the database's half of finding by words,
    for support's search and the gate's search for possible conflicts alike. PostgreSQL:
    full-text search on ``vector`` (by default the fields', the expression the GIN index of
    migration 0003 is built on). Elsewhere: each word's stem root anywhere in the text,
    so that "delivery" finds "deliveries" (both stem to "deliveri"; its root "deliver" is
    in both), as PostgreSQL's stems would."""
    if not words:
        return Q(pk__in=[])
    if postgres:
        text = vector if vector is not None else SearchVector(*fields, config=SEARCH_CONFIG)
        each = [SearchQuery(w, config=SEARCH_CONFIG, search_type="websearch") for w in words]
        return Q(SearchVectorExact(text, functools.reduce(operator.or_, each)))
    found = Q(pk__in=[])
    for root in {_root(stem) for stem in ranking.stems(" ".join(words))}:
        for field in fields:
            found |= Q(**{f"{field}__icontains": root})
    return found


def _root(stem: str) -> str:
    """The part of a Snowball stem every form of its word spells: "deliveri" (delivery,
    deliveries) → "deliver"; "phone" (phoned, phoning) → "phon". Short stems are kept
    whole, or they would be found inside every other word."""
    return stem[:-1] if len(stem) > 3 and stem[-1] in "ie" else stem


def _ledger_detail(entry: LedgerEntry) -> str:
    status = "" if entry.status == LedgerEntry.Status.ACTIVE else f", {entry.status}"
    return f"{entry.kind}{status}"


def _snapshot_words() -> Combinable:
    """A compaction's words for full-text search: its narrative's, and those of the string
    values of its JSON (``jsonb_to_tsvector``: the keys and punctuation are not words)."""

    def strings(field: str) -> Func:
        return Func(
            SearchConfig(SEARCH_CONFIG),
            F(field),
            Cast(Value('["string"]'), JSONField()),
            function="jsonb_to_tsvector",
            output_field=SearchVectorField(),
        )

    return Func(
        SearchVector("narrative", config=SEARCH_CONFIG),
        *(strings(field) for field in _SNAPSHOT_JSON),
        template="(%(expressions)s)",
        arg_joiner=" || ",
        output_field=SearchVectorField(),
    )


def _snapshot_pieces(snapshot: Snapshot) -> list[str]:
    """A compaction's texts: each problem's words (and the names they leave out), then
    every string of its document and pinned, then its narrative."""
    pieces: list[str] = []
    for problem in snapshot.problems:
        message = str(problem.get("message", ""))
        pieces.append(message)
        pieces.extend(str(item) for item in problem.get("items", []) if str(item) not in message)
    pieces.extend(_strings([snapshot.document, snapshot.pinned]))
    pieces.append(snapshot.narrative)
    return [piece for piece in pieces if piece.strip()]


def _strings(value: object) -> Iterable[str]:
    """Every string in a JSON value, in order."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _holding(pieces: Sequence[str], wanted: frozenset[str]) -> str:
    """The pieces holding any of the ``wanted`` stems, as much as a hit shows."""
    shown = [piece for piece in pieces if wanted & ranking.stems(piece).keys()] or pieces[:1]
    text = " · ".join(dict.fromkeys(shown))
    return text if len(text) <= SNAPSHOT_EXCERPT else text[: SNAPSHOT_EXCERPT - 1] + "…"
