"""``Idempotency-Key``: a retried write returns its first response and writes nothing."""

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
from ledger.models import IdempotencyRecord, Subject
from ledger.policy import forbidden_character

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


def idempotent(request: Request, write: Callable[[], tuple[Response, Subject | None]]) -> Response:
    """Run ``write`` once per (agent, key); store its response in the same transaction."""
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
            response, subject = write()
            if response.status_code != status.HTTP_400_BAD_REQUEST:
                # Malformed requests are not remembered: the client should fix and resend them.
                IdempotencyRecord.objects.create(
                    agent=agent,
                    key=key,
                    fingerprint=fingerprint(request),
                    response_status=response.status_code,
                    response_body=json.loads(JSONRenderer().render(response.data)),
                    subject=subject,
                )
            return response
    except IntegrityError:
        # A concurrent request with the same key won; our write was rolled back with it.
        return _replay(IdempotencyRecord.objects.get(agent=agent, key=key), request)
