"""An admin sees who is locked out of signing in, on the People pages, in words, and lifts
a lockout with a reason: the person (or the address) signs in at once, and the audit log
says who lifted it and why. Lockouts are made through the real sign-in form."""

from __future__ import annotations

import csv
import io
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import time_machine
from axes.models import AccessAttempt
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext

from ledger.reads import lockouts
from ledger.rules.people import refuse_nothing_to_lift
from ledger.rules.refusals import Refusal
from tests.conftest import PASSWORD, signed_in
from tests.test_signin_lockout import START, browser, sign_in

pytestmark = pytest.mark.django_db

DANA_LOCKED = "Locked out of sign-in until 17:42 UTC after 5 failed sign-ins"
GUESSER = "198.51.100.9"
LIFT = "/people/dana/lockout/lift/"
LIFT_ADDRESS = "/people/addresses/lift/"
WHY = "Dana phoned: she forgot she had changed her password."


@pytest.fixture(autouse=True)
def clock() -> Iterator[time_machine.Coordinates]:
    with time_machine.travel(START, tick=False) as traveller:
        yield traveller


@pytest.fixture
def admin(make_person: Callable[..., User]) -> Client:
    make_person("ada", role="admin")
    return signed_in("ada")


@pytest.fixture
def dana_locked(make_person: Callable[..., User]) -> User:
    dana = make_person("dana")
    client = browser()
    for n in range(5):
        sign_in(client, "dana", f"guess-{n}")
    return dana


@pytest.fixture
def address_locked(make_person: Callable[..., User], settings: Any) -> None:
    # An address's own limit (100 by default), made small to be reached in five tries.
    settings.MEMORYADMIN_SIGNIN_ADDRESS_FAILURES = 5
    make_person("noor")
    guesser = browser(GUESSER)
    for name in ("ann", "bob", "cy", "dee", "eve"):
        sign_in(guesser, name, "password1")


def audit_rows(admin: Client) -> list[dict[str, str]]:
    export = admin.get("/audit/export.csv")
    text = b"".join(export.streaming_content).decode()
    return [
        row for row in csv.DictReader(io.StringIO(text)) if row["kind"] == "sign-in lockout lift"
    ]


def test_a_locked_out_person_is_said_so_in_words_on_the_people_pages(
    dana_locked: User, admin: Client
) -> None:
    assert DANA_LOCKED in admin.get("/people/").content.decode()
    page = admin.get("/people/dana/").content.decode()
    assert DANA_LOCKED in page
    assert "Lift the lockout" in page
    # Ada is not locked out, and her page offers nothing to lift.
    assert "Lift the lockout" not in admin.get("/people/ada/").content.decode()


def test_a_lift_without_a_reason_is_refused_and_lifts_nothing(
    dana_locked: User, admin: Client
) -> None:
    for reason in ("", "   "):
        answer = admin.post(LIFT, {"reason": reason})
        assert answer.status_code == 400
        assert "Say why" in answer.content.decode()
    assert sign_in(browser(), "dana", PASSWORD).status_code == 429
    assert audit_rows(admin) == []


def test_a_lifted_person_signs_in_at_once_and_the_audit_says_who_and_why(
    dana_locked: User, admin: Client
) -> None:
    answer = admin.post(LIFT, {"reason": WHY})
    assert answer.status_code == 302 and answer["Location"] == "/people/dana/"
    page = admin.get("/people/dana/").content.decode()
    assert "lockout is lifted" in page
    # Gone from the page, but her history says it was lifted, by whom and why.
    [history] = re.findall(r'<section aria-labelledby="history-heading">.*?</section>', page, re.S)
    assert DANA_LOCKED not in page.replace(history, "")
    assert "Sign-in lockout" in history and DANA_LOCKED in history and WHY in history

    assert sign_in(browser(), "dana", PASSWORD).status_code == 302

    log = admin.get("/audit/").content.decode()
    assert "sign-in lockout lifted" in log
    assert WHY in log
    [row] = audit_rows(admin)
    assert (row["object"], row["action"], row["role"], row["reason"]) == (
        "dana",
        "deleted",
        "admin",
        WHY,
    )
    assert "ada" in row["actor"]
    assert DANA_LOCKED in row["before"]


def test_a_lockout_that_has_ended_is_not_lifted_or_recorded(
    dana_locked: User, admin: Client, clock: time_machine.Coordinates
) -> None:
    clock.shift(120)
    answer = admin.post(LIFT, {"reason": WHY})
    assert answer.status_code == 409
    assert "dana is not locked out of sign-in (any more): nothing was lifted." in (
        answer.content.decode()
    )
    assert audit_rows(admin) == []


@pytest.mark.parametrize("name", ["dana", "The address 198.51.100.9"])
def test_nothing_to_lift_is_a_policy_refusal_naming_whose(name: str) -> None:
    # Decided in policy, with the other rules about a person's moves; the lockouts are read
    # elsewhere and handed to it.
    with pytest.raises(Refusal) as refused:
        refuse_nothing_to_lift(None, name=name)
    assert (refused.value.code, refused.value.status) == ("not_locked_out", 409)
    assert str(refused.value.detail) == (
        f"{name} is not locked out of sign-in (any more): nothing was lifted."
    )
    found = lockouts.Lockout("dana", "", 5, START)
    assert refuse_nothing_to_lift(found, name=name) is found


def test_a_locked_out_address_is_listed_and_lifted_with_a_reason(
    address_locked: None, admin: Client
) -> None:
    page = admin.get("/people/").content.decode()
    assert "Locked-out addresses" in page
    assert GUESSER in page
    assert "Locked out of sign-in until 17:42 UTC after 5 failed sign-ins" in page

    refused = admin.post(LIFT_ADDRESS, {"address": GUESSER, "reason": ""})
    assert refused.status_code == 400 and "Say why" in refused.content.decode()
    assert sign_in(browser(GUESSER), "noor", PASSWORD).status_code == 429

    why = "Our office's address: Noor mistyped the shared account's name."
    answer = admin.post(LIFT_ADDRESS, {"address": GUESSER, "reason": why})
    assert answer.status_code == 302 and answer["Location"] == "/people/"
    assert "Locked-out addresses" not in admin.get("/people/").content.decode()
    assert sign_in(browser(GUESSER), "noor", PASSWORD).status_code == 302

    [row] = audit_rows(admin)
    assert (row["object"], row["reason"]) == (f"the address {GUESSER}", why)
    assert "ada" in row["actor"]


def test_an_address_that_is_not_one_is_refused_by_name(admin: Client) -> None:
    answer = admin.post(LIFT_ADDRESS, {"address": "not-an-address", "reason": WHY})
    assert answer.status_code == 400
    assert "That is not an address" in answer.content.decode()
    assert audit_rows(admin) == []


def test_an_unknown_field_is_refused_by_name(address_locked: None, admin: Client) -> None:
    answer = admin.post(LIFT_ADDRESS, {"address": GUESSER, "reason": WHY, "all": "1"})
    assert answer.status_code == 400
    assert "Unknown field: all. Nothing was lifted." in answer.content.decode()
    assert sign_in(browser(GUESSER), "noor", PASSWORD).status_code == 429


def test_only_an_admin_lifts_a_lockout(
    dana_locked: User, address_locked: None, make_person: Callable[..., User]
) -> None:
    make_person("sam", role="support")
    support = signed_in("sam")
    assert support.post(LIFT, {"reason": WHY}).status_code == 404
    assert support.post(LIFT_ADDRESS, {"address": GUESSER, "reason": WHY}).status_code == 404
    make_person("uma")
    assert signed_in("uma").post(LIFT, {"reason": WHY}).status_code == 404
    assert sign_in(browser(), "dana", PASSWORD).status_code == 429
    assert sign_in(browser(GUESSER), "noor", PASSWORD).status_code == 429


def test_a_superusers_lockout_is_lifted_on_the_command_line_only(admin: Client) -> None:
    User.objects.create_superuser("root", password=PASSWORD)
    client = browser()
    for n in range(5):
        sign_in(client, "root", f"guess-{n}")
    page = admin.get("/people/root/").content.decode()
    assert DANA_LOCKED in page
    assert "manage.py axes_reset_username root" in page
    answer = admin.post("/people/root/lockout/lift/", {"reason": WHY})
    assert answer.status_code == 403
    assert sign_in(browser(), "root", PASSWORD).status_code == 429


def test_the_people_page_reads_lockouts_in_a_fixed_number_of_queries(
    make_person: Callable[..., User], admin: Client
) -> None:
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert admin.get("/people/").status_code == 200
        return len(captured)

    make_person("dana")
    for n in range(5):
        sign_in(browser("203.0.113.1"), "dana", f"guess-{n}")
    one = queries()
    for at, name in enumerate(("eli", "fay", "gus"), start=10):
        make_person(name)
        for n in range(5):
            sign_in(browser(f"203.0.113.{at}"), name, f"guess-{n}")
    assert admin.get("/people/").content.decode().count("Locked out of sign-in") == 4
    assert queries() == one


def waiting_for_a_lock(sessions: int, seconds: float = 30.0) -> None:
    """Return once ``sessions`` other connections to this database wait on a row lock."""
    deadline = time.monotonic() + seconds
    with connection.cursor() as cursor:
        while True:
            # Activity is read once per transaction unless the snapshot is cleared.
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
            if cursor.fetchone()[0] >= sessions:
                return
            assert time.monotonic() < deadline, f"{sessions} lifts never waited for the lock"
            time.sleep(0.02)


@pytest.mark.django_db(transaction=True)
def test_two_admins_lifting_at_once_lift_and_record_it_once(
    dana_locked: User, admin: Client, make_person: Callable[..., User]
) -> None:
    make_person("ben", role="admin")
    clients = [admin, signed_in("ben")]
    answers: list[int] = []

    def lift(client: Client) -> None:
        try:
            answers.append(client.post(LIFT, {"reason": WHY}).status_code)
        finally:
            connection.close()

    # Both lifts are sent while dana's records are held, so that both would find her
    # locked out, were a lift not to wait for the other.
    with transaction.atomic():
        list(AccessAttempt.objects.select_for_update().filter(username="dana"))
        threads = [threading.Thread(target=lift, args=(client,)) for client in clients]
        for thread in threads:
            thread.start()
        waiting_for_a_lock(2)
    for thread in threads:
        thread.join()
    assert sorted(answers) == [302, 409]
    assert len(audit_rows(admin)) == 1
