"""People: end users, support staff and admins, and the subjects they own."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from ledger import access
from ledger.actions._tracking import save_tracked
from ledger.actors import Actor
from ledger.models import Subject

ROLES = tuple(role.value for role in access.Role)


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
    """Create (or update) a person with one role; an end user may own a subject."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}")
    with transaction.atomic():
        user, _ = User.objects.get_or_create(username=username)
        user.set_password(password)
        user.email = email or user.email
        user.is_staff = role == access.Role.ADMIN
        user.save()
        user.groups.set(access.groups_for(access.Role(role)))
        access.forget_role(user)
        if subject_ref:
            subject = Subject.objects.filter(ref=subject_ref).first() or Subject(ref=subject_ref)
            subject.owner = user
            subject.display_name = subject_name or subject.display_name
            save_tracked(subject, actor=actor, reason=f"Owner set to {username}.")
    return user
