"""Erase everything: after typing the name, no statement, excerpt or fact about the person
survives anywhere in the database — live rows or history — and agents recall nothing."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from ledger.actions.erasure import erase_subject
from ledger.actions.journal import journal_intent, record_outcome
from ledger.actions.ledger_entries import record_ledger_entry
from ledger.actions.lifecycle import correct_memory, retract_memory
from ledger.actions.notes import delete_note, write_note
from ledger.actions.recalls import record_recall
from ledger.actions.snapshots import SnapshotInput, store_snapshot
from ledger.actions.sources import SourceInput
from ledger.actions.subjects import set_display_name
from ledger.actors import Actor
from ledger.models import Erasure, LedgerEntry, Memory, Run, Subject
from ledger.reads.recall import recall
from tests.conftest import PASSWORD, SUBJECT, VALID_BODY, agent_client, body

# Each secret goes into a different place; none may survive the erasure.
SECRETS = {
    "name": "Dana Quillfeather",
    "statement": "Keeps the spare key under the blue Quokka pot.",
    "excerpt": "my spare key is under the blue quokka pot, honestly",
    "correction": "Keeps the spare key with neighbour Zebulon.",
    "reason": "Zebulon moved in next door",
    "guess": "Probably allergic to Wombatine.",
    "fact": "Promised a Xylophone refund of 40 EUR.",
    "ledger_excerpt": "xylophone refund please",
    "intent": "email Dana about the Xylophone refund",
    "effect": "mail id Narwhal-889 sent",
    "note": "customer mentioned Platypus account",
    "snapshot": "Task: settle the Xylophone refund for Quillfeather",
    "goal": "answer about the Quokka pot",
    "api": "Prefers Okapi-themed invoices.",
    "deleted_note": "mentioned the Aardvark garden",
    "api_note": "asked about Bandicoot pricing",
    "api_effect": "refund Capybara-42 issued",
}


@pytest.fixture
def dana(make_person) -> Client:
    user = make_person("dana", subject=SUBJECT)
    set_display_name(
        subject=Subject.objects.get(ref=SUBJECT),
        display_name=SECRETS["name"],
        actor=Actor.system("test"),
    )
    client = Client()
    client.login(username=user.username, password=PASSWORD)
    return client


@pytest.fixture
def everything(dana, remember, agent, api) -> Subject:
    """Content about Dana in every place the product keeps any."""
    key = remember(
        SECRETS["statement"],
        key="home.key",
        source=SourceInput(
            kind="user_message", ref="msg_q1", run="run_q", excerpt=SECRETS["excerpt"]
        ),
    )
    correct_memory(
        memory=key,
        actor=Actor.for_user(Subject.objects.get(ref=SUBJECT).owner),
        statement=SECRETS["correction"],
        reason=SECRETS["reason"],
    )
    guess = remember(SECRETS["guess"], basis="inferred")
    retract_memory(memory=guess, actor=Actor.for_agent(agent), reason="wrong")
    subject = Subject.objects.get(ref=SUBJECT)
    record_ledger_entry(
        subject=subject,
        agent=agent,
        fact=SECRETS["fact"],
        kind="commitment",
        source=SourceInput(kind="user_message", ref="msg_q2", excerpt=SECRETS["ledger_excerpt"]),
        run_ref="run_q",
    )
    run = Run.objects.get(ref="run_q")
    journal_intent(
        agent=agent,
        run=run,
        idempotency_key="refund-1",
        action="send_email",
        intent={"text": SECRETS["intent"]},
    )
    record_outcome(
        agent=agent,
        idempotency_key="refund-1",
        state="done",
        effect={"result": SECRETS["effect"]},
        verification={"seen": SECRETS["effect"]},
    )
    write_note(run=run, agent=agent, key="hint", value=SECRETS["note"])
    store_snapshot(
        run_ref="run_q",
        agent=agent,
        data=SnapshotInput(
            document={"task": SECRETS["snapshot"]},
            tokens_before=100,
            tokens_after=10,
            narrative=SECRETS["snapshot"],
            subject_ref=SUBJECT,
        ),
    )
    record_recall(
        agent=agent, result=recall(subject=subject, goal=SECRETS["goal"], k=5), run_ref="run_q"
    )
    response = api.post(
        "/api/v1/memories",
        body(statement=SECRETS["api"], key=""),
        format="json",
        HTTP_IDEMPOTENCY_KEY="idem-okapi",
    )
    assert response.status_code == 201, response.json()
    # Run 77 is now about Dana: its notes and journal, written through the API with retry
    # keys, leave stored answers, and a note deleted before the erasure leaves its versions.
    write_note(run=run, agent=agent, key="garden", value=SECRETS["deleted_note"])
    delete_note(run=run, agent=agent, key="garden")
    notes_url = "/api/v1/runs/run_77/notes/pricing"
    put = api.put(
        notes_url, {"value": SECRETS["api_note"]}, format="json", HTTP_IDEMPOTENCY_KEY="n-1"
    )
    assert put.status_code == 201, put.json()
    intent = {"idempotency_key": "refund-api", "action": "refund", "intent": {"amount": 1}}
    assert api.post("/api/v1/runs/run_77/journal", intent, format="json").status_code == 201
    patched = api.patch(
        "/api/v1/journal/refund-api",
        {"state": "done", "effect": {"r": SECRETS["api_effect"]}, "verification": {"ok": 1}},
        format="json",
        HTTP_IDEMPOTENCY_KEY="j-1",
    )
    assert patched.status_code == 200, patched.json()
    return subject


def database_text() -> str:
    """Every row of every table, as text, lower-cased: what an attacker with a dump would see."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = 'public' AND table_type = 'BASE TABLE'"
        )
        tables = [row[0] for row in cursor.fetchall()]
        chunks = []
        for table in tables:
            cursor.execute(f'SELECT t::text FROM "{table}" t')  # names come from the catalog
            chunks.extend(row[0] for row in cursor.fetchall())
    return "\n".join(chunks).casefold()


def secret_words() -> list[str]:
    # A distinctive word from each secret: survives any reformatting of the text.
    return [
        "quillfeather",
        "quokka",
        "zebulon",
        "wombatine",
        "xylophone",
        "narwhal",
        "platypus",
        "okapi",
        "aardvark",
        "bandicoot",
        "capybara",
    ]


def erase(client: Client, subject: Subject, typed: str) -> object:
    return client.post(
        reverse("subject-erase", args=[subject.ref]), {"confirm_name": typed, "pause": "on"}
    )


def test_the_secrets_are_there_before(everything) -> None:
    text = database_text()
    for word in secret_words():
        assert word in text, word


def test_erasure_leaves_no_statement_excerpt_or_fact_anywhere(dana, everything) -> None:
    response = erase(dana, everything, SECRETS["name"])
    assert response.status_code == 302
    text = database_text()
    for word in secret_words():
        assert word not in text, f"{word!r} survived the erasure"


def test_agents_recall_nothing_afterwards(dana, everything, api) -> None:
    erase(dana, everything, SECRETS["name"])
    assert not Memory.objects.filter(subject=everything).servable().exists()
    assert not LedgerEntry.objects.filter(subject=everything).in_force().exists()
    response = api.get(f"/api/v1/subjects/{SUBJECT}/recall", {"goal": "spare key"})
    assert response.status_code == 200
    for word in secret_words():
        assert word not in response.content.decode().casefold()


def test_the_skeleton_and_the_erasure_record_remain(dana, everything) -> None:
    versions_before = Memory.history.filter(subject_id=everything.pk).count()
    erase(dana, everything, SECRETS["name"])
    erasure = Erasure.objects.get(subject=everything)
    assert erasure.erased_by == "user:dana"
    assert (erasure.memories, erasure.ledger_entries) == (4, 1)
    assert erasure.sources >= 5
    assert set(Memory.objects.filter(subject=everything).values_list("status", flat=True)) == {
        "erased"
    }
    # Every earlier version is still there, with its status and actor, but no text.
    rows = Memory.history.filter(subject_id=everything.pk)
    assert rows.count() == versions_before + 4
    assert {r.statement for r in rows} == {""}
    assert {"active", "superseded", "retracted", "pending", "erased"} <= {r.status for r in rows}
    assert "agent:fixture-agent" in {r.history_actor for r in rows}
    everything.refresh_from_db()
    assert everything.memory_paused
    assert everything.display_name == ""


def test_a_second_erasure_leaves_nothing_written_since_the_first(everything, remember) -> None:
    erase_subject(subject=everything, actor=Actor.system("test"))
    later = remember("Adopted a Pangolin called Mo.", key="pets")
    correct_memory(
        memory=later,
        actor=Actor.for_user(everything.owner),
        statement="Adopted a Pangolin called Momo.",
        reason="Mo is the Pangolin's nickname",
    )
    assert "pangolin" in database_text()
    erase_subject(subject=everything, actor=Actor.system("test"))
    assert "pangolin" not in database_text()
    assert Erasure.objects.filter(subject=everything).count() == 2


def test_page_says_what_happened_after_erasure(dana, everything) -> None:
    page = dana.get(reverse("subject", args=[everything.ref]))
    assert SECRETS["correction"] in page.content.decode()
    response = dana.post(
        reverse("subject-erase", args=[everything.ref]),
        {"confirm_name": SECRETS["name"].upper()},
        follow=True,
    )
    html = response.content.decode()
    assert "Everything was erased on" in html
    assert " by you: 4 memories, 1 ledger entry and " in html
    assert "The assistant recalls nothing" in html
    assert SECRETS["correction"] not in html
    assert "Nothing is remembered about you right now." in html


def test_a_wrong_name_erases_nothing_and_says_why(dana, everything) -> None:
    response = erase(dana, everything, "Dana")
    assert response.status_code == 400
    assert "Nothing was erased." in response.content.decode()
    assert not Erasure.objects.exists()
    assert Memory.objects.filter(subject=everything, statement=SECRETS["correction"]).exists()


def test_the_erase_page_asks_for_the_name(dana, everything) -> None:
    html = dana.get(reverse("subject-erase", args=[everything.ref])).content.decode()
    assert "To confirm, type" in html
    assert SECRETS["name"] in html


def test_the_paused_banner_after_erasure_says_nothing_is_used(dana, everything) -> None:
    response = erase(dana, everything, SECRETS["name"])
    html = dana.get(response["Location"]).content.decode()
    assert "Memory is paused" in html
    assert "Nothing about you is remembered or used right now." in html
    assert "What it already remembers is still used" not in html
    # Switched off and on again through the banner itself, it still says the truth.
    banner = dana.post(
        reverse("subject-pause", args=[everything.ref]), {"paused": "on"}, HTTP_HX_REQUEST="true"
    ).content.decode()
    assert "Nothing about you is remembered or used right now." in banner


def test_a_stored_answer_sent_before_its_run_had_a_subject_is_erased(api) -> None:
    """A note written under a run that had no subject yet is stored under the run; the run
    learns its subject later, and an erasure of that subject still finds the answer."""
    url = "/api/v1/runs/run_early/notes/plan"
    first = api.put(url, {"value": "call Dana"}, format="json", HTTP_IDEMPOTENCY_KEY="early-1")
    assert first.status_code == 201, first.json()
    assert Run.objects.get(ref="run_early").subject is None
    source = dict(body()["source"], run="run_early")
    written = api.post("/api/v1/memories", body(source=source), format="json")
    assert written.status_code == 201, written.json()
    subject = Subject.objects.get(ref=SUBJECT)
    assert Run.objects.get(ref="run_early").subject == subject

    erasure = erase_subject(subject=subject, actor=Actor.system("test"))
    assert erasure.stored_responses == 1
    assert "call dana" not in database_text()
    # A retry after the erasure is a new write, not the erased answer replayed.
    again = api.put(url, {"value": "call Dana"}, format="json", HTTP_IDEMPOTENCY_KEY="early-1")
    assert again.status_code == 201 and "Idempotent-Replayed" not in again


def test_a_batch_answer_naming_two_subjects_goes_with_an_erasure_of_either(api) -> None:
    """A stored batch answer names every subject it took memories from: an erasure of any
    one of them deletes it, and the retry after it is a new batch, not the old answer."""
    for ref, run in ((SUBJECT, "run_one"), ("acct_second", "run_two")):
        source = dict(body()["source"], ref="msg_poison", run=run)
        written = api.post("/api/v1/memories", body(subject=ref, source=source), format="json")
        assert written.status_code == 201, written.json()
    staff = agent_client("support-tool", ["read", "staff"])[0]
    request = {"source_ref": "msg_poison", "reason": "a poisoned message"}
    batch = staff.post("/api/v1/retractions", request, format="json", HTTP_IDEMPOTENCY_KEY="b1")
    assert batch.status_code == 201, batch.json()
    undo = staff.post(
        f"/api/v1/retractions/{batch.json()['id']}/undo",
        {"reason": "it was not poisoned"},
        format="json",
        HTTP_IDEMPOTENCY_KEY="u1",
    )
    assert undo.status_code == 200, undo.json()

    erasure = erase_subject(
        subject=Subject.objects.get(ref="acct_second"), actor=Actor.system("test")
    )
    assert erasure.stored_responses == 2
    again = staff.post("/api/v1/retractions", request, format="json", HTTP_IDEMPOTENCY_KEY="b1")
    assert again.status_code == 201 and "Idempotent-Replayed" not in again
    assert again.json()["id"] != batch.json()["id"] and again.json()["count"] == 1


def test_a_dry_run_answer_is_not_stored_so_its_retry_previews_again(api) -> None:
    """A preview writes nothing, so its answer (statements included) is not kept for its
    key: no erasure has to find it, and a retry shows the selection as it is now."""
    staff = agent_client("support-tool", ["read", "staff"])[0]
    preview = {"source_ref": "msg_0192", "dry_run": True}
    first = staff.post("/api/v1/retractions", preview, format="json", HTTP_IDEMPOTENCY_KEY="p1")
    assert first.status_code == 200 and first.json()["memories"] == 0
    assert api.post("/api/v1/memories", body(), format="json").status_code == 201
    again = staff.post("/api/v1/retractions", preview, format="json", HTTP_IDEMPOTENCY_KEY="p1")
    assert again.status_code == 200 and "Idempotent-Replayed" not in again
    assert again.json()["memories"] == 1
    assert again.json()["listed"][0]["statement"] == VALID_BODY["statement"]
