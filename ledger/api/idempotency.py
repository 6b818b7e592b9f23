"""``Idempotency-Key``: a retried write returns its first response and writes nothing.

Not every answer is kept: a refusal whose cause can go away is decided again on the retry
(``policy.answer_is_replayed``)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

from django.db import IntegrityError, transaction
from rest_framework import status
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from ledger.api.auth import agent_of
from ledger.models import IdempotencyRecord, Run, Subject
from ledger.policy import answer_is_replayed, forbidden_character

HEADER = "Idempotency-Key"
KEY_MAX = 200


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


def idempotent(
    request: Request, write: Callable[[], tuple[Response, Subject | Run | None]]
) -> Response:
    """Run ``write`` once per (agent, key); store its response in the same transaction.

    ``write`` also says what its answer is about: a subject, or a run, whose subject it has
    or will learn later (an erasure of that subject deletes the answer either way)."""
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
            run = about if isinstance(about, Run) else None
            code = response.data.get("code", "") if isinstance(response.data, dict) else ""
            if answer_is_replayed(response.status_code, str(code)):
                IdempotencyRecord.objects.create(
                    agent=agent,
                    key=key,
                    fingerprint=fingerprint(request),
                    response_status=response.status_code,
                    response_body=json.loads(JSONRenderer().render(response.data)),
                    subject=about.subject if isinstance(about, Run) else about,
                    run=run,
                )
            return response
    except IntegrityError:
        # A concurrent request with the same key won; our write was rolled back with it.
        return _replay(IdempotencyRecord.objects.get(agent=agent, key=key), request)
