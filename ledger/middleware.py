"""Refuse requests whose URL holds a NUL character before any view sees them.

PostgreSQL cannot store or compare text with NUL in it, so such a value would otherwise
fail deep inside a query as a server error instead of the client's mistake it is.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse

MESSAGE = "The URL contains a NUL character."


class RefuseNulInURL:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        query = request.GET.lists()
        if "\x00" in request.path or any("\x00" in k + "".join(v) for k, v in query):
            if request.path.startswith("/api/"):
                return JsonResponse({"detail": MESSAGE, "code": "nul_in_url"}, status=400)
            return HttpResponseBadRequest(MESSAGE)
        return self.get_response(request)
