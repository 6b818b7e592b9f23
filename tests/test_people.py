"""The People page: admins create people, change their role, link them to subjects, disable
them and send them a set-password link; every change is in the person's history with who,
in what role, before → after and why. Nobody escalates through it, and nobody else sees it."""

from __future__ import annotations

import re
from collections.abc import Callable
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import authenticate
from django.contrib.auth.models import User
from django.core import mail
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from ledger.actions.people import create_person, set_active
from ledger.actors import Actor
from ledger.models import PersonChange, Subject
from tests.conftest import PASSWORD, signed_in

pytestmark = pytest.mark.django_db

DANA_SUBJECT = "acct_4b71c9e20d8af315"
NEW_PASSWORD = "plum-orchard-lantern-42"


@pytest.fixture
def people(make_person: Callable[..., User]) -> dict[str, User]:
    made = {
        "ada": make_person("ada", role="admin"),
        "dana": make_person("dana", subject=DANA_SUBJECT),
        "sam": make_person("sam", role="support"),
    }
    for name, person in made.items():
        User.objects.filter(pk=person.pk).update(email=f"{name}@example.com")
    return made


@pytest.fixture
def ada(people: dict[str, User]) -> Client:
    return signed_in("ada")


def changes(username: str) -> list[tuple[str, str, str, str, str, str]]:
    """The person's history, oldest first: (field, before, after, actor, role, reason)."""
    return [
        (c.field, c.before, c.after, c.actor, c.actor_role, c.reason)
        for c in PersonChange.objects.filter(username=username).order_by("changed_at", "id")
    ]


def page(response: Any) -> str:
    return str(response.content.decode())


# Who sees the pages.

PAGES = [
    ("get", "/people/"),
    ("get", "/people/new/"),
    ("post", "/people/new/"),
    ("get", "/people/dana/"),
    ("post", "/people/dana/role/"),
    ("post", "/people/dana/subjects/"),
    ("post", "/people/dana/subjects/unlink/"),
    ("post", "/people/dana/disable/"),
    ("post", "/people/dana/enable/"),
    ("post", "/people/dana/set-password-link/"),
]


@pytest.mark.parametrize("who", ["sam", "dana"])
@pytest.mark.parametrize(("method", "url"), PAGES)
def test_support_and_end_users_get_a_404_on_every_people_page(
    people: dict[str, User], who: str, method: str, url: str
) -> None:
    before = PersonChange.objects.count()
    response = getattr(signed_in(who), method)(url, {"role": "admin", "reason": "Promote me."})
    assert response.status_code == 404
    assert PersonChange.objects.count() == before
    assert User.objects.get(username="dana").groups.count() == 0


@pytest.mark.parametrize(("method", "url"), PAGES)
def test_nobody_signed_in_is_sent_to_sign_in(
    people: dict[str, User], method: str, url: str
) -> None:
    response = getattr(Client(), method)(url)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_a_guessed_username_is_a_404(ada: Client) -> None:
    assert ada.get("/people/nobody-here/").status_code == 404
    assert ada.post("/people/nobody-here/disable/", {"reason": "x"}).status_code == 404


# The list.


def test_the_list_says_role_subjects_access_and_last_sign_in(
    ada: Client, people: dict[str, User]
) -> None:
    set_active(people["sam"], actor=Actor.system("test"), active=False, reason="Left.")
    html = page(ada.get("/people/"))
    dana_row = re.search(r"<tr>\s*<td><a href=\"/people/dana/\">.*?</tr>", html, re.S)
    assert dana_row is not None
    assert "End user" in dana_row.group(0)
    assert DANA_SUBJECT in dana_row.group(0)
    assert "dana@example.com" in dana_row.group(0)
    assert "never" in dana_row.group(0)
    sam_row = re.search(r"<tr>\s*<td><a href=\"/people/sam/\">.*?</tr>", html, re.S)
    assert sam_row is not None and "Disabled" in sam_row.group(0)
    ada_row = re.search(r"<tr>\s*<td><a href=\"/people/ada/\">.*?</tr>", html, re.S)
    # Ada is signed in: her last sign-in is a date, not "never".
    assert ada_row is not None and "<time" in ada_row.group(0)


def test_the_list_filters_by_role_with_superusers_among_admins(
    ada: Client, people: dict[str, User]
) -> None:
    User.objects.create_superuser("root", "root@example.com", PASSWORD)
    listed = {
        role: re.findall(r'<td><a href="/people/([^/]+)/">', page(ada.get(f"/people/?role={role}")))
        for role in ("user", "support", "admin")
    }
    assert listed == {"user": ["dana"], "support": ["sam"], "admin": ["ada", "root"]}
    assert "Admin (superuser)" in page(ada.get("/people/?role=admin"))


@pytest.mark.parametrize(
    ("query", "words"),
    [("role=owner", "is not a role"), ("is_superuser=1", "Unknown filter: is_superuser")],
)
def test_a_bad_filter_is_refused_in_words(ada: Client, query: str, words: str) -> None:
    response = ada.get(f"/people/?{query}")
    assert response.status_code == 400
    assert words in page(response)


def test_the_list_goes_on_by_username(ada: Client, settings: Any) -> None:
    for n in range(55):
        create_person(username=f"user{n:02}", role="user", actor=Actor.system("test"))
    first = page(ada.get("/people/"))
    assert first.count('<td><a href="/people/') == 50
    more = re.search(r'href="\?after=([^"]+)">More people', first)
    assert more is not None
    second = page(ada.get(f"/people/?after={more.group(1)}"))
    names = re.findall(r'<td><a href="/people/([^/]+)/">', second)
    assert names == [f"user{n:02}" for n in range(47, 55)]
    assert "More people" not in second


def _queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200
    return len(captured)


def test_the_list_and_a_person_page_cost_the_same_queries_however_many_rows(
    ada: Client, people: dict[str, User]
) -> None:
    system = Actor.system("test")

    def grow(start: int) -> None:
        for n in range(start, start + 6):
            create_person(
                username=f"p{n}",
                role=("user", "support", "admin")[n % 3],
                subject_ref=f"acct_{n}" if n % 3 == 0 else "",
                actor=system,
            )
            set_active(people["dana"], actor=system, active=False, reason=f"Pause {n}.")
            set_active(people["dana"], actor=system, active=True, reason=f"Back {n}.")

    grow(0)
    few = (_queries(ada, "/people/"), _queries(ada, "/people/dana/"))
    grow(10)
    many = (_queries(ada, "/people/"), _queries(ada, "/people/dana/"))
    assert many == few


# Creating a person.


def _created_and_linked(ada: Client, **extra: str) -> Any:
    return ada.post(
        "/people/new/",
        {
            "username": "noor",
            "email": "noor@example.com",
            "role": "user",
            "subject_ref": "acct_noor",
            "subject_name": "Noor Haddad",
            "reason": "New customer, ticket 5120.",
            **extra,
        },
    )


def test_a_new_person_sets_their_own_password_with_the_link_they_are_emailed(
    ada: Client, people: dict[str, User]
) -> None:
    response = _created_and_linked(ada)
    assert response.status_code == 302 and response["Location"] == "/people/noor/"
    noor = User.objects.get(username="noor")
    assert not noor.has_usable_password()
    assert not noor.is_staff and not noor.is_superuser
    assert Subject.objects.get(ref="acct_noor").owner == noor
    why = "New customer, ticket 5120."
    assert changes("noor") == [
        ("person", "", "created", "user:ada", "admin", why),
        ("role", "", "user", "user:ada", "admin", why),
        ("email", "", "noor@example.com", "user:ada", "admin", why),
        ("subject", "", "acct_noor", "user:ada", "admin", why),
        ("password_link", "", "sent to noor@example.com", "user:ada", "admin", why),
    ]
    assert "a set-password link went to noor@example.com" in page(ada.get("/people/noor/"))

    [message] = mail.outbox
    assert message.to == ["noor@example.com"]
    link = re.search(r"http://\S+/accounts/set-password/\S+/", message.body)
    assert link is not None
    path = link.group(0).split("127.0.0.1:8000", 1)[1]

    browser = Client()
    opened = browser.get(path)
    assert opened.status_code == 302  # to the same page without the token in its address
    form = browser.get(opened["Location"])
    assert "Choose your password" in page(form)
    done = browser.post(
        opened["Location"], {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}
    )
    assert done.status_code == 302 and done["Location"] == "/accounts/set-password/done/"
    assert authenticate(username="noor", password=NEW_PASSWORD) is not None
    assert changes("noor")[-1] == (
        "password",
        "",
        "set by the person",
        "user:noor",
        "user",
        "Set with the link they were e-mailed.",
    )

    # The link works once.
    again = Client().get(path)
    assert again.status_code == 200
    assert "This link no longer works" in page(again)
    assert Client().login(username="noor", password=NEW_PASSWORD)


def test_the_set_password_page_applies_the_password_rules(
    ada: Client, people: dict[str, User]
) -> None:
    _created_and_linked(ada)
    path = re.search(r"/accounts/set-password/\S+/", mail.outbox[0].body)
    assert path is not None
    browser = Client()
    opened = browser.get(path.group(0))
    refused = browser.post(opened["Location"], {"new_password1": "noor", "new_password2": "noor"})
    assert refused.status_code == 200
    assert "too short" in page(refused)
    assert not User.objects.get(username="noor").has_usable_password()


@pytest.mark.parametrize(
    "escalation",
    [
        {"is_superuser": "on"},
        {"is_staff": "on"},
        {"groups": "1"},
        {"password": "chosen-by-the-admin-1"},
        {"password1": "chosen-by-the-admin-1", "password2": "chosen-by-the-admin-1"},
        {"user_permissions": "1"},
    ],
)
def test_creating_a_person_honours_no_extra_field(
    ada: Client, people: dict[str, User], escalation: dict[str, str]
) -> None:
    response = _created_and_linked(ada, role="admin", subject_ref="", subject_name="", **escalation)
    assert response.status_code == 400
    assert f"Unknown field: {next(iter(escalation))}" in page(response)
    assert not User.objects.filter(username="noor").exists()
    assert mail.outbox == []


def test_the_new_person_form_keeps_what_was_typed_and_says_what_is_missing(
    ada: Client, people: dict[str, User]
) -> None:
    response = _created_and_linked(ada, email="", role="support")
    assert response.status_code == 400
    html = page(response)
    assert 'value="noor"' in html
    assert "Give their e-mail address" in html
    assert "Only an end user owns a subject" in html
    assert not User.objects.filter(username="noor").exists()


@pytest.mark.parametrize(
    ("username", "status", "words"),
    [("Dana", 409, "already exists"), ("new", 400, "is the address of a page"), ("a b", 400, "")],
)
def test_a_username_that_is_taken_or_not_one_is_refused(
    ada: Client, people: dict[str, User], username: str, status: int, words: str
) -> None:
    response = _created_and_linked(ada, username=username, subject_ref="", subject_name="")
    assert response.status_code == status
    assert words in page(response)
    assert User.objects.count() == 3


def test_a_new_person_does_not_take_a_subject_someone_owns(
    ada: Client, people: dict[str, User]
) -> None:
    response = _created_and_linked(ada, subject_ref=DANA_SUBJECT)
    assert response.status_code == 409
    html = page(response)
    assert "belongs to dana" in html and 'id="id_subject_ref_error"' in html
    assert not User.objects.filter(username="noor").exists()
    assert Subject.objects.get(ref=DANA_SUBJECT).owner == people["dana"]
    assert mail.outbox == []


def test_no_e_mail_server_means_the_person_is_made_and_told_the_link_did_not_go(
    ada: Client, people: dict[str, User], settings: Any
) -> None:
    settings.MAILERS = {
        "default": {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            # Port 9 (discard) is closed here: the connection is refused at once.
            "OPTIONS": {"host": "127.0.0.1", "port": 9, "timeout": 2},
        }
    }
    response = _created_and_linked(ada)
    assert response.status_code == 302
    html = page(ada.get("/people/noor/"))
    assert "no set-password link went out" in html
    assert [c[0] for c in changes("noor")] == ["person", "role", "email", "subject"]


# Changing a person.


def test_an_admin_changes_a_role_with_a_reason_and_staff_status_follows_it(
    ada: Client, people: dict[str, User]
) -> None:
    response = ada.post("/people/sam/role/", {"role": "admin", "reason": "Runs the team now."})
    assert response.status_code == 302
    sam = User.objects.get(username="sam")
    assert [g.name for g in sam.groups.all()] == ["admin"]
    assert sam.is_staff and not sam.is_superuser
    assert changes("sam")[-1] == (
        "role",
        "support",
        "admin",
        "user:ada",
        "admin",
        "Runs the team now.",
    )
    html = page(ada.get("/people/sam/"))
    assert "sam is now admin." in html
    assert "support → admin" in html and "Runs the team now." in html


def test_a_change_without_a_reason_is_refused_beside_the_field(
    ada: Client, people: dict[str, User]
) -> None:
    response = ada.post("/people/sam/role/", {"role": "admin", "reason": ""})
    assert response.status_code == 400
    assert 'id="role_form_reason_error"' in page(response)
    assert "Say why" in page(response)
    assert User.objects.get(username="sam").groups.get().name == "support"


@pytest.mark.parametrize(
    ("url", "data"),
    [
        ("/people/dana/role/", {"role": "support", "is_superuser": "on"}),
        ("/people/dana/role/", {"role": "support", "is_staff": "on"}),
        ("/people/dana/role/", {"role": "support", "groups": "1"}),
        ("/people/dana/disable/", {"password": "chosen-by-the-admin-1"}),
        ("/people/dana/set-password-link/", {"email": "ada@example.com"}),
        ("/people/dana/subjects/", {"subject_ref": "acct_x", "owner": "ada"}),
    ],
)
def test_no_change_honours_an_extra_field(
    ada: Client, people: dict[str, User], url: str, data: dict[str, str]
) -> None:
    dana = User.objects.get(username="dana")
    response = ada.post(url, {**data, "reason": "Trying my luck."})
    assert response.status_code == 400
    assert "Unknown field" in page(response)
    after = User.objects.get(username="dana")
    assert (after.is_superuser, after.is_staff, after.is_active, after.email) == (
        False,
        False,
        True,
        "dana@example.com",
    )
    assert after.password == dana.password and not after.groups.exists()
    assert changes("dana")[-1][0] == "subject"
    assert mail.outbox == []


@pytest.mark.parametrize(
    ("url", "data"),
    [("/people/ada/role/", {"role": "support"}), ("/people/ada/disable/", {})],
)
def test_an_admin_cannot_demote_or_disable_themself(
    ada: Client, people: dict[str, User], url: str, data: dict[str, str]
) -> None:
    before = changes("ada")
    response = ada.post(url, {**data, "reason": "Oops."})
    assert response.status_code == 403
    assert "ask another admin" in page(response)
    me = User.objects.get(username="ada")
    assert me.is_active and me.groups.get().name == "admin"
    assert changes("ada") == before
    html = page(ada.get("/people/ada/"))
    assert "This is you." in html
    assert "/people/ada/role/" not in html and "/people/ada/disable/" not in html


def test_superusers_are_managed_from_the_command_line_only(
    ada: Client, people: dict[str, User]
) -> None:
    root = User.objects.create_superuser("root", "root@example.com", PASSWORD)
    html = page(ada.get("/people/root/"))
    assert "managed on the server's command line only" in html
    assert "<form" not in html.split('id="about-heading"')[1].split("History")[0]
    for url, data in [
        ("/people/root/role/", {"role": "user"}),
        ("/people/root/disable/", {}),
        ("/people/root/set-password-link/", {}),
        ("/people/root/subjects/unlink/", {"subject_ref": "acct_x"}),
    ]:
        response = ada.post(url, {**data, "reason": "Take over."})
        assert response.status_code == 403, url
        assert "superusers are managed from the command line" in page(response)
    root.refresh_from_db()
    assert root.is_superuser and root.is_active
    assert mail.outbox == [] and changes("root") == []


def test_a_disabled_person_is_signed_out_and_cannot_sign_in_until_enabled(
    ada: Client, people: dict[str, User]
) -> None:
    dana = signed_in("dana")
    assert dana.get("/reminders/").status_code == 200
    response = ada.post("/people/dana/disable/", {"reason": "Account closed, ticket 77."})
    assert response.status_code == 302
    assert dana.get("/reminders/")["Location"].startswith("/accounts/login/")
    assert not Client().login(username="dana", password=PASSWORD)
    assert ada.post("/people/dana/disable/", {"reason": "Twice."}).status_code == 409
    ada.post("/people/dana/enable/", {"reason": "Reopened, ticket 78."})
    assert Client().login(username="dana", password=PASSWORD)
    assert changes("dana")[-2:] == [
        ("access", "active", "disabled", "user:ada", "admin", "Account closed, ticket 77."),
        ("access", "disabled", "active", "user:ada", "admin", "Reopened, ticket 78."),
    ]
    assert "can sign in → disabled" in page(ada.get("/people/dana/"))


def test_linking_and_unlinking_a_subject_is_in_the_history_of_both(
    ada: Client, people: dict[str, User]
) -> None:
    response = ada.post(
        "/people/dana/subjects/",
        {"subject_ref": "acct_dana_2", "subject_name": "Dana's shop", "reason": "Second account."},
    )
    assert response.status_code == 302
    assert Subject.objects.get(ref="acct_dana_2").owner == people["dana"]
    assert Subject.objects.get(ref="acct_dana_2").history.first().history_actor == "user:ada"
    assert changes("dana")[-1] == (
        "subject",
        "",
        "acct_dana_2",
        "user:ada",
        "admin",
        "Second account.",
    )
    assert "Dana&#x27;s shop" in page(ada.get("/people/dana/"))

    response = ada.post(
        "/people/dana/subjects/unlink/", {"subject_ref": "acct_dana_2", "reason": "Sold the shop."}
    )
    assert response.status_code == 302
    assert Subject.objects.get(ref="acct_dana_2").owner is None
    assert changes("dana")[-1][:3] == ("subject", "acct_dana_2", "")


def test_a_subject_someone_else_owns_is_not_taken_from_them(
    ada: Client, people: dict[str, User], make_person: Callable[..., User]
) -> None:
    make_person("erin")
    response = ada.post(
        "/people/erin/subjects/", {"subject_ref": DANA_SUBJECT, "reason": "Same household."}
    )
    assert response.status_code == 409
    html = page(response)
    assert "belongs to dana" in html and 'id="link_form_subject_ref_error"' in html
    assert f'value="{DANA_SUBJECT}"' in html
    assert Subject.objects.get(ref=DANA_SUBJECT).owner == people["dana"]
    assert [c[0] for c in changes("erin")] == ["person", "role", "password"]


def test_only_an_end_user_is_linked_to_a_subject(ada: Client, people: dict[str, User]) -> None:
    response = ada.post("/people/sam/subjects/", {"subject_ref": "acct_x", "reason": "Why not."})
    assert response.status_code == 409
    assert "Only an end user owns a subject" in page(response)
    assert not Subject.objects.filter(ref="acct_x").exists()


# Set-password links.


def test_a_set_password_link_goes_to_the_persons_address_and_never_to_the_admin(
    ada: Client, people: dict[str, User]
) -> None:
    response = ada.post("/people/dana/set-password-link/", {"reason": "Forgot it, ticket 90."})
    assert response.status_code == 302
    [message] = mail.outbox
    assert message.to == ["dana@example.com"]
    token = re.search(r"/accounts/set-password/(\S+)/", message.body)
    assert token is not None
    assert token.group(1) not in page(ada.get("/people/dana/"))
    assert changes("dana")[-1] == (
        "password_link",
        "",
        "sent to dana@example.com",
        "user:ada",
        "admin",
        "Forgot it, ticket 90.",
    )
    # Until the link is used, the password Dana has keeps working.
    assert Client().login(username="dana", password=PASSWORD)


def test_no_link_without_an_address_or_for_someone_disabled(
    ada: Client, people: dict[str, User], make_person: Callable[..., User]
) -> None:
    make_person("erin")
    response = ada.post("/people/erin/set-password-link/", {"reason": "Locked out."})
    assert response.status_code == 409
    assert "has no e-mail address" in page(response)
    assert "has no e-mail address, so no set-password link can be sent" in page(
        ada.get("/people/erin/")
    )
    set_active(people["sam"], actor=Actor.system("test"), active=False, reason="Left.")
    response = ada.post("/people/sam/set-password-link/", {"reason": "Locked out."})
    assert response.status_code == 409
    assert "enable them first" in page(response)
    assert mail.outbox == []
    assert [c[0] for c in changes("erin")] == ["person", "role", "password"]


def test_a_link_that_cannot_be_mailed_records_nothing(
    ada: Client, people: dict[str, User], settings: Any
) -> None:
    settings.MAILERS = {
        "default": {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "OPTIONS": {"host": "127.0.0.1", "port": 9, "timeout": 2},
        }
    }
    before = changes("dana")
    response = ada.post("/people/dana/set-password-link/", {"reason": "Forgot it."})
    assert response.status_code == 503
    assert "could not be sent" in page(response)
    assert changes("dana") == before


# The command line.


def test_the_create_person_command_records_its_changes_as_the_command_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PERSON_PASSWORD", "correct-horse-battery")
    call_command(
        "create_person", "kim", "--role", "support", "--email", "kim@example.com", stdout=StringIO()
    )
    monkeypatch.delenv("PERSON_PASSWORD")
    call_command(
        "create_person",
        "kim",
        "--update",
        "--role",
        "admin",
        "--reason",
        "Promoted, ticket 12.",
        stdout=StringIO(),
    )
    why = "From the command line."
    assert changes("kim") == [
        ("person", "", "created", "system:cli", "system", why),
        ("role", "", "support", "system:cli", "system", why),
        ("email", "", "kim@example.com", "system:cli", "system", why),
        ("password", "", "set", "system:cli", "system", why),
        ("role", "support", "admin", "system:cli", "system", "Promoted, ticket 12."),
    ]
    assert User.objects.get(username="kim").is_staff
