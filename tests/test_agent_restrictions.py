"""An admin's restrictions on one agent's writes, as the agent and the people see them.

Paused: refused with the admin's reason, nothing written. Quarantined: everything lands
pending and stays so until a person confirms. Not trusted for stated memories: what it
says the person said lands pending; what it read from a tool does not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from ledger.actions.agents import restrict_agent, revoke_agent
from ledger.actors import Actor
from ledger.models import Agent, JournalEntry, LedgerEntry, Memory, Source, WriteDecision
from ledger.rules.agents import Restriction
from ledger.rules.refusals import Refusal
from tests.conftest import SUBJECT, agent_client, body, signed_in

pytestmark = pytest.mark.django_db
URL = "/api/v1/memories"
LEDGER = f"/api/v1/subjects/{SUBJECT}/ledger"
ADMIN = Actor.system("test-admin")
PAUSED_WHY = "Writing duplicates since the 14:00 deploy"
QUARANTINE_WHY = "Misreads refunds; every write checked by hand until fixed."
DISTRUST_WHY = "Its transcript parser invents quotes."


@pytest.fixture
def bot() -> tuple[APIClient, Agent]:
    return agent_client("crm-assistant", ["read", "write"])


def restrict(agent: Agent, restriction: Restriction, why: str, *, on: bool = True) -> Agent:
    return restrict_agent(agent=agent, actor=ADMIN, restriction=restriction, on=on, reason=why)


def write(client: APIClient, **overrides: Any) -> Any:
    return client.post(URL, body(**overrides), format="json")


def from_tool(ref: str = "crm:contact-42") -> dict[str, Any]:
    return {"kind": "tool_result", "ref": ref, "run": "run_77"}


def from_message(ref: str) -> dict[str, Any]:
    return {"kind": "user_message", "ref": ref, "run": "run_77"}


def ledger_entry(**overrides: Any) -> dict[str, Any]:
    data = {
        "fact": "Invoice 1042 was paid in full on 2026-11-02.",
        "kind": "established",
        "source": {"kind": "tool_result", "ref": "billing:inv-1042"},
    }
    return {**data, **overrides}


# Paused.


def test_paused_agents_memory_write_is_refused_with_the_admins_reason(
    bot: tuple[APIClient, Agent],
) -> None:
    client, agent = bot
    restrict(agent, Restriction.WRITES_PAUSED, PAUSED_WHY)
    response = write(client)
    assert response.status_code == 423
    data = response.json()
    assert data["code"] == "agent_writes_paused"
    assert PAUSED_WHY in data["detail"] and "Nothing was written" in data["detail"]
    assert data["decision"]["outcome"] == "refused"
    assert data["decision"]["restriction"] == {"name": "writes_paused", "reason": PAUSED_WHY}
    assert not Memory.objects.exists() and not Source.objects.exists()
    decision = WriteDecision.objects.get()
    assert decision.outcome == "refused" and decision.code == "agent_writes_paused"
    assert PAUSED_WHY in decision.reason


def test_paused_agent_cannot_correct_delete_or_record_in_the_ledger(
    bot: tuple[APIClient, Agent],
) -> None:
    client, agent = bot
    memory = write(client).json()["memory"]
    assert client.post(LEDGER, ledger_entry(), format="json").status_code == 201
    restrict(agent, Restriction.WRITES_PAUSED, PAUSED_WHY)

    corrected = client.post(
        f"{URL}/{memory['id']}/corrections",
        {"statement": "Prefers post.", "reason": "The person said so."},
        format="json",
    )
    deleted = client.post(f"{URL}/{memory['id']}/retract", {"reason": "wrong"}, format="json")
    recorded = client.post(
        LEDGER, ledger_entry(fact="Invoice 1043 was paid.", key="inv.1043"), format="json"
    )
    for response in (corrected, deleted, recorded):
        assert response.status_code == 423, response.json()
        assert response.json()["code"] == "agent_writes_paused"
        assert PAUSED_WHY in response.json()["detail"]
    assert Memory.objects.get().status == "active"
    assert LedgerEntry.objects.count() == 1


def test_paused_agent_starts_no_side_effect_but_reports_what_it_already_began(
    bot: tuple[APIClient, Agent],
) -> None:
    client, agent = bot
    journal = "/api/v1/runs/run_77/journal"
    intent = {"idempotency_key": "refund-1", "action": "payments.refund", "intent": {"o": 1}}
    assert client.post(journal, intent, format="json").status_code == 201
    restrict(agent, Restriction.WRITES_PAUSED, PAUSED_WHY)

    refused = client.post(journal, {**intent, "idempotency_key": "refund-2"}, format="json")
    assert refused.status_code == 423 and PAUSED_WHY in refused.json()["detail"]
    reported = client.patch(
        "/api/v1/journal/refund-1", {"state": "unknown", "effect": {"http": 504}}, format="json"
    )
    assert reported.status_code == 200, reported.json()
    assert list(JournalEntry.objects.values_list("idempotency_key", "state")) == [
        ("refund-1", "unknown")
    ]
    # The run's own working state is not about anyone: it survives the pause.
    note = client.put("/api/v1/runs/run_77/notes/next", {"value": "wait"}, format="json")
    assert note.status_code in (200, 201)


@pytest.mark.parametrize("restriction", [Restriction.WRITES_PAUSED, Restriction.QUARANTINED])
def test_restricted_tooling_cannot_delete_in_batches(
    bot: tuple[APIClient, Agent], restriction: Restriction
) -> None:
    write(bot[0])
    tooling, agent = agent_client("support-tooling", ["read", "staff"])
    restrict(agent, restriction, "Under review.")
    dry = tooling.post("/api/v1/retractions", {"run": "run_77", "dry_run": True}, format="json")
    assert dry.status_code == 200
    response = tooling.post("/api/v1/retractions", {"run": "run_77", "reason": "x"}, format="json")
    assert response.status_code == 423
    assert "Under review." in response.json()["detail"]
    assert Memory.objects.get().status == "active"


def test_paused_agent_still_reads(bot: tuple[APIClient, Agent]) -> None:
    client, agent = bot
    write(client)
    restrict(agent, Restriction.WRITES_PAUSED, PAUSED_WHY)
    assert client.get(f"/api/v1/subjects/{SUBJECT}/recall").status_code == 200


# Quarantined.


def test_quarantined_agents_stated_write_lands_pending_saying_why(
    bot: tuple[APIClient, Agent],
) -> None:
    client, agent = bot
    restrict(agent, Restriction.QUARANTINED, QUARANTINE_WHY)
    response = write(client)
    assert response.status_code == 201
    data = response.json()
    assert data["memory"]["status"] == "pending"
    assert data["decision"]["outcome"] == "pending"
    assert "Quarantined by an admin" in data["decision"]["reason"]
    assert QUARANTINE_WHY in data["decision"]["reason"]
    assert data["decision"]["restriction"] == {"name": "quarantined", "reason": QUARANTINE_WHY}
    decision = WriteDecision.objects.get()
    assert decision.outcome == "pending" and decision.code == "agent_quarantined"
    memory = Memory.objects.get()
    assert QUARANTINE_WHY in memory.history.first().history_change_reason
    # Agents are not given what waits for a person.
    recall = client.get(f"/api/v1/subjects/{SUBJECT}/recall").json()
    assert "Prefers email" not in str(recall)


def test_quarantined_agents_repeats_never_promote_its_memory(
    bot: tuple[APIClient, Agent],
) -> None:
    client, agent = bot
    restrict(agent, Restriction.QUARANTINED, QUARANTINE_WHY)
    guess = {"basis": "inferred", "key": "", "expires_at": ...}
    write(client, **guess, source=from_tool("crm:1"))
    # A second, different source would corroborate a guess from anyone else.
    again = write(client, **guess, source=from_tool("crm:2"))
    assert again.status_code == 200
    assert again.json()["decision"]["outcome"] == "merged"
    assert "stays pending" in again.json()["decision"]["reason"]
    assert Memory.objects.get().status == "pending"
    assert Memory.objects.get().sources.count() == 2


def test_another_agents_repeat_does_not_confirm_what_a_quarantined_agent_wrote(
    bot: tuple[APIClient, Agent],
) -> None:
    client, agent = bot
    restrict(agent, Restriction.QUARANTINED, QUARANTINE_WHY)
    write(client)
    other, _ = agent_client("billing-bot", ["read", "write"])
    response = write(other, source={"kind": "user_message", "ref": "msg_other"})
    assert response.json()["decision"]["outcome"] == "merged", response.json()
    assert "crm-assistant" in response.json()["decision"]["reason"]
    assert Memory.objects.get().status == "pending"


def test_quarantined_agents_deletion_and_correction_are_refused(
    bot: tuple[APIClient, Agent],
) -> None:
    client, agent = bot
    first = write(client).json()["memory"]
    restrict(agent, Restriction.QUARANTINED, QUARANTINE_WHY)

    deleted = client.post(f"{URL}/{first['id']}/retract", {"reason": "x"}, format="json")
    assert deleted.status_code == 423
    assert deleted.json()["code"] == "agent_quarantined"
    assert "cannot wait" in deleted.json()["detail"]
    assert Memory.objects.get().status == "active"

    corrected = client.post(
        f"{URL}/{first['id']}/corrections",
        {
            "statement": "Prefers post.",
            "reason": "The person said so.",
            "source": from_message("msg_9"),
        },
        format="json",
    )
    # A correction would take the original out of use at once: a deletion by another name.
    assert corrected.status_code == 423, corrected.json()
    assert corrected.json()["code"] == "agent_quarantined"
    assert "a correction" in corrected.json()["detail"]
    assert Memory.objects.get().status == "active"


def test_quarantined_agents_ledger_entry_is_refused(bot: tuple[APIClient, Agent]) -> None:
    client, agent = bot
    write(client)
    restrict(agent, Restriction.QUARANTINED, QUARANTINE_WHY)
    response = client.post(LEDGER, ledger_entry(), format="json")
    assert response.status_code == 423
    assert QUARANTINE_WHY in response.json()["detail"]
    assert not LedgerEntry.objects.exists()


def test_a_person_confirms_what_a_quarantined_agent_wrote(
    bot: tuple[APIClient, Agent], make_person: Callable[..., User]
) -> None:
    client, agent = bot
    restrict(agent, Restriction.QUARANTINED, QUARANTINE_WHY)
    memory = write(client).json()["memory"]
    dana = make_person("dana", subject=SUBJECT)
    page = signed_in(dana).get(f"/subjects/{SUBJECT}/")
    assert "Prefers email over telephone" in page.content.decode()
    answered = signed_in(dana).post(f"/memories/{memory['id']}/answer/", {"answer": "yes"})
    assert answered.status_code in (200, 302)
    confirmed = Memory.objects.get()
    assert confirmed.status == "active" and confirmed.stated_by == "confirmation"


def test_supports_confirmation_of_a_held_statement_is_supports(
    bot: tuple[APIClient, Agent], make_person: Callable[..., User]
) -> None:
    client, agent = bot
    restrict(agent, Restriction.STATED_UNTRUSTED, DISTRUST_WHY)
    memory = write(client).json()["memory"]
    sam = make_person("sam", role="support")
    answered = signed_in(sam).post(
        f"/memories/{memory['id']}/answer/", {"answer": "yes", "reason": "Called the person."}
    )
    assert answered.status_code in (200, 302)
    # It was only the agent's claim: it is now support's word, never the person's.
    assert Memory.objects.get().stated_by == "support_confirmation"


# Not trusted for stated memories.


def test_distrusted_agents_user_message_statement_lands_pending(
    bot: tuple[APIClient, Agent],
) -> None:
    client, agent = bot
    restrict(agent, Restriction.STATED_UNTRUSTED, DISTRUST_WHY)
    response = write(client)
    data = response.json()
    assert response.status_code == 201
    assert data["memory"]["status"] == "pending"
    assert "not trusted for what people said" in data["decision"]["reason"]
    assert DISTRUST_WHY in data["decision"]["reason"]
    assert data["decision"]["restriction"] == {"name": "stated_untrusted", "reason": DISTRUST_WHY}
    # Its own repeat of the same claim is no corroboration.
    again = write(client, source=from_message("msg_0193"))
    assert again.json()["decision"]["outcome"] == "merged"
    assert Memory.objects.get().status == "pending"


def test_distrusted_agents_repeat_from_a_tool_does_not_launder_its_claim(
    bot: tuple[APIClient, Agent],
) -> None:
    client, agent = bot
    restrict(agent, Restriction.STATED_UNTRUSTED, DISTRUST_WHY)
    write(client)
    again = write(client, source=from_tool())
    assert again.json()["decision"]["outcome"] == "merged"
    assert "only a person's confirmation makes it active" in again.json()["decision"]["reason"]
    assert Memory.objects.get().status == "pending"


def test_a_held_statement_stays_pending_once_the_restriction_is_lifted(
    bot: tuple[APIClient, Agent],
) -> None:
    client, agent = bot
    agent = restrict(agent, Restriction.QUARANTINED, QUARANTINE_WHY)
    write(client)
    restrict(agent, Restriction.QUARANTINED, "Fixed in 2.4.1.", on=False)
    write(client, source=from_message("msg_0193"))
    other, _ = agent_client("billing-bot", ["read", "write"])
    write(other, source={"kind": "user_message", "ref": "msg_other"})
    assert Memory.objects.get().status == "pending"


def test_distrusted_agents_tool_result_statement_is_active(
    bot: tuple[APIClient, Agent],
) -> None:
    client, agent = bot
    restrict(agent, Restriction.STATED_UNTRUSTED, DISTRUST_WHY)
    response = write(client, source=from_tool())
    assert response.status_code == 201
    assert response.json()["memory"]["status"] == "active"
    assert "restriction" not in response.json()["decision"]


@pytest.mark.parametrize(
    "said",
    [
        {"kind": "user_message", "ref": "msg_5"},
        # Another system's record of what the person stated is no better a source.
        {"kind": "import", "ref": "crm-export.json:12"},
    ],
)
def test_distrusted_agent_cannot_establish_a_fact_on_the_persons_word(
    bot: tuple[APIClient, Agent], said: dict[str, str]
) -> None:
    client, agent = bot
    write(client, source=from_tool())
    restrict(agent, Restriction.STATED_UNTRUSTED, DISTRUST_WHY)
    refused = client.post(LEDGER, ledger_entry(source=said), format="json")
    assert refused.status_code == 423
    assert "interpretation" in refused.json()["detail"]
    interpreted = client.post(
        LEDGER, ledger_entry(kind="interpretation", source=said), format="json"
    )
    assert interpreted.status_code == 201
    assert client.post(LEDGER, ledger_entry(), format="json").status_code == 201


# Lifting.


@pytest.mark.parametrize(
    "restriction",
    [Restriction.WRITES_PAUSED, Restriction.QUARANTINED, Restriction.STATED_UNTRUSTED],
)
def test_lifting_a_restriction_restores_normal_writes(
    bot: tuple[APIClient, Agent], restriction: Restriction
) -> None:
    client, agent = bot
    agent = restrict(agent, restriction, "Checking.")
    assert write(client).status_code in (201, 423)
    restrict(agent, restriction, "Fixed in 2.4.1.", on=False)
    response = write(client, statement="Prefers post over email.", key="contact.post")
    assert response.status_code == 201
    assert response.json()["memory"]["status"] == "active"
    assert "restriction" not in response.json()["decision"]


def test_inferred_write_of_a_quarantined_agent_says_the_quarantine(
    bot: tuple[APIClient, Agent],
) -> None:
    client, agent = bot
    restrict(agent, Restriction.QUARANTINED, QUARANTINE_WHY)
    response = write(client, basis="inferred", expires_at=..., source=from_tool())
    assert response.json()["memory"]["status"] == "pending"
    assert QUARANTINE_WHY in response.json()["decision"]["reason"]


@pytest.mark.parametrize(
    ("restriction", "started", "ended"),
    [
        (Restriction.WRITES_PAUSED, "Writes paused", "Pause lifted"),
        (Restriction.QUARANTINED, "Quarantine started", "Quarantine ended"),
        (
            Restriction.STATED_UNTRUSTED,
            "Stated memories no longer trusted",
            "Stated memories trusted again",
        ),
    ],
)
def test_the_history_keeps_what_happened_then_the_admins_words(
    bot: tuple[APIClient, Agent], restriction: Restriction, started: str, ended: str
) -> None:
    _, agent = bot
    restrict(agent, restriction, "Under  review.")
    restrict(agent, restriction, "Fixed in 2.4.", on=False)
    reasons = Agent.history.filter(id=agent.pk).order_by("history_id")
    assert list(reasons.values_list("history_change_reason", flat=True))[-2:] == [
        f"{started}: Under review.",
        f"{ended}: Fixed in 2.4.",
    ]


def test_a_revoked_agent_takes_no_restriction(bot: tuple[APIClient, Agent]) -> None:
    _, agent = bot
    revoke_agent(agent=agent, actor=ADMIN, reason="Retired.")
    with pytest.raises(Refusal, match="no writes to restrict"):
        restrict(agent, Restriction.QUARANTINED, "Just in case.")
    assert not Agent.objects.get().quarantined
