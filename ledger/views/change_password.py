"""The change-password page, under the sign-in limits: its old password is a guess at the
person's password like any sign-in, so it goes through ``authenticate``, which django-axes
counts and refuses once the username or address is locked out (``ledger.signin``)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import authenticate
from django.contrib.auth.forms import PasswordChangeForm
from django.contrib.auth.models import User
from django.contrib.auth.views import PasswordChangeView
from django.core.exceptions import ValidationError
from django.http import HttpRequest


class LimitedPasswordChange(PasswordChangeForm):
    def __init__(self, user: User, *args: Any, request: HttpRequest, **kwargs: Any) -> None:
        super().__init__(user, *args, **kwargs)
        self.request = request

    def clean_old_password(self) -> str:
        old_password: str = self.cleaned_data["old_password"]
        person = authenticate(
            self.request, username=self.user.get_username(), password=old_password
        )
        if person is None:
            raise ValidationError(
                self.error_messages["password_incorrect"], code="password_incorrect"
            )
        return old_password


class LimitedPasswordChangeView(PasswordChangeView):
    form_class = LimitedPasswordChange

    def get_form_kwargs(self) -> dict[str, Any]:
        return {**super().get_form_kwargs(), "request": self.request}
