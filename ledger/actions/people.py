"""People: end users, support staff and admins, and the subjects they own."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.contrib.auth.password_validation import validate_password
from django.db import transaction

from ledger import access
from ledger.actions._tracking import save_tracked
from ledger.actors import Actor
from ledger.models import Subject

ROLES = tuple(role.value for role in access.Role)


class PersonExists(Exception):
    """Changing an existing person was not asked for; nothing was changed."""


def create_person(
    *,
    username: str,
    password: str,
    role: str,
    actor: Actor,
    subject_ref: str = "",
    subject_name: str = "",
    email: str = "",
) -> User:
    """Create a person with one role; an end user may own a subject.

    The password must pass the configured validators (``ValidationError`` otherwise), and
    an existing username is refused (``PersonExists``): changing someone is ``update_person``.
    """
    _check_role(role)
    with transaction.atomic():
        if User.objects.filter(username=username).exists():
            raise PersonExists(f"A person called '{username}' already exists.")
        user = User(username=username, email=email)
        validate_password(password, user)
        user.set_password(password)
        user.is_staff = role == access.Role.ADMIN
        user.save()
        user.groups.set(access.groups_for(access.Role(role)))
        if subject_ref:
            _own(user, subject_ref, subject_name, actor)
    return user


def update_person(
    user: User,
    *,
    actor: Actor,
    role: str = "",
    password: str = "",
    subject_ref: str = "",
    subject_name: str = "",
    email: str = "",
) -> list[str]:
    """Change what is given (an empty value leaves it as it is); returns what changed."""
    if role:
        _check_role(role)
    changes: list[str] = []
    with transaction.atomic():
        current = access.role_of(user)
        if role and role != current:
            changes.append(f"role {current} → {role}")
            user.is_staff = role == access.Role.ADMIN
            user.groups.set(access.groups_for(access.Role(role)))
            access.forget_role(user)
        if email and email != user.email:
            changes.append(f"e-mail {user.email or '(none)'} → {email}")
            user.email = email
        if password:
            validate_password(password, user)
            user.set_password(password)
            changes.append("password changed")
        user.save()
        ownership = _ownership_change(user, subject_ref, subject_name) if subject_ref else ""
        if ownership:
            changes.append(ownership)
            _own(user, subject_ref, subject_name, actor)
    return changes


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}")


def _ownership_change(user: User, subject_ref: str, subject_name: str) -> str:
    subject = Subject.objects.filter(ref=subject_ref).first()
    if subject is None or subject.owner_id != user.pk:
        return f"now owns subject {subject_ref}"
    if subject_name and subject_name != subject.display_name:
        return f"subject {subject_ref} now called {subject_name}"
    return ""


def _own(user: User, subject_ref: str, subject_name: str, actor: Actor) -> None:
    subject = Subject.objects.filter(ref=subject_ref).first() or Subject(ref=subject_ref)
    subject.owner = user
    subject.display_name = subject_name or subject.display_name
    save_tracked(subject, actor=actor, reason=f"Owner set to {user.get_username()}.")
