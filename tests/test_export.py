"""Export: a person downloads everything about them as one JSON document, in a documented,
versioned format."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from jsonschema import Draft202012Validator, FormatChecker
from rest_framework.test import APIClient

from ledger.actions.conflicts import resolve_conflict
from ledger.actions.ledger_entries import record_ledger_entry
from ledger.actions.lifecycle import confirm_memory, correct_memory, withhold_memory
from ledger.actions.recalls import record_recall
from ledger.actions.sources import SourceInput
from ledger.actions.subjects import set_memory_paused
from ledger.actors import Actor
from ledger.models import Conflict, Subject
from ledger.reads.export_schema import EXPORT_SCHEMA, WHO
from ledger.reads.exports import FORMAT
from ledger.reads.recall import recall
from tests.conftest import PASSWORD, SUBJECT, signed_in

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
    assert document["format"] == FORMAT == "memoryadmin.export/2"


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
    assert new["origin"] == {"how": "corrected", "who": "the person"}
    assert old["superseded_by"] == new["id"]
    assert old["origin"] == {"how": "said", "who": "the person"}
    guess = by_statement["Runs payroll on Fridays."]
    assert (guess["basis"], guess["origin"]) == ("inferred", {"how": "guessed", "who": "an agent"})


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


# A rich subject, and the published schema every export is checked against.


@pytest.fixture
def rich(make_person, remember, agent) -> dict[str, Any]:
    """Dana's account after a long life: said, guessed, confirmed and corrected memories,
    conflicts kept, rewritten and open, reads, pauses, a withheld memory and the ledger."""
    people = {
        "dana": make_person("dana", subject=SUBJECT),
        "sam": make_person("sam", role="support"),
        "ada": make_person("ada", role="admin"),
    }
    dana, sam, ada = (Actor.for_user(p) for p in people.values())
    subject = Subject.objects.get(ref=SUBJECT)
    email = remember(
        "Prefers email.",
        key="contact.channel",
        source=SourceInput(kind="user_message", ref="msg_1", run="run_9", turn=2, excerpt="mail"),
    )
    remember("Prefers a phone call.", key="contact.channel")
    resolve_conflict(
        conflict=open_conflict("contact.channel"), actor=dana, keep=email, statement=None
    )
    remember("Lives in Ghent.", key="home.city")
    lisbon = remember("Lives in Lisbon.", key="home.city")
    porto = resolve_conflict(
        conflict=open_conflict("home.city"),
        actor=sam,
        keep=lisbon,
        statement="Lives in Porto.",
        reason="Moved, said on the phone.",
    )
    remember("Works mornings.", key="work.hours")
    remember("Works evenings.", key="work.hours")
    guess = remember("Runs payroll on Fridays.", basis="inferred")
    confirm_memory(memory=guess, actor=sam, reason="Confirmed on the phone.")
    tea = correct_memory(
        memory=remember("Likes tea."), actor=sam, statement="Likes green tea.", reason="asked"
    )
    knee = remember("Is recovering from a knee operation.", kind="episode")
    withhold_memory(memory=knee, actor=dana, withheld=True)
    for run, turn in (("run_9", 3), ("run_10", None), (None, None)):
        result = recall(subject=subject, goal="billing email", k=5)
        record_recall(agent=agent, result=result, run_ref=run, turn=turn)
    set_memory_paused(subject=subject, actor=dana, paused=True)
    set_memory_paused(subject=subject, actor=ada, paused=False)
    record_ledger_entry(
        subject=subject,
        agent=agent,
        fact="Promised a refund of 40 EUR by Friday.",
        kind="commitment",
        source=SourceInput(kind="user_message", ref="msg_2", excerpt="refund please"),
    )
    return {"email": email, "porto": porto, "guess": guess, "tea": tea, "knee": knee}


def open_conflict(key: str) -> Conflict:
    return Conflict.objects.open().get(key=key)


def schema() -> dict[str, Any]:
    response = APIClient().get("/api/v1/schemas/export")
    assert response.status_code == 200
    published: dict[str, Any] = response.json()
    return published


def problems(document: dict[str, Any]) -> list[str]:
    validator = Draft202012Validator(schema(), format_checker=FormatChecker())
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]


def export_of(person: str = "dana") -> dict[str, Any]:
    response = signed_in(person).get(reverse("subject-export", args=[SUBJECT]))
    assert response.status_code == 200
    document: dict[str, Any] = json.loads(response.content)
    return document


def walk(value: Any, path: str = "") -> Iterator[tuple[str, str, Any]]:
    """Every (path, key, value) in a JSON document."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield path, key, item
            yield from walk(item, f"{path}.{key}")
    elif isinstance(value, list):
        for item in value:
            yield from walk(item, f"{path}[]")


def test_the_schema_is_public_valid_and_closed(db: None) -> None:
    published = schema()
    assert published["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert published["$id"].endswith("/api/v1/schemas/export")
    Draft202012Validator.check_schema(published)
    assert {k: v for k, v in published.items() if k != "$id"} == EXPORT_SCHEMA
    # Every object is closed and lists every field, so the export and the schema cannot drift.
    objects = [
        v for _, _, v in walk(published) if isinstance(v, dict) and v.get("type") == "object"
    ]
    assert len(objects) > 10
    for item in [published, *objects]:
        assert item["additionalProperties"] is False
        assert set(item["required"]) == set(item["properties"])
    paths = json.loads(APIClient().get("/api/schema/?format=json").content)["paths"]
    assert "get" in paths["/api/v1/schemas/export"]


def test_the_export_of_a_rich_subject_validates(rich) -> None:
    for person in ("dana", "sam"):
        document = export_of(person)
        assert problems(document) == []
        assert document["format"] == "memoryadmin.export/2"


def test_the_schema_refuses_a_field_it_does_not_describe(rich) -> None:
    document = export_of()
    document["memories"][0]["stated_by"] = "correction"
    assert any("stated_by" in p for p in problems(document))
    del document["memories"][0]["stated_by"]
    del document["memories"][0]["reads"]
    assert any("reads" in p for p in problems(document))


def test_the_export_says_which_runs_read_each_memory_and_when(rich) -> None:
    memories = {m["statement"]: m for m in export_of()["memories"]}
    reads = memories["Prefers email."]["reads"]
    assert [(r["run"], r["turn"], r["agent"], r["goal"]) for r in reads] == [
        ("run_9", 3, "fixture-agent", "billing email"),
        ("run_10", None, "fixture-agent", "billing email"),
        (None, None, "fixture-agent", "billing email"),
    ]
    assert all(r["read_at"] for r in reads)
    assert memories["Prefers a phone call."]["reads"] == []


def test_the_export_holds_the_withheld_state_and_its_history(rich) -> None:
    memories = {m["statement"]: m for m in export_of()["memories"]}
    knee = memories["Is recovering from a knee operation."]
    assert knee["withheld"] is True
    assert knee["status"] == "active"
    assert knee["reads"] == []
    change = knee["history"][-1]
    assert (change["withheld"], change["who"], change["actor"]) == (True, "the person", "user:dana")
    assert change["reason"] == "True, but the person does not want the assistant to use it."
    assert memories["Prefers email."]["withheld"] is False


def test_the_export_holds_pauses_with_who(rich) -> None:
    subject = export_of()["subject"]
    assert subject["memory_paused"] is False
    assert [(p["paused"], p["who"], p["actor"]) for p in subject["pauses"]] == [
        (True, "the person", "user:dana"),
        (False, "an admin", "user:ada"),
    ]


def test_the_export_says_who_resolved_each_conflict_and_how(rich) -> None:
    conflicts = {c["key"]: c for c in export_of()["conflicts"]}
    kept = conflicts["contact.channel"]
    assert kept["status"] == "resolved"
    assert kept["resolution"] == {
        "who": "the person",
        "actor": "user:dana",
        "how": "kept",
        "kept": [str(rich["email"].pk)],
    }
    rewritten = conflicts["home.city"]["resolution"]
    assert (rewritten["who"], rewritten["how"]) == ("support", "rewritten")
    assert rewritten["kept"] == [str(rich["porto"].pk)]
    assert conflicts["work.hours"]["status"] == "open"
    assert conflicts["work.hours"]["resolution"] is None


def test_the_export_says_how_each_memory_came_to_be_in_plain_words(rich) -> None:
    memories = {m["id"]: m for m in export_of()["memories"]}
    assert memories[str(rich["guess"].pk)]["origin"] == {"how": "confirmed", "who": "support"}
    assert memories[str(rich["tea"].pk)]["origin"] == {"how": "corrected", "who": "support"}
    assert memories[str(rich["porto"].pk)]["origin"] == {"how": "corrected", "who": "support"}
    assert memories[str(rich["email"].pk)]["origin"] == {"how": "said", "who": "the person"}


def test_the_export_holds_no_internal_fields(rich) -> None:
    document = export_of()
    keys = {key for _, key, _ in walk(document)}
    assert "stated_by" not in keys
    assert "normalized" not in keys
    for path, key, _ in walk(document):
        # Ids appear only where they are a memory's or a ledger entry's documented id.
        assert key != "id" or path in (".memories[]", ".ledger_entries[]"), path
    whos = {value for _, key, value in walk(document) if key == "who"}
    assert whos <= set(WHO)
    assert {"the person", "support", "an admin", "an agent"} <= whos


def test_the_export_of_an_erased_subject_validates_and_holds_only_the_skeleton(rich) -> None:
    client = signed_in("dana")
    client.post(reverse("subject-erase", args=[SUBJECT]), {"confirm_name": SUBJECT, "pause": "on"})
    document = export_of()
    assert problems(document) == []
    assert {m["statement"] for m in document["memories"]} == {""}
    assert {r["goal"] for m in document["memories"] for r in m["reads"]} == {""}
    (erasure,) = document["erasures"]
    assert (erasure["who"], erasure["erased_by"]) == ("the person", "user:dana")
    assert document["subject"]["pauses"][-1]["paused"] is True
    # The skeleton keeps the person's "don't use it": it is not content.
    knee = next(m for m in document["memories"] if m["id"] == str(rich["knee"].pk))
    assert knee["withheld"] is True
    text = json.dumps(document)
    for gone in ("Prefers", "knee", "Porto", "billing email", "refund"):
        assert gone not in text


def test_a_dashboard_correction_and_a_tools_answer_are_told_in_the_exports_own_words(
    dana, remember
) -> None:
    remember(
        "Account is on the Starter plan.",
        kind="account_fact",
        source=SourceInput(kind="tool_result", ref="crm_lookup_5510"),
    )
    _, document = download(dana)
    by_statement = {m["statement"]: m for m in document["memories"]}
    letters, email = by_statement["Prefers letters."], by_statement["Prefers email."]
    assert letters["origin"] == {"how": "corrected", "who": "the person"}
    assert [(s["kind"], s["ref"]) for s in letters["sources"]] == [("correction", email["id"])]
    assert by_statement["Account is on the Starter plan."]["origin"]["how"] == "recorded"
    assert email["origin"] == {"how": "said", "who": "the person"}
    assert "operator" not in json.dumps(document) and "correction:" not in json.dumps(document)
