"""The sign-in page's answer to a locked-out username or address (``AXES_LOCKOUT_CALLABLE``)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from ledger.signin import locked_until


def locked_out(
    request: HttpRequest, original_response: HttpResponse | None, credentials: dict[str, Any]
) -> HttpResponse:
    """The sign-in form again, saying why it refuses and until when: 429, Too Many Requests."""
    form = AuthenticationForm(request, initial={"username": request.POST.get("username", "")})
    context = {
        "form": form,
        "locked_until": locked_until(request),
        "next": request.POST.get("next", request.GET.get("next", "")),
    }
    return render(request, "registration/login.html", context, status=429)
