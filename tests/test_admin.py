"""The Django admin only reads. The admin role holds view permissions alone, and no route
there changes superuser or staff status, groups or anyone's password; every page of every
registered model answers, history pages included, and shows values as text."""

from __future__ import annotations

import re
from collections.abc import Callable
from io import StringIO
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth import authenticate
from django.contrib.auth.models import Group, Permission, User
from django.core.management import call_command
from django.db.models import Model
from django.test import Client
from playwright.sync_api import expect

from ledger.access import ensure_roles
from ledger.actions.journal import journal_intent, run_for_agent
from ledger.actions.ledger_entries import record_ledger_entry
from ledger.actions.policy import change_policy
from ledger.actions.retractions import Selection, retract_batch
from ledger.actions.sources import SourceInput
from ledger.actors import Actor
from ledger.models import Agent, Memory, Policy, WriteDecision
from tests.conftest import PASSWORD, sign_in, signed_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def people(make_person: Callable[..., User]) -> dict[str, User]:
    # Every install has the policy row a migration made (with no history row), but a
    # transactional test that ran earlier in this process flushed it: put it back the same way.
    Policy.objects.bulk_create([Policy(pk=1)], ignore_conflicts=True)
    return {
        "alex": make_person("alex", role="admin"),
        "dana": make_person("dana", subject="acct_1"),
    }


@pytest.fixture
def alex(people: dict[str, User]) -> Client:
    return signed_in("alex")


def admin_group_permissions() -> set[str]:
    return {
        f"{p.content_type.app_label}.{p.codename}"
        for p in Group.objects.get(name="admin").permissions.select_related("content_type")
    }


# No route to more.


def _routes(people: dict[str, User]) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """Every page of the user and group admins that could add, raise, regroup, delete or
    set a password, with the form an attacker would send."""
    alex, dana = people["alex"], people["dana"]
    admin_group = Group.objects.get(name="admin")
    change_user = Permission.objects.get(codename="change_user")
    raised = {
        "username": "alex",
        "is_active": "on",
        "is_staff": "on",
        "is_superuser": "on",
        "groups": [admin_group.pk],
        "user_permissions": [change_user.pk],
        "date_joined_0": "2026-01-01",
        "date_joined_1": "00:00:00",
    }
    new_password = {"password1": "taken-over-9876", "password2": "taken-over-9876"}
    return {
        "user add page": ("get", "/admin/auth/user/add/", {}),
        "user add": ("post", "/admin/auth/user/add/", {"username": "mallory", **new_password}),
        "superuser for oneself": ("post", f"/admin/auth/user/{alex.pk}/change/", raised),
        "staff and admin for another": (
            "post",
            f"/admin/auth/user/{dana.pk}/change/",
            raised | {"username": "dana"},
        ),
        "password page": ("get", f"/admin/auth/user/{dana.pk}/password/", {}),
        "password set": ("post", f"/admin/auth/user/{dana.pk}/password/", new_password),
        "user delete": ("post", f"/admin/auth/user/{dana.pk}/delete/", {"post": "yes"}),
        "group add page": ("get", "/admin/auth/group/add/", {}),
        "group add": (
            "post",
            "/admin/auth/group/add/",
            {"name": "root", "permissions": [change_user.pk]},
        ),
        "group change": (
            "post",
            f"/admin/auth/group/{admin_group.pk}/change/",
            {"name": "admin", "permissions": [change_user.pk]},
        ),
    }


ROUTES = [
    "user add page",
    "user add",
    "superuser for oneself",
    "staff and admin for another",
    "password page",
    "password set",
    "user delete",
    "group add page",
    "group add",
    "group change",
]


@pytest.mark.parametrize("route", ROUTES)
def test_the_admin_role_cannot_raise_anyone_or_set_a_password_in_the_django_admin(
    alex: Client, people: dict[str, User], route: str
) -> None:
    method, url, data = _routes(people)[route]
    permissions = admin_group_permissions()
    response = getattr(alex, method)(url, data)
    assert response.status_code in (403, 404), url
    for person in User.objects.all():
        assert not person.is_superuser
        assert person.user_permissions.count() == 0
    assert User.objects.get(username="alex").groups.get().name == "admin"
    assert not User.objects.get(username="dana").is_staff
    assert not User.objects.get(username="dana").groups.exists()
    assert set(User.objects.values_list("username", flat=True)) == {"alex", "dana"}
    assert authenticate(username="dana", password=PASSWORD) is not None
    assert admin_group_permissions() == permissions
    assert not Group.objects.filter(name="root").exists()


def test_every_route_to_more_is_tried(people: dict[str, User]) -> None:
    assert sorted(_routes(people)) == sorted(ROUTES)


def test_a_superuser_cannot_change_people_in_the_django_admin_either(
    people: dict[str, User],
) -> None:
    User.objects.create_superuser("root", "root@example.com", PASSWORD)
    root = signed_in("root")
    dana = people["dana"]
    assert root.get(f"/admin/auth/user/{dana.pk}/change/").status_code == 200
    response = root.post(f"/admin/auth/user/{dana.pk}/password/", {})
    assert response.status_code == 403
    assert root.get("/admin/auth/user/add/").status_code == 403


def test_the_admin_group_holds_only_view_permissions_and_migrate_takes_older_ones_away(
    people: dict[str, User],
) -> None:
    admin_group = Group.objects.get(name="admin")
    # What an install that ran older migrations gave admins.
    admin_group.permissions.add(
        *Permission.objects.filter(codename__in=["add_user", "change_user", "change_policy"])
    )
    call_command("migrate", verbosity=0, stdout=StringIO())
    permissions = admin_group_permissions()
    assert {"auth.view_user", "auth.view_group", "ledger.view_memory"} <= permissions
    assert all(name.split(".")[1].startswith("view_") for name in permissions)
    ensure_roles()
    assert admin_group_permissions() == permissions


def test_support_staff_do_not_use_the_django_admin(make_person: Callable[..., User]) -> None:
    make_person("sam", role="support")
    response = signed_in("sam").get("/admin/")
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


# Every page answers, read-only.


@pytest.fixture
def one_of_each(people: dict[str, User], remember: Callable[..., Memory], agent: Agent) -> None:
    """At least one row of every model the admin shows, made as the product makes them."""
    memory = remember("Prefers email.", source=SourceInput(kind="user_message", ref="msg_9"))
    record_ledger_entry(
        subject=memory.subject,
        agent=agent,
        fact="Do not email the supplier.",
        kind="commitment",
        source=SourceInput(kind="user_message", ref="msg_10", run="run_1"),
    )
    run = run_for_agent(ref="run_1", agent=agent)
    assert run is not None
    journal_intent(agent=agent, run=run, idempotency_key="k1", action="send", intent={"n": 1})
    retract_batch(
        selection=Selection(source_ref="msg_9"),
        actor=Actor.for_user(people["alex"]),
        reason="Misread.",
    )
    change_policy(actor=Actor.for_user(people["alex"]), reason="Shorter guesses.", recall_cap=15)


def _registered() -> list[tuple[type[Model], Any]]:
    return sorted(admin.site._registry.items(), key=lambda item: item[0].__name__)


def test_every_page_of_every_model_in_the_django_admin_answers(
    alex: Client, one_of_each: None
) -> None:
    assert alex.get("/admin/").status_code == 200
    for model, _ in _registered():
        meta = model._meta
        base = f"/admin/{meta.app_label}/{meta.model_name}/"
        row = model._default_manager.order_by("pk").first()
        assert row is not None, f"no {meta.model_name} to look at"
        for url in (base, f"{base}{row.pk}/change/", f"{base}{row.pk}/history/"):
            assert alex.get(url).status_code == 200, url


def test_a_history_address_with_no_id_of_the_model_is_not_found(
    alex: Client, one_of_each: None
) -> None:
    for model, _ in _registered():
        if not hasattr(model, "history"):
            continue
        meta = model._meta
        row = model._default_manager.order_by("pk").first()
        assert row is not None
        url = f"/admin/{meta.app_label}/{meta.model_name}/{row.pk}/change/history/"
        assert alex.get(url).status_code == 404, url


def test_a_write_decision_has_a_history_page(alex: Client, one_of_each: None) -> None:
    """Untracked: Django's own history page, which simple-history's would break (a 500)."""
    decision = WriteDecision.objects.first()
    assert decision is not None
    response = alex.get(f"/admin/ledger/writedecision/{decision.pk}/history/")
    assert response.status_code == 200


def _cells(html: str) -> list[list[str]]:
    """The history table's rows, each cell's text with tags and spaces taken out."""
    table = html.split('id="change-history"')[1].split("</table>")[0]
    return [
        [
            " ".join(re.sub(r"<[^>]+>", " ", cell).split())
            for cell in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)
        ]
        for row in re.findall(r"<tr>(.*?)</tr>", table, re.S)
    ]


def test_a_tracked_rows_history_says_who_in_what_role_why_and_what_changed_in_words(
    alex: Client, one_of_each: None
) -> None:
    memory = Memory.objects.get(statement="Prefers email.")
    html = alex.get(f"/admin/ledger/memory/{memory.pk}/history/").content.decode()
    heading, deleted, created = _cells(html)
    assert heading == [
        "When",
        "What happened",
        "Who",
        "In the role of",
        "Why",
        "What changed",
        "Version",
    ]
    assert deleted[1:4] == ["Changed", "you", "an admin"]
    assert deleted[4].endswith("Misread.")
    assert "Status: in use → deleted" in deleted[5]
    assert created[1:4] == ["Created", "the assistant (fixture-agent)", "an agent"]
    assert created[5].startswith("The first version")
    assert "history_actor" not in html.lower() and "None" not in html
    assert 'style="' not in html


def test_change_and_past_version_pages_show_values_as_text_and_cannot_be_posted(
    alex: Client, one_of_each: None
) -> None:
    memory = Memory.objects.get(statement="Prefers email.")
    version = memory.history.order_by("history_date").first()
    assert version is not None
    for url in (
        f"/admin/ledger/memory/{memory.pk}/change/",
        f"/admin/ledger/memory/{memory.pk}/history/{version.history_id}/",
    ):
        form = re.split(r'<form [^>]*id="\w*memory_form"', alex.get(url).content.decode())[1]
        assert 'class="readonly"' in form and "Prefers email." in form, url
        inputs = re.findall(r"<input[^>]*>", form)
        assert all('type="hidden"' in tag for tag in inputs), url
        assert "<textarea" not in form and "<select" not in form, url
        assert 'type="submit"' not in form, url
    revert = f"/admin/ledger/memory/{memory.pk}/history/{version.history_id}/"
    response = alex.post(revert, {"statement": "Injected.", "status": "active"})
    assert response.status_code == 403
    assert Memory.objects.get(pk=memory.pk).statement == "Prefers email."


def test_a_person_in_the_django_admin_is_text_without_a_password_and_points_to_their_page(
    alex: Client, people: dict[str, User]
) -> None:
    dana = people["dana"]
    html = alex.get(f"/admin/auth/user/{dana.pk}/change/").content.decode()
    assert 'href="/people/dana/"' in html
    assert dana.password not in html and "password" not in html.lower().split("<form")[1]
    assert 'name="is_superuser"' not in html and 'name="username"' not in html
    # Help for reading, not Django's advice on what to type.
    assert "150 characters or fewer" not in html and "Designates" not in html
    assert "It follows the Admin role." in html


def test_the_policy_is_read_only_in_the_django_admin_and_points_to_its_page(
    alex: Client,
) -> None:
    before = Policy.current().recall_cap
    html = alex.get("/admin/ledger/policy/1/change/").content.decode()
    assert 'href="/policy/"' in html
    assert 'name="recall_cap"' not in html
    # The policy page's words for each setting, not its column's name.
    assert "<label>Life of a preference:</label>" in html and "Ttl preference" not in html
    assert "expires after this many days. From 1 to 36500 days." in html
    response = alex.post("/admin/ledger/policy/1/change/", {"recall_cap": 3})
    assert response.status_code == 403
    assert Policy.current().recall_cap == before
    refused = response.content.decode()
    assert "The Django admin only reads" in refused and "403 Forbidden" not in refused
    assert 'href="/admin/ledger/policy/1/change/">Back to the page, unchanged' in refused
    assert 'href="/admin/">Back to the Django admin' in refused


def test_the_policy_history_in_the_django_admin_names_settings_as_the_policy_page_does(
    alex: Client, people: dict[str, User]
) -> None:
    admin_actor = Actor.for_user(people["alex"])
    change_policy(actor=admin_actor, reason="Shorter recalls.", recall_cap=15)
    change_policy(actor=admin_actor, reason="Shorter still.", recall_cap=12)
    _, newest, oldest = _cells(alex.get("/admin/ledger/policy/1/history/").content.decode())
    assert "Memories per recall: 15 → 12" in newest[5]
    assert "Version:" in newest[5] and "Recall cap" not in newest[5]
    # The first change kept: what it changed from was never recorded.
    assert oldest[5].startswith("The earliest version kept")


def test_a_403_elsewhere_says_so_in_words_with_a_way_back(alex: Client) -> None:
    response = alex.get("/admin/auth/user/add/")
    assert response.status_code == 403
    html = response.content.decode()
    assert "Not allowed here" in html and 'href="/admin/">Back to the Django admin' in html
    assert "Back to the page, unchanged" not in html


# In a real browser, under the site's Content-Security-Policy.


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_every_kind_of_admin_page_works_in_a_browser_under_the_csp(
    browser_page: Any, one_of_each: None
) -> None:
    page = browser_page
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    sign_in(page, "alex")
    memory = Memory.objects.get(statement="Prefers email.")
    version = memory.history.order_by("history_date").first()
    decision = WriteDecision.objects.first()
    dana = User.objects.get(username="dana")
    assert version is not None and decision is not None
    pages = {
        "/admin/": "Site administration",
        "/admin/ledger/memory/": "Prefers email.",
        "/admin/ledger/memory/?status__exact=retracted": "Prefers email.",
        f"/admin/ledger/memory/{memory.pk}/change/": "Prefers email.",
        f"/admin/ledger/memory/{memory.pk}/history/": "Misread.",
        f"/admin/ledger/memory/{memory.pk}/history/{version.history_id}/": "Prefers email.",
        f"/admin/ledger/writedecision/{decision.pk}/history/": "history",
        f"/admin/auth/user/{dana.pk}/change/": "dana",
        "/admin/auth/user/": "dana",
        f"/admin/auth/group/{Group.objects.get(name='admin').pk}/change/": "admin",
        "/admin/ledger/policy/1/change/": "policy page",
        "/admin/ledger/policy/1/history/": "Shorter guesses.",
    }
    for url, text in pages.items():
        response = page.goto(url)
        assert response is not None and response.status == 200, url
        expect(page.locator("#content")).to_contain_text(text)
        if "/change/" in url or "/history/" in url:
            # Read-only: nothing on the page invites typing or choosing.
            fields = page.locator("#content input:visible, #content textarea, #content select")
            assert fields.count() == 0, url
    assert problems == []
