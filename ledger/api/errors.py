"""Every API error is JSON that names the problem; none is a 500 for bad input.

DRF's views answer their own errors through ``exception_handler``. What Django answers
before or around a view (a URL no route matches, a request it refuses to read, a crash)
goes to Django's error handlers, which ``memoryadmin.urls`` points here: under ``/api/``
they answer in the same ``{"detail", "code"}`` shape, and every other page keeps Django's
HTML.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from ledger.rules.refusals import Refusal

PREFIX = "/api/"
NOT_FOUND = {"detail": "Not found.", "code": "not_found"}


class BodyTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "body_too_large"

    def __init__(self) -> None:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        super().__init__(
            f"The request body is larger than the {limit:,} bytes this server reads "
            "(DATA_UPLOAD_MAX_MEMORY_SIZE): nothing was read or written."
        )


def refusal_response(refusal: Refusal) -> Response:
    return Response({"detail": refusal.detail, "code": refusal.code}, status=refusal.status)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, Refusal):
        return refusal_response(exc)
    if isinstance(exc, Http404):
        return Response(NOT_FOUND, status.HTTP_404_NOT_FOUND)
    if isinstance(exc, RequestDataTooBig):
        # Raised by the first read of request.data; left to Django, it would be a 400 page.
        exc = BodyTooLarge()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        return response
    if isinstance(response.data, dict) and "detail" in response.data:
        detail = response.data["detail"]
        response.data["code"] = getattr(detail, "code", None) or exc.__class__.__name__.lower()
    return response


def _is_api(request: HttpRequest) -> bool:
    # path_info, not path: the API's own prefix, wherever the site is mounted.
    return request.path_info.startswith(PREFIX)


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """Django's handler404: a URL no route matches, ``/api/v1/memories/0.5`` say."""
    if not _is_api(request):
        return defaults.page_not_found(request, exception)
    return JsonResponse(NOT_FOUND, status=status.HTTP_404_NOT_FOUND)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """Django's handler400: a request Django refuses to read before any view sees it (too
    many query parameters, a host not allowed). Its own message may name internals."""
    if not _is_api(request):
        return defaults.bad_request(request, exception)
    return JsonResponse(
        {"detail": "This request could not be read: nothing was done.", "code": "bad_request"},
        status=status.HTTP_400_BAD_REQUEST,
    )


def server_error(request: HttpRequest) -> HttpResponse:
    """Django's handler500. The traceback goes to the log, never to the caller."""
    if not _is_api(request):
        return defaults.server_error(request)
    return JsonResponse(
        {"detail": "The server failed to answer this request.", "code": "server_error"},
        status=status.HTTP_500_INTERNAL_SERVER_ERROR,
    )
