"""Each call of the API once: its method, path, query, body and how its answer is read.

The clients (``MemoryClient``, ``AsyncMemoryClient``) only send what these build, so a
call is described in one place whether it is awaited or not. Building a write makes its
``Idempotency-Key`` here, once, so every retry of that call resends the same key."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any
from urllib.parse import quote

import httpx

from memoryadmin_client.errors import MemoryAdminError, error_for

JSON = dict[str, Any]
Params = Mapping[str, str | int]

API = "/api/v1"
IDEMPOTENCY_HEADER = "Idempotency-Key"
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# The journal's key pattern (ledger.api.journal.JOURNAL_KEY_PATTERN), without its length.
_NOT_IN_JOURNAL_KEY = re.compile(r"[^A-Za-z0-9_.:\-]+")


@dataclass(frozen=True)
class Recall:
    """What a recall told the agent: the block to paste into a prompt, the ranked memories,
    the open conflicts, and the whole answer (``data``: its ``recall`` id, ``k``, …)."""

    block: str
    memories: list[JSON]
    conflicts: list[JSON]
    data: JSON

    @property
    def id(self) -> int:
        """The stored record of this read (support sees it on the memory's recalls)."""
        return int(self.data["recall"])


@dataclass(frozen=True)
class Call[T]:
    method: str
    path: str
    read: Callable[[httpx.Response], T]
    params: Params | None = None
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)

    def page(self, next_url: str) -> Call[T]:
        """The same call for the page a cursor's ``next`` link names."""
        return replace(self, params=dict(httpx.URL(next_url).params))


def answer(response: httpx.Response) -> Any:
    """The JSON of a successful answer; a refusal raises its exception."""
    if response.status_code >= 400:
        raise error_for(response)
    if response.status_code == 204 or not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        raise MemoryAdminError(
            response.status_code,
            "not_json",
            f"Expected JSON, got {response.headers.get('Content-Type', 'nothing')}.",
            response.text[:2000],
        ) from None


def as_object(response: httpx.Response) -> JSON:
    data = answer(response)
    return data if isinstance(data, dict) else {"answer": data}


def as_recall(response: httpx.Response) -> Recall:
    data = as_object(response)
    return Recall(
        block=data["block"], memories=data["memories"], conflicts=data["conflicts"], data=data
    )


def as_entries(response: httpx.Response) -> list[JSON]:
    entries: list[JSON] = as_object(response)["entries"]
    return entries


def segment(value: str | int) -> str:
    """One path segment, quoted so that no value can reach another path."""
    return quote(str(value), safe="")


def write_key() -> str:
    return uuid.uuid4().hex


def headers_for(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", "User-Agent": "memoryadmin-client"}


def write[T](
    method: str,
    path: str,
    body: Any,
    *,
    idempotency_key: str | None,
    headers: Mapping[str, str] | None = None,
    read: Callable[[httpx.Response], T],
) -> Call[T]:
    key = idempotency_key or write_key()
    return Call(
        method,
        path,
        read,
        body=body,
        headers={**(headers or {}), IDEMPOTENCY_HEADER: key},
    )


def moment(value: datetime | str) -> str:
    return value.isoformat() if isinstance(value, datetime) else value


def if_match(version: int | str | None) -> dict[str, str]:
    """``If-Match`` from a memory's version (``3``) or its ETag (``'"3"'``)."""
    if version is None:
        return {}
    return {"If-Match": f'"{version}"' if isinstance(version, int) else version}


def given(**fields: Any) -> JSON:
    """The fields the caller gave: None means left out, for the API's own default."""
    return {name: value for name, value in fields.items() if value is not None}


def journal_key(action: str) -> str:
    """A fresh key for one side effect, readable in the journal: ``issue_refund-1f2e…``."""
    name = _NOT_IN_JOURNAL_KEY.sub("-", action).strip("_.:-")[:80] or "intent"
    return f"{name}-{uuid.uuid4().hex[:12]}"


# The calls, in the order of the API's reference.


def remember(
    *,
    subject: str,
    kind: str,
    statement: str,
    basis: str,
    source: JSON,
    key: str,
    expires_at: datetime | str | None,
    permanent: bool | None,
    idempotency_key: str | None,
) -> Call[JSON]:
    body = given(
        subject=subject,
        kind=kind,
        key=key or None,
        statement=statement,
        basis=basis,
        source=source,
        expires_at=moment(expires_at) if expires_at is not None else None,
        permanent=permanent,
    )
    return write("POST", f"{API}/memories", body, idempotency_key=idempotency_key, read=as_object)


def recall(
    subject: str,
    *,
    goal: str,
    k: int | None,
    run: str | None,
    turn: int | None,
    keys: Sequence[str] = (),
    kinds: Sequence[str] = (),
) -> Call[Recall]:
    params = given(
        goal=goal or None,
        k=k,
        run=run,
        turn=turn,
        keys=",".join(keys) or None,
        kinds=",".join(kinds) or None,
    )
    return Call(
        "GET",
        f"{API}/subjects/{segment(subject)}/recall",
        as_recall,
        params=params,
        headers={"Accept": "application/json"},
    )


def memory(memory_id: str) -> Call[JSON]:
    return Call("GET", f"{API}/memories/{segment(memory_id)}", as_object)


def memories(
    *,
    subject: str | None,
    kind: str | None,
    basis: str | None,
    status: str | None,
    key: str | None,
    page_size: int | None,
) -> Call[JSON]:
    params = given(
        subject=subject, kind=kind, basis=basis, status=status, key=key, page_size=page_size
    )
    return Call("GET", f"{API}/memories", as_object, params=params)


def correct(
    memory_id: str,
    *,
    statement: str,
    reason: str,
    source: JSON | None,
    version: int | str | None,
    idempotency_key: str | None,
) -> Call[JSON]:
    return write(
        "POST",
        f"{API}/memories/{segment(memory_id)}/corrections",
        given(statement=statement, reason=reason, source=source),
        idempotency_key=idempotency_key,
        headers=if_match(version),
        read=as_object,
    )


def retract(
    memory_id: str, *, reason: str, version: int | str | None, idempotency_key: str | None
) -> Call[JSON]:
    return write(
        "POST",
        f"{API}/memories/{segment(memory_id)}/retract",
        {"reason": reason},
        idempotency_key=idempotency_key,
        headers=if_match(version),
        read=as_object,
    )


def ledger_add(
    subject: str,
    *,
    fact: str,
    kind: str,
    source: JSON,
    run: str | None,
    key: str,
    expires_at: datetime | str | None,
    immutable: bool | None,
    idempotency_key: str | None,
) -> Call[JSON]:
    body = given(
        fact=fact,
        kind=kind,
        source=source,
        run=run,
        key=key or None,
        expires_at=moment(expires_at) if expires_at is not None else None,
        immutable=immutable,
    )
    return write(
        "POST",
        f"{API}/subjects/{segment(subject)}/ledger",
        body,
        idempotency_key=idempotency_key,
        read=as_object,
    )


def ledger_in_force(subject: str, *, kind: str | None) -> Call[list[JSON]]:
    params = given(active=1, kind=kind)
    return Call("GET", f"{API}/subjects/{segment(subject)}/ledger", as_entries, params=params)


def journal_intent(
    run: str, *, action: str, intent: JSON, idempotency_key: str | None
) -> Call[JSON]:
    body = {
        "idempotency_key": idempotency_key or journal_key(action),
        "action": action,
        "intent": intent,
    }
    # The journal keeps its own key in the body; the header key makes a retry a replay too.
    return write(
        "POST", f"{API}/runs/{segment(run)}/journal", body, idempotency_key=None, read=as_object
    )


def journal_result(
    idempotency_key: str, *, state: str, effect: Any, verification: Any
) -> Call[JSON]:
    return write(
        "PATCH",
        f"{API}/journal/{segment(idempotency_key)}",
        given(state=state, effect=effect, verification=verification),
        idempotency_key=None,
        read=as_object,
    )


def resume() -> Call[JSON]:
    return Call("GET", f"{API}/journal", as_object, params={"needs_resolution": "1"})


def note_put(run: str, key: str, value: str) -> Call[JSON]:
    return write(
        "PUT",
        f"{API}/runs/{segment(run)}/notes/{segment(key)}",
        {"value": value},
        idempotency_key=None,
        read=as_object,
    )


def notes(run: str) -> Call[JSON]:
    return Call("GET", f"{API}/runs/{segment(run)}/notes", as_object)


def snapshot_post(
    run: str,
    document: JSON,
    *,
    tokens_before: int,
    tokens_after: int,
    generation: int | None,
    subject: str | None,
    pinned: list[str] | None,
    budget: dict[str, int] | None,
    narrative: str | None,
    idempotency_key: str | None,
) -> Call[JSON]:
    body = given(
        document=document,
        tokens_before=tokens_before,
        tokens_after=tokens_after,
        generation=generation,
        subject=subject,
        pinned=pinned,
        budget=budget,
        narrative=narrative,
    )
    return write(
        "POST",
        f"{API}/runs/{segment(run)}/snapshots",
        body,
        idempotency_key=idempotency_key,
        read=as_object,
    )


def tools() -> Call[JSON]:
    return Call("GET", f"{API}/tools", as_object)


def tool(endpoints: JSON, name: str, arguments: Mapping[str, Any]) -> Call[Any]:
    """The call a tool of ``GET /api/v1/tools`` stands for, from its endpoint table."""
    if name not in endpoints:
        raise ValueError(f"No tool named {name!r}; the API has: {', '.join(sorted(endpoints))}.")
    endpoint = endpoints[name]
    rest = dict(arguments)
    in_path = {}
    for argument in endpoint["path_arguments"]:
        if argument not in rest:
            raise ValueError(f"The tool {name!r} needs the argument {argument!r}.")
        in_path[argument] = segment(rest.pop(argument))
    path = endpoint["path"].format(**in_path)
    method = endpoint["method"].upper()
    where = endpoint["other_arguments"]
    if where == "none" and rest:
        raise ValueError(f"The tool {name!r} takes no argument {', '.join(sorted(rest))}.")
    if method in WRITE_METHODS:
        return write(
            method, path, rest if where == "body" else None, idempotency_key=None, read=answer
        )
    params = {k: v for k, v in rest.items() if v is not None} if where == "query" else None
    return Call(method, path, answer, params=params, body=rest if where == "body" else None)
