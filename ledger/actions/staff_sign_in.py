"""Staff signing in through the company's identity provider (OpenID Connect).

The provider says who someone is (its issuer and their ``sub``) and, in a claim, which of
the company's groups they are in; memoryadmin makes that support or admin at every such
sign-in, through the same people actions as the People page, so each change is in the
person's history. Someone in neither group gets no staff access: no account is made for
them, and a linked account loses its staff role. Only staff come this way: end users,
and the break-glass admin, sign in with a password.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import transaction

from ledger import access
from ledger.actions.people import PersonExists, create_person, link_identity, update_person
from ledger.actors import Actor
from ledger.models import SignInIdentity
from ledger.rules.people import RESERVED_USERNAMES
from ledger.rules.refusals import Refusal

ACTOR = Actor.system("identity-provider")
NO_STAFF_ROLE = (
    "Your account at the company's identity provider is not in a memoryadmin support or "
    "admin group, so it gives no staff access here. Ask an admin to add you to one."
)
# What Django's usernames may hold; anything else in the provider's name becomes "-".
_NOT_USERNAME = re.compile(r"[^\w.@+-]")


@dataclass(frozen=True)
class ProviderPerson:
    """What a sign-in at the provider said about the person, its signature checked."""

    issuer: str
    subject: str
    # ``access.Role.SUPPORT`` or ``ADMIN`` from the groups claim; None: neither group.
    role: access.Role | None
    username: str = ""
    email: str = ""
    first_name: str = ""
    last_name: str = ""


def staff_signed_in(who: ProviderPerson) -> User:
    """The person this provider account is linked to, made or updated to what the provider
    says now. Without a staff role the sign-in is refused (``Refusal``); a linked person
    who had one keeps that change, so their next request with an old session is an end
    user's, who owns nothing."""
    reason = f"Signed in through the identity provider {who.issuer}."
    with transaction.atomic():
        identity = (
            SignInIdentity.objects.select_for_update()
            .select_related("person")
            .filter(issuer=who.issuer, subject=who.subject)
            .first()
        )
        if identity is None and who.role is not None:
            return _provision(who, who.role, reason)
        if identity is not None:
            update_person(
                identity.person,
                actor=ACTOR,
                role=who.role or access.Role.END_USER,
                email=who.email,
                first_name=who.first_name,
                last_name=who.last_name,
                reason=reason,
            )
    if identity is None or who.role is None:
        raise Refusal("no_staff_role", NO_STAFF_ROLE, 403)
    # update_person changed its own copy of the row.
    return User.objects.get(pk=identity.person_id)


def _provision(who: ProviderPerson, role: access.Role, reason: str) -> User:
    try:
        person = create_person(
            username=_free_username(who),
            role=role,
            actor=ACTOR,
            email=who.email,
            first_name=who.first_name,
            last_name=who.last_name,
            reason=reason,
        )
    except PersonExists:
        raise Refusal(
            "username_taken",
            "A person with your username already exists here and is not linked to your "
            "account at the identity provider. Ask an admin.",
            409,
        ) from None
    link_identity(person, issuer=who.issuer, subject=who.subject, actor=ACTOR, reason=reason)
    return person


def _free_username(who: ProviderPerson) -> str:
    """The provider's username for them (else their e-mail's name) when nobody here has it;
    else that with a suffix made from their provider id, the same at every sign-in."""
    base = _NOT_USERNAME.sub("-", who.username or who.email.partition("@")[0])[:140]
    base = base or "staff"
    if (
        base.lower() not in RESERVED_USERNAMES
        and not User.objects.filter(username__iexact=base).exists()
    ):
        return base
    digest = hashlib.sha256(f"{who.issuer} {who.subject}".encode()).hexdigest()[:8]
    return f"{base}-{digest}"
