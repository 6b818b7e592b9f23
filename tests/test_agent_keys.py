"""Agents' API keys in the product: made and shown once, rotated with a grace period,
revoked at once; on the admin's pages and as management commands."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from io import StringIO
from typing import Any

import pytest
import time_machine
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from playwright.sync_api import expect
from rest_framework.test import APIClient

from ledger.actions.agents import create_agent, restrict_agent, revoke_agent, rotate_agent_key
from ledger.actors import Actor
from ledger.dates import when
from ledger.keys import split_key
from ledger.models import Agent, AgentKey
from ledger.rules.agents import Restriction
from ledger.rules.refusals import Refusal
from tests.conftest import sign_in, signed_in

pytestmark = pytest.mark.django_db
START = datetime(2030, 6, 1, 9, 0, tzinfo=UTC)
KEY = re.compile(r"ma_[0-9a-f]{12}_[A-Za-z0-9_\-]{20,}")
CLI = Actor.system("test")


@pytest.fixture(autouse=True)
def frozen(request: pytest.FixtureRequest) -> Any:
    if request.node.get_closest_marker("browser"):
        # A live server and a browser need a clock that moves.
        yield None
        return
    with time_machine.travel(START, tick=False) as traveller:
        yield traveller


@pytest.fixture
def admin(make_person: Callable[..., User]) -> Client:
    return signed_in(make_person("ada", role="admin"))


def status_of(key: str) -> int:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client.get("/api/v1/memories").status_code


def detail_of(key: str) -> str:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    detail: str = client.get("/api/v1/memories").json()["detail"]
    return detail


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def last_line(output: str) -> str:
    return output.strip().splitlines()[-1]


def keys_in(page: str) -> list[str]:
    return KEY.findall(page)


def prefix_of(key: str) -> str:
    parts = split_key(key)
    assert parts is not None
    return parts[0]


# Rotation and revocation.


def test_rotated_key_works_until_its_grace_ends_and_the_new_one_at_once(
    frozen: Any,
) -> None:
    agent, old = create_agent(name="crm-assistant", scopes=["read"], actor=CLI)
    rotation = rotate_agent_key(agent=agent, actor=CLI, grace_hours=2, reason="Yearly rotation.")
    assert status_of(rotation.key) == 200
    assert status_of(old) == 200
    assert rotation.old_keys_end == START + timedelta(hours=2)

    frozen.move_to(START + timedelta(hours=2) - timedelta(seconds=1))
    assert status_of(old) == 200
    frozen.move_to(START + timedelta(hours=2))
    assert status_of(old) == 401
    assert "replaced by a rotation" in detail_of(old)
    assert status_of(rotation.key) == 200


def test_rotation_with_no_grace_stops_the_old_key_at_once() -> None:
    agent, old = create_agent(name="crm-assistant", scopes=["read"], actor=CLI)
    rotation = rotate_agent_key(agent=agent, actor=CLI, grace_hours=0, reason="Leaked.")
    assert status_of(old) == 401
    assert status_of(rotation.key) == 200


def test_revoked_agent_gets_401_at_once_for_every_key() -> None:
    agent, first = create_agent(name="crm-assistant", scopes=["read"], actor=CLI)
    second = rotate_agent_key(agent=agent, actor=CLI, grace_hours=24, reason="Yearly.").key
    assert status_of(first) == status_of(second) == 200
    revoke_agent(agent=agent, actor=CLI, reason="Key pasted in a public ticket.")
    assert status_of(first) == status_of(second) == 401
    assert "revoked" in detail_of(second)


def test_a_revoked_agent_gets_no_new_key() -> None:
    agent, _ = create_agent(name="crm-assistant", scopes=["read"], actor=CLI)
    revoke_agent(agent=agent, actor=CLI, reason="Retired.")
    with pytest.raises(Refusal, match="revoked"):
        rotate_agent_key(agent=agent, actor=CLI, grace_hours=1, reason="Try again.")
    assert AgentKey.objects.count() == 1


# The pages: creating.


def test_create_shows_the_key_once_and_it_works(
    admin: Client, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    made = admin.post("/agents/new/", {"name": "crm-assistant", "scopes": ["read", "write"]})
    # Post/redirect/get: a reload of the page that shows the key never sends the form again.
    assert made.status_code == 303 and made["Location"] == "/agents/crm-assistant/"
    response = admin.get(made["Location"])
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    page = response.content.decode()
    assert "Store it now, it is never shown again" in page
    assert 'data-copy="new-key"' in page and "ledger/copy.js" in page
    [key] = set(keys_in(page))
    assert status_of(key) == 200
    agent = Agent.objects.get()
    assert agent.scopes == ["read", "write"]
    # Only a hash is kept, nowhere the key itself, and no page shows it again.
    assert AgentKey.objects.get().hash != key
    assert key not in str(list(AgentKey.history.values()))
    again = admin.get("/agents/crm-assistant/").content.decode()
    assert keys_in(again) == [] and prefix_of(key) in again
    assert "The new key was shown once" in again
    # Only the reload just after says so; and no log line ever held the key.
    later = admin.get("/agents/crm-assistant/").content.decode()
    assert "The new key was shown once" not in later and keys_in(later) == []
    assert keys_in(admin.get("/agents/").content.decode()) == []
    assert key not in caplog.text and prefix_of(key) not in made["Location"]


def test_an_admin_may_give_the_staff_scope(admin: Client) -> None:
    response = admin.post("/agents/new/", {"name": "support-tooling", "scopes": ["read", "staff"]})
    assert response.status_code == 303
    assert Agent.objects.get().scopes == ["read", "staff"]


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"name": "", "scopes": ["read"]}, "Give the agent a name"),
        ({"name": "   ", "scopes": ["read"]}, "Give the agent a name"),
        ({"name": "crm bot", "scopes": ["read"]}, "letters, digits, dots, dashes or underscores"),
        ({"name": "crm/bot", "scopes": ["read"]}, "letters, digits, dots, dashes or underscores"),
        ({"name": "crm-bot", "scopes": ["admin"]}, "'admin' is not a scope"),
        ({"name": "crm-bot"}, "Choose at least one scope"),
        ({"name": "x" * 101, "scopes": ["read"]}, "Keep the name to 100 characters"),
        # /agents/new/ is the form: an agent called that could never have its page.
        ({"name": "new", "scopes": ["read"]}, "'new' is the address of a page"),
    ],
)
def test_bad_input_on_create_is_refused_in_words_and_nothing_written(
    admin: Client, data: dict[str, Any], words: str
) -> None:
    response = admin.post("/agents/new/", data)
    assert response.status_code == 400
    page = response.content.decode()
    assert words in page.replace("&#x27;", "'")
    assert not Agent.objects.exists() and not AgentKey.objects.exists()
    assert keys_in(page) == []


def test_create_keeps_what_was_typed_when_refused(admin: Client) -> None:
    page = admin.post("/agents/new/", {"name": "crm-bot", "scopes": []}).content.decode()
    assert 'value="crm-bot"' in page


def test_a_taken_name_points_to_rotation(admin: Client) -> None:
    create_agent(name="crm-assistant", scopes=["read"], actor=CLI)
    response = admin.post("/agents/new/", {"name": "crm-assistant", "scopes": ["read"]})
    assert response.status_code == 409
    page = response.content.decode()
    assert f"already exists, made on {when(START)}: its key was shown once" in page
    assert "rotate its key" in page
    assert 'href="/agents/crm-assistant/#rotate"' in page
    assert keys_in(page) == []
    assert AgentKey.objects.count() == 1


def test_sending_the_create_form_again_says_the_key_was_already_shown(admin: Client) -> None:
    form = {"name": "crm-assistant", "scopes": ["read"]}
    assert admin.post("/agents/new/", form).status_code == 303
    again = admin.post("/agents/new/", form)
    assert again.status_code == 409
    assert "its key was shown once, then, and cannot be shown again" in again.content.decode()
    assert keys_in(again.content.decode()) == [] and AgentKey.objects.count() == 1


def test_a_revoked_agents_name_is_not_used_again_on_the_page(admin: Client) -> None:
    admin.post("/agents/new/", {"name": "crm-assistant", "scopes": ["read"]})
    admin.post("/agents/crm-assistant/revoke/", {"reason": "Key leaked.", "confirm": "on"})
    response = admin.post("/agents/new/", {"name": "crm-assistant", "scopes": ["read"]})
    assert response.status_code == 409
    page = response.content.decode().replace("&#x27;", "'")
    assert (
        f"The name 'crm-assistant' belonged to an agent revoked on {when(START)} by an admin "
        "(ada), who said: Key leaked. A revoked agent keeps its name with its history, so the "
        "name must not be used again: choose another name."
    ) in page
    # Not to a rotation form a revoked agent's page does not have: to its history.
    assert "#rotate" not in page and 'href="/agents/crm-assistant/#history"' in page
    assert 'value="crm-assistant"' in page
    assert Agent.objects.count() == 1 and AgentKey.objects.count() == 1


# The pages: the list and one agent.


def test_the_list_shows_prefixes_scopes_dates_and_status(admin: Client) -> None:
    active, key = create_agent(name="crm-assistant", scopes=["read", "write"], actor=CLI)
    status_of(key)
    revoked, _ = create_agent(name="old-bot", scopes=["read"], actor=CLI)
    revoke_agent(agent=revoked, actor=CLI, reason="Retired.")
    paused, _ = create_agent(name="noisy-bot", scopes=["write"], actor=CLI)
    restrict_agent(
        agent=paused,
        actor=CLI,
        restriction=Restriction.WRITES_PAUSED,
        on=True,
        reason="Duplicates.",
    )
    page = admin.get("/agents/").content.decode()
    prefix = active.keys.get().prefix
    assert prefix in page
    assert revoked.keys.get().prefix not in page
    assert "read, write" in page
    assert when(START) in page
    assert "revoked" in page and "writes paused" in page and "active" in page
    # Used once (crm-assistant), or never: no request came with the others' keys.
    assert page.count('never <span class="meta">(no request with its keys yet)</span>') == 2


def test_the_keys_table_says_whether_each_key_works_in_one_phrase(
    admin: Client, frozen: Any
) -> None:
    agent, old = create_agent(name="crm-assistant", scopes=["read"], actor=CLI)
    page = admin.get("/agents/crm-assistant/").content.decode()
    assert "works</span></td>" in page and "Working." not in page
    assert "never (no request with this key yet)" in page
    status_of(old)
    rotate_agent_key(agent=agent, actor=CLI, grace_hours=2, reason="Yearly.")
    page = admin.get("/agents/crm-assistant/").content.decode()
    ends = when(START + timedelta(hours=2))
    assert f"until {ends}, the end of a rotation&#x27;s grace period" in page
    frozen.move_to(START + timedelta(hours=3))
    page = admin.get("/agents/crm-assistant/").content.decode()
    assert f'stopped</span> <span class="meta">on {ends}: replaced by a rotation' in page


def test_rotating_on_the_page_shows_the_new_key_once(admin: Client) -> None:
    agent, old = create_agent(name="crm-assistant", scopes=["read"], actor=CLI)
    newest = agent.keys.get().prefix
    rotated = admin.post(
        "/agents/crm-assistant/rotate/",
        {"grace_hours": "24", "reason": "Yearly rotation.", "newest": newest},
    )
    assert rotated.status_code == 303 and keys_in(rotated["Location"]) == []
    response = admin.get(rotated["Location"])
    assert "no-store" in response["Cache-Control"]
    page = response.content.decode()
    [new] = set(keys_in(page))
    assert status_of(new) == 200 and status_of(old) == 200
    assert when(START + timedelta(hours=24)) in page
    assert keys_in(admin.get("/agents/crm-assistant/").content.decode()) == []


def test_the_same_rotation_sent_twice_rotates_once(admin: Client) -> None:
    agent, _ = create_agent(name="crm-assistant", scopes=["read"], actor=CLI)
    form = {"grace_hours": "24", "reason": "Yearly.", "newest": agent.keys.get().prefix}
    assert admin.post("/agents/crm-assistant/rotate/", form).status_code == 303
    again = admin.post("/agents/crm-assistant/rotate/", form)
    assert again.status_code == 409
    assert "changed since the page was shown" in again.content.decode()
    assert keys_in(again.content.decode()) == []
    assert AgentKey.objects.count() == 2


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"grace_hours": "721", "reason": "Yearly."}, "between 0 and 720 hours"),
        ({"grace_hours": "-1", "reason": "Yearly."}, "between 0 and 720 hours"),
        ({"grace_hours": "two", "reason": "Yearly."}, "whole hours"),
        ({"grace_hours": "", "reason": "Yearly."}, "how many hours"),
        ({"grace_hours": "24", "reason": ""}, "Say why the key is rotated"),
        ({"grace_hours": "24", "reason": "   "}, "Say why the key is rotated"),
        ({"grace_hours": "24", "reason": "bidi\u202etrick"}, "invisible character"),
    ],
)
def test_bad_rotation_is_refused_in_words_and_nothing_written(
    admin: Client, data: dict[str, str], words: str
) -> None:
    create_agent(name="crm-assistant", scopes=["read"], actor=CLI)
    response = admin.post("/agents/crm-assistant/rotate/", data)
    assert response.status_code == 400
    page = response.content.decode()
    assert words in page
    assert keys_in(page) == []
    key = AgentKey.objects.get()
    assert key.expires_at is None


def test_rotation_keeps_the_reason_typed_when_the_grace_is_wrong(admin: Client) -> None:
    create_agent(name="crm-assistant", scopes=["read"], actor=CLI)
    page = admin.post(
        "/agents/crm-assistant/rotate/", {"grace_hours": "9999", "reason": "Leaked in chat."}
    ).content.decode()
    assert "Leaked in chat.</textarea>" in page and 'value="9999"' in page


def test_rotating_a_revoked_agent_on_the_page_is_refused(admin: Client) -> None:
    agent, _ = create_agent(name="crm-assistant", scopes=["read"], actor=CLI)
    revoke_agent(agent=agent, actor=CLI, reason="Retired.")
    response = admin.post("/agents/crm-assistant/rotate/", {"grace_hours": "1", "reason": "x"})
    assert response.status_code == 409
    page = response.content.decode()
    assert f"was revoked on {when(START)} by the system (test), who said: Retired." in page
    assert "A revoked agent gets no new key" in page and "with another name" in page
    assert AgentKey.objects.count() == 1


def test_revoking_on_the_page_needs_a_reason_and_a_tick(admin: Client) -> None:
    agent, key = create_agent(name="crm-assistant", scopes=["read"], actor=CLI)
    unticked = admin.post("/agents/crm-assistant/revoke/", {"reason": "Leaked."})
    assert unticked.status_code == 400
    assert "Tick the box" in unticked.content.decode()
    assert "Leaked.</textarea>" in unticked.content.decode()
    unexplained = admin.post("/agents/crm-assistant/revoke/", {"confirm": "on"})
    assert unexplained.status_code == 400
    assert "Say why the agent is revoked" in unexplained.content.decode()
    assert status_of(key) == 200

    done = admin.post("/agents/crm-assistant/revoke/", {"reason": "Leaked.", "confirm": "on"})
    # To the agent's page: a reload shows it again rather than sending the form again.
    assert done.status_code == 302 and done["Location"] == "/agents/crm-assistant/"
    assert status_of(key) == 401
    page = admin.get(done["Location"]).content.decode()
    assert "Revoked: every key of this agent stopped working." in page
    again = admin.post("/agents/crm-assistant/revoke/", {"reason": "Again.", "confirm": "on"})
    assert again.status_code == 409 and "already revoked" in again.content.decode()


def test_a_revoked_agents_page_says_since_when_by_whom_and_why_and_offers_no_forms(
    admin: Client,
) -> None:
    agent, _ = create_agent(name="crm-assistant", scopes=["read", "write"], actor=CLI)
    restrict_agent(
        agent=agent,
        actor=CLI,
        restriction=Restriction.QUARANTINED,
        on=True,
        reason="Misreads refunds.",
    )
    admin.post("/agents/crm-assistant/revoke/", {"reason": "Retired.", "confirm": "on"})
    page = admin.get("/agents/crm-assistant/").content.decode()
    assert f'>{when(START)}</time> by you, who said: <span class="ref">Retired.</span>' in page
    for offered in ("Pause its writes", "End the quarantine", "Stop trusting", "Make a new key"):
        assert offered not in page
    assert 'action="/agents/crm-assistant/' not in page
    assert 'stopped</span> <span class="meta">since the agent was revoked' in page


def test_restricting_a_revoked_agent_is_refused_at_the_top_of_its_page(admin: Client) -> None:
    agent, _ = create_agent(name="crm-assistant", scopes=["read", "write"], actor=CLI)
    revoke_agent(agent=agent, actor=CLI, reason="Retired.")
    response = admin.post(
        "/agents/crm-assistant/restrict/",
        {"restriction": "writes_paused", "on": "1", "reason": "Just in case."},
    )
    assert response.status_code == 409
    assert "no writes to restrict. Nothing changed." in response.content.decode()
    assert not Agent.objects.get().writes_paused


@pytest.mark.parametrize(
    ("part", "anchor"),
    [("rotate", "#rotate"), ("revoke", "#revoke"), ("restrict", "#restrictions")],
)
def test_the_forms_addresses_asked_for_directly_lead_to_the_agents_page(
    admin: Client, part: str, anchor: str
) -> None:
    create_agent(name="crm-assistant", scopes=["read"], actor=CLI)
    response = admin.get(f"/agents/crm-assistant/{part}/")
    assert response.status_code == 302
    assert response["Location"] == f"/agents/crm-assistant/{anchor}"
    assert admin.get(f"/agents/nobody/{part}/").status_code == 404
    assert AgentKey.objects.get().expires_at is None and Agent.objects.get().is_active


def test_restrictions_go_on_and_off_on_the_page_with_a_reason(admin: Client) -> None:
    create_agent(name="crm-assistant", scopes=["read", "write"], actor=CLI)
    url = "/agents/crm-assistant/restrict/"
    missing = admin.post(url, {"restriction": "quarantined", "on": "1", "reason": ""})
    assert missing.status_code == 400
    assert "Say why the agent's writes change" in missing.content.decode().replace("&#x27;", "'")
    unknown = admin.post(url, {"restriction": "muzzled", "on": "1", "reason": "x"})
    assert unknown.status_code == 400
    assert not Agent.objects.get().quarantined

    on = admin.post(url, {"restriction": "quarantined", "on": "1", "reason": "Misreads refunds."})
    assert on.status_code == 302
    assert on["Location"] == "/agents/crm-assistant/#restrictions"
    assert Agent.objects.get().quarantined_because == "Misreads refunds."
    page = admin.get(on["Location"]).content.decode()
    assert "Quarantine started. Your reason is in the agent&#x27;s history below." in page
    assert 'Reason given: <span class="ref">Misreads refunds.</span>' in page
    assert "End the quarantine" in page

    off = admin.post(url, {"restriction": "quarantined", "on": "0", "reason": "Fixed in 2.4."})
    assert off.status_code == 302 and not Agent.objects.get().quarantined
    assert "Quarantine ended." in admin.get(off["Location"]).content.decode()
    twice = admin.post(url, {"restriction": "quarantined", "on": "0", "reason": "Again."})
    assert twice.status_code == 409 and "nothing to lift" in twice.content.decode()


def test_the_agents_history_says_who_when_why_and_before_after(admin: Client) -> None:
    admin.post("/agents/new/", {"name": "crm-assistant", "scopes": ["read"]})
    agent = Agent.objects.get()
    newest = agent.keys.get().prefix
    admin.post(
        "/agents/crm-assistant/rotate/",
        {"grace_hours": "24", "reason": "Yearly rotation.", "newest": newest},
    )
    admin.post(
        "/agents/crm-assistant/restrict/",
        {"restriction": "writes_paused", "on": "1", "reason": "Duplicates."},
    )
    page = admin.get("/agents/crm-assistant/").content.decode()
    assert "Agent created</strong> by you" in page
    assert f"Key {newest} given an end" in page
    assert f"Works until: no end → {when(START + timedelta(hours=24))}" in page
    # What happened, then the admin's words once: not "Writes paused put on: Duplicates."
    assert 'Writes paused</strong> by you: <span class="ref">Duplicates.</span>' in page
    assert "Writes paused: no → yes" in page
    assert page.count("Duplicates.") == 2  # the history's line, and the pause's own form
    stored = Agent.history.order_by("-history_id").first()
    assert stored is not None and stored.history_change_reason == "Writes paused: Duplicates."
    assert "Yearly rotation." in page
    assert AgentKey.objects.get(prefix=newest).hash not in page


def test_support_and_end_users_get_404_everywhere(make_person: Callable[..., User]) -> None:
    create_agent(name="crm-assistant", scopes=["read"], actor=CLI)
    people = [
        signed_in(make_person("sam", role="support")),
        signed_in(make_person("dana", subject="acct_1")),
    ]
    base = "/agents/crm-assistant"
    for person in people:
        for url in ("/agents/", "/agents/new/", f"{base}/"):
            assert person.get(url).status_code == 404, url
        for url, data in [
            ("/agents/new/", {"name": "mine", "scopes": ["staff"]}),
            (f"{base}/rotate/", {"grace_hours": "0", "reason": "x"}),
            (f"{base}/revoke/", {"reason": "x", "confirm": "on"}),
            (f"{base}/restrict/", {"restriction": "writes_paused", "on": "1", "reason": "x"}),
        ]:
            assert person.post(url, data).status_code == 404, url
    assert Agent.objects.get().is_active and AgentKey.objects.count() == 1
    assert Client().get("/agents/").status_code == 302


def test_an_unknown_agent_is_404(admin: Client) -> None:
    assert admin.get("/agents/nobody/").status_code == 404
    assert admin.post("/agents/nobody/rotate/", {"grace_hours": "1"}).status_code == 404


def queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


def test_the_list_and_the_agent_page_cost_the_same_however_many_agents_and_keys(
    admin: Client,
) -> None:
    def grow(first: int, count: int) -> None:
        for n in range(first, first + count):
            agent, key = create_agent(name=f"bot-{n}", scopes=["read"], actor=CLI)
            status_of(key)
            rotate_agent_key(agent=agent, actor=CLI, grace_hours=1, reason="Rotation.")

    grow(0, 2)
    agent = Agent.objects.get(name="bot-0")
    few_list, few_page = queries(admin, "/agents/"), queries(admin, "/agents/bot-0/")
    grow(2, 6)
    for _ in range(5):
        rotate_agent_key(agent=agent, actor=CLI, grace_hours=1, reason="Again.")
    assert queries(admin, "/agents/") == few_list
    assert queries(admin, "/agents/bot-0/") == few_page

    # A revoked agent's page reads its revocation once, however long its history.
    revoke_agent(agent=Agent.objects.get(name="bot-1"), actor=CLI, reason="Retired.")
    revoke_agent(agent=agent, actor=CLI, reason="Retired.")
    assert queries(admin, "/agents/bot-0/") == queries(admin, "/agents/bot-1/")


# The commands.


def test_create_of_a_taken_name_suggests_rotate_agent_key() -> None:
    run("create_agent_key", "crm-assistant", "--scopes", "read,write")
    with pytest.raises(CommandError, match="already exists") as error:
        run("create_agent_key", "crm-assistant", "--scopes", "read")
    assert "rotate_agent_key crm-assistant --grace-hours" in str(error.value)
    assert AgentKey.objects.count() == 1


def test_create_of_a_revoked_agents_name_says_when_by_whom_and_why() -> None:
    run("create_agent_key", "crm-assistant")
    run("revoke_agent_key", "crm-assistant", "--reason", "Retired.")
    with pytest.raises(CommandError) as error:
        run("create_agent_key", "crm-assistant")
    message = str(error.value)
    assert (
        f"belonged to an agent revoked on {when(START)} by the system (cli), who said: Retired."
    ) in message
    assert "choose another name" in message and "rotate" not in message
    assert AgentKey.objects.count() == 1


def test_other_capitals_do_not_make_a_revoked_name_new_again() -> None:
    run("create_agent_key", "crm-sync")
    run("revoke_agent_key", "crm-sync", "--reason", "Retired.")
    with pytest.raises(CommandError, match="choose another name"):
        run("create_agent_key", "CRM-Sync")
    assert list(Agent.objects.values_list("name", flat=True)) == ["crm-sync"]


def test_rotate_command_prints_a_working_key_alone_on_its_last_line(frozen: Any) -> None:
    old = last_line(run("create_agent_key", "crm-assistant", "--scopes", "read"))
    output = run("rotate_agent_key", "crm-assistant", "--grace-hours", "3", "--reason", "Yearly.")
    new = last_line(output)
    assert KEY.fullmatch(new)
    assert "never shown again" in output
    assert when(START + timedelta(hours=3)) in output
    assert status_of(new) == 200 and status_of(old) == 200
    frozen.move_to(START + timedelta(hours=3))
    assert status_of(old) == 401 and status_of(new) == 200
    rotated = AgentKey.history.filter(prefix=prefix_of(old)).order_by("-history_id").first()
    assert rotated is not None and "Yearly." in rotated.history_change_reason


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("nobody", "--grace-hours", "1"), "No agent named 'nobody'"),
        (("crm-assistant", "--grace-hours", "721"), "between 0 and 720"),
        (("crm-assistant", "--grace-hours", "1", "--reason", " "), "Say why"),
        (
            ("crm-assistant", "--grace-hours", "1", "--reason", "Leaked\u202e.tpircs"),
            r"invisible character \(U\+202E\)",
        ),
    ],
)
def test_rotate_command_refuses_in_words(args: tuple[str, ...], words: str) -> None:
    run("create_agent_key", "crm-assistant")
    with pytest.raises(CommandError, match=words):
        run("rotate_agent_key", *args)
    assert AgentKey.objects.count() == 1


def test_rotate_command_refuses_a_revoked_agent() -> None:
    run("create_agent_key", "crm-assistant")
    run("revoke_agent_key", "crm-assistant", "--reason", "Retired.")
    with pytest.raises(CommandError, match="make a new agent, with another name"):
        run("rotate_agent_key", "crm-assistant", "--grace-hours", "1")


def test_list_agent_keys_shows_last_use_expiry_and_state(frozen: Any) -> None:
    first = last_line(run("create_agent_key", "crm-assistant", "--scopes", "read,write"))
    run("create_agent_key", "old-bot")
    run("revoke_agent_key", "old-bot", "--reason", "Retired.")
    before = run("list_agent_keys")
    assert before.splitlines()[0].split() == [
        "NAME", "PREFIX", "SCOPES", "CREATED", "LAST", "USED", "EXPIRES", "STATE",
    ]  # fmt: skip
    assert "no request yet" in next(line for line in before.splitlines() if "crm-" in line)

    frozen.move_to(START + timedelta(minutes=5))
    status_of(first)
    run("rotate_agent_key", "crm-assistant", "--grace-hours", "2")
    listed = run("list_agent_keys")
    old_line = next(line for line in listed.splitlines() if prefix_of(first) in line)
    assert when(START + timedelta(minutes=5)) in old_line
    assert when(START + timedelta(minutes=5, hours=2)) in old_line
    assert "working (grace)" in old_line and "read,write" in old_line
    assert "revoked" in next(line for line in listed.splitlines() if "old-bot" in line)


# In a browser.


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_admin_creates_copies_rotates_and_revokes_a_key_in_a_browser(
    browser_page: Any, make_person: Callable[..., User]
) -> None:
    make_person("ada", role="admin")
    page = browser_page
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    sign_in(page, "ada")

    page.goto("/agents/")
    page.get_by_role("link", name="New agent…").click()
    page.get_by_label("Name").fill("crm-assistant")
    page.get_by_label(re.compile("^Write:")).check()
    page.get_by_role("button", name="Create the agent and its key").click()
    expect(page.get_by_text("Store it now, it is never shown again.")).to_be_visible()
    first = page.get_by_label("API key of crm-assistant").input_value()
    assert status_of(first) == 200
    page.get_by_role("button", name="Copy the key").click()
    expect(page.get_by_role("status").filter(has_text="Copied")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()") == first
    # A reload asks for the page again (the form was answered with a redirect): no key,
    # and no second agent.
    page.reload()
    expect(page.get_by_text("The new key was shown once")).to_be_visible()
    assert first not in page.content() and Agent.objects.count() == 1

    page.get_by_label(re.compile("^Grace period")).fill("1")
    page.locator("#id_rotate_reason").fill("Yearly rotation.")
    page.get_by_role("button", name="Make a new key").click()
    expect(page.get_by_role("heading", name="The new key")).to_be_visible()
    second = page.get_by_label("API key of crm-assistant").input_value()
    assert second != first and status_of(second) == status_of(first) == 200

    page.goto("/agents/crm-assistant/")
    assert first not in page.content() and second not in page.content()
    page.locator("#id_revoke_reason").fill("Leaked in a public ticket.")
    page.get_by_label("I understand every key of this agent stops working at once.").check()
    page.get_by_role("button", name="Revoke crm-assistant").click()
    expect(page.get_by_text("Revoked: every key of this agent stopped working.")).to_be_visible()
    assert status_of(first) == status_of(second) == 401
    page.goto("/agents/")
    expect(page.get_by_role("row").filter(has_text="crm-assistant")).to_contain_text("revoked")
    assert problems == []
