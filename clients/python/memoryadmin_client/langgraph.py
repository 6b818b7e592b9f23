"""``MemoryAdminStore``: LangGraph's long-term memory (``BaseStore``) kept by memoryadmin.

Swap ``InMemoryStore()`` for ``MemoryAdminStore(base_url, key)`` and every write goes
through the write gate, with its provenance, expiry and the dashboard, as an agent's own
API call would (the store speaks only through ``memoryadmin_client``). The mapping:

=====================================  ==================================================
LangGraph                              memoryadmin
=====================================  ==================================================
namespace                              a subject: its last label (``("memories",
                                       "acct_42")`` is ``acct_42``), or what
                                       ``subject_of(namespace)`` returns. Nothing else of
                                       the namespace is kept. One that names no subject
                                       is refused (``NotASubject``).
key                                    the memory's slot (``contact.channel``): lower-case
                                       letters, digits and ``_ . -``; another key is
                                       refused (``NotASlot``).
``put(ns, key, value)``                ``remember``: ``value`` is a memory, ``statement``
                                       and ``source`` required, ``kind`` defaults to
                                       ``preference`` and ``basis`` to ``inferred`` (a
                                       guess, pending until corroborated or confirmed);
                                       ``expires_at``, ``permanent`` and ``reason``
                                       optional; anything else is refused (``NotAMemory``)
                                       before any call.
``put`` again, same key                the live memory in the slot is corrected (the new
                                       one supersedes it, with ``reason``); the same words
                                       again only add the source as evidence. Unless the
                                       write policy lets agents change each other's
                                       writes, a slot another agent wrote is refused
                                       (the client's ``NotYourWrite``), as is its ``delete``.
``put(ttl=minutes)``                   ``expires_at`` that many minutes from now, on a new
                                       memory; a correction takes the gate's life for it.
                                       No ttl: the policy's life for the kind.
``get(ns, key)``                       the live (active or pending, unexpired) memory in
                                       the slot, newest first, as an ``Item`` whose value
                                       carries ``status``, ``sources``, ``open_conflicts``.
``delete`` / ``put(value=None)``       every live memory in the slot is retracted, with
                                       the store's ``reason``.
``search(ns, query=…)``                ``recall`` with the query as goal (recorded, under
                                       ``run``): ``SearchItem``s in rank order, ``score`` =
                                       rank; ``filter`` applies to what recall served.
``search(ns)``                         the subject's live memories, newest first, with
                                       ``filter``, ``limit`` and ``offset``; a listing,
                                       not a recall (not recorded). Read a page of
                                       ``offset + limit`` at a time, only as far as the
                                       answer needs.
``list_namespaces``                    ``NotImplementedError``: the API lists no subjects.
=====================================  ==================================================

Refusals of the gate and the API are the client's exceptions (``MemoryPaused``,
``SystemOfRecord``, ``BadRequest`` …), raised, never swallowed. A read never extends a
memory's life (``refresh_ttl`` is ignored): a person renews it on the dashboard. A batch is
checked whole before its first call, then run in order.
"""

from __future__ import annotations

import functools
import itertools
import operator
import re
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable, Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any, Self

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    validate_op_namespace,
)

from memoryadmin_client import AsyncMemoryClient, MemoryAdminError, MemoryClient, NotFound

JSON = dict[str, Any]

# The API's subject reference (ledger.api.fields.REF_PATTERN) and slot key
# (ledger.rules.text.KEY_PATTERN), so that a bad namespace or key is refused before any call;
# tests/test_langgraph_store.py fails if they drift apart.
SUBJECT_REF = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,99}$")
SLOT_KEY = re.compile(r"^[a-z0-9][a-z0-9_.\-]{0,99}$")

WRITABLE = frozenset({"statement", "source", "kind", "basis", "expires_at", "permanent", "reason"})
# What a get returns beside the writable fields: the store's answer, not a put's to set.
READ_ONLY = frozenset(
    {"id", "key", "status", "version", "written_at", "withheld", "sources", "open_conflicts"}
)
DEFAULT_KIND = "preference"
# A value that does not say the person said it is a guess: the gate keeps it pending.
DEFAULT_BASIS = "inferred"
REASON = "Changed by a LangGraph agent through memoryadmin's store."
LIVE = frozenset({"active", "pending"})
# The API's largest page of memories (ledger.api.memories.NewestFirst.max_page_size): a
# larger page_size is served as this many.
PAGE_MAX = 200


class NotAMemory(ValueError):
    """A put's value cannot be a memory; the message names what is missing or wrong.
    Nothing was sent."""


class NotASubject(InvalidNamespaceError):
    """A namespace that names no subject (LangGraph's own namespace error, a ValueError)."""


class NotASlot(ValueError):
    """A key that cannot be a memory's slot. Nothing was sent."""


class SlotInConflict(ValueError):
    """A put to a slot holding disagreeing live memories: no put picks a winner; a person
    settles the conflict on the dashboard (or delete the key first). Nothing was sent."""


def last_label(namespace: tuple[str, ...]) -> str:
    """The default ``subject_of``: ``("memories", "acct_42")`` is about ``acct_42``."""
    if not namespace:
        raise NotASubject(
            "An empty namespace names no subject: memoryadmin keeps memories one subject at "
            "a time, named by the namespace's last label (or by subject_of)."
        )
    return namespace[-1]


@dataclass(frozen=True)
class _Memory:
    """A put's value, checked: what the write gate is asked to keep."""

    statement: str
    source: JSON
    kind: str | None
    basis: str
    expires_at: datetime | str | None
    permanent: bool | None
    reason: str | None

    def remember(self, *, subject: str, key: str) -> JSON:
        return {
            "subject": subject,
            "key": key,
            "kind": self.kind or DEFAULT_KIND,
            "statement": self.statement,
            "basis": self.basis,
            "source": self.source,
            "expires_at": self.expires_at,
            "permanent": self.permanent,
        }


def memory_of(value: Mapping[str, Any], *, ttl: float | None, run: str | None) -> _Memory:
    """The memory a put's value stands for, or ``NotAMemory`` saying why it is none."""
    if not isinstance(value, Mapping):
        raise NotAMemory(f"A value is a mapping with a statement and a source, not {value!r}.")
    unknown = sorted(set(value) - WRITABLE)
    if unknown:
        read_only = [name for name in unknown if name in READ_ONLY]
        also = f" ({', '.join(read_only)}: set by memoryadmin, not by a put)" if read_only else ""
        raise NotAMemory(
            f"Not a field of a memory: {', '.join(unknown)}{also}. A value holds statement "
            "and source, and may hold kind, basis, expires_at, permanent and reason."
        )
    statement = value.get("statement")
    if not isinstance(statement, str) or not statement.strip():
        raise NotAMemory("A memory needs a 'statement': one sentence saying what to remember.")
    source = value.get("source")
    if not isinstance(source, Mapping) or not source.get("kind") or not source.get("ref"):
        raise NotAMemory(
            "A memory needs a 'source' naming where it came from: {'kind': 'user_message', "
            "'tool_result', 'operator' or 'import', 'ref': the message or result id}. "
            "No source, no memory."
        )
    for name in ("kind", "basis", "reason"):
        if name in value and not isinstance(value[name], str):
            raise NotAMemory(f"'{name}' is a string, not {value[name]!r}.")
    return _Memory(
        statement=statement,
        # The store's run, unless the source names its own: the run page shows what it wrote.
        source={"run": run, **source} if run else dict(source),
        kind=value.get("kind"),
        basis=value.get("basis", DEFAULT_BASIS),
        expires_at=_expiry(value, ttl),
        permanent=value.get("permanent"),
        reason=value.get("reason"),
    )


def _expiry(value: Mapping[str, Any], ttl: float | None) -> datetime | str | None:
    if ttl is None:
        expires_at: datetime | str | None = value.get("expires_at")
        return expires_at
    if "expires_at" in value or value.get("permanent"):
        raise NotAMemory("Give a ttl, or an expires_at (or permanent), not both.")
    if ttl <= 0:
        raise NotAMemory(f"A ttl is minutes from now, more than 0: not {ttl!r}.")
    return datetime.now(UTC) + timedelta(minutes=ttl)


def _checked_ttl(config: TTLConfig | None) -> TTLConfig | None:
    """Only ``default_ttl`` has a meaning here; a setting memoryadmin cannot honour is
    refused rather than ignored."""
    if config is None:
        return None
    if config.get("refresh_on_read"):
        raise ValueError(
            "refresh_on_read: a read never extends a memory's life in memoryadmin (a person "
            "renews it on the dashboard); leave it out or set it to False."
        )
    if config.get("sweep_interval_minutes"):
        raise ValueError(
            "sweep_interval_minutes: memoryadmin's Celery beat expires memories on its own "
            "schedule; leave it out."
        )
    if config.get("omit_expired") is False:
        raise ValueError("omit_expired: memoryadmin never serves an expired memory.")
    return config


# How the store's steps reach the server: each operation is a generator that yields the
# client calls it needs and receives their answers, so one implementation serves both
# ``batch`` (MemoryClient) and ``abatch`` (AsyncMemoryClient).


@dataclass(frozen=True)
class _Call:
    method: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class _Open:
    """Open a listing of memories (``client.memories``) without reading it: the answer is
    a handle that ``_Read`` reads on, a page at a time, only as far as asked."""

    kwargs: Mapping[str, Any]


@dataclass(frozen=True)
class _Read:
    """The next ``count`` memories of an opened listing; fewer only at its end."""

    listing: Any
    count: int


type _Steps[T] = Generator[_Call | _Open | _Read, Any, T]


def _drive[T](client: MemoryClient, steps: _Steps[T]) -> T:
    answer: Any = None
    error: MemoryAdminError | None = None
    while True:
        try:
            call = steps.throw(error) if error else steps.send(answer)
        except StopIteration as done:
            result: T = done.value
            return result
        answer, error = None, None
        try:
            if isinstance(call, _Open):
                answer = client.memories(**call.kwargs)
            elif isinstance(call, _Read):
                listing: Iterator[JSON] = call.listing
                # The client fetches the next page only when this asks past the last one.
                answer = list(itertools.islice(listing, call.count))
            else:
                answer = getattr(client, call.method)(*call.args, **call.kwargs)
                if call.method == "memories":
                    answer = list(answer)
        except MemoryAdminError as refused:
            error = refused


async def _adrive[T](client: AsyncMemoryClient, steps: _Steps[T]) -> T:
    answer: Any = None
    error: MemoryAdminError | None = None
    while True:
        try:
            call = steps.throw(error) if error else steps.send(answer)
        except StopIteration as done:
            result: T = done.value
            return result
        answer, error = None, None
        try:
            if isinstance(call, _Open):
                answer = client.memories(**call.kwargs)
            elif isinstance(call, _Read):
                answer = await _read(call.listing, call.count)
            else:
                pending = getattr(client, call.method)(*call.args, **call.kwargs)
                if call.method == "memories":
                    answer = [memory async for memory in pending]
                else:
                    answer = await pending
        except MemoryAdminError as refused:
            error = refused


async def _read(listing: AsyncIterator[JSON], count: int) -> list[JSON]:
    rows: list[JSON] = []
    while len(rows) < count:
        try:
            rows.append(await anext(listing))
        except StopAsyncIteration:
            break
    return rows


class _Listing:
    """One opened listing, newest first, with the memories read from it but not yet taken."""

    def __init__(self, handle: Any, page: int) -> None:
        self.handle = handle
        self.page = page
        self.unread: deque[JSON] = deque()
        self.ended = False

    def head(self) -> _Steps[JSON | None]:
        """Its newest memory not yet taken, reading one more page when none is left."""
        if not self.unread and not self.ended:
            rows = yield _Read(self.handle, self.page)
            self.unread.extend(rows)
            self.ended = len(rows) < self.page
        return self.unread[0] if self.unread else None


class MemoryAdminStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items are memoryadmin memories (see the module).

    ``run``: the run reference searches are recorded under and sources default to.
    ``subject_of``: which subject a namespace names (default: its last label).
    ``reason``: recorded on corrections a value gives no reason for, and on deletions.
    ``ttl``: LangGraph's ``TTLConfig``; only ``default_ttl`` (minutes) applies.
    """

    supports_ttl = True

    def __init__(
        self,
        base_url: str,
        key: str,
        *,
        run: str | None = None,
        subject_of: Callable[[tuple[str, ...]], str] = last_label,
        reason: str = REASON,
        ttl: TTLConfig | None = None,
        timeout: float = 10.0,
        retries: int = 3,
    ) -> None:
        self.ttl_config = _checked_ttl(ttl)
        self.run = run
        self.subject_of = subject_of
        self.reason = reason
        self._client = MemoryClient(base_url, key, timeout=timeout, retries=retries)
        # Made on the first abatch, in the event loop that uses it.
        self._new_aclient = functools.partial(
            AsyncMemoryClient, base_url, key, timeout=timeout, retries=retries
        )
        self._aclient: AsyncMemoryClient | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    def close(self) -> None:
        self._client.close()

    async def aclose(self) -> None:
        self._client.close()
        if self._aclient is not None:
            await self._aclient.close()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        # Every op is checked before the first call: a bad one leaves the batch unsent.
        plans = [self._steps(op) for op in ops]
        return [_drive(self._client, steps) for steps in plans]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        plans = [self._steps(op) for op in ops]
        if self._aclient is None:
            self._aclient = self._new_aclient()
        return [await _adrive(self._aclient, steps) for steps in plans]

    # One operation: checked now, its calls made when driven.

    def _steps(self, op: Op) -> _Steps[Result]:
        validate_op_namespace(op)
        if isinstance(op, GetOp):
            return self._get(self._subject(op.namespace), op)
        if isinstance(op, PutOp):
            subject = self._subject(op.namespace)
            if op.value is None:
                return self._delete(subject, op.key)
            if not SLOT_KEY.match(op.key):
                raise NotASlot(
                    f"The key {op.key!r} cannot be a memory's slot: lower-case letters, digits "
                    "and _ . - (at most 100, e.g. 'contact.channel'). It names the slot that a "
                    "second put to the same key corrects."
                )
            memory = memory_of(op.value, ttl=op.ttl, run=self.run)
            return self._put(subject, op.key, memory)
        if isinstance(op, SearchOp):
            return self._search(self._subject(op.namespace_prefix), op)
        if isinstance(op, ListNamespacesOp):
            raise NotImplementedError(
                "memoryadmin does not list its subjects to an agent: a namespace names one "
                "subject you already know (its last label, or subject_of); search or get it."
            )
        raise TypeError(f"Not a store operation: {type(op).__name__}")

    def _subject(self, namespace: tuple[str, ...]) -> str:
        try:
            subject = self.subject_of(namespace)
        except NotASubject:
            raise
        except (LookupError, ValueError) as error:
            raise NotASubject(f"subject_of names no subject for {namespace!r}: {error}") from error
        if not isinstance(subject, str) or not SUBJECT_REF.match(subject):
            raise NotASubject(
                f"The namespace {namespace!r} names no subject: {subject!r} is not a subject "
                "reference (letters, digits and _ . : -, at most 100, starting with a letter or "
                "digit). Pass subject_of= to say which label is the subject."
            )
        return subject

    def _live(self, subject: str, key: str) -> _Steps[list[JSON]]:
        """The live memories a key names, newest first: those in its slot or, for a key
        that is a memory's id (search gives a memory without a slot its id), that one."""
        if not SLOT_KEY.match(key):
            return []
        found = yield _Call("memories", kwargs={"subject": subject, "key": key})
        live = [memory for memory in found if _is_live(memory)]
        if live or not _is_id(key):
            return live
        try:
            memory = yield _Call("memory", (key,))
        except NotFound:
            return []
        mine = memory["subject"] == subject and not memory["key"] and _is_live(memory)
        return [memory] if mine else []

    def _get(self, subject: str, op: GetOp) -> _Steps[Item | None]:
        live = yield from self._live(subject, op.key)
        return _item(op.namespace, op.key, live[0]) if live else None

    def _put(self, subject: str, key: str, memory: _Memory) -> _Steps[None]:
        live = yield from self._live(subject, key)
        if not live:
            yield _Call("remember", kwargs=memory.remember(subject=subject, key=key))
            return None
        if len(live) > 1:
            raise SlotInConflict(
                f"The slot {key!r} of {subject} holds {len(live)} disagreeing memories (an open "
                "conflict): a person settles it on the dashboard; or delete the key, then put."
            )
        current = live[0]
        if _same_words(current["statement"], memory.statement):
            # The gate merges a repeat into the live memory: its source becomes evidence.
            yield _Call("remember", kwargs=memory.remember(subject=subject, key=current["key"]))
            return None
        if memory.kind is not None and memory.kind != current["kind"]:
            raise NotAMemory(
                f"A correction keeps the memory's kind ({current['kind']}), not {memory.kind}: "
                "delete the key, then put the new memory."
            )
        yield _Call(
            "correct",
            (current["id"],),
            {
                "statement": memory.statement,
                "reason": memory.reason or self.reason,
                "source": memory.source,
                "if_match": current["version"],
            },
        )
        return None

    def _delete(self, subject: str, key: str) -> _Steps[None]:
        live = yield from self._live(subject, key)
        for memory in live:
            yield _Call(
                "retract", (memory["id"],), {"reason": self.reason, "if_match": memory["version"]}
            )

    def _search(self, subject: str, op: SearchOp) -> _Steps[list[SearchItem]]:
        end = op.offset + op.limit
        if op.limit <= 0:
            return []
        if not op.query:
            # A listing filters as it reads, to stop as soon as enough match.
            newest = yield from self._newest_live(subject, op.filter or {}, end)
            return [_search_item(op.namespace_prefix, m, None) for m in newest[op.offset : end]]
        try:
            recall = yield _Call(
                "recall", (subject,), {"goal": op.query, "k": end, "run": self.run}
            )
        except NotFound:
            return []
        contested: dict[str, list[int]] = {}
        for conflict in recall.conflicts:
            for said in conflict["statements"]:
                contested.setdefault(str(said["memory"]), []).append(conflict["id"])
        # Recall serves active memories only.
        found = [
            (
                {**m, "status": "active", "open_conflicts": contested.get(str(m["id"]), [])},
                float(m["rank"]),
            )
            for m in recall.memories
        ]
        kept = [(m, score) for m, score in found if _matches(_value(m), op.filter or {})]
        return [_search_item(op.namespace_prefix, m, score) for m, score in kept[op.offset : end]]

    def _newest_live(self, subject: str, wanted: Mapping[str, Any], end: int) -> _Steps[list[JSON]]:
        """The subject's ``end`` newest live memories that match ``wanted``.

        The API lists one status at a time, so the active and the pending listings are
        merged newest first, each read a page of ``end`` at a time and no further than the
        merge needs: without a filter (and with nothing expired but not yet swept) that is
        one page of each, however many memories the subject holds; with a filter, pages are
        read on until ``end`` match or the listings end.
        """
        page = min(end, PAGE_MAX)
        listings: list[_Listing] = []
        for status in sorted(LIVE):
            handle = yield _Open({"subject": subject, "status": status, "page_size": page})
            listings.append(_Listing(handle, page))
        kept: list[JSON] = []
        while len(kept) < end:
            newest: _Listing | None = None
            for listing in listings:
                head = yield from listing.head()
                if head is None:
                    continue
                if newest is None or _order(head) > _order(newest.unread[0]):
                    newest = listing
            if newest is None:
                break
            memory = newest.unread.popleft()
            if _is_live(memory) and _matches(_value(memory), wanted):
                kept.append(memory)
        return kept


# What the API answers, as LangGraph items.

VALUE_FIELDS = (
    "statement",
    "kind",
    "basis",
    "status",
    "key",
    "id",
    "version",
    "expires_at",
    "written_at",
    "withheld",
    "open_conflicts",
    "sources",
)


def _value(memory: JSON) -> JSON:
    """A memory as an item's value: what the API said of it (a recall says less)."""
    value = {name: memory[name] for name in VALUE_FIELDS if name in memory}
    if memory.get("sources"):
        # The source it was written from; ``sources`` adds every repeat's.
        value["source"] = memory["sources"][0]
    return value


def _item(namespace: tuple[str, ...], key: str, memory: JSON) -> Item:
    written = _written(memory)
    return Item(
        namespace=namespace, key=key, value=_value(memory), created_at=written, updated_at=written
    )


def _search_item(namespace: tuple[str, ...], memory: JSON, score: float | None) -> SearchItem:
    """A memory found by a search; its key is its slot, or its id when it has none (a get
    with the id finds it)."""
    written = _written(memory)
    return SearchItem(
        namespace=namespace,
        key=memory["key"] or str(memory["id"]),
        value=_value(memory),
        created_at=written,
        updated_at=written,
        score=score,
    )


def _written(memory: JSON) -> datetime:
    return datetime.fromisoformat(memory["written_at"])


def _order(memory: JSON) -> tuple[datetime, str]:
    # The API's order for listings: newest first, then the larger id (a UUID, whose text
    # sorts as PostgreSQL sorts the value).
    return _written(memory), str(memory["id"])


def _is_live(memory: JSON) -> bool:
    if memory["status"] not in LIVE:
        return False
    expires_at = memory.get("expires_at")
    return expires_at is None or datetime.fromisoformat(expires_at) > datetime.now(UTC)


def _is_id(key: str) -> bool:
    try:
        return str(uuid.UUID(key)) == key
    except ValueError:
        return False


def _same_words(a: str, b: str) -> bool:
    # As the gate compares statements: case and white space aside.
    return " ".join(a.casefold().split()) == " ".join(b.casefold().split())


_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": operator.eq,
    "$ne": operator.ne,
    "$gt": operator.gt,
    "$gte": operator.ge,
    "$lt": operator.lt,
    "$lte": operator.le,
}


def _matches(value: Any, wanted: Mapping[str, Any]) -> bool:
    """LangGraph's filter: equal values, nested mappings, or ``{"$gt": …}`` comparisons."""
    return isinstance(value, Mapping) and all(
        _compare(value.get(name), expected) for name, expected in wanted.items()
    )


def _compare(actual: Any, expected: Any) -> bool:
    if not isinstance(expected, Mapping):
        return bool(actual == expected)
    if not any(str(name).startswith("$") for name in expected):
        return _matches(actual, expected)
    unknown = sorted(set(expected) - set(_OPERATORS))
    if unknown:
        raise ValueError(
            f"Not a filter operator: {', '.join(unknown)} (use {', '.join(_OPERATORS)})."
        )
    try:
        return all(_OPERATORS[name](actual, operand) for name, operand in expected.items())
    except TypeError:
        # A missing field, or one of another type, matches no comparison.
        return False
