"""The answer to a locked-out username or address (``AXES_LOCKOUT_CALLABLE``): the page that
was refused (the sign-in form, or the change-password form) again, saying so in words."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.forms import AuthenticationForm, PasswordChangeForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from ledger.signin import locked_until


def locked_out(
    request: HttpRequest, original_response: HttpResponse | None, credentials: dict[str, Any]
) -> HttpResponse:
    """The refused form again, saying why and until when: 429, Too Many Requests."""
    context: dict[str, Any] = {"locked_until": locked_until(request)}
    match = request.resolver_match
    if match is not None and match.view_name == "password_change" and request.user.is_authenticated:
        context["form"] = PasswordChangeForm(request.user)
        return render(request, "registration/password_change_form.html", context, status=429)
    context["form"] = AuthenticationForm(
        request, initial={"username": request.POST.get("username", "")}
    )
    context["next"] = request.POST.get("next", request.GET.get("next", ""))
    return render(request, "registration/login.html", context, status=429)
