"""Every API error is JSON that names the problem; none is a 500 for bad input."""

from __future__ import annotations

from typing import Any

from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from ledger.rules.refusals import Refusal


def refusal_response(refusal: Refusal) -> Response:
    return Response({"detail": refusal.detail, "code": refusal.code}, status=refusal.status)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, Refusal):
        return refusal_response(exc)
    if isinstance(exc, Http404):
        return Response({"detail": "Not found.", "code": "not_found"}, status.HTTP_404_NOT_FOUND)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        return response
    if isinstance(response.data, dict) and "detail" in response.data:
        detail = response.data["detail"]
        response.data["code"] = getattr(detail, "code", None) or exc.__class__.__name__.lower()
    return response
