"""People: end users, support staff and admins, and the subjects they own."""

from __future__ import annotations

from django.contrib.auth.models import Group, User
from django.db import transaction

from ledger.actions.tracking import save_tracked
from ledger.actors import Actor
from ledger.models import Subject
from ledger.querysets import ADMIN_GROUP, SUPPORT_GROUP

ROLES = ("user", SUPPORT_GROUP, ADMIN_GROUP)


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
        user.is_staff = role == ADMIN_GROUP
        user.save()
        # get_or_create: the role's group is made by a migration, but may have been flushed.
        groups = [] if role == "user" else [Group.objects.get_or_create(name=role)[0]]
        user.groups.set(groups)
        if subject_ref:
            subject = Subject.objects.filter(ref=subject_ref).first() or Subject(ref=subject_ref)
            subject.owner = user
            subject.display_name = subject_name or subject.display_name
            save_tracked(subject, actor=actor, reason=f"Owner set to {username}.")
    return user
