"""The write gate, through the HTTP API: every rule, and what was or was not written."""

from __future__ import annotations

from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from ledger.actions.policy import change_policy
from ledger.actions.subjects import set_memory_paused
from ledger.actors import Actor
from ledger.models import Conflict, Memory, Policy, Source, Subject, WriteDecision
from tests.conftest import SUBJECT, body

pytestmark = pytest.mark.django_db
URL = "/api/v1/memories"


def post(api: APIClient, data: dict, **headers: str):
    return api.post(URL, data, format="json", headers=headers)


def test_stated_write_is_accepted_with_its_source(api: APIClient) -> None:
    response = post(api, body())
    assert response.status_code == 201, response.json()
    memory = Memory.objects.get()
    assert memory.status == "active"
    assert memory.statement == "Prefers email over telephone for billing questions."
    assert memory.sources.get().ref == "msg_0192"
    assert memory.sources.get().turn == 4
    assert memory.run.ref == "run_77"
    assert response.json()["decision"]["outcome"] == "accepted"
    assert response.headers["ETag"] == '"1"'


def test_missing_source_is_refused_and_nothing_written(api: APIClient) -> None:
    response = post(api, body(source=...))
    assert response.status_code == 400
    assert "source" in response.json()
    assert not Memory.objects.exists() and not Subject.objects.exists()


@pytest.mark.parametrize("missing", ["kind", "ref"])
def test_source_without_kind_or_ref_is_refused(api: APIClient, missing: str) -> None:
    source = dict(body()["source"])
    del source[missing]
    response = post(api, body(source=source))
    assert response.status_code == 400
    assert missing in response.json()["source"]
    assert not Memory.objects.exists()


@pytest.mark.parametrize(
    "statement",
    [
        "",
        "   ",
        "x" * 201,
        "line one\nline two",
        "nul\x00byte",
        "bell\x07",
        "rtl\u202eoverride",
        "zero\u200bwidth",
        "hidden \U000e0049\U000e0067\U000e006e\U000e006f\U000e0072\U000e0065 tags",
    ],
)
def test_bad_statement_is_refused_naming_the_field(api: APIClient, statement: str) -> None:
    response = post(api, body(statement=statement))
    assert response.status_code == 400
    assert list(response.json()) == ["statement"]
    assert not Memory.objects.exists()


def test_statement_of_exactly_200_characters_is_accepted(api: APIClient) -> None:
    assert post(api, body(statement="y" * 200)).status_code == 201


@pytest.mark.parametrize(("field", "value"), [("kind", "opinion"), ("basis", "rumour")])
def test_unknown_kind_or_basis_is_refused_naming_the_field(
    api: APIClient, field: str, value: str
) -> None:
    response = post(api, body(**{field: value}))
    assert response.status_code == 400
    assert field in response.json()
    assert not Memory.objects.exists()


@pytest.mark.parametrize(
    "expires_at",
    ["next tuesday", "2020-01-01T00:00:00Z", "2099-13-01T00:00:00Z", "2099-01-01T00:00:00"],
)
def test_unparseable_past_or_offsetless_dates_are_refused(api: APIClient, expires_at: str) -> None:
    response = post(api, body(expires_at=expires_at))
    assert response.status_code == 400
    assert "expires_at" in response.json()
    assert not Memory.objects.exists()


def test_omitted_expiry_takes_the_policy_default_for_the_kind(api: APIClient) -> None:
    policy = Policy.current()
    response = post(api, body(expires_at=..., kind="episode"))
    assert response.status_code == 201
    memory = Memory.objects.get()
    expected = memory.written_at + timedelta(days=policy.ttl_episode_days)
    assert abs((memory.expires_at - expected).total_seconds()) < 1


def test_null_expiry_needs_permanent(api: APIClient) -> None:
    response = post(api, body(expires_at=None))
    assert response.status_code == 400
    assert "expires_at" in response.json()
    assert not Memory.objects.exists()


def test_permanent_stated_memory_never_expires(api: APIClient) -> None:
    response = post(api, body(expires_at=None, permanent=True))
    assert response.status_code == 201
    assert Memory.objects.get().expires_at is None
    assert response.json()["memory"]["expires_at"] is None


def test_permanent_inferred_memory_is_refused(api: APIClient) -> None:
    response = post(api, body(expires_at=..., permanent=True, basis="inferred"))
    assert response.status_code == 400
    assert "permanent" in response.json()
    assert not Memory.objects.exists()


def test_inferred_expiry_is_capped_and_the_response_says_so(api: APIClient) -> None:
    policy = Policy.current()
    response = post(api, body(basis="inferred", expires_at="2099-01-01T00:00:00Z"))
    assert response.status_code == 201
    memory = Memory.objects.get()
    longest = memory.written_at + timedelta(days=policy.inferred_max_days)
    assert abs((memory.expires_at - longest).total_seconds()) < 1
    assert response.json()["expires_at_capped"] is True
    assert "capped" in response.json()["decision"]["reason"]


def test_inferred_default_expiry_is_within_the_cap(api: APIClient) -> None:
    policy = Policy.current()
    post(api, body(basis="inferred", expires_at=...))
    memory = Memory.objects.get()
    assert memory.expires_at <= memory.written_at + timedelta(days=policy.inferred_max_days)


def test_system_of_record_key_is_refused(api: APIClient) -> None:
    response = post(api, body(key="billing.address", statement="Lives at 4 Elm Street."))
    assert response.status_code == 422
    assert response.json()["code"] == "system_of_record"
    assert not Memory.objects.exists()
    decision = WriteDecision.objects.get()
    assert decision.outcome == "refused" and decision.code == "system_of_record"


def test_system_of_record_list_is_the_admins_to_change(api: APIClient) -> None:
    change_policy(
        actor=Actor.system("test"), reason="test", system_of_record_keys=["contact.channel"]
    )
    assert post(api, body()).json()["code"] == "system_of_record"


def test_paused_subject_refuses_writes(api: APIClient, make_person) -> None:
    make_person("dana", subject=SUBJECT)
    set_memory_paused(
        subject=Subject.objects.get(ref=SUBJECT), actor=Actor.system("test"), paused=True
    )
    response = post(api, body())
    assert response.status_code == 423
    assert response.json()["code"] == "memory_paused"
    assert not Memory.objects.exists()


def test_subject_at_its_cap_refuses_new_memories(api: APIClient) -> None:
    change_policy(actor=Actor.system("test"), reason="test", subject_active_cap=2)
    for n in range(2):
        assert post(api, body(statement=f"Fact number {n}.", key=f"k.{n}")).status_code == 201
    response = post(api, body(statement="One too many.", key="k.3"))
    assert response.status_code == 409
    assert response.json()["code"] == "subject_cap_reached"
    assert Memory.objects.count() == 2


def test_inferred_single_source_is_pending(api: APIClient) -> None:
    response = post(api, body(basis="inferred", expires_at=...))
    assert response.status_code == 201
    assert response.json()["decision"]["outcome"] == "pending"
    assert Memory.objects.get().status == "pending"


def test_a_second_agent_activates_a_pending_guess(api: APIClient, api_agent) -> None:
    other, _ = api_agent
    post(api, body(basis="inferred", expires_at=...))
    theirs = dict(body()["source"], ref="msg_0555", run="run_of_the_other_agent")
    response = post(other, body(basis="inferred", expires_at=..., source=theirs))
    assert response.status_code == 200
    memory = Memory.objects.get()
    assert memory.status == "active"
    assert memory.sources.count() == 2
    assert "Corroborated by 2 agents" in response.json()["decision"]["reason"]


def test_same_source_twice_does_not_corroborate(api: APIClient) -> None:
    post(api, body(basis="inferred", expires_at=...))
    post(
        api,
        body(
            basis="inferred",
            expires_at=...,
            statement="prefers EMAIL over  telephone for billing questions.",
        ),
    )
    memory = Memory.objects.get()
    assert memory.status == "pending"
    assert memory.sources.count() == 2


def test_duplicate_statement_adds_evidence_instead_of_a_row(api: APIClient) -> None:
    first = post(api, body()).json()["memory"]
    again = body(statement="  PREFERS email over telephone   for billing questions. ")
    again["source"] = dict(again["source"], ref="msg_0300")
    response = post(api, again)
    assert response.status_code == 200
    assert response.json()["memory"]["id"] == first["id"]
    assert response.json()["decision"]["outcome"] == "merged"
    assert Memory.objects.count() == 1
    assert sorted(Source.objects.values_list("ref", flat=True)) == ["msg_0192", "msg_0300"]


def test_same_key_different_statement_opens_a_conflict(api: APIClient) -> None:
    post(api, body())
    response = post(api, body(statement="Prefers telephone for everything."))
    assert response.status_code == 201
    data = response.json()
    assert data["decision"]["outcome"] == "conflict"
    assert {s["statement"] for s in data["conflict"]["statements"]} == {
        "Prefers email over telephone for billing questions.",
        "Prefers telephone for everything.",
    }
    assert list(Memory.objects.values_list("status", flat=True)) == ["active", "active"]
    conflict = Conflict.objects.get()
    assert conflict.status == "open" and conflict.memories.count() == 2


def test_third_contender_joins_the_open_conflict(api: APIClient) -> None:
    post(api, body())
    post(api, body(statement="Prefers telephone for everything."))
    post(api, body(statement="Prefers letters by post."))
    assert Conflict.objects.count() == 1
    assert Conflict.objects.get().memories.count() == 3


def test_every_decision_is_recorded_with_its_reason(api: APIClient) -> None:
    post(api, body())
    post(api, body(statement="prefers email over telephone for billing questions."))
    post(api, body(statement="Prefers telephone."))
    post(api, body(statement="A guess.", key="other", basis="inferred", expires_at=...))
    post(api, body(key="contact.email", statement="dana@example.com"))
    outcomes = list(WriteDecision.objects.order_by("id").values_list("outcome", flat=True))
    assert outcomes == ["accepted", "merged", "conflict", "pending", "refused"]
    assert all(WriteDecision.objects.values_list("reason", flat=True))


def test_idempotent_retry_returns_the_first_response_and_writes_nothing(api: APIClient) -> None:
    first = post(api, body(), **{"Idempotency-Key": "abc-1"})
    retry = post(api, body(), **{"Idempotency-Key": "abc-1"})
    assert retry.status_code == first.status_code == 201
    assert retry.json() == first.json()
    assert retry.headers["Idempotent-Replayed"] == "true"
    assert Memory.objects.count() == 1
    assert Source.objects.count() == 1
    assert WriteDecision.objects.count() == 1


def test_idempotency_key_reused_with_another_body_is_refused(api: APIClient) -> None:
    post(api, body(), **{"Idempotency-Key": "abc-2"})
    response = post(api, body(statement="Something else."), **{"Idempotency-Key": "abc-2"})
    assert response.status_code == 422
    assert response.json()["code"] == "idempotency_key_reused"
    assert Memory.objects.count() == 1


def test_idempotency_keys_are_scoped_to_the_agent(api: APIClient, api_agent) -> None:
    other, _ = api_agent
    post(api, body(), **{"Idempotency-Key": "shared"})
    theirs = body(statement="Another agent's memory.", key="x")
    theirs["source"] = dict(theirs["source"], run="run_of_the_other_agent")
    response = post(other, theirs, **{"Idempotency-Key": "shared"})
    assert response.status_code == 201
    assert Memory.objects.count() == 2


def test_a_write_filed_under_another_agents_run_is_refused(api: APIClient, api_agent) -> None:
    other, _ = api_agent
    post(api, body())
    response = post(other, body(statement="Filed under someone else's run.", key="x"))
    assert response.status_code == 409
    assert response.json()["code"] == "run_of_another_agent"
    assert Memory.objects.count() == 1


def test_a_refusal_whose_cause_can_go_away_is_decided_again_on_retry(api: APIClient) -> None:
    refused = body(key="contact.email", statement="dana@example.com")
    first = post(api, refused, **{"Idempotency-Key": "r-1"})
    retry = post(api, refused, **{"Idempotency-Key": "r-1"})
    assert first.status_code == retry.status_code == 422
    assert "Idempotent-Replayed" not in retry.headers
    assert WriteDecision.objects.filter(outcome="refused").count() == 2
