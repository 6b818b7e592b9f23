"""Run notes through the API: keyed, small, overwritten, kept with history, one agent's own."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from ledger.actions.notes import NOTES_PER_RUN_MAX
from ledger.models import Run, RunNote
from tests.conftest import agent_client

pytestmark = pytest.mark.django_db
RUN = "run_notes_1"
NOTES = f"/api/v1/runs/{RUN}/notes"


def put(api: APIClient, key: str, value: Any, run: str = RUN) -> Any:
    return api.put(f"/api/v1/runs/{run}/notes/{key}", {"value": value}, format="json")


def test_a_note_is_written_and_read_back_verbatim(api: APIClient) -> None:
    response = put(api, "budget", "Spend at most 1,200.00 EUR; never\tover.\n")
    assert response.status_code == 201, response.json()
    listed = api.get(NOTES).json()
    assert listed["run"] == RUN
    assert [(n["key"], n["value"]) for n in listed["notes"]] == [
        ("budget", "Spend at most 1,200.00 EUR; never\tover.\n")
    ]


def test_writing_the_same_key_overwrites_and_history_keeps_the_old_value(api: APIClient) -> None:
    put(api, "next_step", "call the bank")
    response = put(api, "next_step", "email the bank")
    assert response.status_code == 200
    assert RunNote.objects.get().value == "email the bank"
    values = [h.value for h in RunNote.history.order_by("history_date")]
    assert values == ["call the bank", "email the bank"]
    assert RunNote.history.latest("history_date").history_actor == "agent:test-agent"


def test_notes_are_listed_by_key(api: APIClient) -> None:
    for key in ("zeta", "alpha", "mid"):
        put(api, key, key.upper())
    assert [n["key"] for n in api.get(NOTES).json()["notes"]] == ["alpha", "mid", "zeta"]


def test_a_note_can_be_deleted_and_history_says_by_whom(api: APIClient) -> None:
    put(api, "temp", "scratch")
    assert api.delete(f"{NOTES}/temp").status_code == 204
    assert api.get(NOTES).json()["notes"] == []
    deleted = RunNote.history.latest("history_date")
    assert deleted.history_type == "-" and deleted.history_actor == "agent:test-agent"
    assert api.delete(f"{NOTES}/temp").status_code == 404


def test_limits_are_exact(api: APIClient) -> None:
    assert put(api, "k" * 40, "v" * 500).status_code == 201
    key_too_long = put(api, "k" * 41, "v")
    assert key_too_long.status_code == 400 and "key" in key_too_long.json()
    value_too_long = put(api, "short", "v" * 501)
    assert value_too_long.status_code == 400 and "value" in value_too_long.json()
    assert RunNote.objects.count() == 1


@pytest.mark.parametrize("value", ["", None, 42, ["list"], "nul\x00", "bell\x07"])
def test_bad_value_is_refused_and_nothing_written(api: APIClient, value: Any) -> None:
    response = put(api, "k", value)
    assert response.status_code == 400 and "value" in response.json()
    assert not RunNote.objects.exists() and not Run.objects.exists()


@pytest.mark.parametrize("key", ["-starts-with-dash", "has%20space", "semi;colon"])
def test_bad_key_is_refused(api: APIClient, key: str) -> None:
    response = put(api, key, "v")
    assert response.status_code == 400 and "key" in response.json()
    assert not RunNote.objects.exists()


def test_unknown_fields_are_refused(api: APIClient) -> None:
    response = api.put(f"{NOTES}/k", {"value": "v", "ttl": 3}, format="json")
    assert response.status_code == 400 and "ttl" in response.json()


def test_another_agents_run_is_404_for_reads_and_writes(api: APIClient) -> None:
    put(api, "mine", "secret plan")
    other, _ = agent_client("other-agent", ["read", "write"])
    assert other.get(NOTES).status_code == 404
    assert put(other, "mine", "overwritten").status_code == 404
    assert other.delete(f"{NOTES}/mine").status_code == 404
    assert RunNote.objects.get().value == "secret plan"


def test_unknown_run_is_404(api: APIClient) -> None:
    assert api.get("/api/v1/runs/run_nobody/notes").status_code == 404
    assert not Run.objects.exists()


def test_reading_needs_read_and_writing_needs_write(reader: APIClient, writer: APIClient) -> None:
    assert put(reader, "k", "v").status_code == 403
    assert put(writer, "k", "v").status_code == 201
    assert writer.get("/api/v1/runs/run_notes_1/notes").status_code == 403


def test_a_run_holds_a_bounded_number_of_notes(api: APIClient) -> None:
    for n in range(NOTES_PER_RUN_MAX):
        assert put(api, f"n{n}", "v").status_code == 201
    response = put(api, "one-more", "v")
    assert response.status_code == 409 and response.json()["code"] == "too_many_notes"
    assert put(api, "n0", "overwrite is fine").status_code == 200


def test_notes_survive_a_new_client(api_agent: Any) -> None:
    client, _ = api_agent
    put(client, "resume_at", "step 4 of 9")
    # Nothing is held in the process: a fresh connection reads it from the database.
    assert RunNote.objects.get(run__ref=RUN).value == "step 4 of 9"


def test_notes_endpoints_are_in_the_openapi_schema(api: APIClient) -> None:
    text = api.get("/api/schema/", HTTP_ACCEPT="application/json").content.decode()
    assert "/api/v1/runs/{ref}/notes/{key}" in text and "/api/v1/runs/{ref}/notes" in text
