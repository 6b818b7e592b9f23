"""What an admin types about people: a new person, their role, the subjects they own,
their access, a set-password link and lifting a sign-in lockout, each with why; and the
passwords people choose themselves."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import authenticate
from django.contrib.auth.forms import PasswordChangeForm, SetPasswordForm
from django.contrib.auth.models import User
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.http import HttpRequest

from ledger.access import Role
from ledger.actions.people import ROLE_WORDS, set_own_password
from ledger.rules.text import REF_HELP, REF_PATTERN, forbidden_character

REASON_MAX = 500
ROLE_CHOICES = [(role.value, words) for role, words in ROLE_WORDS.items()]
ROLE_HELP = (
    "An end user sees and corrects only the subjects they own. Support works on every "
    "subject, saying why. An admin also keeps the audit, the policy, agents and people."
)


def _reason() -> forms.CharField:
    return forms.CharField(
        label="Why",
        max_length=REASON_MAX,
        widget=forms.Textarea(attrs={"rows": 2}),
        error_messages={
            "required": "Say why: the reason is kept in the person's history.",
            "max_length": "Keep the reason to %(limit_value)d characters "
            "(this one has %(show_value)d).",
        },
    )


def _subject_ref(required: bool) -> forms.CharField:
    return forms.CharField(
        label="Subject reference",
        max_length=100,
        required=required,
        validators=[RegexValidator(REF_PATTERN, f"Not a subject reference: {REF_HELP}")],
        error_messages={"required": "Give the reference of the subject (e.g. acct_4b71c9e2)."},
    )


def _role(label: str) -> forms.ChoiceField:
    return forms.ChoiceField(
        label=label,
        choices=ROLE_CHOICES,
        help_text=ROLE_HELP,
        error_messages={"invalid_choice": "Choose one of the roles: end user, support, admin."},
    )


def _visible(name: str) -> str:
    name = name.strip()
    if forbidden_character(name):
        raise forms.ValidationError("The name holds an invisible character: type it again.")
    return name


class SubjectNamed(forms.Form):
    subject_name = forms.CharField(
        label="What the subject is called", max_length=200, required=False
    )

    def clean_subject_name(self) -> str:
        return _visible(self.cleaned_data["subject_name"])


class NewPersonForm(SubjectNamed):
    username = forms.CharField(
        label="Username",
        max_length=150,
        validators=[UnicodeUsernameValidator()],
        error_messages={"required": "Choose a username: the person signs in with it."},
    )
    email = forms.EmailField(
        label="E-mail address",
        max_length=254,
        error_messages={
            "required": "Give their e-mail address: the link to set a password goes there.",
            "invalid": "That is not an e-mail address (like name@example.com).",
        },
    )
    first_name = forms.CharField(label="First name (optional)", max_length=150, required=False)
    last_name = forms.CharField(label="Last name (optional)", max_length=150, required=False)
    role = _role("Role")
    subject_ref = _subject_ref(required=False)
    reason = _reason()
    field_order = [
        "username",
        "email",
        "first_name",
        "last_name",
        "role",
        "subject_ref",
        "subject_name",
        "reason",
    ]

    def clean_first_name(self) -> str:
        return _visible(self.cleaned_data["first_name"])

    def clean_last_name(self) -> str:
        return _visible(self.cleaned_data["last_name"])

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("subject_ref") and data.get("role") != Role.END_USER:
            self.add_error(
                "subject_ref",
                "Only an end user owns a subject: choose the role End user, or leave this empty.",
            )
        if data.get("subject_name") and not self.data.get("subject_ref"):
            self.add_error("subject_name", "Give the subject's reference too, or leave this empty.")
        return data


class RoleForm(forms.Form):
    role = _role("New role")
    reason = _reason()


class LinkForm(SubjectNamed):
    subject_ref = _subject_ref(required=True)
    reason = _reason()
    field_order = ["subject_ref", "subject_name", "reason"]


class UnlinkForm(forms.Form):
    subject_ref = forms.CharField(max_length=100, widget=forms.HiddenInput)
    reason = _reason()


class ReasonOnlyForm(forms.Form):
    reason = _reason()


class AddressLiftForm(forms.Form):
    address = forms.GenericIPAddressField(
        widget=forms.HiddenInput,
        error_messages={
            "required": "Say which address to lift the lockout of.",
            "invalid": "That is not an address (like 203.0.113.7 or 2001:db8::7).",
        },
    )
    reason = _reason()


# Passwords.


class LimitedPasswordChange(PasswordChangeForm):
    """The old password is a guess like any sign-in: it goes through ``authenticate``, which
    django-axes counts and refuses once the username or address is locked out."""

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


class PersonSetsPassword(SetPasswordForm[User]):
    """The password a person chooses from a set-password link, saved through
    ``set_own_password`` so it is in their history (as set, never its value)."""

    def save(self, commit: bool = True) -> User:
        return set_own_password(self.user, password=self.cleaned_data["new_password1"])
