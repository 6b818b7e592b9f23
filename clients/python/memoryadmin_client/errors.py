"""Every answer the API refuses becomes one exception carrying the API's own code.

One table from code to class, then one from status to class for codes it does not name,
so ``except MemoryAdminError`` catches everything and ``except Conflict`` every 409."""

from __future__ import annotations

import email.utils
import time
from typing import Any

import httpx


class MemoryAdminError(Exception):
    """A refused or failed call: the HTTP status, the API's code and detail, and its body."""

    def __init__(self, status: int, code: str, detail: str, body: Any = None) -> None:
        super().__init__(f"{status} {code}: {detail}" if status else f"{code}: {detail}")
        self.status = status
        self.code = code
        self.detail = detail
        self.body = body


class ConnectionFailed(MemoryAdminError):
    """No answer at all (refused, reset, timed out), after every retry. Status 0."""


class BadRequest(MemoryAdminError):
    """400: the request is malformed. ``errors`` maps each field to its messages."""

    def __init__(self, status: int, code: str, detail: str, body: Any = None) -> None:
        super().__init__(status, code, detail, body)
        self.errors: dict[str, Any] = body if isinstance(body, dict) and "code" not in body else {}


class AuthenticationFailed(MemoryAdminError):
    """401: no key, a wrong one, a revoked one, or one past its rotation's grace."""


class PermissionDenied(MemoryAdminError):
    """403: the key lacks the scope this call needs."""


class NotYourWrite(PermissionDenied):
    """403 ``not_your_write``: the memory is another agent's write, and the write policy
    lets an agent correct or retract only its own."""


class NotFound(MemoryAdminError):
    """404: no such memory, subject, entry, or a run of another agent's."""


class Conflict(MemoryAdminError):
    """409: the state of things refuses it (a move not allowed, another agent's run, …)."""


class SubjectCapReached(Conflict):
    """409 ``subject_cap_reached``: the subject holds the policy's maximum of live memories."""


class StaleVersion(MemoryAdminError):
    """412 ``stale_version``: the memory changed since you read it. ``etag`` is its current
    ETag (``'"3"'``), ``version`` its number: read it again, then decide."""

    def __init__(self, status: int, code: str, detail: str, body: Any = None) -> None:
        super().__init__(status, code, detail, body)
        self.etag: str = ""
        self.version: int | None = None


class Unprocessable(MemoryAdminError):
    """422: well formed, but refused by a rule."""


class SystemOfRecord(Unprocessable):
    """422 ``system_of_record``: the key belongs to another system (billing, e-mail, …)."""


class IdempotencyKeyReused(Unprocessable):
    """422 ``idempotency_key_reused``: this Idempotency-Key went with another request body."""


class SnapshotRejected(Unprocessable):
    """422 from a snapshot post: it was stored as rejected. ``problems`` lists every check it
    failed (``check``, ``code``, ``message``, ``items``); fix them and post again."""

    def __init__(self, status: int, code: str, detail: str, body: Any = None) -> None:
        super().__init__(status, code, detail, body)
        problems = body.get("problems") if isinstance(body, dict) else None
        self.problems: list[dict[str, Any]] = problems if isinstance(problems, list) else []


class Paused(MemoryAdminError):
    """423: writing is paused, by the person or by an admin."""


class MemoryPaused(Paused):
    """423 ``memory_paused``: the subject's owner paused memory; nothing about them is kept."""


class AgentPaused(Paused):
    """423 ``agent_writes_paused``: an admin paused this agent's writes."""


class RateLimited(MemoryAdminError):
    """429: over this agent's limit. ``retry_after`` is the wait, in seconds."""

    def __init__(self, status: int, code: str, detail: str, body: Any = None) -> None:
        super().__init__(status, code, detail, body)
        self.retry_after: float = 0.0


class ServerError(MemoryAdminError):
    """5xx: the server failed (after every retry)."""


BY_CODE: dict[str, type[MemoryAdminError]] = {
    "memory_paused": MemoryPaused,
    "agent_writes_paused": AgentPaused,
    "system_of_record": SystemOfRecord,
    "stale_version": StaleVersion,
    "rate_limited": RateLimited,
    "subject_cap_reached": SubjectCapReached,
    "idempotency_key_reused": IdempotencyKeyReused,
    "not_found": NotFound,
    "not_authenticated": AuthenticationFailed,
    "authentication_failed": AuthenticationFailed,
    "permission_denied": PermissionDenied,
    "not_your_write": NotYourWrite,
}

BY_STATUS: dict[int, type[MemoryAdminError]] = {
    400: BadRequest,
    401: AuthenticationFailed,
    403: PermissionDenied,
    404: NotFound,
    409: Conflict,
    412: StaleVersion,
    422: Unprocessable,
    423: Paused,
    429: RateLimited,
}


def retry_after(response: httpx.Response) -> float | None:
    """The Retry-After header in seconds (a number or an HTTP date), or None."""
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def body_of(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text


def error_for(response: httpx.Response) -> MemoryAdminError:
    """The exception for a refused answer (any status of 400 or more)."""
    body = body_of(response)
    fields = body if isinstance(body, dict) else {}
    code = str(fields.get("code") or "")
    detail = str(fields.get("detail") or "")
    status = response.status_code
    cls: type[MemoryAdminError]
    if status == 422 and "problems" in fields and not code:
        cls, code = SnapshotRejected, "snapshot_rejected"
        detail = "; ".join(str(p.get("message", p)) for p in fields["problems"] if p) or detail
    elif code in BY_CODE:
        cls = BY_CODE[code]
    elif status >= 500:
        cls = ServerError
    else:
        cls = BY_STATUS.get(status, MemoryAdminError)
    if status == 400 and not code:
        code = "invalid"
        detail = detail or _field_messages(fields) or str(body)[:500]
    error = cls(status, code or f"http_{status}", detail or response.reason_phrase, body)
    if isinstance(error, StaleVersion):
        error.etag = response.headers.get("ETag", "")
        number = error.etag.strip('W/"')
        error.version = int(number) if number.isdigit() else None
    if isinstance(error, RateLimited):
        error.retry_after = retry_after(response) or 0.0
    return error


def _field_messages(errors: dict[str, Any]) -> str:
    return "; ".join(
        f"{name}: {' '.join(map(str, messages)) if isinstance(messages, list) else messages}"
        for name, messages in errors.items()
    )
