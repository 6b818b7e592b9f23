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
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from playwright.sync_api import expect

from ledger.actions.people import create_person, send_password_link, set_active, unlink_subject
from ledger.actors import Actor
from ledger.dates import when
from ledger.models import PersonChange, Subject
from tests.conftest import PASSWORD, sign_in, signed_in

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


def row_of(html: str, username: str) -> str:
    row = re.search(rf'<tr>\s*<td><a href="/people/{username}/">.*?</tr>', html, re.S)
    assert row is not None, username
    return row.group(0)


def signing_in(html: str) -> str:
    """What a person's page says under "Signing in", tags and spaces taken out."""
    found = re.search(r"<dt>Signing in</dt><dd>(.*?)</dd>", html, re.S)
    assert found is not None
    return " ".join(re.sub(r"<[^>]+>", "", found.group(1)).split())


# No mail server listens on port 9 (discard) here: the connection is refused at once.
NO_MAIL_SERVER = {
    "default": {
        "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "OPTIONS": {"host": "127.0.0.1", "port": 9, "timeout": 2},
    }
}


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
            person = create_person(
                username=f"p{n}",
                role=("user", "support", "admin")[n % 3],
                subject_ref=f"acct_{n}" if n % 3 == 0 else "",
                email=f"p{n}@example.com",
                actor=system,
            )
            send_password_link(person, actor=system, reason=f"Welcome {n}.")
            send_password_link(people["dana"], actor=system, reason=f"Again {n}.")
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
            "subject_name": "Haddad Trading",
            "reason": "New customer, ticket 5120.",
            **extra,
        },
    )


def test_a_new_person_sets_their_own_password_with_the_link_they_are_emailed(
    ada: Client, people: dict[str, User], django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = _created_and_linked(ada, first_name="Noor", last_name="Haddad")
    assert response.status_code == 302 and response["Location"] == "/people/noor/"
    noor = User.objects.get(username="noor")
    assert not noor.has_usable_password()
    assert not noor.is_staff and not noor.is_superuser
    assert Subject.objects.get(ref="acct_noor").owner == noor
    why = "New customer, ticket 5120."
    assert changes("noor") == [
        ("person", "", "created", "user:ada", "admin", why),
        ("name", "", "Noor Haddad", "user:ada", "admin", why),
        ("role", "", "user", "user:ada", "admin", why),
        ("email", "", "noor@example.com", "user:ada", "admin", why),
        ("subject", "", "acct_noor", "user:ada", "admin", why),
        ("password_link", "", "sent to noor@example.com", "user:ada", "admin", why),
    ]
    html = page(ada.get("/people/noor/"))
    assert "a set-password link went to noor@example.com" in html
    assert "<dt>Name</dt><dd>Noor Haddad</dd>" in html
    assert "Name</td>\n        <td>— → Noor Haddad" in html
    # No password yet: not "Can sign in", on the page and in the list.
    sent = PersonChange.objects.get(username="noor", field="password_link").changed_at
    waiting = f"Has not set a password yet (link sent {when(sent)})"
    assert signing_in(html) == waiting
    noor_row = row_of(page(ada.get("/people/")), "noor")
    assert "Noor Haddad" in noor_row and waiting in " ".join(
        re.sub(r"<[^>]+>", "", noor_row).split()
    )
    assert "Can sign in" not in noor_row

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
    assert signing_in(page(ada.get("/people/noor/"))) == "Can sign in"

    # The link works once.
    again = Client().get(path)
    assert again.status_code == 200
    assert "This link no longer works" in page(again)
    assert Client().login(username="noor", password=NEW_PASSWORD)


def test_the_set_password_page_applies_the_password_rules(
    ada: Client, people: dict[str, User], django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
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


# A real commit, so that the link is e-mailed after it as in production.
@pytest.mark.django_db(transaction=True)
def test_no_e_mail_server_means_the_person_is_made_and_told_the_link_did_not_go(
    ada: Client, people: dict[str, User], settings: Any
) -> None:
    settings.MAILERS = NO_MAIL_SERVER
    response = _created_and_linked(ada)
    assert response.status_code == 302
    html = page(ada.get("/people/noor/"))
    assert "no set-password link went out" in html
    assert "a set-password link went to" not in html
    assert signing_in(html) == "Has not set a password yet (the last link could not be sent)"
    assert [c[0] for c in changes("noor")] == [
        "person",
        "role",
        "email",
        "subject",
        "password_link",
        "password_link_failed",
    ]
    assert changes("noor")[-1][1:3] == (
        "sent to noor@example.com",
        "not sent: the mail server did not take it",
    )
    assert "Set-password link not sent" in html


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


def test_an_end_user_who_owns_subjects_keeps_the_role_until_they_are_unlinked(
    ada: Client, people: dict[str, User]
) -> None:
    html = page(ada.get("/people/dana/"))
    assert "/people/dana/role/" not in html
    assert "dana owns 1 subject, so stays an end user" in html
    assert "Unlink their subjects first" in html
    before = changes("dana")
    response = ada.post("/people/dana/role/", {"role": "support", "reason": "Joins the team."})
    assert response.status_code == 409
    assert "Unlink their subjects first" in page(response)
    assert not User.objects.get(username="dana").groups.exists()
    assert changes("dana") == before

    ada.post(
        "/people/dana/subjects/unlink/", {"subject_ref": DANA_SUBJECT, "reason": "Joins the team."}
    )
    assert "/people/dana/role/" in page(ada.get("/people/dana/"))
    response = ada.post("/people/dana/role/", {"role": "support", "reason": "Joins the team."})
    assert response.status_code == 302
    assert User.objects.get(username="dana").groups.get().name == "support"


def test_the_history_is_the_persons_by_their_sealed_username(
    ada: Client, people: dict[str, User]
) -> None:
    """The link from a change to the person's row is outside the audit chain's hash: a
    change moved to someone else's row, or cut from it, stays where its username says."""
    PersonChange.objects.filter(username="dana").update(person=None)
    PersonChange.objects.filter(username="sam").update(person=people["dana"])
    html = page(ada.get("/people/dana/"))
    history = html.split('id="history-heading"')[1]
    assert DANA_SUBJECT in history
    assert "→ support" not in history and "No change recorded" not in history


def test_a_person_without_a_name_or_a_link_says_so(ada: Client, people: dict[str, User]) -> None:
    create_person(username="lee", role="user", email="lee@example.com", actor=Actor.system("t"))
    html = page(ada.get("/people/lee/"))
    assert '<dt>Name</dt><dd><span class="muted">not given</span></dd>' in html
    assert signing_in(html) == "Has not set a password yet (no link sent yet)"
    assert "Has not set a password yet (no link sent yet)" in row_of(
        page(ada.get("/people/")), "lee"
    )
    assert signing_in(page(ada.get("/people/dana/"))) == "Can sign in"


# Set-password links.


def test_a_set_password_link_goes_to_the_persons_address_and_never_to_the_admin(
    ada: Client, people: dict[str, User], django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
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


@pytest.mark.django_db(transaction=True)
def test_a_link_the_mail_server_refuses_is_recorded_as_not_sent_and_never_claimed(
    ada: Client, people: dict[str, User], settings: Any
) -> None:
    settings.MAILERS = NO_MAIL_SERVER
    before = changes("dana")
    response = ada.post("/people/dana/set-password-link/", {"reason": "Forgot it."})
    assert response.status_code == 503
    html = page(response)
    assert "could not be sent" in html and "went to" not in html
    assert changes("dana") == [
        *before,
        ("password_link", "", "sent to dana@example.com", "user:ada", "admin", "Forgot it."),
        (
            "password_link_failed",
            "sent to dana@example.com",
            "not sent: the mail server did not take it",
            "user:ada",
            "admin",
            "Forgot it.",
        ),
    ]
    assert "went to" not in page(ada.get("/people/dana/"))


def test_a_link_is_e_mailed_only_once_its_record_is_committed(
    people: dict[str, User], django_capture_on_commit_callbacks: Any
) -> None:
    before = changes("dana")
    with (
        django_capture_on_commit_callbacks(execute=True),
        pytest.raises(RuntimeError),
        transaction.atomic(),
    ):
        send_password_link(people["dana"], actor=Actor.for_user(people["ada"]), reason="A.")
        raise RuntimeError("the commit fails")
    assert mail.outbox == [] and changes("dana") == before

    with django_capture_on_commit_callbacks(execute=True):
        send_password_link(people["dana"], actor=Actor.for_user(people["ada"]), reason="B.")
        # Recorded, and waiting for the commit.
        assert changes("dana")[-1][2] == "sent to dana@example.com"
        assert mail.outbox == []
    [message] = mail.outbox
    assert message.to == ["dana@example.com"]


# The command line.


def test_the_create_person_command_records_its_changes_as_the_command_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PERSON_PASSWORD", "correct-horse-battery")
    out = StringIO()
    call_command(
        "create_person", "kim", "--role", "support", "--email", "kim@example.com", stdout=out
    )
    assert out.getvalue() == "Created support 'kim'.\n"
    monkeypatch.delenv("PERSON_PASSWORD")
    out = StringIO()
    call_command(
        "create_person",
        "kim",
        "--update",
        "--role",
        "admin",
        "--reason",
        "Promoted, ticket 12.",
        stdout=out,
    )
    assert out.getvalue() == "Updated 'kim': role support → admin.\n"
    why = "From the command line."
    assert changes("kim") == [
        ("person", "", "created", "system:cli", "system", why),
        ("role", "", "support", "system:cli", "system", why),
        ("email", "", "kim@example.com", "system:cli", "system", why),
        ("password", "", "set", "system:cli", "system", why),
        ("role", "support", "admin", "system:cli", "system", "Promoted, ticket 12."),
    ]
    assert User.objects.get(username="kim").is_staff


def test_the_command_line_says_roles_as_the_pages_do_and_keeps_an_owner_an_end_user(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PERSON_PASSWORD", "correct-horse-battery")
    out = StringIO()
    call_command(
        "create_person",
        "jo",
        "--role",
        "user",
        "--first-name",
        "Jo",
        "--last-name",
        "Park",
        "--subject",
        "acct_jo",
        stdout=out,
    )
    assert out.getvalue() == "Created end user 'jo' (Jo Park), owning subject acct_jo.\n"
    assert User.objects.get(username="jo").get_full_name() == "Jo Park"
    monkeypatch.delenv("PERSON_PASSWORD")
    with pytest.raises(CommandError, match="owns a subject.*Unlink their subjects first"):
        call_command("create_person", "jo", "--update", "--role", "support", stdout=StringIO())
    assert not User.objects.get(username="jo").groups.exists()
    assert [c[0] for c in changes("jo")] == ["person", "name", "role", "password", "subject"]

    jo = User.objects.get(username="jo")
    unlink_subject(jo, actor=Actor.system("test"), subject_ref="acct_jo", reason="Closed.")
    out = StringIO()
    call_command(
        "create_person",
        "jo",
        "--update",
        "--role",
        "support",
        "--last-name",
        "Park-Lee",
        stdout=out,
    )
    assert out.getvalue() == "Updated 'jo': role end user → support; name Jo Park → Jo Park-Lee.\n"
    assert changes("jo")[-1][:3] == ("name", "Jo Park", "Jo Park-Lee")


# The page in a browser.


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_subjects_table_and_the_link_card_do_not_touch(
    browser_page: Any, people: dict[str, User]
) -> None:
    page = browser_page
    sign_in(page, "ada")
    page.goto("/people/dana/")
    table = page.locator("section.person-subjects > table")
    card = page.locator("section.person-subjects > form.card")
    expect(card).to_contain_text("Link a subject")
    table_box, card_box = table.bounding_box(), card.bounding_box()
    assert table_box is not None and card_box is not None
    assert card_box["y"] - (table_box["y"] + table_box["height"]) >= 12
