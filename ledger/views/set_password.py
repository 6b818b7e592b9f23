"""The page a set-password link opens: Django's own token check, our form and templates.

An admin sends the link from the People page (``ledger.actions.people.send_password_link``);
the password the person chooses here is saved through ``set_own_password``, so it is in
their history like every other change to them (as set, never its value).
"""

from __future__ import annotations

from django.contrib.auth.forms import SetPasswordForm
from django.contrib.auth.models import User
from django.contrib.auth.views import PasswordResetConfirmView

from ledger.actions.people import set_own_password


class PersonSetsPassword(SetPasswordForm[User]):
    def save(self, commit: bool = True) -> User:
        return set_own_password(self.user, password=self.cleaned_data["new_password1"])


class SetPasswordView(PasswordResetConfirmView):
    form_class = PersonSetsPassword
    title = "Choose your password"
