"""``MemoryClient``: the API for a program that does not await, over ``httpx.Client``."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Self

import httpx

from memoryadmin_client import calls
from memoryadmin_client.calls import JSON, Call, Recall
from memoryadmin_client.errors import ConnectionFailed
from memoryadmin_client.retries import NO_ANSWER, Backoff


class MemoryClient:
    """An agent's connection to memoryadmin, authenticated with its API key.

    Every write goes through the same gate as ``curl`` would, with an Idempotency-Key made
    per call (or yours) and resent unchanged by each retry. Refusals raise a
    ``MemoryAdminError`` subclass carrying the API's code. Use it as a context manager, or
    call ``close()``."""

    def __init__(
        self,
        base_url: str,
        key: str,
        *,
        timeout: float = 10.0,
        retries: int = 3,
        backoff: float = 0.5,
        longest_wait: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.backoff = Backoff(retries=retries, base=backoff, longest=longest_wait)
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers=calls.headers_for(key),
            timeout=timeout,
            transport=transport,
        )
        self._endpoints: JSON | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # Sending.

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        """One request with the key and the retries; the answer as it came, refused or not.
        A write without an ``Idempotency-Key`` header is given one."""
        extra = dict(headers or {})
        if method.upper() in calls.WRITE_METHODS:
            extra.setdefault(calls.IDEMPOTENCY_HEADER, calls.write_key())
        return self._exchange(Call(method.upper(), path, calls.answer, params, json, extra))

    def _exchange(self, call: Call[Any]) -> httpx.Response:
        attempt = 0
        while True:
            try:
                response = self._http.request(
                    call.method,
                    call.path,
                    params=call.params,
                    json=call.body,
                    headers=call.headers,
                )
            except NO_ANSWER as error:
                wait = self.backoff.wait(attempt, None)
                if wait is None:
                    raise ConnectionFailed(
                        0, "connection_failed", str(error) or repr(error)
                    ) from error
            else:
                wait = self.backoff.wait(attempt, response)
                if wait is None:
                    return response
            time.sleep(wait)
            attempt += 1

    def _send[T](self, call: Call[T]) -> T:
        return call.read(self._exchange(call))

    def _pages(self, call: Call[JSON]) -> Iterator[JSON]:
        page: Call[JSON] | None = call
        while page is not None:
            data = self._send(page)
            yield from data["results"]
            page = call.page(data["next"]) if data.get("next") else None

    # Memories.

    def remember(
        self,
        *,
        subject: str,
        kind: str,
        statement: str,
        basis: str,
        source: JSON,
        key: str = "",
        expires_at: datetime | str | None = None,
        permanent: bool | None = None,
        idempotency_key: str | None = None,
    ) -> JSON:
        """Ask the write gate to keep one memory: ``{"decision", "memory", "conflict", …}``."""
        return self._send(
            calls.remember(
                subject=subject,
                kind=kind,
                statement=statement,
                basis=basis,
                source=source,
                key=key,
                expires_at=expires_at,
                permanent=permanent,
                idempotency_key=idempotency_key,
            )
        )

    def recall(
        self,
        subject: str,
        goal: str = "",
        k: int | None = None,
        run: str | None = None,
        turn: int | None = None,
        keys: Sequence[str] = (),
        kinds: Sequence[str] = (),
    ) -> Recall:
        """The capped, labelled block for a subject, with its memories (each with ``why``
        it was chosen); recorded. ``keys`` (slots) and ``kinds`` are served first."""
        return self._send(
            calls.recall(subject, goal=goal, k=k, run=run, turn=turn, keys=keys, kinds=kinds)
        )

    def memory(self, id: str) -> JSON:
        return self._send(calls.memory(id))

    def memories(
        self,
        *,
        subject: str | None = None,
        kind: str | None = None,
        basis: str | None = None,
        status: str | None = None,
        key: str | None = None,
        page_size: int | None = None,
    ) -> Iterator[JSON]:
        """Every memory that matches, newest first, following the cursor from page to page."""
        return self._pages(
            calls.memories(
                subject=subject,
                kind=kind,
                basis=basis,
                status=status,
                key=key,
                page_size=page_size,
            )
        )

    def correct(
        self,
        id: str,
        *,
        statement: str,
        reason: str,
        source: JSON | None = None,
        if_match: int | str | None = None,
        idempotency_key: str | None = None,
    ) -> JSON:
        """A new memory in place of ``id``. ``if_match``: the version (or ETag) you read."""
        return self._send(
            calls.correct(
                id,
                statement=statement,
                reason=reason,
                source=source,
                version=if_match,
                idempotency_key=idempotency_key,
            )
        )

    def retract(
        self,
        id: str,
        *,
        reason: str,
        if_match: int | str | None = None,
        idempotency_key: str | None = None,
    ) -> JSON:
        """Delete a memory (soft, audited): it is never recalled again."""
        return self._send(
            calls.retract(id, reason=reason, version=if_match, idempotency_key=idempotency_key)
        )

    # The subject ledger.

    def ledger_add(
        self,
        subject: str,
        *,
        fact: str,
        kind: str,
        source: JSON,
        run: str | None = None,
        key: str = "",
        expires_at: datetime | str | None = None,
        immutable: bool | None = None,
        idempotency_key: str | None = None,
    ) -> JSON:
        """Record a fact verbatim: ``{"entry", "conflict"}``."""
        return self._send(
            calls.ledger_add(
                subject,
                fact=fact,
                kind=kind,
                source=source,
                run=run,
                key=key,
                expires_at=expires_at,
                immutable=immutable,
                idempotency_key=idempotency_key,
            )
        )

    def ledger_in_force(self, subject: str, kind: str | None = None) -> list[JSON]:
        """The subject's ledger entries in force now (of one kind, if given)."""
        return self._send(calls.ledger_in_force(subject, kind=kind))

    # The journal.

    def journal_intent(
        self,
        run: str,
        *,
        action: str,
        intent: JSON,
        idempotency_key: str | None = None,
    ) -> JSON:
        """Journal a side effect before acting; a key is made if you give none (it is in
        ``["entry"]["idempotency_key"]``). ``"existing": true`` means an attempt may exist."""
        return self._send(
            calls.journal_intent(run, action=action, intent=intent, idempotency_key=idempotency_key)
        )

    def journal_result(
        self,
        idempotency_key: str,
        *,
        state: str,
        effect: Any = None,
        verification: Any = None,
    ) -> JSON:
        """Record what happened: ``done`` (with ``verification``), ``not_done`` or ``unknown``."""
        return self._send(
            calls.journal_result(
                idempotency_key, state=state, effect=effect, verification=verification
            )
        )

    def resume(self) -> list[JSON]:
        """Every journal entry to resolve, by reading the world, before any retry."""
        return list(self._pages(calls.resume()))

    # Run notes and snapshots.

    def note_put(self, run: str, key: str, value: str) -> JSON:
        return self._send(calls.note_put(run, key, value))

    def notes(self, run: str) -> JSON:
        """``{"run", "notes": [{"key", "value", "updated_at"}, …]}``."""
        return self._send(calls.notes(run))

    def snapshot_post(
        self,
        run: str,
        document: JSON,
        *,
        tokens_before: int = 0,
        tokens_after: int = 0,
        generation: int | None = None,
        subject: str | None = None,
        pinned: list[str] | None = None,
        budget: dict[str, int] | None = None,
        narrative: str | None = None,
        idempotency_key: str | None = None,
    ) -> JSON:
        """Store one compaction's state document; a rejected one raises ``SnapshotRejected``
        with its ``problems`` (it is stored as rejected all the same)."""
        return self._send(
            calls.snapshot_post(
                run,
                document,
                tokens_before=tokens_before,
                tokens_after=tokens_after,
                generation=generation,
                subject=subject,
                pinned=pinned,
                budget=budget,
                narrative=narrative,
                idempotency_key=idempotency_key,
            )
        )

    # Tools.

    def tools(self) -> JSON:
        """``GET /api/v1/tools``: the tool definitions and the endpoint each one calls."""
        table = self._send(calls.tools())
        self._endpoints = table["endpoints"]
        return table

    def call_tool(self, name: str, arguments: Mapping[str, Any]) -> Any:
        """Make the call a tool stands for, with a model's arguments; its JSON answer."""
        if self._endpoints is None:
            self.tools()
        assert self._endpoints is not None
        return self._send(calls.tool(self._endpoints, name, arguments))
