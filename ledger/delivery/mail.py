"""The mail backend of an install that sends no e-mail (``MEMORYADMIN_EMAIL=0``)."""

from __future__ import annotations

from collections.abc import Sequence
from smtplib import SMTPException

from django.core.mail import EmailMessage
from django.core.mail.backends.base import BaseEmailBackend


class NoEmailBackend(BaseEmailBackend):
    """Refuses every message, as a mail server that is not there would: what tried to send
    records it as not sent, rather than believing it went (or printing it into a log)."""

    def send_messages(self, email_messages: Sequence[EmailMessage]) -> int:
        raise SMTPException("This install sends no e-mail (MEMORYADMIN_EMAIL=0).")
