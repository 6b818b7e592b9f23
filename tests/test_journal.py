"""The action journal through the API: intents first, one-way outcomes, and resuming safely."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.db import connection
from rest_framework.test import APIClient

from ledger.actions.agents import create_agent
from ledger.actors import Actor
from ledger.models import JournalEntry, Run
from tests.conftest import agent_client, with_overrides

pytestmark = pytest.mark.django_db
RUN = "run_refund_7"
INTENT_URL = f"/api/v1/runs/{RUN}/journal"
START = datetime(2030, 6, 1, 9, 0, tzinfo=UTC)
INTENT = {
    "idempotency_key": "refund-order-5521",
    "action": "payments.refund",
    "intent": {"order": 5521, "amount": "-40.00", "currency": "EUR"},
}
VERIFIED = {"refund": "rf_88", "status": "settled"}


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def intent(**overrides: Any) -> dict[str, Any]:
    return with_overrides(INTENT, **overrides)


def journal(api: APIClient, data: dict[str, Any] | None = None, url: str = INTENT_URL) -> Any:
    return api.post(url, data if data is not None else intent(), format="json")


def patch(api: APIClient, data: dict[str, Any], key: str = "refund-order-5521") -> Any:
    return api.patch(f"/api/v1/journal/{key}", data, format="json")


def outcome(state: str) -> dict[str, Any]:
    data: dict[str, Any] = {"state": state, "effect": {"http": 202}}
    if state == "done":
        data["verification"] = VERIFIED
    return data


def test_intent_is_journaled_before_acting(api: APIClient) -> None:
    response = journal(api)
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["existing"] is False
    assert body["entry"]["state"] == "intended"
    assert body["entry"]["intent"] == INTENT["intent"]
    assert body["entry"]["allowed_moves"] == ["done", "not_done", "unknown"]
    entry = JournalEntry.objects.get()
    assert entry.run.ref == RUN and entry.action == "payments.refund"


def test_same_key_again_returns_the_existing_entry_and_warns(api: APIClient) -> None:
    journal(api)
    again = journal(api)
    assert again.status_code == 200
    body = again.json()
    assert body["existing"] is True and body["attempt_may_exist"] is True
    assert body["entry"]["state"] == "intended"
    assert "Read the external system before acting" in body["detail"]
    assert JournalEntry.objects.count() == 1


def test_same_key_after_done_says_not_to_act_again(api: APIClient) -> None:
    journal(api)
    patch(api, outcome("done"))
    body = journal(api).json()
    assert body["entry"]["state"] == "done"
    assert "Do not act again" in body["detail"]


def test_same_key_with_a_different_intent_still_returns_the_first(api: APIClient) -> None:
    journal(api)
    body = journal(api, intent(intent={"order": 9999})).json()
    assert body["existing"] is True
    assert body["entry"]["intent"] == INTENT["intent"]
    assert JournalEntry.objects.count() == 1


def test_keys_belong_to_one_agent(api: APIClient) -> None:
    journal(api)
    other, _ = agent_client("other-agent", ["read", "write"])
    response = journal(other, url="/api/v1/runs/run_other/journal")
    assert response.status_code == 201
    assert JournalEntry.objects.count() == 2


def test_another_agents_run_is_404(api: APIClient) -> None:
    journal(api)
    other, _ = agent_client("other-agent", ["read", "write"])
    assert journal(other, intent(idempotency_key="k2")).status_code == 404
    assert JournalEntry.objects.count() == 1


def test_journaling_needs_the_write_scope(reader: APIClient) -> None:
    assert journal(reader).status_code == 403
    assert not JournalEntry.objects.exists() and not Run.objects.exists()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("idempotency_key", ...),
        ("idempotency_key", ""),
        ("idempotency_key", "has spaces"),
        ("idempotency_key", "k" * 201),
        ("action", ...),
        ("action", "a" * 201),
        ("intent", ...),
        ("intent", ["not", "an", "object"]),
        ("intent", "a string"),
        ("intent", {"text": "nul\x00inside"}),
        ("intent", {"blob": "x" * (64 * 1024)}),
        ("intent", {"a": nested(25)}),
        ("extra", 1),
    ],
)
def test_bad_intent_is_refused_naming_the_field_and_nothing_written(
    api: APIClient, field: str, value: Any
) -> None:
    response = journal(api, intent(**{field: value}))
    assert response.status_code == 400
    assert field in response.json()
    assert not JournalEntry.objects.exists() and not Run.objects.exists()


def test_bad_run_reference_is_refused(api: APIClient) -> None:
    response = journal(api, url="/api/v1/runs/bad%20ref/journal")
    assert response.status_code == 400 and "run" in response.json()
    assert not JournalEntry.objects.exists()


ALLOWED = [
    ("intended", "done"),
    ("intended", "not_done"),
    ("intended", "unknown"),
    ("unknown", "done"),
    ("unknown", "not_done"),
]
REFUSED = [
    ("unknown", "unknown"),
    ("done", "done"),
    ("done", "not_done"),
    ("done", "unknown"),
    ("not_done", "done"),
    ("not_done", "not_done"),
    ("not_done", "unknown"),
]


def bring_to(api: APIClient, state: str) -> None:
    journal(api)
    if state != "intended":
        assert patch(api, outcome(state)).status_code == 200


@pytest.mark.parametrize(("start", "target"), ALLOWED)
def test_allowed_move_is_recorded_in_history(api: APIClient, start: str, target: str) -> None:
    bring_to(api, start)
    response = patch(api, outcome(target))
    assert response.status_code == 200, response.json()
    assert response.json()["state"] == target
    entry = JournalEntry.objects.get()
    assert entry.state == target
    latest = entry.history.latest("history_date")
    assert latest.history_change_reason == f"Outcome recorded: {start} → {target}."
    assert latest.history_actor == "agent:test-agent"


@pytest.mark.parametrize(("start", "target"), REFUSED)
def test_refused_move_says_which_moves_are_allowed(api: APIClient, start: str, target: str) -> None:
    bring_to(api, start)
    before = JournalEntry.objects.get()
    response = patch(api, outcome(target))
    assert response.status_code == 409
    body = response.json()
    assert body["code"] == "journal_move_refused"
    if start == "unknown":
        assert "from unknown it may move to done or not_done" in body["detail"]
    else:
        assert f"{start} is final" in body["detail"]
    after = JournalEntry.objects.get()
    assert (after.state, after.effect, after.updated_at) == (
        before.state,
        before.effect,
        before.updated_at,
    )


@pytest.mark.parametrize("start", ["intended", "unknown", "done", "not_done"])
def test_moving_back_to_intended_is_refused(api: APIClient, start: str) -> None:
    bring_to(api, start)
    response = patch(api, {"state": "intended"})
    assert response.status_code == 400 and "state" in response.json()
    assert JournalEntry.objects.get().state == start


def test_done_needs_a_verification(api: APIClient) -> None:
    journal(api)
    response = patch(api, {"state": "done", "effect": {"http": 200}})
    assert response.status_code == 400 and "verification" in response.json()
    assert JournalEntry.objects.get().state == "intended"


def test_unknown_then_verified_keeps_the_first_effect(api: APIClient) -> None:
    journal(api)
    patch(api, {"state": "unknown", "effect": {"error": "timeout after 30 s"}})
    response = patch(api, {"state": "done", "verification": VERIFIED})
    body = response.json()
    assert body["effect"] == {"error": "timeout after 30 s"}
    assert body["verification"] == VERIFIED
    assert body["allowed_moves"] == []


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"state": "finished"},
        {"state": "unknown", "effect": {"x": "y" * (64 * 1024)}},
        {"state": "unknown", "effect": "nul\x00"},
        {"state": "unknown", "colour": "blue"},
    ],
)
def test_bad_outcome_is_refused_and_nothing_changes(api: APIClient, data: dict[str, Any]) -> None:
    journal(api)
    response = patch(api, data)
    assert response.status_code == 400
    assert JournalEntry.objects.get().state == "intended"


def test_another_agents_key_is_404(api: APIClient) -> None:
    journal(api)
    other, _ = agent_client("other-agent", ["read", "write"])
    assert patch(other, outcome("done")).status_code == 404
    assert other.get("/api/v1/journal/refund-order-5521").status_code == 404
    assert JournalEntry.objects.get().state == "intended"


def test_unknown_key_is_404(api: APIClient) -> None:
    assert patch(api, outcome("done"), key="never-journaled").status_code == 404


def test_unknowns_are_listed_for_resolution(api: APIClient) -> None:
    journal(api)
    journal(api, intent(idempotency_key="send-mail-1", action="mail.send"))
    patch(api, {"state": "unknown"}, key="send-mail-1")
    listed = api.get("/api/v1/journal", {"state": "unknown"}).json()["results"]
    assert [e["idempotency_key"] for e in listed] == ["send-mail-1"]
    assert listed[0]["needs_resolution"] is True


def test_intents_that_never_reported_back_need_resolution_after_the_set_time(
    api: APIClient, settings: Any
) -> None:
    settings.MEMORYADMIN_JOURNAL_INTENDED_STALE_MINUTES = 30
    with time_machine.travel(START, tick=False):
        journal(api)
    other, _ = agent_client("other-agent", ["read", "write"])
    with time_machine.travel(START + timedelta(minutes=29), tick=False):
        assert api.get("/api/v1/journal", {"needs_resolution": 1}).json()["results"] == []
    with time_machine.travel(START + timedelta(minutes=31), tick=False):
        journal(api, intent(idempotency_key="fresh-intent"))
        listed = api.get("/api/v1/journal", {"needs_resolution": 1}).json()["results"]
        assert [e["idempotency_key"] for e in listed] == ["refund-order-5521"]
        assert other.get("/api/v1/journal", {"needs_resolution": 1}).json()["results"] == []


@pytest.mark.parametrize("params", [{"state": "lost"}, {"needs_resolution": "maybe"}])
def test_bad_journal_filters_are_refused(api: APIClient, params: dict[str, str]) -> None:
    response = api.get("/api/v1/journal", params)
    assert response.status_code == 400 and set(response.json()) == set(params)


def client_for(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def test_resume_after_a_crash_learns_of_the_attempt_and_acts_once(db: None) -> None:
    """The agent journals, "dies" before recording the effect, and a new process resumes."""
    _, key = create_agent(name="refund-bot", scopes=["read", "write"], actor=Actor.system("test"))
    first_process = client_for(key)
    assert journal(first_process).status_code == 201
    # The refund request goes out; the process dies before it records anything.
    del first_process

    resumed = client_for(key)
    answer = journal(resumed)
    assert answer.status_code == 200
    assert answer.json()["attempt_may_exist"] is True
    assert answer.json()["entry"]["state"] == "intended"
    # It reads the payment system instead of refunding again, and records what it found.
    recorded = patch(resumed, {"state": "done", "verification": VERIFIED})
    assert recorded.status_code == 200 and recorded.json()["state"] == "done"

    entry = JournalEntry.objects.get()
    assert entry.idempotency_key == "refund-order-5521"
    assert entry.verification == VERIFIED
    assert JournalEntry.objects.count() == 1
    assert resumed.get("/api/v1/journal", {"needs_resolution": 1}).json()["results"] == []


# Real transactions, so that the row lock is what keeps the second outcome out.
@pytest.mark.django_db(transaction=True)
def test_concurrent_outcomes_cannot_both_move_the_entry() -> None:
    _, key = create_agent(name="racer", scopes=["read", "write"], actor=Actor.system("test"))
    assert journal(client_for(key)).status_code == 201
    codes: list[int] = []
    barrier = threading.Barrier(2)

    def report(state: str) -> None:
        barrier.wait()
        try:
            codes.append(patch(client_for(key), outcome(state)).status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=report, args=(s,)) for s in ("done", "not_done")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(codes) == [200, 409]
    assert JournalEntry.objects.get().history.count() == 2


def test_journal_endpoints_are_in_the_openapi_schema(api: APIClient) -> None:
    text = api.get("/api/schema/", HTTP_ACCEPT="application/json").content.decode()
    for path in ("/api/v1/runs/{ref}/journal", "/api/v1/journal/{key}", "/api/v1/journal"):
        assert path in text


def test_json_nested_past_the_parsers_limit_is_bad_input(api: APIClient) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    raw = f'{{"idempotency_key": "k", "action": "a", "intent": {{"a": {deep}}}}}'
    response = api.generic("POST", INTENT_URL, raw, content_type="application/json")
    assert response.status_code == 400 and response.json()["code"] == "parse_error"
    assert not JournalEntry.objects.exists()
