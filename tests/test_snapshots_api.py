"""Compaction snapshots through the API: stored accepted or rejected, numbered, read back."""

from __future__ import annotations

import copy
import json
import threading
from datetime import UTC, datetime
from typing import Any

import pytest
import time_machine
from django.db import connection
from jsonschema import Draft202012Validator
from rest_framework.test import APIClient

from ledger.actions.ledger_entries import record_ledger_entry
from ledger.actions.sources import SourceInput
from ledger.actions.subjects import create_subject
from ledger.actors import Actor
from ledger.models import Agent, Run, Snapshot, Subject
from tests.conftest import SUBJECT, agent_client
from tests.test_snapshot_checks import COMMITMENT, DOCUMENT

RUN = "run_dora_research"
URL = f"/api/v1/runs/{RUN}/snapshots"


def snapshot_body(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "document": copy.deepcopy(DOCUMENT),
        "pinned": ["The user's name is Dana."],
        "tokens_before": 48_000,
        "tokens_after": 9_500,
        "budget": {
            "system_prompt": 1_200,
            "tool_definitions": 2_300,
            "goal": 150,
            "pinned_facts": 80,
            "summary": 2_900,
            "recent_turns": 2_870,
            "reserve": 4_000,
        },
        "narrative": "Searched four companies; two answered.",
    }
    for name, value in overrides.items():
        if value is ...:
            data.pop(name)
        else:
            data[name] = value
    return data


def post(client: APIClient, body: Any, url: str = URL, **headers: Any) -> Any:
    return client.post(url, body, format="json", **headers)


def without_last_open_item() -> dict[str, Any]:
    document = copy.deepcopy(DOCUMENT)
    document["open"].pop()
    return document


@pytest.fixture
def subject_with_commitment(agent: Agent, make_person: Any) -> Subject:
    make_person("dana", subject=SUBJECT)
    subject = Subject.objects.get(ref=SUBJECT)
    record_ledger_entry(
        subject=subject,
        agent=agent,
        fact=COMMITMENT,
        kind="commitment",
        source=SourceInput(kind="user_message", ref="msg_0007"),
    )
    return subject


def test_a_document_that_passes_every_check_is_accepted(api: APIClient) -> None:
    response = post(api, snapshot_body())
    assert response.status_code == 201, response.json()
    assert response.json() == {"run": RUN, "generation": 1, "status": "accepted", "problems": []}
    snapshot = Snapshot.objects.get()
    assert (snapshot.status, snapshot.tokens_before, snapshot.tokens_after) == (
        "accepted",
        48_000,
        9_500,
    )
    assert snapshot.document == DOCUMENT
    assert snapshot.run.agent.name == "test-agent"


def test_each_post_takes_the_next_generation(api: APIClient) -> None:
    generations = [post(api, snapshot_body()).json()["generation"] for _ in range(3)]
    assert generations == [1, 2, 3]


def test_a_failing_document_is_stored_as_rejected_and_answered_with_422(api: APIClient) -> None:
    response = post(api, snapshot_body(document=without_last_open_item()))
    assert response.status_code == 422
    assert response.json() == {
        "run": RUN,
        "generation": 1,
        "status": "rejected",
        "problems": [
            {
                "check": "partition",
                "code": "missing",
                "message": "1 task item is in neither findings nor open: “Vlaamse Clearing”.",
                "items": ["Vlaamse Clearing"],
            }
        ],
    }
    snapshot = Snapshot.objects.get()
    assert snapshot.status == "rejected"
    assert snapshot.document == without_last_open_item()
    assert snapshot.problems == response.json()["problems"]


def test_a_document_that_misses_the_schema_is_kept_with_its_schema_problems(
    api: APIClient,
) -> None:
    response = post(api, snapshot_body(document={"summary": "We searched a lot."}))
    assert response.status_code == 422
    problems = response.json()["problems"]
    assert {p["check"] for p in problems} == {"schema"}
    assert any("'task' is a required property" in p["message"] for p in problems)
    assert Snapshot.objects.get().document == {"summary": "We searched a lot."}


def test_a_retry_after_a_rejection_takes_the_next_generation(api: APIClient) -> None:
    post(api, snapshot_body(document=without_last_open_item()))
    response = post(api, snapshot_body())
    assert (response.status_code, response.json()["generation"]) == (201, 2)


def test_dropping_a_resolved_finding_is_rejected_against_the_last_accepted_generation(
    api: APIClient,
) -> None:
    assert post(api, snapshot_body()).status_code == 201
    lost = copy.deepcopy(DOCUMENT)
    lost["findings"].pop()  # the negative result for Nordlys Betaling
    lost["open"].append({"item": "Nordlys Betaling", "blocked_by": "not started"})
    first = post(api, snapshot_body(document=lost))
    assert first.status_code == 422
    assert first.json()["problems"][0]["message"] == (
        "1 item resolved in generation 1 is missing or no longer resolved: “Nordlys Betaling”."
    )
    # A rejected generation never becomes the baseline: the same loss is caught again.
    again = post(api, snapshot_body(document=lost))
    assert again.json()["problems"][0]["items"] == ["Nordlys Betaling"]
    assert "generation 1" in again.json()["problems"][0]["message"]


def test_a_commitment_in_force_must_be_carried_verbatim(
    api: APIClient, subject_with_commitment: Subject
) -> None:
    document = copy.deepcopy(DOCUMENT)
    document["commitments"] = ["one H2 per company, in the user's order, in report.md"]
    response = post(api, snapshot_body(document=document, subject=SUBJECT))
    assert response.status_code == 422
    (problem,) = response.json()["problems"]
    assert (problem["check"], problem["items"]) == ("commitments", [COMMITMENT])
    assert Run.objects.get(ref=RUN).subject == subject_with_commitment


def test_a_commitment_carried_in_pinned_is_enough(
    api: APIClient, subject_with_commitment: Subject
) -> None:
    document = copy.deepcopy(DOCUMENT)
    document["commitments"] = []
    response = post(api, snapshot_body(document=document, pinned=[COMMITMENT], subject=SUBJECT))
    assert response.status_code == 201


def test_the_run_keeps_its_subject_for_later_snapshots(
    api: APIClient, subject_with_commitment: Subject
) -> None:
    assert post(api, snapshot_body(subject=SUBJECT)).status_code == 201
    document = copy.deepcopy(DOCUMENT)
    document["commitments"] = []
    response = post(api, snapshot_body(document=document))  # no subject this time
    assert response.status_code == 422
    assert response.json()["problems"][0]["check"] == "commitments"


def test_a_commitment_past_its_expiry_no_longer_has_to_be_carried(
    api: APIClient, agent: Agent, make_person: Any
) -> None:
    make_person("dana", subject=SUBJECT)
    record_ledger_entry(
        subject=Subject.objects.get(ref=SUBJECT),
        agent=agent,
        fact="do not email the supplier before 1 April",
        kind="commitment",
        source=SourceInput(kind="user_message", ref="msg_0008"),
        expires_at=datetime(2099, 4, 1, tzinfo=UTC),
    )
    document = copy.deepcopy(DOCUMENT)
    assert post(api, snapshot_body(document=document, subject=SUBJECT)).status_code == 422
    with time_machine.travel(datetime(2099, 4, 2, tzinfo=UTC)):
        assert post(api, snapshot_body(document=document)).status_code == 201


def test_a_run_without_a_subject_has_no_commitments_to_carry(
    api: APIClient, subject_with_commitment: Subject
) -> None:
    document = copy.deepcopy(DOCUMENT)
    document["commitments"] = []
    assert post(api, snapshot_body(document=document)).status_code == 201


def test_a_run_cannot_change_subject(api: APIClient, subject_with_commitment: Subject) -> None:
    create_subject(ref="acct_other", actor=Actor.system("test"), reason="Another subject.")
    assert post(api, snapshot_body(subject=SUBJECT)).status_code == 201
    response = post(api, snapshot_body(subject="acct_other"))
    assert (response.status_code, response.json()["code"]) == (409, "subject_mismatch")
    assert Snapshot.objects.count() == 1


def test_an_artifact_without_a_key_is_rejected(api: APIClient) -> None:
    document = copy.deepcopy(DOCUMENT)
    document["artifacts"].append({"gist": "the spreadsheet we talked about"})
    response = post(api, snapshot_body(document=document))
    assert response.status_code == 422
    assert response.json()["problems"][0]["items"] == ["the spreadsheet we talked about"]


def test_an_explicit_generation_is_used_and_the_next_follows_it(api: APIClient) -> None:
    assert post(api, snapshot_body(generation=5)).json()["generation"] == 5
    assert post(api, snapshot_body()).json()["generation"] == 6


def test_a_generation_that_exists_is_refused_with_409(api: APIClient) -> None:
    post(api, snapshot_body())
    response = post(api, snapshot_body(generation=1, tokens_after=1))
    assert response.status_code == 409
    assert response.json()["code"] == "generation_exists"
    assert Snapshot.objects.get().tokens_after == 9_500


def test_another_agents_run_is_not_found(api: APIClient, api_agent: Any) -> None:
    other, _ = api_agent
    assert post(other, snapshot_body()).status_code == 201
    response = post(api, snapshot_body())
    assert (response.status_code, response.json()["code"]) == (404, "not_found")
    assert Snapshot.objects.count() == 1


def test_another_agents_snapshots_cannot_be_read(api: APIClient, api_agent: Any) -> None:
    other, _ = api_agent
    assert post(other, snapshot_body()).status_code == 201
    assert other.get(URL).status_code == 200
    assert api.get(URL).status_code == 404
    assert api.get(f"{URL}/latest").status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (snapshot_body(document=...), "document"),
        (snapshot_body(document=["not", "an", "object"]), "document"),
        (snapshot_body(document="a prose summary"), "document"),
        (snapshot_body(tokens_before=...), "tokens_before"),
        (snapshot_body(tokens_after=-1), "tokens_after"),
        (snapshot_body(tokens_after="9500"), "tokens_after"),
        (snapshot_body(generation=0), "generation"),
        (snapshot_body(generation=True), "generation"),
        (snapshot_body(pinned="one fact"), "pinned"),
        (snapshot_body(pinned=[12]), "pinned"),
        (snapshot_body(budget={"summary": -5}), "budget"),
        (snapshot_body(budget={"jokes": 5}), "budget"),
        (snapshot_body(budget={}), "budget"),
        (snapshot_body(narrative=None), "narrative"),
        (snapshot_body(subject="not a ref!"), "subject"),
        (snapshot_body(state="done"), "state"),
    ],
)
def test_a_malformed_request_is_a_400_naming_the_field_and_stores_nothing(
    api: APIClient, body: dict[str, Any], field: str
) -> None:
    response = post(api, body)
    assert response.status_code == 400
    assert field in response.json()
    assert not Snapshot.objects.exists()
    assert not Run.objects.exists()


def test_a_body_that_is_not_an_object_is_a_400(api: APIClient) -> None:
    response = post(api, [snapshot_body()])
    assert response.status_code == 400
    assert not Snapshot.objects.exists()


def test_malformed_json_is_a_400(api: APIClient) -> None:
    response = api.post(URL, '{"document": {', content_type="application/json")
    assert response.status_code == 400
    assert response.json()["code"] == "parse_error"


def test_a_nul_character_in_the_document_is_a_400_not_a_crash(api: APIClient) -> None:
    document = copy.deepcopy(DOCUMENT)
    document["task"]["text"] = "before\x00after"
    response = post(api, snapshot_body(document=document))
    assert response.status_code == 400
    assert "NUL" in response.json()["document"][0]


def test_an_oversized_document_is_a_400(api: APIClient) -> None:
    document = copy.deepcopy(DOCUMENT)
    document["queries_run"] = ["q" * 1000] * 300
    response = post(api, snapshot_body(document=document))
    assert response.status_code == 400
    assert "at most 262144" in response.json()["document"][0]


def test_an_unknown_subject_is_a_400(api: APIClient) -> None:
    response = post(api, snapshot_body(subject="acct_nobody"))
    assert (response.status_code, response.json()["code"]) == (400, "unknown_subject")
    assert not Run.objects.exists()


def test_an_invalid_run_reference_is_a_400(api: APIClient) -> None:
    response = post(api, snapshot_body(), url=f"/api/v1/runs/{'r' * 101}/snapshots")
    assert (response.status_code, response.json()["code"]) == (400, "invalid_ref")


def test_writing_needs_the_write_scope_and_reading_the_read_scope(
    reader: APIClient, writer: APIClient
) -> None:
    assert post(reader, snapshot_body()).status_code == 403
    assert post(writer, snapshot_body()).status_code == 201
    assert writer.get(URL).status_code == 403
    # A read key of another agent passes the scope check, and finds no run of its own.
    assert reader.get(URL).status_code == 404
    assert APIClient().get(URL).status_code in (401, 403)


def test_the_list_shows_every_generation_with_status_and_tokens(api: APIClient) -> None:
    post(api, snapshot_body())
    post(api, snapshot_body(document=without_last_open_item(), tokens_after=7_000))
    response = api.get(URL)
    assert response.status_code == 200
    rows = response.json()["results"]
    assert [
        (r["generation"], r["status"], r["tokens_before"], r["tokens_after"]) for r in rows
    ] == [
        (1, "accepted", 48_000, 9_500),
        (2, "rejected", 48_000, 7_000),
    ]
    assert rows[1]["problems"][0]["check"] == "partition"
    assert "document" not in rows[0]


def test_the_list_of_an_unknown_run_is_404(reader: APIClient) -> None:
    assert reader.get("/api/v1/runs/run_nope/snapshots").status_code == 404


def test_latest_is_the_latest_accepted_generation_with_its_document(api: APIClient) -> None:
    post(api, snapshot_body())
    post(api, snapshot_body(tokens_after=8_000))
    post(api, snapshot_body(document=without_last_open_item()))
    response = api.get(f"{URL}/latest")
    assert response.status_code == 200
    data = response.json()
    assert (data["generation"], data["status"], data["tokens_after"]) == (2, "accepted", 8_000)
    assert data["document"] == DOCUMENT
    assert data["pinned"] == ["The user's name is Dana."]


def test_latest_without_an_accepted_generation_is_404(api: APIClient) -> None:
    post(api, snapshot_body(document=without_last_open_item()))
    response = api.get(f"{URL}/latest")
    assert (response.status_code, response.json()["code"]) == (404, "no_accepted_snapshot")


def test_the_state_document_schema_is_public_and_describes_a_valid_document(db: None) -> None:
    response = APIClient().get("/api/v1/schemas/state-document")
    assert response.status_code == 200
    schema = response.json()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].endswith("/api/v1/schemas/state-document")
    Draft202012Validator.check_schema(schema)
    assert Draft202012Validator(schema).is_valid(DOCUMENT)
    assert schema["properties"]["findings"]["items"]["properties"]["status"]["enum"] == [
        "resolved",
        "not_found",
        "partial",
    ]


def test_a_retried_rejection_with_the_same_key_is_replayed_not_stored_again(
    api: APIClient,
) -> None:
    body = snapshot_body(document=without_last_open_item())
    first = post(api, body, HTTP_IDEMPOTENCY_KEY="compaction-7")
    second = post(api, body, HTTP_IDEMPOTENCY_KEY="compaction-7")
    assert first.status_code == second.status_code == 422
    assert second.json() == first.json()
    assert second.headers["Idempotent-Replayed"] == "true"
    assert Snapshot.objects.count() == 1


def test_the_endpoints_are_in_the_openapi_schema(api: APIClient) -> None:
    paths = json.loads(APIClient().get("/api/schema/?format=json").content)["paths"]
    assert {"post", "get"} <= set(paths["/api/v1/runs/{ref}/snapshots"])
    assert "get" in paths["/api/v1/runs/{ref}/snapshots/latest"]
    assert "get" in paths["/api/v1/schemas/state-document"]


def post_at_once(bodies: list[dict[str, Any]]) -> list[int]:
    """Post every body from its own thread and database connection, all released together."""
    client, _ = agent_client("harness", ["read", "write"])
    key = client._credentials["HTTP_AUTHORIZATION"]
    barrier = threading.Barrier(len(bodies))
    statuses: list[int] = []
    failures: list[BaseException] = []

    def send(body: dict[str, Any]) -> None:
        try:
            mine = APIClient()
            mine.credentials(HTTP_AUTHORIZATION=key)
            barrier.wait(timeout=30)
            statuses.append(post(mine, body).status_code)
        except BaseException as error:  # reported by the main thread, which can fail the test
            failures.append(error)
        finally:
            connection.close()

    workers = [threading.Thread(target=send, args=(body,)) for body in bodies]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert failures == []
    return statuses


@pytest.mark.django_db(transaction=True)
def test_concurrent_posts_each_take_their_own_generation() -> None:
    statuses = post_at_once([snapshot_body(tokens_after=1_000 + n) for n in range(8)])
    assert statuses == [201] * 8
    generations = sorted(Snapshot.objects.values_list("generation", flat=True))
    assert generations == list(range(1, 9))
    assert Run.objects.filter(ref=RUN).count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_posts_of_one_explicit_generation_store_it_once() -> None:
    statuses = post_at_once([snapshot_body(generation=4) for _ in range(4)])
    assert sorted(statuses) == [201, 409, 409, 409]
    assert list(Snapshot.objects.values_list("generation", flat=True)) == [4]


def test_a_document_nested_past_any_state_document_is_a_400(api: APIClient) -> None:
    deep: dict[str, Any] = {}
    for _ in range(600):
        deep = {"x": deep}
    response = post(api, snapshot_body(document=deep))
    assert response.status_code == 400
    assert "Nested deeper" in str(response.json()["document"])
    assert not Snapshot.objects.exists()


@pytest.mark.parametrize("path", ["/api/v1/schemas/state-document", "/api/v1/schemas/export"])
def test_a_published_schema_names_its_own_address_whatever_it_was_fetched_with(
    db: None, path: str
) -> None:
    schema = APIClient().get(path, {"x": "1"}).json()
    assert schema["$id"] == f"http://testserver{path}"
