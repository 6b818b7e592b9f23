"""The page a set-password link opens: Django's own token check, our form and templates.

An admin sends the link from the People page (``ledger.actions.people.send_password_link``);
the password the person chooses here is saved through ``set_own_password``, so it is in
their history like every other change to them (as set, never its value).
"""

from __future__ import annotations

from django.contrib.auth.views import PasswordResetConfirmView

from ledger.views.forms.people import PersonSetsPassword


class SetPasswordView(PasswordResetConfirmView):
    form_class = PersonSetsPassword
    title = "Choose your password"
