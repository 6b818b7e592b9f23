"""System checks of memoryadmin's own settings (``manage.py check --deploy``)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, register
from django.core.checks.mail import NON_PRODUCTION_EMAIL_BACKENDS


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
