"""System checks of memoryadmin's own settings and of what a deployment must not hold
(``manage.py check --deploy``)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.checks import CheckMessage, Error, Tags, Warning, register
from django.core.checks.mail import NON_PRODUCTION_EMAIL_BACKENDS
from django.db import DatabaseError
from django.utils import timezone

from ledger.keys import known_key
from ledger.models import AgentKey
from ledger.rules.demo import DEMO_KEY, DEMO_PASSWORD, DEMO_USERNAMES


@register(Tags.mail, deploy=True)
def email_is_delivered(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    """A deployment either sends e-mail for real or says it sends none: a console backend
    would print people's reminders (and set-password links) into the server's log."""
    backend = settings.MAILERS["default"]["BACKEND"]
    if not settings.MEMORYADMIN_EMAIL or backend not in NON_PRODUCTION_EMAIL_BACKENDS:
        return []
    return [
        Error(
            f"E-mail would not be delivered: EMAIL_BACKEND is {backend}.",
            hint="Set EMAIL_BACKEND=django.core.mail.backends.smtp.EmailBackend with "
            "EMAIL_HOST (and EMAIL_PORT, EMAIL_HOST_USER, EMAIL_HOST_PASSWORD), or "
            "MEMORYADMIN_EMAIL=0 to send no e-mail at all.",
            id="memoryadmin.E001",
        )
    ]


@register(Tags.security, deploy=True)
def no_demo_sign_ins(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    """The demo's key and password are printed in the README: a deployment that still has
    the demo's agent, or a demo person's password, is open to anyone who read it.

    Only the demo's usernames are tried: a password check costs a deliberately slow hash
    (about half a second), so trying every account would make the check last minutes."""
    try:
        demo_key = known_key(DEMO_KEY)
        key_works = (
            AgentKey.objects.working_at(timezone.now())
            .filter(prefix=demo_key.prefix, hash=demo_key.hash)
            .exists()
        )
        people = list(User.objects.filter(username__in=DEMO_USERNAMES, is_active=True))
    except DatabaseError:
        # No database to read (or none migrated): nothing there holds the demo's sign-ins,
        # and migrate says what is wrong with it.
        return []
    errors: list[CheckMessage] = []
    if key_works:
        errors.append(
            Error(
                "The demo's published API key opens this deployment.",
                hint="Revoke it: manage.py revoke_agent_key demo-assistant --reason "
                "'Demo key.' (the API refuses it while DEBUG is off; seed_demo runs only "
                "with DEBUG on).",
                id="memoryadmin.E002",
            )
        )
    demo = sorted(person.username for person in people if person.check_password(DEMO_PASSWORD))
    if demo:
        errors.append(
            Error(
                f"The demo's published password still signs in as {', '.join(demo)}.",
                hint="Set a password of their own (manage.py create_person NAME --update, "
                "PERSON_PASSWORD in the environment), or deactivate them.",
                id="memoryadmin.E003",
            )
        )
    return errors


@register(Tags.security, deploy=True)
def audit_key_is_set(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    """Without its own key the audit's MACs and checkpoints hang on SECRET_KEY: rotating
    that (as one does after a leak) would make every history row fail verify_audit."""
    if settings.MEMORYADMIN_AUDIT_KEY:
        return []
    return [
        Error(
            "MEMORYADMIN_AUDIT_KEY is not set: the audit's MACs are made with a key derived "
            "from SECRET_KEY.",
            hint="Set MEMORYADMIN_AUDIT_KEY to a long random secret kept outside the database "
            "(python -c 'import secrets; print(secrets.token_urlsafe(32))'); see "
            "docs/audit-chain.md before changing it on a database that has history.",
            id="memoryadmin.E020",
        )
    ]


@register(Tags.security, deploy=True)
def rate_limits_are_shared(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    """Without Redis each web process counts the API's limits in its own memory: under
    gunicorn's N workers an agent gets N times its limit, and a key guesser N times its
    tries. Right for one process (``make run``), not for a deployment."""
    if settings.REDIS_URL:
        return []
    return [
        Warning(
            "REDIS_URL is not set: each web process counts the API's rate limits on its own, "
            "so several processes let through several times each limit.",
            hint="Set REDIS_URL (e.g. redis://redis:6379/1) to count them once for every "
            "process (docs/api.md, Rate limits).",
            id="memoryadmin.W001",
        )
    ]
