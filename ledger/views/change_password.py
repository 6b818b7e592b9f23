"""The change-password page, under the sign-in limits: its old password is a guess at the
person's password like any sign-in, so it goes through ``authenticate``, which django-axes
counts and refuses once the username or address is locked out (``ledger.signin``)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.views import PasswordChangeView

from ledger.views.forms.people import LimitedPasswordChange


class LimitedPasswordChangeView(PasswordChangeView):
    form_class = LimitedPasswordChange

    def get_form_kwargs(self) -> dict[str, Any]:
        return {**super().get_form_kwargs(), "request": self.request}
