"""Batch retractions through the API: only a key holding the ``staff`` scope may call them."""

from __future__ import annotations

from collections.abc import Callable
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from ledger.actions.agents import create_agent
from ledger.actors import Actor
from ledger.models import Agent, Memory, RetractionBatch
from tests.conftest import agent_client
from tests.test_retractions import AFTER_SIX, PARCELS, PHONED, misread, statuses

pytestmark = pytest.mark.django_db

URL = "/api/v1/retractions"


@pytest.fixture
def story(remember: Callable[..., Memory]) -> None:
    remember(PHONED, subject="acct_1f6b0c93d2e84a71", key="contact.channel", source=misread())
    remember(AFTER_SIX, subject="acct_1f6b0c93d2e84a71", key="contact.hours", source=misread())
    remember(PARCELS, subject="acct_1f6b0c93d2e84a71", source=misread("msg_0601", "run_149"))


@pytest.fixture
def staff() -> APIClient:
    return agent_client("support-tool", ["read", "staff"])[0]


def test_dry_run_counts_and_writes_nothing(story: None, staff: APIClient) -> None:
    response = staff.post(URL, {"source_ref": "msg_0588", "dry_run": True}, format="json")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["dry_run"] is True
    assert body["memories"] == 2
    assert body["by_subject"] == [{"ref": "acct_1f6b0c93d2e84a71", "memories": 2}]
    assert {m["statement"] for m in body["listed"]} == {PHONED, AFTER_SIX}
    assert {m["recalls"] for m in body["listed"]} == {0}
    assert not RetractionBatch.objects.exists()
    assert set(statuses().values()) == {"active"}


def test_a_batch_and_its_undo_as_the_agent(story: None, staff: APIClient) -> None:
    created = staff.post(URL, {"run": "run_150", "reason": "misread message"}, format="json")
    assert created.status_code == 201, created.json()
    batch = created.json()
    assert batch["count"] == 2 and len(batch["memories"]) == 2
    assert batch["retracted_by"] == "agent:support-tool"
    assert batch["links"]["undo"] == f"{URL}/{batch['id']}/undo"
    assert statuses() == {PHONED: "retracted", AFTER_SIX: "retracted", PARCELS: "active"}
    assert staff.get(f"{URL}/{batch['id']}").json()["undone_at"] is None

    nameless = staff.post(f"{URL}/{batch['id']}/undo", {}, format="json")
    assert nameless.status_code == 400 and "reason" in nameless.json()
    undone = staff.post(f"{URL}/{batch['id']}/undo", {"reason": "misjudged"}, format="json")
    assert undone.status_code == 200, undone.json()
    assert len(undone.json()["restored"]) == 2 and undone.json()["left_alone"] == []
    assert set(statuses().values()) == {"active"}
    again = staff.post(f"{URL}/{batch['id']}/undo", {"reason": "again"}, format="json")
    assert again.status_code == 409
    assert again.json()["code"] == "batch_already_undone"


def test_a_retried_batch_with_the_same_idempotency_key_is_made_once(
    story: None, staff: APIClient
) -> None:
    data = {"source_ref": "msg_0588", "reason": "misread"}
    first = staff.post(URL, data, format="json", HTTP_IDEMPOTENCY_KEY="batch-1")
    second = staff.post(URL, data, format="json", HTTP_IDEMPOTENCY_KEY="batch-1")
    assert first.status_code == second.status_code == 201
    assert first.json()["id"] == second.json()["id"]
    assert RetractionBatch.objects.count() == 1


@pytest.mark.parametrize("scopes", [["read"], ["write"], ["read", "write"]])
def test_keys_without_the_staff_scope_are_refused(story: None, scopes: list[str]) -> None:
    client = agent_client("ordinary", scopes)[0]
    response = client.post(URL, {"source_ref": "msg_0588", "dry_run": True}, format="json")
    assert response.status_code == 403
    assert "'staff' scope" in response.json()["detail"]
    fake = "00000000-0000-0000-0000-000000000000"
    assert client.post(f"{URL}/{fake}/undo", {}, format="json").status_code == 403
    assert client.get(f"{URL}/{fake}").status_code == 403
    assert APIClient().post(URL, {}, format="json").status_code in (401, 403)


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"reason": "misread"}, "selection_empty"),
        ({"source_ref": "msg_0588"}, "reason"),
        ({"source_ref": "msg_0588", "reason": "  "}, "reason"),
        ({"source_ref": 588, "reason": "x"}, "source_ref"),
        ({"written_after": "2027-03-04T00:00", "reason": "x"}, "written_after"),
        ({"source_ref": "msg_0588", "reason": "x", "colour": "red"}, "colour"),
        ({"source_ref": "msg_0588", "dry_run": "yes"}, "dry_run"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(
    story: None, staff: APIClient, data: dict[str, object], field: str
) -> None:
    response = staff.post(URL, data, format="json")
    assert response.status_code == 400, response.json()
    body = response.json()
    assert field in body or body.get("code") == field, body
    assert not RetractionBatch.objects.exists()


def test_an_unknown_agent_selects_nothing(story: None, staff: APIClient) -> None:
    dry = staff.post(URL, {"agent": "nobody", "dry_run": True}, format="json")
    assert dry.status_code == 200 and dry.json()["memories"] == 0
    real = staff.post(URL, {"agent": "nobody", "reason": "x"}, format="json")
    assert real.status_code == 409
    assert real.json()["code"] == "selection_matches_nothing"


def test_an_unknown_batch_is_404(staff: APIClient) -> None:
    fake = "00000000-0000-0000-0000-000000000000"
    assert staff.get(f"{URL}/{fake}").status_code == 404
    assert staff.post(f"{URL}/{fake}/undo", {}, format="json").status_code == 404


def test_only_an_admin_or_the_command_line_grants_the_staff_scope(
    make_person: Callable[..., Any],
) -> None:
    sam = make_person("sam", role="support")
    alex = make_person("alex", role="admin")
    writer, _ = create_agent(name="writer", scopes=["write"], actor=Actor.system("test"))
    for refused in (Actor.for_user(sam), Actor.for_agent(writer)):
        with pytest.raises(ValueError, match="only an admin"):
            create_agent(name=f"tooling-{refused.label}", scopes=["staff"], actor=refused)
    assert not Agent.objects.filter(name__startswith="tooling-").exists()
    by_admin, _ = create_agent(name="tooling-admin", scopes=["staff"], actor=Actor.for_user(alex))
    assert by_admin.scopes == ["staff"]
    out = StringIO()
    call_command("create_agent_key", "tooling-cli", "--scopes", "read,staff", stdout=out)
    assert Agent.objects.get(name="tooling-cli").scopes == ["read", "staff"]


def test_a_batch_refuses_a_selection_that_no_longer_matches_its_dry_run(
    story: None, staff: APIClient
) -> None:
    before = statuses()
    response = staff.post(
        URL,
        {"source_ref": "msg_0588", "reason": "misread", "expected": 3},
        format="json",
    )
    assert response.status_code == 409
    assert response.json()["code"] == "selection_changed"
    assert statuses() == before
    taken = staff.post(
        URL, {"source_ref": "msg_0588", "reason": "misread", "expected": 2}, format="json"
    )
    assert taken.status_code == 201
