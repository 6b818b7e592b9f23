"""Production settings pass Django's deployment checks, and a deployment that would not
deliver e-mail is told so, with the way out."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path
from smtplib import SMTPException
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.core.mail import EmailMessage
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from rest_framework.test import APIClient

from ledger.actions.agents import create_agent, revoke_agent
from ledger.actions.people import create_person
from ledger.actors import Actor
from ledger.delivery.mail import NoEmailBackend
from ledger.keys import known_key
from ledger.models import Agent, Memory
from ledger.rules.demo import DEMO_KEY, DEMO_PASSWORD
from ledger.tasks import send_reminders
from tests.conftest import SUBJECT, signed_in

ROOT = Path(__file__).resolve().parent.parent
SYSTEM = Actor.system("test")
PRODUCTION = {
    "DEBUG": "0",
    "SECRET_KEY": "production-like-key-" + "k7Qx9" * 12,
    "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/memoryadmin",
    # No pool: the demo check's query fails at once on a database that is not there,
    # instead of after the pool's wait.
    "DATABASE_POOL": "0",
    "MEMORYADMIN_AUDIT_KEY": "audit-key-" + "p3Rw8" * 8,
    "ALLOWED_HOSTS": "memory.example.com",
    "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
    "EMAIL_HOST": "smtp.example.com",
    # The API's rate limits shared by every web process (memoryadmin.W001 without it).
    "REDIS_URL": "redis://redis:6379/1",
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


def database_url() -> str:
    """The test database, for a ``manage.py`` run in another process to read."""
    db = connection.settings_dict
    return f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


@pytest.mark.django_db(transaction=True)
def test_the_demo_key_fails_the_deployment_checks_until_it_is_revoked() -> None:
    agent, _ = create_agent(
        name="demo-assistant", scopes=["read"], actor=SYSTEM, key=known_key(DEMO_KEY)
    )
    ran = check_deploy(DATABASE_URL=database_url())
    assert ran.returncode != 0
    assert "(memoryadmin.E002) The demo's published API key opens this deployment." in ran.stderr
    assert "manage.py revoke_agent_key demo-assistant" in ran.stderr

    revoke_agent(agent=agent, actor=SYSTEM, reason="The demo's key.")
    ran = check_deploy(DATABASE_URL=database_url())
    assert ran.returncode == 0, ran.stderr


@pytest.mark.django_db(transaction=True)
def test_a_demo_password_fails_the_deployment_checks(settings: Any) -> None:
    # Hashed as a deployment hashes it, so the check's process can verify it.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]
    for username in ("sam", "ada"):
        create_person(username=username, password=DEMO_PASSWORD, role="support", actor=SYSTEM)
    ran = check_deploy(DATABASE_URL=database_url())
    assert ran.returncode != 0
    # Only the demo's usernames are tried: a password check is slow by design.
    assert "(memoryadmin.E003) The demo's published password still signs in as sam." in (ran.stderr)
    assert "create_person NAME --update" in ran.stderr


@pytest.mark.django_db
def test_the_demo_is_not_loaded_without_debug(settings: Any) -> None:
    settings.DEBUG = False
    with pytest.raises(CommandError, match="runs only with DEBUG on: DEBUG=1 manage.py seed_demo"):
        call_command("seed_demo", stdout=StringIO())
    assert not Agent.objects.exists() and not User.objects.exists()


@pytest.mark.django_db
def test_the_api_refuses_the_demo_key_without_debug(settings: Any) -> None:
    create_agent(name="demo-assistant", scopes=["read"], actor=SYSTEM, key=known_key(DEMO_KEY))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {DEMO_KEY}")
    settings.DEBUG = False
    refused = client.get("/api/v1/tools")
    assert refused.status_code == 401
    assert "This is the demo's published API key" in refused.json()["detail"]
    assert "works only with DEBUG on" in refused.json()["detail"]
    settings.DEBUG = True
    assert client.get("/api/v1/tools").status_code == 200
