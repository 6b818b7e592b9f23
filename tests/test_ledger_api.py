"""The ledger of facts and commitments, through the HTTP API: every rule, and what was written."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.utils import timezone
from rest_framework.test import APIClient

from ledger.models import LedgerEntry, Memory, Source
from tests.conftest import SUBJECT, agent_client, with_overrides

pytestmark = pytest.mark.django_db
URL = f"/api/v1/subjects/{SUBJECT}/ledger"
# The tests record at a fixed moment and travel past it, so they do not age with the clock.
START = datetime(2030, 11, 30, 12, 0, tzinfo=UTC)
DEADLINE = "2030-12-01T00:00:00Z"
AFTER = datetime(2030, 12, 2, tzinfo=UTC)
NEVER = "never e-mail the supplier Brandt & Söhne again; pay  -1,250.00 EUR\tby 2027-01-31"


@pytest.fixture(autouse=True)
def frozen_start() -> Any:
    with time_machine.travel(START, tick=False):
        yield


@pytest.fixture
def subject(remember: Callable[..., Memory]) -> None:
    """Subjects come into being with their first memory; the ledger needs one to exist."""
    remember("Prefers email over telephone.")


def entry(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "fact": "Invoice 1042 was paid in full on 2026-11-02.",
        "kind": "established",
        "source": {"kind": "tool_result", "ref": "billing:inv-1042", "excerpt": "status=paid"},
        "key": "invoice.1042.status",
        "run": "run_ledger_1",
    }
    return with_overrides(data, **overrides)


def post(api: APIClient, data: dict[str, Any], url: str = URL, **headers: str) -> Any:
    return api.post(url, data, format="json", headers=headers)


def record(api: APIClient, **overrides: Any) -> dict[str, Any]:
    response = post(api, entry(**overrides))
    assert response.status_code == 201, response.json()
    return response.json()["entry"]


def test_fact_is_kept_verbatim_with_numbers_and_negatives(api: APIClient, subject: None) -> None:
    created = record(api, fact=f"  {NEVER}\n", kind="commitment", key="")
    stored = LedgerEntry.objects.get()
    assert stored.fact == f"  {NEVER}\n"
    assert created["fact"] == f"  {NEVER}\n"
    assert created["source"]["ref"] == "billing:inv-1042"
    assert created["run"] == "run_ledger_1"
    assert created["in_force"] is True and created["agreed"] is True


def test_unknown_subject_is_404_and_nothing_written(api: APIClient) -> None:
    response = post(api, entry(), url="/api/v1/subjects/acct_nobody/ledger")
    assert response.status_code == 404
    assert not LedgerEntry.objects.exists() and not Source.objects.exists()
    assert api.get("/api/v1/subjects/acct_nobody/ledger").status_code == 404


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("fact", ""),
        ("fact", "   \n"),
        ("fact", "x" * 2001),
        ("fact", "nul\x00byte"),
        ("fact", "bell\x07"),
        ("fact", 12),
        ("kind", "rumour"),
        ("source", ...),
        ("source", {"kind": "user_message"}),
        ("key", "Not A Key"),
        ("expires_at", "2020-01-01T00:00:00Z"),
        ("immutable", "yes"),
        ("run", "no spaces allowed"),
        ("colour", "blue"),
    ],
)
def test_bad_input_is_refused_naming_the_field_and_nothing_written(
    api: APIClient, subject: None, field: str, value: Any
) -> None:
    response = post(api, entry(**{field: value}))
    assert response.status_code == 400
    assert field in response.json()
    assert not LedgerEntry.objects.exists()
    assert not Source.objects.filter(memory__isnull=True).exists()


def test_fact_of_2000_characters_is_accepted(api: APIClient, subject: None) -> None:
    assert record(api, fact="9" * 2000)["fact"] == "9" * 2000


def test_writing_needs_the_write_scope(reader: APIClient, subject: None) -> None:
    assert post(reader, entry()).status_code == 403
    assert not LedgerEntry.objects.exists()


@pytest.mark.parametrize("kind", ["user_message", "tool_result", "import"])
def test_established_with_a_named_source_is_accepted(
    api: APIClient, subject: None, kind: str
) -> None:
    created = record(api, source={"kind": kind, "ref": "ref-1"})
    assert created["kind"] == "established"
    assert created["label"].startswith("Established")


def test_established_on_an_operators_say_so_is_refused(api: APIClient, subject: None) -> None:
    response = post(api, entry(source={"kind": "operator", "ref": "ops-desk"}))
    assert response.status_code == 422
    assert response.json()["code"] == "established_needs_named_source"
    assert not LedgerEntry.objects.exists() and not Source.objects.filter(ref="ops-desk").exists()


def test_operator_source_is_fine_for_an_interpretation(api: APIClient, subject: None) -> None:
    created = record(api, kind="interpretation", source={"kind": "operator", "ref": "ops-desk"})
    assert created["label"] == "Interpretation: the agent's own inference, not verified."
    assert created["agreed"] is False


def test_interpretation_is_labelled_as_inference_when_listed(api: APIClient, subject: None) -> None:
    record(api, kind="interpretation", fact="Seems to prefer mornings.")
    listed = api.get(URL, {"active": 1}).json()["entries"]
    assert listed[0]["label"] == "Interpretation: the agent's own inference, not verified."


def test_proposal_is_never_agreed_until_promoted(api: APIClient, subject: None) -> None:
    proposal = record(api, kind="proposal", fact="Refund 40.00 EUR if the parcel is lost.")
    assert proposal["agreed"] is False
    assert "not agreed" in proposal["label"]
    commitments = api.get(URL, {"active": 1, "kind": "commitment"}).json()["entries"]
    assert commitments == []


def test_promotion_with_the_persons_message_makes_a_commitment_recorded_in_history(
    api: APIClient, subject: None
) -> None:
    proposal = record(api, kind="proposal", fact="Refund 40.00 EUR if the parcel is lost.")
    response = post(
        api,
        {"source": {"kind": "user_message", "ref": "msg_yes_please", "excerpt": "yes, do that"}},
        url=f"/api/v1/ledger/{proposal['id']}/promote",
    )
    assert response.status_code == 200, response.json()
    promoted = response.json()
    assert promoted["kind"] == "commitment" and promoted["agreed"] is True
    assert promoted["promotion_source"]["ref"] == "msg_yes_please"
    assert promoted["fact"] == "Refund 40.00 EUR if the parcel is lost."
    history = api.get(f"/api/v1/ledger/{proposal['id']}/history").json()
    assert [row["kind"] for row in history] == ["commitment", "proposal"]
    assert "msg_yes_please" in history[0]["reason"]
    assert history[0]["actor"] == "agent:test-agent"


@pytest.mark.parametrize("kind", ["tool_result", "operator", "import"])
def test_promotion_needs_the_persons_own_message(api: APIClient, subject: None, kind: str) -> None:
    proposal = record(api, kind="proposal", fact="Upgrade to the 12-month plan.")
    response = post(
        api,
        {"source": {"kind": kind, "ref": "x-1"}},
        url=f"/api/v1/ledger/{proposal['id']}/promote",
    )
    assert response.status_code == 422
    assert response.json()["code"] == "agreement_needs_person"
    assert LedgerEntry.objects.get().kind == "proposal"


@pytest.mark.parametrize("kind", ["established", "interpretation", "commitment"])
def test_only_a_proposal_can_be_promoted(api: APIClient, subject: None, kind: str) -> None:
    other = record(api, kind=kind)
    response = post(
        api,
        {"source": {"kind": "user_message", "ref": "msg_9"}},
        url=f"/api/v1/ledger/{other['id']}/promote",
    )
    assert response.status_code == 409
    assert response.json()["code"] == "not_a_proposal"
    assert LedgerEntry.objects.get().kind == kind


def test_promotion_without_a_source_is_refused(api: APIClient, subject: None) -> None:
    proposal = record(api, kind="proposal")
    response = post(api, {}, url=f"/api/v1/ledger/{proposal['id']}/promote")
    assert response.status_code == 400 and "source" in response.json()
    assert LedgerEntry.objects.get().kind == "proposal"


def test_a_proposal_cannot_become_a_commitment_by_supersession(
    api: APIClient, subject: None
) -> None:
    proposal = record(api, kind="proposal")
    response = post(
        api,
        entry(kind="commitment", reason="they agreed"),
        url=f"/api/v1/ledger/{proposal['id']}/supersede",
    )
    assert response.status_code == 409 and response.json()["code"] == "use_promote"
    assert LedgerEntry.objects.count() == 1


def test_immutable_entry_cannot_be_edited(api: APIClient, subject: None) -> None:
    fixed = record(api, kind="commitment", fact=NEVER, immutable=True)
    response = api.patch(
        f"/api/v1/ledger/{fixed['id']}", {"fact": "email them", "reason": "x"}, format="json"
    )
    assert response.status_code == 409
    assert response.json()["code"] == "ledger_entry_immutable"
    assert "supersede" in response.json()["detail"]
    put = api.put(f"/api/v1/ledger/{fixed['id']}", entry(), format="json")
    assert put.status_code == 405
    assert LedgerEntry.objects.get().fact == NEVER


def test_immutable_entry_cannot_be_withdrawn(api: APIClient, subject: None) -> None:
    fixed = record(api, kind="commitment", fact=NEVER, immutable=True)
    response = post(api, {"reason": "no longer"}, url=f"/api/v1/ledger/{fixed['id']}/withdraw")
    assert response.status_code == 409
    assert LedgerEntry.objects.get().status == "active"


def test_mutable_entry_can_be_edited_and_history_keeps_the_old_fact(
    api: APIClient, subject: None
) -> None:
    created = record(api, kind="interpretation", fact="Likes calls after 5 pm.")
    response = api.patch(
        f"/api/v1/ledger/{created['id']}",
        {"fact": "Likes calls after 6 pm.", "reason": "misheard"},
        format="json",
    )
    assert response.status_code == 200, response.json()
    assert response.json()["fact"] == "Likes calls after 6 pm."
    assert response.json()["version"] == 2
    history = api.get(f"/api/v1/ledger/{created['id']}/history").json()
    assert [row["fact"] for row in history] == [
        "Likes calls after 6 pm.",
        "Likes calls after 5 pm.",
    ]


@pytest.mark.parametrize(
    "data", [{"reason": "nothing to change"}, {"fact": "new"}, {"fact": "", "reason": "x"}]
)
def test_bad_edit_is_refused_and_nothing_changes(
    api: APIClient, subject: None, data: dict[str, Any]
) -> None:
    created = record(api, kind="interpretation", fact="Likes calls after 5 pm.")
    response = api.patch(f"/api/v1/ledger/{created['id']}", data, format="json")
    assert response.status_code == 400
    assert LedgerEntry.objects.get().fact == "Likes calls after 5 pm."


def test_supersede_creates_a_successor_and_the_old_entry_stays_readable(
    api: APIClient, subject: None
) -> None:
    old = record(
        api, kind="commitment", fact="Credit limit 5,000 EUR.", immutable=True, key="credit"
    )
    response = post(
        api,
        entry(
            kind="commitment",
            fact="Credit limit 7,500 EUR.",
            source={"kind": "user_message", "ref": "msg_raise"},
            reason="limit raised",
            key=...,
        ),
        url=f"/api/v1/ledger/{old['id']}/supersede",
    )
    assert response.status_code == 201, response.json()
    new = response.json()
    assert new["supersedes"] == old["id"]
    assert new["immutable"] is True and new["key"] == "credit"
    before = api.get(f"/api/v1/ledger/{old['id']}").json()
    assert before["fact"] == "Credit limit 5,000 EUR."
    assert before["status"] == "superseded" and before["in_force"] is False
    assert before["superseded_by"] == new["id"]
    in_force = api.get(URL, {"active": 1}).json()["entries"]
    assert [e["fact"] for e in in_force] == ["Credit limit 7,500 EUR."]


def test_a_superseded_entry_cannot_be_superseded_again(api: APIClient, subject: None) -> None:
    old = record(api, kind="commitment")
    url = f"/api/v1/ledger/{old['id']}/supersede"
    assert post(api, entry(kind="commitment", reason="one"), url=url).status_code == 201
    again = post(api, entry(kind="commitment", reason="two"), url=url)
    assert again.status_code == 409 and again.json()["code"] == "ledger_entry_superseded"
    assert LedgerEntry.objects.count() == 2


def test_supersede_needs_a_reason(api: APIClient, subject: None) -> None:
    old = record(api, kind="commitment")
    response = post(api, entry(kind="commitment"), url=f"/api/v1/ledger/{old['id']}/supersede")
    assert response.status_code == 400 and "reason" in response.json()
    assert LedgerEntry.objects.count() == 1


def test_withdrawn_entry_is_no_longer_in_force(api: APIClient, subject: None) -> None:
    created = record(api, kind="commitment", fact="Call back on Friday.")
    response = post(
        api, {"reason": "the person cancelled"}, url=f"/api/v1/ledger/{created['id']}/withdraw"
    )
    assert response.status_code == 200 and response.json()["status"] == "withdrawn"
    assert api.get(URL, {"active": 1}).json()["entries"] == []
    withdrawn = api.get(URL, {"status": "withdrawn"}).json()["entries"]
    assert [e["fact"] for e in withdrawn] == ["Call back on Friday."]
    again = post(api, {"reason": "twice"}, url=f"/api/v1/ledger/{created['id']}/withdraw")
    assert again.status_code == 409


def test_withdraw_needs_a_reason(api: APIClient, subject: None) -> None:
    created = record(api, kind="commitment")
    response = post(api, {}, url=f"/api/v1/ledger/{created['id']}/withdraw")
    assert response.status_code == 400 and "reason" in response.json()
    assert LedgerEntry.objects.get().status == "active"


@pytest.mark.parametrize("pk", ["not-a-uuid", "00000000-0000-0000-0000-000000000000"])
def test_unknown_entry_is_404(api: APIClient, pk: str) -> None:
    assert api.get(f"/api/v1/ledger/{pk}").status_code == 404
    assert post(api, {"reason": "x"}, url=f"/api/v1/ledger/{pk}/withdraw").status_code == 404


def test_stale_fact_is_never_in_force_and_is_returned_with_its_last_true_date(
    api: APIClient, subject: None
) -> None:
    record(api, fact="Trial ends 2030-12-01.", expires_at=DEADLINE)
    with time_machine.travel(AFTER):
        # The expiry sweep has not run: the row is still 'active' in the database.
        assert LedgerEntry.objects.get().status == "active"
        assert api.get(URL, {"active": 1}).json()["entries"] == []
        everything = api.get(URL).json()["entries"]
        assert everything[0]["status"] == "expired" and everything[0]["in_force"] is False
        stale = api.get(URL, {"stale": 1}).json()["entries"]
        assert [e["fact"] for e in stale] == ["Trial ends 2030-12-01."]
        assert stale[0]["last_true_at"] == DEADLINE


def test_stale_fact_cannot_be_promoted(api: APIClient, subject: None) -> None:
    proposal = record(api, kind="proposal", expires_at=DEADLINE)
    with time_machine.travel(AFTER):
        response = post(
            api,
            {"source": {"kind": "user_message", "ref": "msg_late"}},
            url=f"/api/v1/ledger/{proposal['id']}/promote",
        )
    assert response.status_code == 409 and response.json()["code"] == "ledger_entry_expired"


def test_fact_in_force_before_its_expiry(api: APIClient, subject: None) -> None:
    record(api, fact="Trial ends soon.", expires_at=DEADLINE)
    with time_machine.travel(datetime(2030, 11, 30, 23, 59, tzinfo=UTC)):
        assert len(api.get(URL, {"active": 1}).json()["entries"]) == 1


@pytest.mark.parametrize(
    "params",
    [{"kind": "rumour"}, {"status": "gone"}, {"active": "maybe"}, {"active": 1, "stale": 1}],
)
def test_bad_list_filters_are_refused_naming_the_parameter(
    api: APIClient, subject: None, params: dict[str, Any]
) -> None:
    response = api.get(URL, params)
    assert response.status_code == 400
    assert set(response.json()) & set(params)


def test_kind_filter_returns_only_that_kind(api: APIClient, subject: None) -> None:
    record(api, kind="proposal", fact="p")
    record(api, kind="commitment", fact="c")
    listed = api.get(URL, {"active": 1, "kind": "proposal"}).json()["entries"]
    assert [e["fact"] for e in listed] == ["p"]


def test_two_established_facts_that_disagree_on_a_key_are_a_conflict(
    api: APIClient, subject: None
) -> None:
    record(api, fact="Invoice 1042 was paid in full.")
    response = post(
        api, entry(fact="Invoice 1042 is unpaid.", source={"kind": "import", "ref": "erp"})
    )
    assert response.status_code == 201
    conflict = response.json()["conflict"]
    assert conflict["key"] == "invoice.1042.status"
    assert {e["fact"] for e in conflict["entries"]} == {
        "Invoice 1042 was paid in full.",
        "Invoice 1042 is unpaid.",
    }
    listed = api.get(URL, {"active": 1}).json()
    assert len(listed["conflicts"]) == 1
    # Nothing picks a winner: both stay in force until one is superseded or withdrawn.
    assert len(listed["entries"]) == 2


def test_the_same_fact_twice_is_no_conflict(api: APIClient, subject: None) -> None:
    record(api, fact="Invoice 1042 was paid in full.")
    response = post(api, entry(fact="invoice 1042  was PAID in full."))
    assert response.json()["conflict"] is None
    assert api.get(URL).json()["conflicts"] == []


def test_interpretations_that_disagree_are_no_conflict(api: APIClient, subject: None) -> None:
    record(api, kind="interpretation", fact="Paid.")
    record(api, kind="interpretation", fact="Unpaid.")
    assert api.get(URL).json()["conflicts"] == []


def test_conflict_ends_when_one_side_is_superseded(api: APIClient, subject: None) -> None:
    first = record(api, fact="Invoice 1042 was paid in full.")
    record(api, fact="Invoice 1042 is unpaid.")
    post(
        api,
        entry(fact="Invoice 1042 is unpaid.", reason="the payment bounced"),
        url=f"/api/v1/ledger/{first['id']}/supersede",
    )
    assert api.get(URL).json()["conflicts"] == []


def test_conflict_ends_when_one_side_expires(api: APIClient, subject: None) -> None:
    record(api, fact="Paid.", expires_at=DEADLINE)
    record(api, fact="Unpaid.")
    assert len(api.get(URL).json()["conflicts"]) == 1
    with time_machine.travel(AFTER):
        assert api.get(URL).json()["conflicts"] == []


def test_idempotency_key_replays_the_first_answer_and_writes_once(
    api: APIClient, subject: None
) -> None:
    first = post(api, entry(), **{"Idempotency-Key": "ledger-1"})
    second = post(api, entry(), **{"Idempotency-Key": "ledger-1"})
    assert first.status_code == second.status_code == 201
    assert first.json() == second.json()
    assert LedgerEntry.objects.count() == 1


def test_another_agent_reads_the_same_ledger(api: APIClient, subject: None) -> None:
    record(api, kind="commitment", fact=NEVER)
    other, _ = agent_client("other-agent", ["read"])
    assert [e["fact"] for e in other.get(URL).json()["entries"]] == [NEVER]


def test_ledger_endpoints_are_in_the_openapi_schema(api: APIClient) -> None:
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json")
    text = schema.content.decode()
    for path in ("/api/v1/subjects/{ref}/ledger", "/api/v1/ledger/{id}/promote"):
        assert path in text


def test_expires_at_in_the_past_cannot_be_set_by_edit(api: APIClient, subject: None) -> None:
    created = record(api, kind="interpretation")
    past = (START - timedelta(days=1)).isoformat()
    response = api.patch(
        f"/api/v1/ledger/{created['id']}", {"expires_at": past, "reason": "x"}, format="json"
    )
    assert response.status_code == 400 and "expires_at" in response.json()


def test_an_entry_cannot_be_filed_under_another_agents_run(api: APIClient, subject: None) -> None:
    other, _ = agent_client("other-agent", ["read", "write"])
    assert (
        other.put("/api/v1/runs/run_theirs/notes/k", {"value": "v"}, format="json").status_code
        == 201
    )
    response = post(api, entry(run="run_theirs"))
    assert response.status_code == 409 and response.json()["code"] == "run_of_another_agent"
    assert not LedgerEntry.objects.exists()


def test_an_established_fact_changes_only_by_supersede_with_its_new_source(
    api: APIClient, subject: None
) -> None:
    fact = record(api)
    response = api.patch(
        f"/api/v1/ledger/{fact['id']}",
        {"fact": "Invoice 1042 was never paid.", "reason": "x"},
        format="json",
    )
    assert response.status_code == 409
    assert response.json()["code"] == "use_supersede"
    assert LedgerEntry.objects.get().fact == "Invoice 1042 was paid in full on 2026-11-02."


def test_an_entry_past_its_date_cannot_be_revived_by_an_edit(api: APIClient, subject: None) -> None:
    soon = (timezone.now() + timedelta(hours=1)).isoformat()
    note = record(api, kind="interpretation", expires_at=soon)
    with time_machine.travel(timezone.now() + timedelta(hours=2)):
        response = api.patch(
            f"/api/v1/ledger/{note['id']}",
            {"expires_at": (timezone.now() + timedelta(days=30)).isoformat(), "reason": "x"},
            format="json",
        )
    assert response.status_code == 409
    assert response.json()["code"] == "ledger_entry_expired"
