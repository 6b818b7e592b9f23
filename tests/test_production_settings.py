"""Production settings pass Django's deployment checks, and a deployment that would not
deliver e-mail is told so, with the way out."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from smtplib import SMTPException
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.core.mail import EmailMessage
from django.test import Client

from ledger.delivery.mail import NoEmailBackend
from ledger.models import Memory
from ledger.tasks import send_reminders
from tests.conftest import SUBJECT, signed_in

ROOT = Path(__file__).resolve().parent.parent
PRODUCTION = {
    "DEBUG": "0",
    "SECRET_KEY": "production-like-key-" + "k7Qx9" * 12,
    "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/memoryadmin",
    "ALLOWED_HOSTS": "memory.example.com",
    "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
    "EMAIL_HOST": "smtp.example.com",
}


def check_deploy(**env: str | None) -> subprocess.CompletedProcess[str]:
    """``manage.py check --deploy --fail-level WARNING`` with only these settings (``None``
    leaves one out)."""
    # A deployment's environment, not the test run's: nothing the suite sets for itself
    # (its database, DEBUG, DJANGO_ALLOW_ASYNC_UNSAFE for the browser tests) leaks in.
    environment = {key: os.environ[key] for key in ("PATH", "HOME", "LANG") if key in os.environ}
    for key, value in (PRODUCTION | env).items():
        if value is None:
            environment.pop(key, None)
        else:
            environment[key] = value
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_production_settings_pass_the_deployment_checks() -> None:
    ran = check_deploy()
    assert ran.returncode == 0, ran.stderr
    assert "System check identified no issues" in ran.stdout


@pytest.mark.parametrize("rate", ["off", "0/min", "600 a minute"])
def test_a_rate_limit_that_is_not_one_stops_the_app_at_start(rate: str) -> None:
    ran = check_deploy(MEMORYADMIN_RATE_WRITES=rate)
    assert ran.returncode != 0
    assert f"MEMORYADMIN_RATE_WRITES: {rate!r}" in ran.stderr


def test_a_deployment_without_an_e_mail_server_is_told_how_to_set_one_or_turn_it_off() -> None:
    ran = check_deploy(EMAIL_BACKEND=None, EMAIL_HOST=None)
    assert ran.returncode != 0
    assert "(memoryadmin.E001) E-mail would not be delivered" in ran.stderr
    assert "EMAIL_HOST" in ran.stderr and "MEMORYADMIN_EMAIL=0" in ran.stderr


def test_a_deployment_that_sends_no_e_mail_passes_when_it_says_so() -> None:
    ran = check_deploy(EMAIL_BACKEND=None, EMAIL_HOST=None, MEMORYADMIN_EMAIL="0")
    assert ran.returncode == 0, ran.stderr


def test_https_off_is_a_deployment_warning() -> None:
    ran = check_deploy(HTTPS="0")
    assert ran.returncode != 0
    assert "SECURE_SSL_REDIRECT" in ran.stderr and "SECURE_HSTS_SECONDS" in ran.stderr


def test_the_old_secure_cookies_switch_is_refused_with_its_new_name() -> None:
    ran = check_deploy(SECURE_COOKIES="1")
    assert ran.returncode != 0
    assert "SECURE_COOKIES is now part of HTTPS" in ran.stderr


def test_with_https_on_plain_http_is_redirected_and_hsts_sent(settings: Any, db: None) -> None:
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 31_536_000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    settings.SECURE_HSTS_PRELOAD = True
    plain = Client().get("/accounts/login/")
    assert plain.status_code == 301
    assert plain["Location"] == "https://testserver/accounts/login/"
    secure = Client().get("/accounts/login/", secure=True)
    assert secure.status_code == 200
    assert secure["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"


@pytest.mark.django_db
def test_with_e_mail_off_reminders_stay_on_the_page_and_none_is_e_mailed(
    settings: Any,
    make_person: Callable[..., User],
    remember: Callable[..., Memory],
    clock: Callable[[datetime], None],
) -> None:
    settings.MEMORYADMIN_EMAIL = False
    dana = make_person("dana", subject=SUBJECT)
    dana.email = "dana@example.com"
    dana.save(update_fields=["email"])
    clock(datetime(2026, 1, 10, 9, 0, tzinfo=UTC))
    remember("Prefers email over telephone.")
    clock(datetime(2026, 7, 10, 9, 0, tzinfo=UTC))  # past the default 180-day review

    assert send_reminders() == {"memories_reminded": 1, "digests_sent": 0}

    assert mail.outbox == []
    page = signed_in(dana).get("/reminders/").content.decode()
    assert "Prefers email over telephone." in page
    assert "This install sends no e-mail: reminders are shown here, never e-mailed." in page


def test_with_e_mail_off_a_message_is_refused_as_not_sent() -> None:
    with pytest.raises(SMTPException, match="MEMORYADMIN_EMAIL=0"):
        NoEmailBackend().send_messages([EmailMessage("Hello", "Body", to=["a@example.com"])])
