"""Reading memories, their history, corrections and retraction through the API."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from ledger.actions.subjects import set_memory_paused
from ledger.actors import Actor
from ledger.models import Memory, Subject, WriteDecision
from tests.conftest import SUBJECT, body

pytestmark = pytest.mark.django_db
URL = "/api/v1/memories"


def write(api: APIClient, **overrides) -> dict:
    response = api.post(URL, body(**overrides), format="json")
    assert response.status_code in (200, 201), response.json()
    return response.json()["memory"]


def test_no_key_is_401(db: None) -> None:
    response = APIClient().get(URL)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == "Bearer"


def test_unknown_key_is_401(db: None) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer ma_000000000000_nope")
    assert client.get(URL).status_code == 401


def test_read_key_cannot_write(reader: APIClient) -> None:
    response = reader.post(URL, body(), format="json")
    assert response.status_code == 403
    assert "write" in response.json()["detail"]
    assert not Memory.objects.exists()


def test_write_key_cannot_read(writer: APIClient) -> None:
    assert writer.get(URL).status_code == 403


def test_session_of_a_person_is_not_accepted_by_the_api(api: APIClient, make_person) -> None:
    write(api)
    person = make_person("dana", subject=SUBJECT)
    client = APIClient()
    client.force_login(person)
    assert client.get(URL).status_code == 401


def test_unknown_memory_is_404(api: APIClient) -> None:
    assert api.get(f"{URL}/6c1f3c7e-0000-4000-8000-000000000000").status_code == 404
    assert api.get(f"{URL}/not-a-uuid").status_code == 404


def test_list_filters_by_subject_kind_basis_status_and_key(api: APIClient) -> None:
    write(api)
    write(api, subject="acct_other", statement="Other subject.")
    write(api, kind="episode", key="", statement="Called about a refund.")
    write(api, basis="inferred", key="guess", statement="Probably a bakery.", expires_at=...)

    def ids(query: str) -> list[str]:
        return [m["statement"] for m in api.get(f"{URL}?{query}").json()["results"]]

    assert ids(f"subject={SUBJECT}&kind=episode") == ["Called about a refund."]
    assert ids("basis=inferred") == ["Probably a bakery."]
    assert ids("status=pending") == ["Probably a bakery."]
    assert ids(f"subject={SUBJECT}&key=contact.channel") == [
        "Prefers email over telephone for billing questions."
    ]
    assert ids("subject=acct_other") == ["Other subject."]


def test_list_refuses_unknown_filter_values(api: APIClient) -> None:
    response = api.get(f"{URL}?status=forgotten")
    assert response.status_code == 400
    assert "status" in response.json()


def test_list_is_cursor_paginated_newest_first(api: APIClient) -> None:
    for n in range(5):
        write(api, statement=f"Statement {n}.", key=f"k.{n}")
    first = api.get(f"{URL}?page_size=2").json()
    assert [m["statement"] for m in first["results"]] == ["Statement 4.", "Statement 3."]
    second = api.get(first["next"]).json()
    assert [m["statement"] for m in second["results"]] == ["Statement 2.", "Statement 1."]


def test_retrieve_returns_an_etag_with_the_version(api: APIClient) -> None:
    memory = write(api)
    response = api.get(f"{URL}/{memory['id']}")
    assert response.status_code == 200
    assert response.headers["ETag"] == '"1"'
    assert response.json()["sources"][0]["excerpt"] == "please email me about invoices"


def test_correction_supersedes_and_keeps_the_original_text(api: APIClient) -> None:
    memory = write(api)
    response = api.post(
        f"{URL}/{memory['id']}/corrections",
        {
            "statement": "Prefers telephone after all.",
            "reason": "Customer called to say so.",
            "source": {"kind": "user_message", "ref": "msg_0900", "excerpt": "call me instead"},
        },
        format="json",
    )
    assert response.status_code == 201
    new = response.json()
    assert new["supersedes"] == memory["id"]
    assert (new["status"], new["basis"]) == ("active", "stated")
    old = Memory.objects.get(pk=memory["id"])
    assert old.status == "superseded"
    assert old.statement == "Prefers email over telephone for billing questions."
    assert api.get(f"{URL}/{memory['id']}").json()["superseded_by"] == new["id"]


def test_an_agents_correction_without_the_persons_words_is_a_pending_guess(
    api: APIClient,
) -> None:
    memory = write(api)
    response = api.post(
        f"{URL}/{memory['id']}/corrections",
        {"statement": "Probably prefers telephone.", "reason": "Saw two calls."},
        format="json",
    )
    assert response.status_code == 201
    assert (response.json()["status"], response.json()["basis"]) == ("pending", "inferred")


def test_an_agent_cannot_correct_while_memory_is_paused(api: APIClient) -> None:
    memory = write(api)
    set_memory_paused(
        subject=Subject.objects.get(ref=SUBJECT), actor=Actor.system("test"), paused=True
    )
    response = api.post(
        f"{URL}/{memory['id']}/corrections",
        {"statement": "Prefers telephone.", "reason": "x"},
        format="json",
    )
    assert response.status_code == 423
    assert response.json()["code"] == "memory_paused"
    assert Memory.objects.count() == 1


def test_correction_needs_a_reason(api: APIClient) -> None:
    memory = write(api)
    response = api.post(f"{URL}/{memory['id']}/corrections", {"statement": "New."}, format="json")
    assert response.status_code == 400
    assert "reason" in response.json()
    assert Memory.objects.count() == 1


def test_stale_if_match_is_refused_with_412(api: APIClient) -> None:
    memory = write(api)
    api.post(f"{URL}/{memory['id']}/retract", {"reason": "wrong"}, format="json")
    response = api.post(
        f"{URL}/{memory['id']}/corrections",
        {"statement": "New.", "reason": "x"},
        format="json",
        headers={"If-Match": '"1"'},
    )
    assert response.status_code == 412
    assert response.json()["code"] == "stale_version"
    assert response.headers["ETag"] == '"2"'
    assert Memory.objects.count() == 1


def test_matching_if_match_is_accepted(api: APIClient) -> None:
    memory = write(api)
    response = api.post(
        f"{URL}/{memory['id']}/retract",
        {"reason": "wrong"},
        format="json",
        headers={"If-Match": '"1"'},
    )
    assert response.status_code == 200
    assert response.headers["ETag"] == '"2"'


def test_retract_needs_a_reason_and_is_soft(api: APIClient) -> None:
    memory = write(api)
    assert api.post(f"{URL}/{memory['id']}/retract", {}, format="json").status_code == 400
    response = api.post(f"{URL}/{memory['id']}/retract", {"reason": "Said in jest."}, format="json")
    assert response.status_code == 200
    assert response.json()["status"] == "retracted"
    assert Memory.objects.get(pk=memory["id"]).statement.startswith("Prefers email")


def test_retracting_twice_is_a_409(api: APIClient) -> None:
    memory = write(api)
    api.post(f"{URL}/{memory['id']}/retract", {"reason": "x"}, format="json")
    response = api.post(f"{URL}/{memory['id']}/retract", {"reason": "x"}, format="json")
    assert response.status_code == 409
    assert response.json()["code"] == "not_retractable"


def test_history_lists_every_version_with_who_and_why(api: APIClient) -> None:
    memory = write(api)
    api.post(
        f"{URL}/{memory['id']}/retract", {"reason": "Customer said it was wrong."}, format="json"
    )
    history = api.get(f"{URL}/{memory['id']}/history").json()["results"]
    assert [h["status"] for h in history] == ["retracted", "active"]
    assert history[0]["actor"] == "agent:test-agent"
    assert history[0]["reason"] == "Customer said it was wrong."
    assert history[0]["changed_fields"] == ["status", "status_changed_at", "version"]
    assert history[1]["change"] == "created"


def test_subject_shows_counts_and_open_conflicts(api: APIClient) -> None:
    write(api)
    write(api, statement="Prefers telephone.")
    data = api.get(f"/api/v1/subjects/{SUBJECT}").json()
    assert data["counts"]["active"] == 2
    assert data["open_conflicts"][0]["key"] == "contact.channel"
    assert len(data["open_conflicts"][0]["statements"]) == 2


def test_unknown_subject_is_404(api: APIClient) -> None:
    assert api.get("/api/v1/subjects/acct_nobody").status_code == 404


def test_correcting_one_side_resolves_the_conflict(api: APIClient) -> None:
    first = write(api)
    write(api, statement="Prefers telephone.")
    api.post(f"{URL}/{first['id']}/retract", {"reason": "Outdated."}, format="json")
    data = api.get(f"/api/v1/subjects/{SUBJECT}").json()
    assert data["open_conflicts"] == []


def test_schema_and_docs_are_served(db: None) -> None:
    client = APIClient()
    schema = client.get("/api/schema/")
    assert schema.status_code == 200
    assert b"/api/v1/memories" in schema.content
    assert b"agentKey" in schema.content and b"bearer" in schema.content
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    assert b"swagger" in docs.content.lower()
    assert b"cdn" not in docs.content.lower()


def test_refused_write_records_the_decision_without_a_memory(api: APIClient) -> None:
    api.post(URL, body(key="contact.phone", statement="+44 20 7946 0000"), format="json")
    decision = WriteDecision.objects.get()
    assert decision.memory is None
    assert "system of record" in decision.reason


def test_a_cursor_the_api_never_gave_out_is_a_400(api: APIClient) -> None:
    response = api.get(f"{URL}?cursor=not-a-cursor")
    assert response.status_code == 400
    assert "cursor" in response.json()
