"""Tool definitions: strict schemas that say exactly what the endpoints accept."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import resolve
from jsonschema import Draft202012Validator
from rest_framework.test import APIClient

from ledger.models import JournalEntry, LedgerEntry, Memory, Policy, RunNote, Source
from ledger.reads.recall import GOAL_MAX
from tests.conftest import SUBJECT, body

pytestmark = pytest.mark.django_db
NAMES = [
    "write_note",
    "read_notes",
    "remember",
    "recall",
    "journal_intent",
    "journal_result",
    "read_ledger",
]
# In calling order: a later example reads what an earlier one wrote.
EXAMPLES: list[tuple[str, dict[str, Any]]] = [
    ("write_note", {"run": "run_tools", "key": "plan", "value": "Refund 40.00 EUR, not more."}),
    ("read_notes", {"run": "run_tools"}),
    ("remember", body()),
    ("recall", {"subject": SUBJECT, "goal": "contact about invoices", "k": 3, "turn": 2}),
    (
        "journal_intent",
        {
            "run": "run_tools",
            "idempotency_key": "mail-7",
            "action": "mail.send",
            "intent": {"to": "billing@example.com"},
        },
    ),
    (
        "journal_result",
        {
            "idempotency_key": "mail-7",
            "state": "done",
            "effect": {"id": "m-1"},
            "verification": {"sent_folder": "m-1 present"},
        },
    ),
    ("read_ledger", {"subject": SUBJECT, "active": True, "kind": "commitment"}),
]


@pytest.fixture
def listing(api: APIClient) -> dict[str, Any]:
    response = api.get("/api/v1/tools")
    assert response.status_code == 200
    return response.json()


def tool(listing: dict[str, Any], name: str) -> dict[str, Any]:
    return next(t for t in listing["tools"] if t["name"] == name)


def call(api: APIClient, listing: dict[str, Any], name: str, arguments: dict[str, Any]) -> Any:
    """Call the endpoint behind a tool the way an agent framework would."""
    endpoint = listing["endpoints"][name]
    rest = dict(arguments)
    path_values = {arg: rest.pop(arg) for arg in endpoint["path_arguments"]}
    url = endpoint["path"].format(**path_values)
    method = endpoint["method"].lower()
    if endpoint["other_arguments"] == "query":
        return api.get(url, {k: str(v) for k, v in rest.items()})
    if endpoint["other_arguments"] == "none":
        return getattr(api, method)(url)
    return getattr(api, method)(url, rest, format="json")


def test_every_tool_is_listed_in_the_function_calling_shape(listing: dict[str, Any]) -> None:
    assert [t["name"] for t in listing["tools"]] == NAMES
    for definition in listing["tools"]:
        assert set(definition) == {"name", "description", "parameters"}
        Draft202012Validator.check_schema(definition["parameters"])
        assert_strict(definition["parameters"])


def assert_strict(schema: dict[str, Any]) -> None:
    if schema.get("type") == "object" and "properties" in schema:
        assert schema["additionalProperties"] is False
        assert set(schema["required"]) <= set(schema["properties"])
        for child in schema["properties"].values():
            assert_strict(child)


def test_every_tool_points_at_a_route_that_exists(listing: dict[str, Any]) -> None:
    for name in NAMES:
        path = listing["endpoints"][name]["path"]
        example = path.replace("{run}", "r1").replace("{key}", "k1").replace("{subject}", "s1")
        resolve(example.replace("{idempotency_key}", "k1"))


def test_an_example_valid_under_each_schema_is_accepted_by_its_endpoint(
    api: APIClient, listing: dict[str, Any]
) -> None:
    for name, arguments in EXAMPLES:
        Draft202012Validator(tool(listing, name)["parameters"]).validate(arguments)
        response = call(api, listing, name, arguments)
        assert response.status_code in (200, 201), (name, response.json())
    assert RunNote.objects.get().value == "Refund 40.00 EUR, not more."
    assert Memory.objects.get().statement == body()["statement"]
    assert JournalEntry.objects.get().state == "done"


@pytest.mark.parametrize(
    ("name", "arguments", "field"),
    [
        ("write_note", {"run": "run_tools", "key": "k" * 41, "value": "v"}, "key"),
        ("write_note", {"run": "run_tools", "key": "k", "value": "v" * 501}, "value"),
        ("remember", body(statement="s" * 201), "statement"),
        ("remember", body(kind="opinion"), "kind"),
        ("remember", body(colour="blue"), "colour"),
        (
            "journal_intent",
            {"run": "r", "idempotency_key": "k", "action": "a", "intent": []},
            "intent",
        ),
        ("journal_result", {"idempotency_key": "k", "state": "intended"}, "state"),
    ],
)
def test_what_the_schema_refuses_the_endpoint_refuses(
    api: APIClient, listing: dict[str, Any], name: str, arguments: dict[str, Any], field: str
) -> None:
    errors = list(Draft202012Validator(tool(listing, name)["parameters"]).iter_errors(arguments))
    assert errors
    if name == "journal_result":
        call(api, listing, "journal_intent", {**EXAMPLES[4][1], "idempotency_key": "k"})
    response = call(api, listing, name, arguments)
    assert response.status_code == 400
    assert field in response.json()


def test_schema_limits_are_the_apis_limits(listing: dict[str, Any]) -> None:
    note = tool(listing, "write_note")["parameters"]["properties"]
    assert note["key"]["maxLength"] == RunNote.KEY_MAX
    assert note["value"]["maxLength"] == RunNote.VALUE_MAX
    remember = tool(listing, "remember")["parameters"]
    props = remember["properties"]
    assert props["statement"]["maxLength"] == Memory.STATEMENT_MAX
    assert props["kind"]["enum"] == Memory.Kind.values
    assert props["basis"]["enum"] == Memory.Basis.values
    assert props["source"]["properties"]["kind"]["enum"] == Source.Kind.values
    assert set(remember["required"]) == {"subject", "kind", "statement", "basis", "source"}
    recall = tool(listing, "recall")["parameters"]["properties"]
    assert recall["k"]["maximum"] == Policy.current().recall_cap
    assert recall["goal"]["maxLength"] == GOAL_MAX
    result = tool(listing, "journal_result")["parameters"]
    assert result["properties"]["state"]["enum"] == ["done", "not_done", "unknown"]
    assert result["required"] == ["idempotency_key", "state"]
    intent = tool(listing, "journal_intent")["parameters"]
    assert intent["properties"]["intent"]["type"] == "object"
    ledger = tool(listing, "read_ledger")["parameters"]
    assert ledger["required"] == ["subject"]
    assert ledger["properties"]["kind"]["enum"] == LedgerEntry.Kind.values
    assert ledger["properties"]["active"]["type"] == "boolean"


def test_the_ledger_tool_reads_only_what_is_in_force(
    api: APIClient, listing: dict[str, Any]
) -> None:
    call(api, listing, "remember", body())
    for fact, kind in [
        ("Never e-mail the supplier Acme.", "commitment"),
        ("Maybe 10%.", "proposal"),
    ]:
        entry = {"fact": fact, "kind": kind, "source": {"kind": "user_message", "ref": "msg_1"}}
        assert (
            api.post(f"/api/v1/subjects/{SUBJECT}/ledger", entry, format="json").status_code == 201
        )
    arguments = {"subject": SUBJECT, "active": True, "kind": "commitment"}
    response = call(api, listing, "read_ledger", arguments)
    assert [e["fact"] for e in response.json()["entries"]] == ["Never e-mail the supplier Acme."]
    refused = call(api, listing, "read_ledger", {**arguments, "kind": "rumour"})
    assert refused.status_code == 400
    assert "kind" in refused.json()


def test_tools_need_only_the_read_scope(reader: APIClient) -> None:
    assert reader.get("/api/v1/tools").status_code == 200


def test_tools_are_in_the_openapi_schema(api: APIClient) -> None:
    assert (
        "/api/v1/tools" in api.get("/api/schema/", HTTP_ACCEPT="application/json").content.decode()
    )
