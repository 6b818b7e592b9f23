"""Export: a person downloads everything about them as one JSON document, in a documented,
versioned format."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from ledger.actions.ledger_entries import record_ledger_entry
from ledger.actions.sources import SourceInput
from ledger.exports import FORMAT
from ledger.models import Subject
from tests.conftest import PASSWORD, SUBJECT

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def dana(make_person, remember, agent) -> Client:
    make_person("dana", subject=SUBJECT)
    original = remember(
        "Prefers email.",
        key="contact.channel",
        source=SourceInput(kind="user_message", ref="msg_1", run="run_9", excerpt="email me"),
    )
    remember("Prefers a phone call.", key="contact.channel")
    remember("Runs payroll on Fridays.", basis="inferred")
    record_ledger_entry(
        subject=Subject.objects.get(ref=SUBJECT),
        agent=agent,
        fact="Promised a refund of 40 EUR by Friday.",
        kind="commitment",
        source=SourceInput(kind="user_message", ref="msg_2", excerpt="refund please"),
    )
    client = Client()
    client.login(username="dana", password=PASSWORD)
    edit = reverse("memory-edit", args=[original.pk])
    assert client.post(edit, {"statement": "Prefers letters."}, **HTMX).status_code == 200
    return client


def download(client: Client) -> tuple[object, dict]:
    subject = Subject.objects.get(ref=SUBJECT)
    response = client.get(reverse("subject-export", args=[subject.ref]))
    return response, json.loads(response.content)


def test_export_is_a_json_attachment(dana) -> None:
    response, document = download(dana)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")
    assert response["Content-Disposition"].startswith("attachment; filename=")
    assert f"memoryadmin-export-{SUBJECT}-" in response["Content-Disposition"]
    assert document["format"] == FORMAT == "memoryadmin.export/1"


def test_export_holds_every_memory_with_history_and_excerpts(dana) -> None:
    _, document = download(dana)
    assert document["subject"]["ref"] == SUBJECT
    by_statement = {m["statement"]: m for m in document["memories"]}
    assert set(by_statement) == {
        "Prefers email.",
        "Prefers a phone call.",
        "Runs payroll on Fridays.",
        "Prefers letters.",
    }
    old = by_statement["Prefers email."]
    assert old["status"] == "superseded"
    assert old["sources"][0]["excerpt"] == "email me"
    assert old["sources"][0]["run"] == "run_9"
    assert [h["status"] for h in old["history"]] == ["active", "superseded"]
    assert old["history"][1]["actor"] == "user:dana"
    new = by_statement["Prefers letters."]
    assert new["supersedes"] == old["id"]
    assert new["stated_by"] == "correction"
    assert by_statement["Runs payroll on Fridays."]["basis"] == "inferred"


def test_export_holds_ledger_entries_and_conflicts(dana) -> None:
    _, document = download(dana)
    (entry,) = document["ledger_entries"]
    assert entry["fact"] == "Promised a refund of 40 EUR by Friday."
    assert entry["kind"] == "commitment"
    assert entry["source"]["excerpt"] == "refund please"
    assert entry["history"][0]["change"] == "created"
    (conflict,) = document["conflicts"]
    assert conflict["key"] == "contact.channel"
    # Every memory that ever took part: the two first contenders and the correction.
    assert len(conflict["memories"]) == 3
    assert conflict["status"] == "open"
    assert document["erasures"] == []


def test_export_after_erasure_holds_only_the_skeleton(dana) -> None:
    subject = Subject.objects.get(ref=SUBJECT)
    dana.post(reverse("subject-erase", args=[subject.ref]), {"confirm_name": SUBJECT})
    _, document = download(dana)
    assert {m["statement"] for m in document["memories"]} == {""}
    assert {m["status"] for m in document["memories"]} == {"erased"}
    assert document["ledger_entries"][0]["fact"] == ""
    (erasure,) = document["erasures"]
    assert erasure["erased_by"] == "user:dana"
    assert erasure["memories"] == 4
    assert "Prefers" not in json.dumps(document)
