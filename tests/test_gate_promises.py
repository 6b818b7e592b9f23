"""The write gate's promises under attack: corroboration needs independent agents, a
correction never makes a second live copy of a statement, and a refusal whose cause has
gone is not replayed."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

import ledger
from ledger.actions.agents import restrict_agent
from ledger.actions.lifecycle import retract_memory
from ledger.actions.policy import change_policy
from ledger.actions.reverts import revert_correction
from ledger.actions.subjects import set_memory_paused
from ledger.actors import Actor
from ledger.models import (
    Agent,
    IdempotencyRecord,
    LedgerEntry,
    Memory,
    Policy,
    Subject,
    WriteDecision,
)
from ledger.rules.agents import Restriction
from ledger.rules.gate import needs_corroboration, repeat_activates
from ledger.rules.memories import MEMORY_REFUSAL_CODES
from ledger.rules.refusals import Refusal
from ledger.rules.retries import REFUSAL_ON_RETRY, answer_is_replayed
from ledger.rules.text import normalize_statement
from tests.conftest import SUBJECT, agent_client, body, signed_in

pytestmark = pytest.mark.django_db
URL = "/api/v1/memories"
ADMIN = Actor.system("test-admin")


def post(api: APIClient, data: dict[str, Any], key: str = "", **headers: str) -> Any:
    if key:
        headers["Idempotency-Key"] = key
    return api.post(URL, data, format="json", headers=headers)


# A refusal is not replayed after its cause is gone.


def test_a_write_refused_while_paused_is_written_when_retried_after_resuming(
    api: APIClient,
) -> None:
    post(api, body(statement="Lives in Leeds.", key="home.city"))
    subject = Subject.objects.get(ref=SUBJECT)
    set_memory_paused(subject=subject, actor=ADMIN, paused=True)
    refused = post(api, body(), key="k-paused")
    assert refused.status_code == 423
    assert not IdempotencyRecord.objects.filter(key="k-paused").exists()
    set_memory_paused(subject=subject, actor=ADMIN, paused=False)

    retry = post(api, body(), key="k-paused")
    assert retry.status_code == 201, retry.json()
    assert "Idempotent-Replayed" not in retry.headers
    assert Memory.objects.filter(statement=body()["statement"]).count() == 1
    # From now on the write happened, and that answer is the one replayed.
    again = post(api, body(), key="k-paused")
    assert again.status_code == 201
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == retry.json()


def test_a_write_refused_while_an_admin_paused_the_agent_goes_through_once_lifted(
    api: APIClient,
) -> None:
    agent = Agent.objects.get(name="test-agent")
    restrict_agent(
        agent=agent,
        actor=ADMIN,
        restriction=Restriction.WRITES_PAUSED,
        on=True,
        reason="Looping on one customer.",
    )
    refused = post(api, body(), key="k-agent")
    assert refused.status_code == 423
    assert refused.json()["code"] == "agent_writes_paused"
    restrict_agent(
        agent=agent,
        actor=ADMIN,
        restriction=Restriction.WRITES_PAUSED,
        on=False,
        reason="Fixed.",
    )

    retry = post(api, body(), key="k-agent")
    assert retry.status_code == 201, retry.json()
    assert "Idempotent-Replayed" not in retry.headers


def test_a_write_refused_by_the_cap_is_written_once_there_is_room(api: APIClient) -> None:
    change_policy(actor=ADMIN, reason="A small subject.", subject_active_cap=1)
    first = post(api, body(statement="Lives in Leeds.", key="home.city")).json()["memory"]
    refused = post(api, body(), key="k-cap")
    assert refused.status_code == 409
    assert refused.json()["code"] == "subject_cap_reached"
    retract_memory(memory=Memory.objects.get(pk=first["id"]), actor=ADMIN, reason="Moved.")

    retry = post(api, body(), key="k-cap")
    assert retry.status_code == 201, retry.json()
    assert "Idempotent-Replayed" not in retry.headers


def test_a_correction_against_a_stale_copy_goes_through_when_retried_with_the_new_version(
    api: APIClient,
) -> None:
    memory = post(api, body()).json()["memory"]
    correction = {"statement": "Prefers letters for billing questions.", "reason": "Said so."}
    url = f"{URL}/{memory['id']}/corrections"
    stale = api.post(
        url, correction, format="json", headers={"If-Match": '"7"', "Idempotency-Key": "k-412"}
    )
    assert stale.status_code == 412

    retry = api.post(
        url, correction, format="json", headers={"If-Match": '"1"', "Idempotency-Key": "k-412"}
    )
    assert retry.status_code == 201, retry.json()
    assert "Idempotent-Replayed" not in retry.headers
    assert retry.json()["statement"] == correction["statement"]


def test_a_write_to_a_system_of_record_key_is_written_when_retried_after_the_key_is_freed(
    api: APIClient,
) -> None:
    data = body(key="contact.email", statement="dana@example.com")
    refused = post(api, data, key="k-sor")
    assert (refused.status_code, refused.json()["code"]) == (422, "system_of_record")
    keys = [k for k in Policy.current().system_of_record_keys if k != "contact.email"]
    change_policy(actor=ADMIN, reason="We keep emails now.", system_of_record_keys=keys)

    retry = post(api, data, key="k-sor")
    assert retry.status_code == 201, retry.json()
    assert "Idempotent-Replayed" not in retry.headers
    assert Memory.objects.filter(statement="dana@example.com").count() == 1


@pytest.mark.parametrize(
    ("status", "code", "replayed"),
    [
        (201, "", True),
        (200, "", True),
        (422, "system_of_record", False),
        (422, "inferred_needs_expiry", True),
        (409, "too_many_notes", False),
        (409, "not_correctable", False),
        (409, "generation_exists", True),
        (400, "", False),
        (423, "memory_paused", False),
        (423, "agent_writes_paused", False),
        (423, "agent_quarantined", False),
        (409, "subject_cap_reached", False),
        (412, "stale_version", False),
        (429, "throttled", False),
    ],
)
def test_which_answers_a_retry_gets_again(status: int, code: str, replayed: bool) -> None:
    assert answer_is_replayed(status, code) is replayed


# Independent means independent.


def guess(**overrides: Any) -> dict[str, Any]:
    return body(basis="inferred", expires_at=..., **overrides)


def source(ref: str, kind: str = "user_message", run: str = "run_77") -> dict[str, Any]:
    return dict(body()["source"], ref=ref, kind=kind, run=run)


def test_one_agent_repeating_a_guess_from_other_messages_never_corroborates_it(
    api: APIClient,
) -> None:
    post(api, guess(source=source("msg_0001")))
    response = post(api, guess(source=source("msg_0002")))
    assert response.status_code == 200
    decision = response.json()["decision"]
    assert response.json()["memory"]["status"] == "pending"
    assert "1 agent has written it" in decision["reason"]
    assert "Corroborated" not in decision["reason"]
    assert Memory.objects.get().status == "pending"


def test_one_agent_citing_three_tools_is_still_one_agent(api: APIClient) -> None:
    change_policy(actor=ADMIN, reason="Stricter.", inferred_sources_required=3)
    for n in range(3):
        post(api, guess(source=source(f"tool_{n}", kind="tool_result")))
    memory = Memory.objects.get()
    assert memory.sources.count() == 3
    assert memory.status == "pending"
    recall = api.get(f"/api/v1/subjects/{SUBJECT}/recall")
    assert recall.status_code == 200
    assert body()["statement"] not in str(recall.json())


def test_two_agents_corroborate_a_guess_and_the_reason_says_what_was_counted(
    api: APIClient, api_agent: tuple[APIClient, Agent]
) -> None:
    other, _ = api_agent
    post(api, guess(source=source("msg_0001")))
    post(api, guess(source=source("msg_0002")))
    response = post(other, guess(source=source("msg_9", run="run_of_the_other_agent")))
    assert response.status_code == 200
    assert response.json()["memory"]["status"] == "active"
    reason = response.json()["decision"]["reason"]
    assert "Corroborated by 2 agents: now active." in reason
    assert WriteDecision.objects.filter(reason=reason).count() == 1


def test_the_third_agent_is_needed_when_the_policy_asks_for_three(
    api: APIClient, api_agent: tuple[APIClient, Agent]
) -> None:
    change_policy(actor=ADMIN, reason="Stricter.", inferred_sources_required=3)
    other, _ = api_agent
    third = agent_client("third-agent", ["read", "write"])[0]
    post(api, guess(source=source("msg_0001")))
    second = post(other, guess(source=source("msg_9", run="run_other")))
    assert second.json()["memory"]["status"] == "pending"
    assert "2 agents have written it" in second.json()["decision"]["reason"]
    last = post(third, guess(source=source("msg_10", run="run_third")))
    assert last.json()["memory"]["status"] == "active"
    assert "Corroborated by 3 agents" in last.json()["decision"]["reason"]


@pytest.mark.parametrize(
    ("agents", "required", "waits"),
    [(1, 1, False), (1, 2, True), (2, 2, False), (2, 3, True), (3, 3, False), (4, 3, False)],
)
def test_a_guess_waits_until_enough_different_agents_wrote_it(
    agents: int, required: int, waits: bool
) -> None:
    rules = Policy(inferred_sources_required=required)
    assert needs_corroboration(rules, basis="inferred", agents=agents) is waits
    assert repeat_activates(rules, basis="inferred", agents=agents) is not waits
    assert not needs_corroboration(rules, basis="stated", agents=1)
    assert not repeat_activates(rules, basis="stated", agents=agents)


# A correction keeps the no-duplicates rule.

X_WORDS = "Prefers email over telephone for billing questions."
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def dana(make_person: Callable[..., User]) -> Client:
    make_person("dana", subject=SUBJECT)
    return signed_in("dana")


@pytest.fixture
def sam(make_person: Callable[..., User]) -> Client:
    make_person("sam", role="support")
    return signed_in("sam")


def two_memories(remember: Callable[..., Memory], **x_fields: Any) -> tuple[Memory, Memory]:
    """X, live, and Y, another live memory about the same subject."""
    x = remember(X_WORDS, key="contact.channel", **x_fields)
    y = remember("Prefers letters for everything.", key="contact.post")
    return x, y


def live_with_x_words() -> list[Memory]:
    return list(Memory.objects.live().filter(normalized=normalize_statement(X_WORDS)))


def test_an_agents_correction_to_a_live_memorys_words_merges_into_it(api: APIClient) -> None:
    x = post(api, body()).json()["memory"]
    y = post(api, body(statement="Prefers letters for everything.", key="contact.post"))
    response = api.post(
        f"{URL}/{y.json()['memory']['id']}/corrections",
        {
            "statement": "  prefers EMAIL over telephone for billing questions. ",
            "reason": "The person said so again.",
            "source": {"kind": "user_message", "ref": "msg_0900", "run": "run_77"},
        },
        format="json",
    )
    assert response.status_code == 200, response.json()
    assert response.json()["id"] == x["id"]
    assert [m.pk for m in live_with_x_words()] == [uuid.UUID(x["id"])]
    corrected = Memory.objects.get(pk=y.json()["memory"]["id"])
    assert corrected.status == "superseded"
    assert x["id"] in corrected.history.first().history_change_reason
    kept = Memory.objects.get(pk=x["id"])
    assert sorted(kept.sources.values_list("ref", flat=True)) == ["msg_0192", "msg_0900"]
    assert Memory.objects.live().count() == 1


def test_the_persons_correction_to_a_guesss_words_confirms_the_guess(
    remember: Callable[..., Memory], dana: Client
) -> None:
    x, y = two_memories(remember, basis="inferred")
    assert x.status == "pending"
    response = dana.post(
        reverse("memory-edit", args=[y.pk]), {"statement": X_WORDS.upper(), "reason": ""}
    )
    assert response.status_code == 302
    assert response.url.endswith(f"#memory-{x.pk}")
    assert [m.pk for m in live_with_x_words()] == [x.pk]
    x.refresh_from_db()
    y.refresh_from_db()
    assert (x.status, x.basis, x.stated_by) == ("active", "stated", "confirmation")
    assert y.status == "superseded"
    page = dana.get(response.url).content.decode()
    assert "Another memory already said this" in page
    assert page.count(X_WORDS) == 1
    history = dana.get(reverse("memory-history", args=[x.pk])).content.decode()
    assert "A correction of another memory said the same" in history


def test_an_htmx_correction_to_a_live_memorys_words_sends_the_page_to_it(
    remember: Callable[..., Memory], dana: Client
) -> None:
    x, y = two_memories(remember)
    response = dana.post(
        reverse("memory-edit", args=[y.pk]), {"statement": X_WORDS, "reason": ""}, **HTMX
    )
    assert response.status_code == 200
    assert response["HX-Redirect"].endswith(f"#memory-{x.pk}")
    assert [m.pk for m in live_with_x_words()] == [x.pk]


def test_supports_correction_to_a_live_memorys_words_merges_and_says_support(
    remember: Callable[..., Memory], sam: Client, dana: Client
) -> None:
    x, y = two_memories(remember, basis="inferred")
    response = sam.post(
        reverse("memory-edit", args=[y.pk]),
        {"statement": X_WORDS, "reason": "She told us on the phone."},
    )
    assert response.status_code == 302
    assert [m.pk for m in live_with_x_words()] == [x.pk]
    x.refresh_from_db()
    assert (x.status, x.stated_by) == ("active", "support_confirmation")
    row = x.history.first()
    assert (row.history_actor, row.history_role) == ("user:sam", "support")
    assert "She told us on the phone." in row.history_change_reason


def test_a_merged_correction_is_not_offered_as_a_revert_and_the_kept_one_is_refused(
    remember: Callable[..., Memory], make_person: Callable[..., User], dana: Client
) -> None:
    x, y = two_memories(remember)
    dana.post(reverse("memory-edit", args=[y.pk]), {"statement": X_WORDS, "reason": ""})
    assert not Memory.objects.corrections().exists()
    admin = make_person("ada", role="admin")
    with pytest.raises(Refusal) as refused:
        revert_correction(memory=x, actor=Actor.for_user(admin), reason="Undo it.")
    assert refused.value.status == 409
    assert [m.pk for m in live_with_x_words()] == [x.pk]


def test_a_revert_that_would_bring_back_words_live_again_elsewhere_is_refused(
    remember: Callable[..., Memory], make_person: Callable[..., User], dana: Client
) -> None:
    x, _ = two_memories(remember)
    dana.post(reverse("memory-edit", args=[x.pk]), {"statement": "Prefers letters.", "reason": ""})
    correction = Memory.objects.corrections().get()
    # An agent writes the corrected-away words again: they are live in a new memory.
    again = remember(X_WORDS, key="contact.channel")
    admin = make_person("ada", role="admin")
    with pytest.raises(Refusal) as refused:
        revert_correction(memory=correction, actor=Actor.for_user(admin), reason="Undo it.")
    assert refused.value.code == "words_already_live"
    assert str(again.pk) in refused.value.detail
    assert [m.pk for m in live_with_x_words()] == [again.pk]


def test_the_audit_shows_a_merged_correction_on_both_memories_with_who_and_why(
    remember: Callable[..., Memory], make_person: Callable[..., User], dana: Client
) -> None:
    x, y = two_memories(remember)
    dana.post(
        reverse("memory-edit", args=[y.pk]),
        {"statement": X_WORDS, "reason": "I said email, not letters."},
    )
    make_person("ada", role="admin")
    html = signed_in("ada").get(reverse("audit")).content.decode()
    assert "The corrected words are already those of another live memory" in html
    assert "A correction of another memory said the same: I said email, not letters." in html
    assert str(x.pk) in html


def _refusal_codes() -> set[str]:
    """Every code a write function or the API can refuse with, read from the source."""
    root = Path(ledger.__file__).parent
    files = [
        file for folder in ("rules", "actions", "api") for file in (root / folder).glob("*.py")
    ]
    raised = re.compile(r'Refusal\(\s*"([a-z_]+)"')
    codes = {code for file in files for code in raised.findall(file.read_text())}
    codes |= set(MEMORY_REFUSAL_CODES)
    codes |= {f"ledger_entry_{status}" for status in LedgerEntry.Status}
    return codes | {restriction.code for restriction in Restriction}


def test_every_refusal_says_whether_a_retry_gets_it_again() -> None:
    unclassified = _refusal_codes() - set(REFUSAL_ON_RETRY)
    assert not unclassified, f"classify in REFUSAL_ON_RETRY: {sorted(unclassified)}"
    assert len(_refusal_codes()) > 60
