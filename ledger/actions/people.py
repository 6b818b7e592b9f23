"""People: end users, support staff and admins, the subjects they own, and their access.

Django's users keep no history of their own, so every change here writes one
``PersonChange`` row per field it changed, in the same transaction: who made it, in what
role, before → after and why. Nothing here sets ``is_superuser`` or a group other than a
role's: a superuser is made only by Django's ``createsuperuser``, and ``is_staff`` follows
the role (admins read the Django admin). Passwords are never seen by anyone but the person:
an admin sends a set-password link to the person's own address.
"""

from __future__ import annotations

import logging
from smtplib import SMTPException

from django.conf import settings
from django.contrib.auth.models import User
from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.tokens import default_token_generator
from django.core.mail import EmailMessage
from django.db import IntegrityError, transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from ledger import access
from ledger.actions._tracking import save_tracked
from ledger.actions.reminders import _PlainText
from ledger.actors import Actor
from ledger.choices import PersonField
from ledger.models import PersonChange, SignInIdentity, Subject
from ledger.rules.people import (
    PersonFacts,
    PersonMove,
    refuse_owner_leaving_end_users,
    refuse_person_move,
    refuse_reserved_username,
    refuse_same_role,
    refuse_subject_taken,
)
from ledger.rules.reasons import refuse_without_reason
from ledger.rules.refusals import Refusal

ROLES = tuple(role.value for role in access.Role)
# A role as the pages and the command line say it.
ROLE_WORDS = {
    access.Role.END_USER: "End user",
    access.Role.SUPPORT: "Support",
    access.Role.ADMIN: "Admin",
}
ACTIVE, DISABLED = "active", "disabled"
LINK_NOT_SENT = "not sent: the mail server did not take it"

logger = logging.getLogger(__name__)


class PersonExists(Exception):
    """Changing an existing person was not asked for; nothing was changed."""


def facts_about(person: User, *, viewer: User | None) -> PersonFacts:
    """What ``refuse_person_move`` needs to know about ``person``."""
    return PersonFacts(
        name=person.get_username(),
        superuser=person.is_superuser,
        yourself=viewer is not None and viewer.pk == person.pk,
        active=person.is_active,
        end_user=access.role_of(person) == access.Role.END_USER,
        has_email=bool(person.email),
        owned_subjects=Subject.objects.filter(owner=person).count(),
    )


def role_words(role: str | None) -> str:
    """A role in a sentence: "end user", "support", "admin" ("no role" for none)."""
    return ROLE_WORDS[access.Role(role)].lower() if role in ROLES else "no role"


def full_name(first_name: str, last_name: str) -> str:
    return " ".join(part for part in (first_name, last_name) if part)


def create_person(
    *,
    username: str,
    role: str,
    actor: Actor,
    password: str = "",
    subject_ref: str = "",
    subject_name: str = "",
    email: str = "",
    first_name: str = "",
    last_name: str = "",
    reason: str = "",
    move_subject: bool = True,
) -> User:
    """Create a person with one role; an end user may own a subject.

    Without a password the person has none that works until they set one with a link
    (``send_password_link``). A given password must pass the configured validators
    (``ValidationError``). An existing username, in any letter case, is refused
    (``PersonExists``): changing someone is ``update_person`` or the moves below. A subject
    someone else owns moves to the new person, as on the command line, unless
    ``move_subject`` is False (the People page), when it is refused (``Refusal``).
    """
    _check_role(role)
    _check_reason(actor, reason)
    refuse_reserved_username(username)
    try:
        with transaction.atomic():
            if User.objects.filter(username__iexact=username).exists():
                raise PersonExists(f"A person called '{username}' already exists.")
            user = User(
                username=username,
                email=email,
                first_name=first_name,
                last_name=last_name,
                is_staff=role == access.Role.ADMIN,
            )
            if password:
                validate_password(password, user)
                user.set_password(password)
            else:
                user.set_unusable_password()
            user.save()
            user.groups.set(access.groups_for(access.Role(role)))
            _record(user, PersonField.PERSON, "", "created", actor=actor, reason=reason)
            if name := full_name(first_name, last_name):
                _record(user, PersonField.NAME, "", name, actor=actor, reason=reason)
            _record(user, PersonField.ROLE, "", role, actor=actor, reason=reason)
            if email:
                _record(user, PersonField.EMAIL, "", email, actor=actor, reason=reason)
            if password:
                _record(user, PersonField.PASSWORD, "", "set", actor=actor, reason=reason)
            if subject_ref:
                if not move_subject:
                    _refuse_taken(user, subject_ref)
                _take_subject(user, subject_ref, subject_name, actor=actor, reason=reason)
    except IntegrityError:
        # Another request created the same username between the check and the insert.
        raise PersonExists(f"A person called '{username}' already exists.") from None
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
    first_name: str = "",
    last_name: str = "",
    reason: str = "",
) -> list[str]:
    """The command line's change: what is given (an empty value leaves it as it is).

    Returns what changed, in words. A subject owned by someone else moves to ``user``; the
    People page refuses that instead (``link_subject``). An end user who owns subjects keeps
    their role until they are unlinked (``Refusal``), as on the People page.
    """
    if role:
        _check_role(role)
    changes: list[str] = []
    with transaction.atomic():
        user = _locked(user)
        current = access.role_of(user)
        if role and role != current:
            refuse_owner_leaving_end_users(facts_about(user, viewer=None))
            changes.append(f"role {role_words(current)} → {role_words(role)}")
            _set_role(user, role)
            _record(user, PersonField.ROLE, str(current), role, actor=actor, reason=reason)
        name_before = user.get_full_name()
        user.first_name = first_name or user.first_name
        user.last_name = last_name or user.last_name
        if user.get_full_name() != name_before:
            changes.append(f"name {name_before or '(none)'} → {user.get_full_name()}")
            _record(
                user,
                PersonField.NAME,
                name_before,
                user.get_full_name(),
                actor=actor,
                reason=reason,
            )
        if email and email != user.email:
            changes.append(f"e-mail {user.email or '(none)'} → {email}")
            _record(user, PersonField.EMAIL, user.email, email, actor=actor, reason=reason)
            user.email = email
        if password:
            validate_password(password, user)
            user.set_password(password)
            changes.append("password changed")
            _record(user, PersonField.PASSWORD, "", "changed", actor=actor, reason=reason)
        user.save()
        if subject_ref:
            ownership = _take_subject(user, subject_ref, subject_name, actor=actor, reason=reason)
            if ownership:
                changes.append(ownership)
    return changes


def change_role(person: User, *, actor: Actor, role: str, reason: str) -> User:
    _check_role(role)
    _check_reason(actor, reason)
    with transaction.atomic():
        person = _locked(person)
        refuse_person_move(PersonMove.CHANGE_ROLE, facts_about(person, viewer=actor.user))
        current = str(access.role_of(person))
        refuse_same_role(name=person.get_username(), current=current, wanted=role)
        _set_role(person, role)
        person.save(update_fields=["is_staff"])
        _record(person, PersonField.ROLE, current, role, actor=actor, reason=reason)
    return person


def link_subject(
    person: User, *, actor: Actor, subject_ref: str, subject_name: str, reason: str
) -> Subject:
    """Make the end user ``person`` the owner of a subject (made if it does not exist).

    A subject someone else owns is refused: moving it is an unlink on their page, then a
    link here, each with its reason, so neither person's history is silent about it.
    """
    _check_reason(actor, reason)
    with transaction.atomic():
        person = _locked(person)
        refuse_person_move(PersonMove.LINK_SUBJECT, facts_about(person, viewer=actor.user))
        _refuse_taken(person, subject_ref)
        _take_subject(person, subject_ref, subject_name, actor=actor, reason=reason)
    return Subject.objects.get(ref=subject_ref)


def unlink_subject(person: User, *, actor: Actor, subject_ref: str, reason: str) -> Subject:
    """The subject no longer belongs to ``person``; it keeps its memories, with no owner."""
    _check_reason(actor, reason)
    with transaction.atomic():
        person = _locked(person)
        refuse_person_move(PersonMove.UNLINK_SUBJECT, facts_about(person, viewer=actor.user))
        subject = Subject.objects.select_for_update().filter(ref=subject_ref, owner=person).first()
        if subject is None:
            raise Refusal(
                "subject_not_owned",
                f"{person.get_username()} does not own a subject called {subject_ref}. "
                "Nothing was changed.",
                409,
            )
        subject.owner = None
        save_tracked(
            subject,
            actor=actor,
            reason=f"No longer owned by {person.get_username()}: {reason}",
            update_fields=["owner"],
        )
        _record(person, PersonField.SUBJECT, subject_ref, "", actor=actor, reason=reason)
    return subject


def set_active(person: User, *, actor: Actor, active: bool, reason: str) -> User:
    """Enable or disable signing in. A disabled person's open sessions end at their next
    request (Django's backend refuses an inactive user); nothing they did is undone."""
    _check_reason(actor, reason)
    move = PersonMove.ENABLE if active else PersonMove.DISABLE
    with transaction.atomic():
        person = _locked(person)
        refuse_person_move(move, facts_about(person, viewer=actor.user))
        person.is_active = active
        person.save(update_fields=["is_active"])
        before, after = (DISABLED, ACTIVE) if active else (ACTIVE, DISABLED)
        _record(person, PersonField.ACCESS, before, after, actor=actor, reason=reason)
    return person


def send_password_link(person: User, *, actor: Actor, reason: str) -> str:
    """E-mail ``person`` a link to set their own password; returns the address it went to.

    The link is Django's password-reset token: it works once (setting the password changes
    what it is signed over) and for ``PASSWORD_RESET_TIMEOUT``. Nobody but the mailbox's
    owner sees it.

    The link is recorded first and e-mailed once that record is committed, so that no link
    goes out that the person's history does not show. A mail server that then refuses the
    message is recorded too (``PASSWORD_LINK_FAILED``) and answered with a refusal, so no
    page says a link went that did not. Called inside a transaction, the e-mail waits for
    its commit and this returns before it is sent.
    """
    _check_reason(actor, reason)
    sent: list[bool] = []
    with transaction.atomic():
        person = _locked(person)
        refuse_person_move(PersonMove.SEND_PASSWORD_LINK, facts_about(person, viewer=actor.user))
        _record(
            person,
            PersonField.PASSWORD_LINK,
            "",
            f"sent to {person.email}",
            actor=actor,
            reason=reason,
        )
        message = _link_message(person)

        def send() -> None:
            sent.append(_mailed(message, person, actor=actor, reason=reason))

        # Robust: should even recording a failure fail, the audit chain's seals, made after
        # the same commit, still are (and this answers that the e-mail did not go).
        transaction.on_commit(send, robust=True)
    if not sent and transaction.get_connection().in_atomic_block:
        return person.email
    if sent != [True]:
        raise Refusal(
            "mail_not_sent",
            "The e-mail could not be sent: the mail server did not take it. The attempt is "
            "in the history; try again later.",
            503,
        )
    return person.email


def _mailed(message: EmailMessage, person: User, *, actor: Actor, reason: str) -> bool:
    """Send a link already recorded; a refusal is recorded beside it, since the record of
    the attempt is committed and stays."""
    try:
        message.send()
    except (SMTPException, OSError):
        pass  # The mail server refused it or could not be reached: recorded below.
    except Exception:
        # After the commit nothing rolls back: an unforeseen failure is recorded too.
        logger.exception("The set-password link to person #%s could not be sent.", person.pk)
    else:
        return True
    with transaction.atomic():
        _record(
            person,
            PersonField.PASSWORD_LINK_FAILED,
            f"sent to {person.email}",
            LINK_NOT_SENT,
            actor=actor,
            reason=reason,
        )
    return False


def set_own_password(person: User, *, password: str) -> User:
    """The person sets their password with the link they were e-mailed (already checked
    against the validators by the form)."""
    with transaction.atomic():
        person = _locked(person)
        person.set_password(password)
        person.save(update_fields=["password"])
        _record(
            person,
            PersonField.PASSWORD,
            "",
            "set by the person",
            actor=Actor.for_user(person),
            reason="Set with the link they were e-mailed.",
        )
    return person


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}")


def _check_reason(actor: Actor, reason: str) -> None:
    # The command line and the demo say who they are; a person on a page also says why.
    if actor.user is not None:
        refuse_without_reason(reason, why="this person changes", kept="their history")


def _locked(person: User) -> User:
    """The person's row, locked for the change, so that "before" is what it really was."""
    return User.objects.select_for_update().get(pk=person.pk)


def _set_role(person: User, role: str) -> None:
    person.is_staff = role == access.Role.ADMIN
    person.groups.set(access.groups_for(access.Role(role)))
    access.forget_role(person)


def _refuse_taken(person: User, subject_ref: str) -> None:
    subject = (
        Subject.objects.select_for_update(of=("self",))
        .select_related("owner")
        .filter(ref=subject_ref)
        .first()
    )
    if subject is not None and subject.owner is not None:
        refuse_subject_taken(
            subject_ref=subject_ref,
            owner=subject.owner.get_username(),
            person=person.get_username(),
        )


def _take_subject(
    user: User, subject_ref: str, subject_name: str, *, actor: Actor, reason: str
) -> str:
    """Make ``user`` the subject's owner; returns what changed, in words ("" for nothing).

    A previous owner's history says the subject moved, as the new owner's says it came.
    """
    subject = (
        Subject.objects.select_for_update(of=("self",))
        .select_related("owner")
        .filter(ref=subject_ref)
        .first()
    )
    previous = subject.owner if subject is not None else None
    renamed = bool(subject_name) and (subject is None or subject_name != subject.display_name)
    if subject is not None and previous == user and not renamed:
        return ""
    subject = subject or Subject(ref=subject_ref)
    subject.owner = user
    subject.display_name = subject_name or subject.display_name
    name = user.get_username()
    save_tracked(
        subject, actor=actor, reason=f"Owner set to {name}." + (f" {reason}" if reason else "")
    )
    if previous == user:
        return f"subject {subject_ref} now called {subject_name}"
    if previous is not None:
        moved = f"Moved to {name}." + (f" {reason}" if reason else "")
        _record(previous, PersonField.SUBJECT, subject_ref, "", actor=actor, reason=moved)
    _record(user, PersonField.SUBJECT, "", subject_ref, actor=actor, reason=reason)
    return f"now owns subject {subject_ref}"


def link_identity(person: User, *, issuer: str, subject: str, actor: Actor, reason: str) -> None:
    """Tie ``person`` to their account at an identity provider (its issuer and ``sub``):
    their company sign-ins come to this person from now on."""
    SignInIdentity.objects.create(
        person=person, issuer=issuer, subject=subject, linked_at=timezone.now()
    )
    _record(person, PersonField.IDENTITY, "", issuer, actor=actor, reason=reason)


def _record(
    person: User, field: PersonField, before: str, after: str, *, actor: Actor, reason: str
) -> None:
    PersonChange.objects.create(
        person=person,
        username=person.get_username(),
        field=field,
        before=before,
        after=after,
        reason=reason,
        actor=actor.label,
        actor_role=actor.role,
        changed_at=timezone.now(),
    )


def _link_message(person: User) -> EmailMessage:
    path = reverse(
        "password_reset_confirm",
        kwargs={
            "uidb64": urlsafe_base64_encode(force_bytes(person.pk)),
            "token": default_token_generator.make_token(person),
        },
    )
    context = {
        "person": person,
        "url": settings.MEMORYADMIN_SITE_URL + path,
        "hours": settings.PASSWORD_RESET_TIMEOUT // 3600,
    }
    subject = " ".join(render_to_string("registration/set_password_subject.txt", context).split())
    body = render_to_string("registration/set_password_email.txt", context)
    return _PlainText(subject=subject, body=body, to=[person.email])
