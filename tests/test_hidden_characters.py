"""Invisible and bidirectional characters are refused in every JSON field the API stores,
keys and values at any depth, naming the field and where in it; nothing is written.

A U+202E (right-to-left override) reorders what support reads on a page; a U+200B (zero
width space) hides a word from a person that a model still reads.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from ledger.models import JournalEntry, LedgerEntry, Memory, Snapshot
from tests.conftest import SUBJECT, with_overrides
from tests.test_snapshot_checks import DOCUMENT

pytestmark = pytest.mark.django_db
HIDDEN = pytest.mark.parametrize("char", ["\u202e", "\u200b"], ids=["U+202E", "U+200B"])
RUN = "run_hidden_1"
INTENT = {
    "idempotency_key": "refund-order-5521",
    "action": "payments.refund",
    "intent": {"order": 5521, "amount": "-40.00", "currency": "EUR"},
}
LEDGER = f"/api/v1/subjects/{SUBJECT}/ledger"
FACT = {
    "fact": "Invoice 1042 was paid in full on 2026-11-02.",
    "kind": "established",
    "source": {"kind": "tool_result", "ref": "billing:inv-1042"},
}


def code(char: str) -> str:
    return f"U+{ord(char):04X}"


def journal(api: APIClient, **overrides: Any) -> Any:
    return api.post(
        f"/api/v1/runs/{RUN}/journal", with_overrides(INTENT, **overrides), format="json"
    )


def snapshot(api: APIClient, document: dict[str, Any]) -> Any:
    body = {"document": document, "tokens_before": 48_000, "tokens_after": 9_500}
    return api.post(f"/api/v1/runs/{RUN}/snapshots", body, format="json")


@pytest.fixture
def subject(remember: Callable[..., Memory]) -> None:
    remember("Prefers email over telephone.")


# The journal.


@HIDDEN
def test_a_journal_intent_value_is_refused_naming_the_path(api: APIClient, char: str) -> None:
    intent = {"order": 5521, "steps": [{"note": f"refund {char}04.00 EUR"}]}
    response = journal(api, intent=intent)
    assert response.status_code == 400
    message = response.json()["intent"][0]
    assert code(char) in message and "steps[0].note" in message
    assert not JournalEntry.objects.exists()


@HIDDEN
def test_a_journal_intent_key_is_refused(api: APIClient, char: str) -> None:
    response = journal(api, intent={"order": 5521, f"amount{char}": "-40.00"})
    assert response.status_code == 400
    message = response.json()["intent"][0]
    assert code(char) in message and "key" in message
    assert not JournalEntry.objects.exists()


@HIDDEN
@pytest.mark.parametrize("field", ["effect", "verification"])
def test_a_journal_outcome_is_refused_and_the_entry_unchanged(
    api: APIClient, char: str, field: str
) -> None:
    assert journal(api).status_code == 201
    outcome: dict[str, Any] = {"state": "done", "effect": {"http": 202}, "verification": {"ok": 1}}
    outcome[field] = {"refund": "rf_88", "log": [f"settled{char}"]}
    response = api.patch("/api/v1/journal/refund-order-5521", outcome, format="json")
    assert response.status_code == 400
    message = response.json()[field][0]
    assert code(char) in message and "log[0]" in message
    entry = JournalEntry.objects.get()
    assert entry.state == "intended" and entry.effect is None and entry.verification is None


def test_line_breaks_and_tabs_in_a_tools_output_are_kept(api: APIClient) -> None:
    response = journal(api, intent={"order": 5521, "body": "line one\nline two\tend"})
    assert response.status_code == 201
    assert JournalEntry.objects.get().intent["body"] == "line one\nline two\tend"


# Snapshot documents.


@HIDDEN
def test_a_snapshot_document_is_refused_naming_the_path(api: APIClient, char: str) -> None:
    document = copy.deepcopy(DOCUMENT)
    document["findings"][0]["evidence"] = f"register published{char} annually"
    response = snapshot(api, document)
    assert response.status_code == 400
    message = response.json()["document"][0]
    assert code(char) in message and "findings[0].evidence" in message
    assert not Snapshot.objects.exists()


@HIDDEN
def test_a_snapshot_document_key_is_refused(api: APIClient, char: str) -> None:
    document = copy.deepcopy(DOCUMENT)
    document["task"][f"text{char}"] = "hidden"
    response = snapshot(api, document)
    assert response.status_code == 400
    assert code(char) in response.json()["document"][0]
    assert not Snapshot.objects.exists()


# Ledger facts.


@HIDDEN
def test_a_ledger_fact_is_refused(api: APIClient, subject: None, char: str) -> None:
    response = api.post(LEDGER, {**FACT, "fact": f"Invoice 1042 was {char}paid."}, format="json")
    assert response.status_code == 400
    assert code(char) in response.json()["fact"][0]
    assert not LedgerEntry.objects.exists()


@HIDDEN
def test_a_ledger_edit_and_supersede_are_refused(api: APIClient, subject: None, char: str) -> None:
    entry = api.post(LEDGER, {**FACT, "kind": "interpretation"}, format="json").json()["entry"]
    hidden = f"Invoice 1042 was {char}unpaid."
    edit = api.patch(
        f"/api/v1/ledger/{entry['id']}", {"fact": hidden, "reason": "typo"}, format="json"
    )
    supersede = api.post(
        f"/api/v1/ledger/{entry['id']}/supersede",
        {**FACT, "fact": hidden, "reason": "Billing corrected it."},
        format="json",
    )
    assert edit.status_code == 400 and code(char) in edit.json()["fact"][0]
    assert supersede.status_code == 400 and code(char) in supersede.json()["fact"][0]
    assert list(LedgerEntry.objects.values_list("fact", flat=True)) == [FACT["fact"]]
