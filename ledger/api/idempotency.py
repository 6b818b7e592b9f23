"""``Idempotency-Key``: a retried write returns its first response and writes nothing.

Not every answer is kept: a refusal whose cause can go away is decided again on the retry
(``rules.retries.answer_is_replayed``), and so is a preview, which wrote nothing to repeat.

Every kept answer says what it is about, so that an erasure of any subject it names deletes
it: a subject, a run (whose subject it has or will learn later), or several subjects."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from enum import Enum

from django.db import IntegrityError, transaction
from rest_framework import status
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from ledger.api.auth import agent_of
from ledger.models import Agent, IdempotencyRecord, Run, Subject
from ledger.rules.retries import answer_is_replayed
from ledger.rules.text import forbidden_character

HEADER = "Idempotency-Key"
KEY_MAX = 200


class Unkept(Enum):
    # A dry run: its retry computes the answer again, so nothing it listed is stored.
    PREVIEW = "preview"


PREVIEW = Unkept.PREVIEW
About = Subject | Run | Sequence[Subject] | Unkept | None


def fingerprint(request: Request) -> str:
    body = json.dumps(request.data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(f"{request.method} {request.path}\n{body}".encode()).hexdigest()


def _replay(record: IdempotencyRecord, request: Request) -> Response:
    if record.fingerprint != fingerprint(request):
        return Response(
            {
                "detail": f"This {HEADER} was already used with a different request body.",
                "code": "idempotency_key_reused",
            },
            status=status.HTTP_422_UNPROCESSABLE_ENTITY,
        )
    return Response(
        record.response_body, status=record.response_status, headers={"Idempotent-Replayed": "true"}
    )


def idempotent(request: Request, write: Callable[[], tuple[Response, About]]) -> Response:
    """Run ``write`` once per (agent, key); store its response in the same transaction.

    ``write`` also says what its answer is about (``About``), or ``PREVIEW`` for an answer
    not to keep."""
    key = request.headers.get(HEADER)
    if key is None:
        return write()[0]
    if not key or len(key) > KEY_MAX or forbidden_character(key):
        return Response(
            {
                "detail": f"{HEADER} must be 1–{KEY_MAX} printable characters.",
                "code": "invalid_idempotency_key",
            },
            status=status.HTTP_400_BAD_REQUEST,
        )
    agent = agent_of(request)
    try:
        with transaction.atomic():
            record = IdempotencyRecord.objects.filter(agent=agent, key=key).first()
            if record is not None:
                return _replay(record, request)
            response, about = write()
            code = response.data.get("code", "") if isinstance(response.data, dict) else ""
            if about is not PREVIEW and answer_is_replayed(response.status_code, str(code)):
                _keep(request, agent, key, response, about)
            return response
    except IntegrityError:
        # A concurrent request with the same key won; our write was rolled back with it.
        return _replay(IdempotencyRecord.objects.get(agent=agent, key=key), request)


def _keep(request: Request, agent: Agent, key: str, response: Response, about: About) -> None:
    run = about if isinstance(about, Run) else None
    record = IdempotencyRecord.objects.create(
        agent=agent,
        key=key,
        fingerprint=fingerprint(request),
        response_status=response.status_code,
        response_body=json.loads(JSONRenderer().render(response.data)),
        subject=run.subject if run is not None else about if isinstance(about, Subject) else None,
        run=run,
    )
    if isinstance(about, Sequence):
        record.subjects.set(about)
