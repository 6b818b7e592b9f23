"""Signing in through the real form: a username that keeps failing from an address, or an
address that keeps failing whatever names it tries, is slowed, then locked out, told so in
words with the time it ends, and the lockout is audited. One person's failures lock out
neither the others behind the same address nor, from elsewhere, the owner of the name."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.contrib.auth import authenticate
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore
from django.http import HttpResponse as Response
from django.test import Client, RequestFactory

from tests.conftest import PASSWORD, signed_in

pytestmark = pytest.mark.django_db

LOGIN = "/accounts/login/"
START = datetime(2026, 11, 2, 17, 41, 0, tzinfo=UTC)
LOCKED = "Too many failed sign-ins for this account or address."


@pytest.fixture
def clock() -> Iterator[time_machine.Coordinates]:
    with time_machine.travel(START, tick=False) as traveller:
        yield traveller


@pytest.fixture
def dana(make_person: Callable[..., User]) -> User:
    return make_person("dana")


def browser(address: str = "203.0.113.7") -> Client:
    """A client that checks CSRF as a browser's session would, from one address."""
    return Client(enforce_csrf_checks=True, REMOTE_ADDR=address)


def sign_in(client: Client, username: str, password: str) -> Response:
    page = client.get(LOGIN)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode())
    assert token is not None
    return client.post(
        LOGIN,
        {"username": username, "password": password, "csrfmiddlewaretoken": token[1]},
    )


def signed_in_as(client: Client) -> str:
    response = client.get("/")
    return "" if response.status_code == 302 else response.wsgi_request.user.get_username()


def test_wrong_passwords_are_refused_in_words_until_the_fifth_locks_the_account(
    dana: User, clock: time_machine.Coordinates
) -> None:
    client = browser()
    answers = [sign_in(client, "dana", f"guess-{n}") for n in range(5)]
    assert [a.status_code for a in answers] == [200, 200, 200, 200, 429]
    assert "did not match" in answers[0].content.decode()
    locked = answers[-1].content.decode()
    assert f"{LOCKED} Try again after 17:42 UTC, or ask an admin" in locked
    assert "Traceback" not in locked

    # Even the right password is refused while locked, and nobody is signed in.
    right = sign_in(client, "dana", PASSWORD)
    assert right.status_code == 429 and LOCKED in right.content.decode()
    assert signed_in_as(client) == ""


def test_two_hundred_wrong_passwords_are_not_all_tried(
    dana: User, clock: time_machine.Coordinates
) -> None:
    client = browser()
    codes = [sign_in(client, "dana", f"guess-{n}").status_code for n in range(200)]
    assert codes.count(200) == 4
    assert codes[4:] == [429] * 196


def test_after_the_cool_off_the_right_password_signs_in(
    dana: User, clock: time_machine.Coordinates
) -> None:
    client = browser()
    for n in range(5):
        sign_in(client, "dana", f"guess-{n}")
    clock.shift(timedelta(seconds=59))
    assert sign_in(client, "dana", PASSWORD).status_code == 429
    # That try while locked counted, and the wait restarted from it.
    clock.shift(timedelta(seconds=61))
    answer = sign_in(client, "dana", PASSWORD)
    assert answer.status_code == 302
    assert signed_in_as(client) == "dana"


def test_one_address_trying_a_hundred_usernames_is_locked_out(
    make_person: Callable[..., User], clock: time_machine.Coordinates
) -> None:
    make_person("noor")
    guesser = browser("198.51.100.9")
    answers = [sign_in(guesser, f"user{n}", "password1").status_code for n in range(100)]
    assert answers == [200] * 99 + [429]
    assert sign_in(guesser, "noor", PASSWORD).status_code == 429
    # Noor herself, from her own address, is not.
    assert sign_in(browser("203.0.113.50"), "noor", PASSWORD).status_code == 302


def test_one_person_s_failures_do_not_lock_out_another_behind_the_same_address(
    dana: User, make_person: Callable[..., User], clock: time_machine.Coordinates
) -> None:
    make_person("noor")
    office = "192.0.2.10"
    for n in range(5):
        sign_in(browser(office), "dana", f"guess-{n}")
    assert sign_in(browser(office), "dana", PASSWORD).status_code == 429
    # Noor, at the next desk behind the same address, signs in.
    assert sign_in(browser(office), "noor", PASSWORD).status_code == 302


def test_failures_at_one_address_do_not_lock_the_owner_out_from_another(
    dana: User, clock: time_machine.Coordinates
) -> None:
    for n in range(5):
        sign_in(browser("198.51.100.1"), "dana", f"guess-{n}")
    assert sign_in(browser("198.51.100.1"), "dana", PASSWORD).status_code == 429
    assert sign_in(browser("203.0.113.50"), "dana", PASSWORD).status_code == 302


def test_failing_all_day_locks_out_for_an_hour(dana: User, clock: time_machine.Coordinates) -> None:
    client = browser()
    for n in range(20):
        last = sign_in(client, "dana", f"guess-{n}")
    assert "Try again after 18:41 UTC" in last.content.decode()
    clock.shift(timedelta(minutes=30))
    assert sign_in(client, "dana", PASSWORD).status_code == 429


def test_a_lockout_is_in_the_audit_log_and_its_export(
    dana: User, make_person: Callable[..., User], clock: time_machine.Coordinates
) -> None:
    make_person("ada", role="admin")
    client = browser("198.51.100.77")
    for n in range(8):
        sign_in(client, "dana", f"guess-{n}")
    admin = signed_in("ada")

    page = admin.get("/audit/").content.decode()
    assert "sign-in lockout" in page
    assert "dana from 198.51.100.77" in page
    assert "locked out" in page
    assert "Sign-in refused: too many failed sign-ins for this account or this address." in page

    export = admin.get("/audit/export.csv")
    text = b"".join(export.streaming_content).decode()
    lockouts = [
        row for row in csv.DictReader(io.StringIO(text)) if row["kind"] == "sign-in lockout"
    ]
    # The failure that locked is the entry; the refused tries after it are not more entries.
    assert [(row["object"], row["action"], row["role"]) for row in lockouts] == [
        ("dana from 198.51.100.77", "created", "system")
    ]
    assert lockouts[0]["when"] == "2026-11-02T17:41:00+00:00"


@pytest.mark.parametrize(
    "variants",
    [
        [" " * n + "dana" for n in range(1, 7)],
        ["dana" + " " * n for n in range(1, 7)],
        # Full-width letters: NFKC makes them "dana", so they sign in to dana's account.
        ["ｄａｎａ", "ｄana", "dａna", "daｎa", "danａ", " ｄａｎａ "],
    ],
    ids=["leading spaces", "trailing spaces", "full-width"],
)
def test_spellings_of_one_username_count_towards_its_hour_long_lockout(
    dana: User, clock: time_machine.Coordinates, variants: list[str]
) -> None:
    # Each spelling signs in as dana, so each is one more guess at her password: waiting
    # out every minute-long cool-off, the day's failures still add up.
    for step, spelling in enumerate(variants):
        for n in range(5):
            sign_in(browser(), spelling, f"guess-{step}-{n}")
        clock.shift(timedelta(seconds=61))
    answer = sign_in(browser(), "dana", PASSWORD)
    assert answer.status_code == 429
    assert f"{LOCKED} Try again after 18:47 UTC" in answer.content.decode()


def test_a_username_in_other_capitals_is_another_account(
    dana: User, clock: time_machine.Coordinates
) -> None:
    # Usernames are case-sensitive (no "Dana" signs in to dana's account), so guesses at
    # "Dana" do not lock dana out.
    for n in range(5):
        sign_in(browser(), "Dana", f"guess-{n}")
    assert sign_in(browser(), "dana", PASSWORD).status_code == 302


PASSWORD_PAGE = "/accounts/password/"
NEW_PASSWORD = "Zx9!long-pass-x"
WRONG_PASSWORDS = "Too many wrong passwords for this account or address."


def change_password(client: Client, old: str) -> Response:
    page = client.get(PASSWORD_PAGE)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode())
    assert token is not None
    return client.post(
        PASSWORD_PAGE,
        {
            "old_password": old,
            "new_password1": NEW_PASSWORD,
            "new_password2": NEW_PASSWORD,
            "csrfmiddlewaretoken": token[1],
        },
    )


def test_old_password_guesses_on_the_change_form_are_limited_like_sign_ins(
    dana: User, clock: time_machine.Coordinates
) -> None:
    # Someone holding dana's session guesses her password on the change form.
    stolen = browser("198.51.100.23")
    assert sign_in(stolen, "dana", PASSWORD).status_code == 302
    answers = [change_password(stolen, f"guess-{n}") for n in range(30)]
    assert [a.status_code for a in answers] == [200] * 4 + [429] * 26
    assert "Your old password was entered incorrectly" in answers[0].content.decode()
    locked = answers[4].content.decode()
    assert f"{WRONG_PASSWORDS} Try again after 17:42 UTC, or ask an admin" in locked
    assert "Traceback" not in locked

    # The right old password is refused while locked, and nothing changed.
    assert change_password(stolen, PASSWORD).status_code == 429
    dana.refresh_from_db()
    assert dana.check_password(PASSWORD)
    # The guesses were at dana's password: her sign-in is locked out too, from that address.
    assert sign_in(browser("198.51.100.23"), "dana", PASSWORD).status_code == 429


def test_after_the_cool_off_the_right_old_password_changes_it(
    dana: User, clock: time_machine.Coordinates
) -> None:
    client = browser()
    assert sign_in(client, "dana", PASSWORD).status_code == 302
    for n in range(5):
        change_password(client, f"guess-{n}")
    clock.shift(timedelta(seconds=61))
    answer = change_password(client, PASSWORD)
    assert answer.status_code == 302 and answer["Location"] == "/accounts/password/done/"
    dana.refresh_from_db()
    assert dana.check_password(NEW_PASSWORD)


def test_the_django_admins_change_password_page_is_the_limited_one(
    make_person: Callable[..., User], clock: time_machine.Coordinates
) -> None:
    # The Django admin's own form checks the old password unlimited: its link leads here.
    make_person("ada", role="admin")
    client = browser()
    assert sign_in(client, "ada", PASSWORD).status_code == 302
    answer = client.get("/admin/password_change/")
    assert (answer.status_code, answer["Location"]) == (302, PASSWORD_PAGE)
    for n in range(5):
        last = change_password(client, f"guess-{n}")
    assert last.status_code == 429


def test_failed_company_sign_ins_do_not_lock_out_a_password_from_the_same_address(
    dana: User, settings: Any
) -> None:
    """The identity provider's callback fails (a person cancels there, or it cannot be
    reached) by asking Django's authenticate with no username, as mozilla-django-oidc does:
    those failures are the provider's to limit, so an office's address is not locked out
    of password sign-ins, the break-glass admin's included, however many there are."""
    settings.MEMORYADMIN_SIGNIN_ADDRESS_FAILURES = 10
    office = "192.0.2.20"
    for _ in range(12):
        request = RequestFactory().get("/accounts/oidc/callback/", REMOTE_ADDR=office)
        request.session = SessionStore()
        assert authenticate(request, nonce="n", code_verifier="v") is None
    assert sign_in(browser(office), "dana", PASSWORD).status_code == 302
