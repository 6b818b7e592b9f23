"""Erasure leaves nothing: a canary written through every route that stores a subject's
data, then erased, is found in no column of any table, live or history.

The scan reads the catalog (every table, every text and JSON column), not a list kept by
hand, so a column added later is scanned without anyone remembering to add it.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from ledger.actions.policy import change_policy
from ledger.actions.seals import seal_pending
from ledger.actions.subjects import set_display_name
from ledger.actions.webhooks import register_endpoint
from ledger.actors import Actor
from ledger.models import Conflict, Erasure, JournalEntry, Memory, Policy, Run, Subject
from ledger.reads.audit_chain import verify
from ledger.rules.webhooks import Event
from tests.conftest import PASSWORD, SUBJECT, agent_client, body, signed_in
from tests.test_snapshot_checks import DOCUMENT

# One word, in three casings and in different positions; the scan ignores case, so a
# partial or re-cased copy is found too. Keys and refs only take lower case.
CANARY = "zqcanary7"
UPPER = "ZQCANARY7"
MIXED = "ZqCanary7"
NAME = f"Dana {MIXED}feather"
RUN = "run_zq"

# Where the canary legitimately stays after the erasure, and why.
ALLOWED = {
    # The admin's write policy names the system-of-record key the refused write used:
    # it is the product's configuration, about every subject, not content about this one.
    ("ledger_policy", "system_of_record_keys"),
    ("ledger_historicalpolicy", "system_of_record_keys"),
}


def canary_hits() -> list[str]:
    """``table.column`` for every text or JSON column, of every table, holding the canary."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.table_name, c.column_name FROM information_schema.columns c "
            "JOIN information_schema.tables t "
            "ON t.table_schema = c.table_schema AND t.table_name = c.table_name "
            "WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE' "
            "AND c.data_type IN ('text', 'character varying', 'character', 'json', 'jsonb')"
        )
        columns = cursor.fetchall()
        hits = []
        for table, column in columns:
            # Names come from the catalog; the canary is a parameter.
            cursor.execute(
                f'SELECT count(*) FROM "{table}" WHERE "{column}"::text ILIKE %s',
                [f"%{CANARY}%"],
            )
            if cursor.fetchone()[0]:
                hits.append(f"{table}.{column}")
    return hits


def ok(response: Any, *codes: int) -> Any:
    assert response.status_code in codes, (response.status_code, response.content[:500])
    return response


@pytest.fixture
def dana(make_person: Any) -> Client:
    user = make_person("dana", subject=SUBJECT)
    set_display_name(
        subject=Subject.objects.get(ref=SUBJECT), display_name=NAME, actor=Actor.system("test")
    )
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


@pytest.fixture
def support(make_person: Any) -> Client:
    return signed_in(make_person("sam", role="support"))


def memory_body(statement: str, key: str = "", basis: str = "stated", **source: Any) -> Any:
    return body(
        statement=statement,
        key=key,
        basis=basis,
        expires_at="2099-03-04T00:00:00Z",
        source={
            "kind": "user_message",
            "ref": source.get("ref", f"msg-{CANARY}-{key or statement[:8]}"),
            "run": RUN,
            "turn": 1,
            "excerpt": source.get("excerpt", f"{UPPER} said so: {statement}"),
        },
    )


def write(api: APIClient, statement: str, key: str = "", **kw: Any) -> dict[str, Any]:
    response = api.post(
        "/api/v1/memories",
        memory_body(statement, key, **kw),
        format="json",
        HTTP_IDEMPOTENCY_KEY=f"{CANARY}-{key}-{statement[:10]}",
    )
    return dict(ok(response, 200, 201).json())


@pytest.fixture
def everywhere(dana: Client, support: Client, api: APIClient) -> Subject:
    """The canary, through every route that stores something about Dana."""
    # A webhook endpoint subscribed to everything: every event about Dana is filed for it
    # (never sent: the test's transaction never commits), and must be scrubbed too.
    register_endpoint(
        url="https://hooks.example.com/hooks",
        events=Event.values,
        description="every event",
        actor=Actor.system("test"),
    )
    # Run notes and a journal entry before the run has a subject: their stored answers
    # are filed under the run alone.
    ok(
        api.put(
            f"/api/v1/runs/{RUN}/notes/{CANARY}.early",
            {"value": f"early note {UPPER}"},
            format="json",
            HTTP_IDEMPOTENCY_KEY=f"{CANARY}-note-early",
        ),
        201,
    )
    intent = {
        "idempotency_key": f"{CANARY}-refund",
        "action": f"email_{CANARY}",
        "intent": {"to": MIXED, "text": f"refund for {UPPER}"},
    }
    ok(api.post(f"/api/v1/runs/{RUN}/journal", intent, format="json"), 201)
    ok(
        api.patch(
            f"/api/v1/journal/{CANARY}-refund",
            {"state": "unknown", "effect": {"sent": MIXED}},
            format="json",
            HTTP_IDEMPOTENCY_KEY=f"{CANARY}-patch-1",
        ),
        200,
    )
    assert Run.objects.get(ref=RUN).subject is None

    # Memories with key, statement, excerpt and source ref; two that disagree in one slot.
    tea = write(api, f"Likes {MIXED} tea in the morning.", key=f"drink.{CANARY}")
    write(api, f"Never drinks {UPPER} tea at all.", key=f"drink.{CANARY}")
    assert Conflict.objects.filter(subject__ref=SUBJECT, status="open").exists()
    assert Run.objects.get(ref=RUN).subject is not None
    shoes = write(api, f"Wears {MIXED} shoes.", key=f"shoes.{CANARY}")
    hat = write(api, f"Wears a {MIXED} hat.", key=f"hat.{CANARY}")
    scarf = write(api, f"Knits a {MIXED} scarf.", key=f"scarf.{CANARY}")
    guess = write(api, f"Probably owns a {MIXED} cat.", key=f"pet.{CANARY}", basis="inferred")
    gone = write(api, f"Rides a {MIXED} bike.", key=f"bike.{CANARY}")
    write(api, f"Grows {MIXED} roses.", key=f"garden.{CANARY}", ref=f"msg-{CANARY}-roses")
    # After the run has a subject: the journal again, and notes.
    ok(
        api.patch(
            f"/api/v1/journal/{CANARY}-refund",
            {"state": "done", "verification": {"seen": f"{UPPER} got it"}},
            format="json",
            HTTP_IDEMPOTENCY_KEY=f"{CANARY}-patch-2",
        ),
        200,
    )
    ok(
        api.put(
            f"/api/v1/runs/{RUN}/notes/{CANARY}.late",
            {"value": f"late note {MIXED}"},
            format="json",
            HTTP_IDEMPOTENCY_KEY=f"{CANARY}-note-late",
        ),
        201,
    )

    # An agent's correction and retraction, with reasons.
    ok(
        api.post(
            f"/api/v1/memories/{shoes['memory']['id']}/corrections",
            {
                "statement": f"Wears {UPPER} boots.",
                "reason": f"{MIXED} said boots",
                "source": {"kind": "user_message", "ref": f"msg-{CANARY}-fix", "run": RUN},
            },
            format="json",
            HTTP_IDEMPOTENCY_KEY=f"{CANARY}-correct",
        ),
        200,
        201,
    )
    ok(
        api.post(
            f"/api/v1/memories/{gone['memory']['id']}/retract",
            {"reason": f"{MIXED} sold the bike"},
            format="json",
            HTTP_IDEMPOTENCY_KEY=f"{CANARY}-retract",
        ),
        200,
    )

    # Staff tooling previews, then retracts, everything one message wrote, with a reason;
    # with Idempotency-Keys, so the answers (statements, a reason) could be stored.
    staff = agent_client("support-tool", ["read", "staff"])[0]
    roses = {"source_ref": f"msg-{CANARY}-roses"}
    ok(
        staff.post(
            "/api/v1/retractions",
            {**roses, "dry_run": True},
            format="json",
            HTTP_IDEMPOTENCY_KEY=f"{CANARY}-preview",
        ),
        200,
    )
    ok(
        staff.post(
            "/api/v1/retractions",
            {**roses, "reason": f"{UPPER} never said roses"},
            format="json",
            HTTP_IDEMPOTENCY_KEY=f"{CANARY}-batch",
        ),
        201,
    )

    # Ledger entries: key, fact, source; an edit with a reason.
    entry = ok(
        api.post(
            f"/api/v1/subjects/{SUBJECT}/ledger",
            {
                "fact": f"Promised {UPPER} a refund of 40 EUR.",
                "kind": "commitment",
                "key": f"refund.{CANARY}",
                "run": RUN,
                "source": {
                    "kind": "user_message",
                    "ref": f"msg-{CANARY}-ledger",
                    "excerpt": f"refund me, {MIXED}",
                },
            },
            format="json",
            HTTP_IDEMPOTENCY_KEY=f"{CANARY}-ledger",
        ),
        201,
    ).json()
    ok(
        api.patch(
            f"/api/v1/ledger/{entry['entry']['id']}",
            {"fact": f"Promised {MIXED} a refund of 45 EUR.", "reason": f"{UPPER} asked for 45"},
            format="json",
        ),
        200,
    )

    # A snapshot with a document, pinned facts and a narrative; a recall with a goal.
    document = copy.deepcopy(DOCUMENT)
    document["task"]["text"] = f"Settle the refund for {MIXED}"
    ok(
        api.post(
            f"/api/v1/runs/{RUN}/snapshots",
            {
                "document": document,
                "pinned": [f"The user is {NAME}."],
                "tokens_before": 100,
                "tokens_after": 10,
                "narrative": f"Talked to {UPPER}.",
                "subject": SUBJECT,
            },
            format="json",
        ),
        # Rejected (it drops the ledger's commitment), and stored with problems that quote it.
        422,
    )
    ok(
        api.get(f"/api/v1/subjects/{SUBJECT}/recall", {"goal": f"tea for {MIXED}", "run": RUN}),
        200,
    )

    # A refused write: a system-of-record key carrying the canary.
    change_policy(
        actor=Actor.system("test"),
        reason="a key another system owns",
        system_of_record_keys=[*Policy.current().system_of_record_keys, f"secret.{CANARY}"],
    )
    refused = api.post(
        "/api/v1/memories",
        memory_body(f"Secret is {MIXED}.", key=f"secret.{CANARY}"),
        format="json",
        HTTP_IDEMPOTENCY_KEY=f"{CANARY}-refused",
    )
    assert refused.status_code == 422, refused.content

    # The dashboard: the person's correction with a reason, support's correction and
    # retraction with reasons, support's confirmation, the person resolving the conflict.
    ok(
        dana.post(
            reverse("memory-edit", args=[hat["memory"]["id"]]),
            {"statement": f"Wears a {UPPER} cap.", "reason": f"it is a cap, {MIXED}"},
        ),
        302,
    )
    ok(
        support.post(
            reverse("memory-edit", args=[scarf["memory"]["id"]]),
            {"statement": f"Knits a {UPPER} shawl.", "reason": f"{MIXED} phoned support"},
        ),
        302,
    )
    new_scarf = Memory.objects.get(subject__ref=SUBJECT, statement__contains="shawl")
    ok(
        support.post(
            reverse("memory-delete", args=[new_scarf.pk]), {"reason": f"{UPPER} asked to drop it"}
        ),
        302,
    )
    ok(
        support.post(
            reverse("memory-answer", args=[guess["memory"]["id"]]),
            {"answer": "yes", "reason": f"{MIXED} confirmed the cat on the phone"},
        ),
        302,
    )
    conflict = Conflict.objects.get(subject__ref=SUBJECT, status="open", possible=False)
    ok(
        dana.post(
            reverse("conflict-resolve", args=[conflict.pk]),
            {"statement": f"Likes {UPPER} tea, only at night.", "reason": f"{MIXED} is right"},
        ),
        302,
    )
    # A second contender in the slot leaves a conflict open at the moment of the erasure.
    write(api, f"Dislikes {MIXED} tea in the evening.", key=f"drink.{CANARY}")
    assert tea
    return Subject.objects.get(ref=SUBJECT)


def erase(dana: Client) -> None:
    ok(dana.post(reverse("subject-erase", args=[SUBJECT]), {"confirm_name": NAME}), 302)


def test_the_canary_is_everywhere_before(everywhere: Subject) -> None:
    hits = set(canary_hits())
    # A sample of what the routes above reached, to show the scan sees them.
    assert {
        "ledger_memory.key",
        "ledger_memory.statement",
        "ledger_historicalmemory.history_change_reason",
        "ledger_journalentry.action",
        "ledger_historicalconflict.key",
        "ledger_writedecision.reason",
        "ledger_idempotencyrecord.response_body",
        "ledger_snapshot.document",
        "ledger_recall.goal",
        "ledger_webhookdelivery.payload",
    } <= hits


def test_erasure_leaves_the_canary_in_no_column_of_any_table(
    dana: Client, everywhere: Subject
) -> None:
    erase(dana)
    left = [hit for hit in canary_hits() if tuple(hit.split(".")) not in ALLOWED]
    assert left == [], f"the canary survived the erasure in {left}"


def test_the_skeleton_stays_and_the_audit_chain_verifies(dana: Client, everywhere: Subject) -> None:
    seal_pending(full=True)
    versions = Memory.history.filter(history_subject_id=everywhere.pk).count()
    erase(dana)
    seal_pending(full=True)
    everywhere.refresh_from_db()
    assert everywhere.ref == SUBJECT and everywhere.display_name == ""
    assert set(Memory.objects.filter(subject=everywhere).values_list("status", flat=True)) == {
        "erased"
    }
    assert Memory.history.filter(history_subject_id=everywhere.pk).count() > versions
    assert not Conflict.objects.filter(subject=everywhere, status="open").exists()
    # The run keeps its rows under an opaque id: its name was the agent's, and could say whom.
    run = Run.objects.get(subject=everywhere)
    assert run.ref == f"(erased {run.pk})"
    entry = JournalEntry.objects.get(run=run)
    assert (entry.state, entry.created_at is not None) == ("done", True)
    erasure = Erasure.objects.get(subject=everywhere)
    assert erasure.requested_by == "user:dana"
    assert erasure.memories == Memory.objects.filter(subject=everywhere).count()
    assert erasure.conflicts >= 1 and erasure.write_decisions >= 1
    problems = [check for check in verify() if check.finding is not None]
    assert problems == [], [str(check.finding) for check in problems]
