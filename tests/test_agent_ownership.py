"""An agent changes only what it wrote, unless an admin lets agents change each other's writes
(``Policy.agents_change_others``) or its key holds the staff scope.

Every write route of the API that acts on something already written is listed below, with
what another agent's call to it does; ``test_every_write_route_is_listed`` fails when a new
one is not. The MCP tools and the Python client call these same routes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.urls import URLPattern, URLResolver, resolve, reverse
from rest_framework.test import APIClient

from ledger import access
from ledger.actions.journal import journal_intent
from ledger.actions.notes import delete_note, write_note
from ledger.actions.policy import change_policy
from ledger.actions.retractions import Selection, retract_batch, undo_batch
from ledger.actors import Actor
from ledger.api import urls as api_urls
from ledger.api.tools import tools
from ledger.models import (
    Agent,
    JournalEntry,
    LedgerEntry,
    Memory,
    Policy,
    RetractionBatch,
    Run,
    RunNote,
    Snapshot,
)
from ledger.rules.agents import refuse_others_write, refuse_others_writes
from ledger.rules.refusals import Refusal
from ledger.rules.write_policy import POLICY_SETTING_NAMES, policy_problems
from tests.conftest import SUBJECT, agent_client, body, signed_in
from tests.test_policy_page import form as policy_form
from tests.test_snapshots_api import snapshot_body

pytestmark = pytest.mark.django_db
API = "/api/v1"
RUN = "run_alice_1"
NOTE = "next-step"
JOURNAL_KEY = "refund-order-77"
COMMITMENT = "Call back before Friday."
SOURCE = {"kind": "user_message", "ref": "msg_agreed", "excerpt": "yes, go ahead"}


@dataclass(frozen=True)
class Written:
    """What the agent alice wrote, for another agent to try to change."""

    memory: str
    proposal: str
    commitment: str


def allow_others() -> None:
    change_policy(
        actor=Actor.system("test"),
        reason="Our agents share one subject's memory.",
        agents_change_others=True,
    )


@pytest.fixture
def alice() -> APIClient:
    return agent_client("alice", ["read", "write"])[0]


@pytest.fixture
def bob() -> APIClient:
    return agent_client("bob", ["read", "write"])[0]


@pytest.fixture
def sweeper() -> APIClient:
    """Support's tooling: a key an admin gave the staff scope."""
    return agent_client("sweeper", ["read", "write", "staff"])[0]


def ok(response: Any, code: int = 201) -> dict[str, Any]:
    assert response.status_code == code, response.json()
    data: dict[str, Any] = response.json()
    return data


def entry(kind: str, fact: str, run: str | None = RUN) -> dict[str, Any]:
    data = {"fact": fact, "kind": kind, "source": {"kind": "tool_result", "ref": f"crm:{kind}"}}
    return data if run is None else {**data, "run": run}


def carrying_commitment() -> dict[str, Any]:
    """A snapshot of alice's run, which must carry her commitment verbatim."""
    return snapshot_body(pinned=["The user's name is Dana.", COMMITMENT])


@pytest.fixture
def written(alice: APIClient) -> Written:
    memory = ok(alice.post(f"{API}/memories", body(key=""), format="json"))["memory"]["id"]
    ledger = f"{API}/subjects/{SUBJECT}/ledger"
    proposal = ok(alice.post(ledger, entry("proposal", "Offer a 10% discount."), format="json"))
    commitment = ok(alice.post(ledger, entry("commitment", COMMITMENT), "json"))
    ok(alice.put(f"{API}/runs/{RUN}/notes/{NOTE}", {"value": "ask about invoices"}, "json"))
    intent = {"idempotency_key": JOURNAL_KEY, "action": "refund", "intent": {"order": 77}}
    ok(alice.post(f"{API}/runs/{RUN}/journal", intent, format="json"))
    ok(alice.post(f"{API}/runs/{RUN}/snapshots", carrying_commitment(), format="json"))
    return Written(memory, proposal["entry"]["id"], commitment["entry"]["id"])


def state() -> tuple[Any, ...]:
    """Everything another agent's change could touch, as it stands."""
    return (
        sorted(Memory.objects.values_list("statement", "status", "version")),
        sorted(LedgerEntry.objects.values_list("fact", "kind", "status", "version")),
        sorted(JournalEntry.objects.values_list("idempotency_key", "state")),
        sorted(RunNote.objects.values_list("key", "value")),
        Snapshot.objects.count(),
        Memory.history.count(),
        LedgerEntry.history.count(),
    )


# Each change another agent may make to alice's memories and ledger entries, by route.
Change = Callable[[APIClient, Written], Any]
CHANGES: dict[str, tuple[Change, int]] = {
    "MemoryViewSet.corrections": (
        lambda c, w: c.post(
            f"{API}/memories/{w.memory}/corrections",
            {"statement": "Prefers a phone call.", "reason": "Said so today.", "source": SOURCE},
            format="json",
        ),
        201,
    ),
    "MemoryViewSet.retract": (
        lambda c, w: c.post(f"{API}/memories/{w.memory}/retract", {"reason": "Wrong."}, "json"),
        200,
    ),
    "LedgerEntryViewSet.promote": (
        lambda c, w: c.post(f"{API}/ledger/{w.proposal}/promote", {"source": SOURCE}, "json"),
        200,
    ),
    "LedgerEntryViewSet.supersede": (
        lambda c, w: c.post(
            f"{API}/ledger/{w.commitment}/supersede",
            # In no run: alice's run is hers alone, whatever the policy.
            {**entry("commitment", "Call back before Monday.", run=None), "reason": "Moved."},
            format="json",
        ),
        201,
    ),
    "LedgerEntryViewSet.withdraw": (
        lambda c, w: c.post(f"{API}/ledger/{w.commitment}/withdraw", {"reason": "Done."}, "json"),
        200,
    ),
    "LedgerEntryViewSet.partial_update": (
        lambda c, w: c.patch(
            f"{API}/ledger/{w.commitment}",
            {"fact": "Call back before Thursday.", "reason": "Sooner."},
            format="json",
        ),
        200,
    ),
}

# A run, its journal, notes and snapshots are the working state of the agent that started
# it: another agent's run is as good as missing (404), whatever the policy says.
WORKING_STATE: dict[str, Change] = {
    "RunJournalView.post": lambda c, w: c.post(
        f"{API}/runs/{RUN}/journal",
        {"idempotency_key": "bobs-key", "action": "refund", "intent": {}},
        format="json",
    ),
    "JournalViewSet.partial_update": lambda c, w: c.patch(
        f"{API}/journal/{JOURNAL_KEY}", {"state": "not_done"}, format="json"
    ),
    "RunNoteView.put": lambda c, w: c.put(
        f"{API}/runs/{RUN}/notes/{NOTE}", {"value": "overwritten"}, format="json"
    ),
    "RunNoteView.delete": lambda c, w: c.delete(f"{API}/runs/{RUN}/notes/{NOTE}"),
    "RunSnapshotsView.post": lambda c, w: c.post(
        f"{API}/runs/{RUN}/snapshots", carrying_commitment(), format="json"
    ),
}

# Routes that write something new rather than change what is there: a repeat of another
# agent's memory merges into it as evidence, and changes nothing it said.
CREATES = {"MemoryViewSet.create", "SubjectLedgerView.post", "ImportsView.post"}
# Batch retractions and their undo need the staff scope (tested below, and through the
# action for an agent without it).
STAFF_ONLY = {"RetractionsView.post", "RetractionUndoView.post"}
WRITES = ("post", "put", "patch", "delete")


def write_routes() -> Iterator[tuple[str, str]]:
    """Every (route, handler) of the API that writes: ``View.method`` or ``ViewSet.action``."""

    def walk(patterns: list[Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
        for p in patterns:
            if isinstance(p, URLResolver):
                yield from walk(p.url_patterns, prefix + str(p.pattern))
            elif isinstance(p, URLPattern):
                yield prefix + str(p.pattern), p.callback

    for route, view in walk(api_urls.urlpatterns):
        name = view.cls.__name__
        actions = getattr(view, "actions", None)
        if actions is not None:
            for method, action in actions.items():
                if method in WRITES:
                    yield route, f"{name}.{action}"
        else:
            for method in WRITES:
                if hasattr(view.cls, method) and method in view.cls.http_method_names:
                    yield route, f"{name}.{method}"


def handler_of(method: str, path: str) -> str:
    view = resolve(path).func
    actions = getattr(view, "actions", None)
    name: str = view.cls.__name__
    return f"{name}.{actions[method.lower()] if actions else method.lower()}"


def test_every_write_route_is_listed() -> None:
    listed = {*CHANGES, *WORKING_STATE, *CREATES, *STAFF_ONLY}
    found = {handler for _, handler in write_routes()}
    assert found - listed == set(), "say what another agent's call does, and test it"
    assert listed - found == set(), "listed, but no longer a route"


def test_every_tool_an_agent_calls_is_a_listed_route() -> None:
    """The MCP server's tools are these routes, called with the agent's key."""
    samples = {"run": RUN, "key": NOTE, "subject": SUBJECT, "idempotency_key": JOURNAL_KEY}
    listed = {*CHANGES, *WORKING_STATE, *CREATES, *STAFF_ONLY}
    for tool in tools(20):
        if tool.method == "GET":
            continue
        path = tool.path.format(**{arg: samples[arg] for arg in tool.path_args})
        assert handler_of(tool.method, path) in listed, tool.name


def refused(change: Change, client: APIClient, written: Written) -> None:
    """``client``'s change to alice's write is refused in words, and nothing changes."""
    before = state()
    response = change(client, written)
    assert response.status_code == 403, response.json()
    refusal = response.json()
    assert refusal["code"] == "not_your_write"
    assert "written by the agent 'alice', not by 'bob'" in refusal["detail"]
    assert refusal["detail"].endswith("Nothing was changed.")
    assert state() == before


@pytest.mark.parametrize("route", sorted(CHANGES))
def test_another_agent_is_refused_by_default_and_the_writer_is_not(
    route: str, written: Written, bob: APIClient, alice: APIClient
) -> None:
    change, code = CHANGES[route]
    refused(change, bob, written)
    assert change(alice, written).status_code == code


@pytest.mark.parametrize("route", sorted(CHANGES))
def test_another_agent_may_when_the_policy_lets_agents_change_each_others_writes(
    route: str, written: Written, bob: APIClient
) -> None:
    allow_others()
    change, code = CHANGES[route]
    before = state()
    assert change(bob, written).status_code == code
    assert state() != before


@pytest.mark.parametrize("route", sorted(CHANGES))
def test_a_key_with_the_staff_scope_may_change_what_other_agents_may_not(
    route: str, written: Written, bob: APIClient, sweeper: APIClient
) -> None:
    change, code = CHANGES[route]
    refused(change, bob, written)
    assert change(sweeper, written).status_code == code


@pytest.mark.parametrize("others_allowed", [False, True])
@pytest.mark.parametrize("route", sorted(WORKING_STATE))
def test_another_agents_run_stays_its_own_whatever_the_policy(
    route: str, others_allowed: bool, written: Written, bob: APIClient
) -> None:
    if others_allowed:
        allow_others()
    before = state()
    assert WORKING_STATE[route](bob, written).status_code == 404
    assert state() == before


def test_a_memory_a_person_corrected_is_not_an_agents_to_change(
    written: Written, alice: APIClient, make_person: Callable[..., Any]
) -> None:
    make_person("dana", subject=SUBJECT)
    dana = signed_in("dana")
    edit = reverse("memory-edit", args=[written.memory])
    assert dana.post(edit, {"statement": "Prefers letters."}).status_code == 302
    corrected = Memory.objects.get(statement="Prefers letters.")
    response = alice.post(f"{API}/memories/{corrected.pk}/retract", {"reason": "Old."}, "json")
    assert response.status_code == 403
    assert "written by a person or an import, not by 'alice'" in response.json()["detail"]
    assert Memory.objects.get(pk=corrected.pk).status == "active"


def test_the_policy_page_turns_it_on_with_a_reason_and_keeps_the_version(
    make_person: Callable[..., Any],
) -> None:
    make_person("ada", role="admin")
    ada = signed_in("ada")
    page = ada.get(reverse("policy")).content.decode()
    assert "Agents change each other" in page
    assert 'type="checkbox" id="id_agents_change_others"' in page
    assert "In force now: off: each agent changes only its own writes." in page
    typed = policy_form(reason="Our agents share one desk.")
    typed["agents_change_others"] = "on"
    response = ada.post(reverse("policy"), typed)
    assert response.status_code == 302
    current = Policy.current()
    assert current.agents_change_others is True
    assert current.version == 2
    page = ada.get(reverse("policy")).content.decode()
    assert "off: each agent changes only its own writes</del> → <ins>on: any agent" in page
    # Unticked, the box is not sent at all: off again.
    typed = policy_form(reason="Back to each its own.")
    typed.pop("agents_change_others")
    assert ada.post(reverse("policy"), typed).status_code == 302
    assert Policy.current().agents_change_others is False


# Batch retractions: all or nothing.


def agent(name: str) -> Agent:
    return Agent.objects.get(name=name)


def test_a_batch_by_an_agent_that_would_take_anothers_writes_is_refused_as_a_whole(
    written: Written, bob: APIClient
) -> None:
    source = {"kind": "user_message", "ref": "msg_0192", "run": "run_bob"}
    mine = body(key="", statement="Lives in Leeds.", source=source)
    ok(bob.post(f"{API}/memories", mine, format="json"))
    before = state()
    with pytest.raises(Refusal) as refused:
        retract_batch(
            selection=Selection(source_ref="msg_0192"),
            actor=Actor.for_agent(agent("bob")),
            reason="Poisoned message.",
        )
    assert refused.value.code == "not_your_write"
    assert refused.value.status == 403
    assert "would change 1 memory 'bob' did not write (the agent 'alice': 1)" in (
        refused.value.detail
    )
    assert state() == before and not RetractionBatch.objects.exists()
    # Narrowed to its own writes, it goes through.
    batch = retract_batch(
        selection=Selection(source_ref="msg_0192", agent="bob"),
        actor=Actor.for_agent(agent("bob")),
        reason="Poisoned message.",
    )
    assert [item.memory.statement for item in batch.items.all()] == ["Lives in Leeds."]


def test_a_batch_by_an_agent_takes_anothers_writes_when_the_policy_allows(
    written: Written, bob: APIClient
) -> None:
    allow_others()
    batch = retract_batch(
        selection=Selection(agent="alice"), actor=Actor.for_agent(agent("bob")), reason="Bad."
    )
    assert batch.items.count() == 1
    assert Memory.objects.get(pk=written.memory).status == "retracted"


def test_a_staff_key_retracts_and_undoes_any_agents_writes_through_the_api(
    written: Written, sweeper: APIClient
) -> None:
    batch = ok(sweeper.post(f"{API}/retractions", {"agent": "alice", "reason": "Bad."}, "json"))
    assert Memory.objects.get(pk=written.memory).status == "retracted"
    undo = f"{API}/retractions/{batch['id']}/undo"
    ok(sweeper.post(undo, {"reason": "It was fine."}, format="json"), 200)
    assert Memory.objects.get(pk=written.memory).status == "active"


def test_undoing_a_batch_of_anothers_writes_is_refused_to_an_agent_without_staff_scope(
    written: Written, sweeper: APIClient, bob: APIClient
) -> None:
    made = ok(sweeper.post(f"{API}/retractions", {"agent": "alice", "reason": "Bad."}, "json"))
    batch = RetractionBatch.objects.get(pk=made["id"])
    with pytest.raises(Refusal) as refused:
        undo_batch(batch=batch, actor=Actor.for_agent(agent("bob")), reason="Fine after all.")
    assert refused.value.code == "not_your_write"
    assert Memory.objects.get(pk=written.memory).status == "retracted"
    allow_others()
    report = undo_batch(batch=batch, actor=Actor.for_agent(agent("bob")), reason="Fine.")
    assert [m.pk for m in report.restored] == [Memory.objects.get(pk=written.memory).pk]


# The rules, directly.


def test_the_rule_refuses_only_another_writers_row_while_the_policy_is_off() -> None:
    refuse_others_write(agent="bob", writer="bob", what="This memory", others_allowed=False)
    refuse_others_write(agent="bob", writer="alice", what="This memory", others_allowed=True)
    with pytest.raises(Refusal) as by_agent:
        refuse_others_write(agent="bob", writer="alice", what="This memory", others_allowed=False)
    assert (by_agent.value.code, by_agent.value.status) == ("not_your_write", 403)
    with pytest.raises(Refusal) as by_person:
        refuse_others_write(
            agent="bob", writer=None, what="This ledger entry", others_allowed=False
        )
    assert by_person.value.detail.startswith(
        "This ledger entry was written by a person or an import, not by 'bob';"
    )


def test_the_batch_rule_counts_what_each_other_writer_wrote() -> None:
    refuse_others_writes(agent="bob", others={}, what="This batch deletion", others_allowed=False)
    others = {"alice": 2, None: 1}
    refuse_others_writes(agent="bob", others=others, what="A batch", others_allowed=True)
    with pytest.raises(Refusal) as refused:
        refuse_others_writes(agent="bob", others=others, what="A batch", others_allowed=False)
    assert "would change 3 memories 'bob' did not write (the agent 'alice': 2; a person or an " in (
        refused.value.detail
    )


def test_only_the_staff_scope_changes_any_write() -> None:
    assert access.may_change_any_write(["read", "write", "staff"])
    assert not access.may_change_any_write(["read", "write"])


@pytest.mark.parametrize("value", ["on", 1, None])
def test_the_switch_takes_only_on_or_off(value: object) -> None:
    values = {name: getattr(Policy(pk=1), name) for name in POLICY_SETTING_NAMES}
    assert policy_problems(values) == {}
    problems = policy_problems({**values, "agents_change_others": value})
    assert problems == {"agents_change_others": "Choose on or off."}


def test_the_write_functions_keep_another_agents_run_out_of_reach(written: Written) -> None:
    """Whatever calls them (a command, a task), not only the API's own lookup."""
    run = Run.objects.get(ref=RUN)
    bob = agent_client("bob", ["read", "write"])[1]
    allow_others()
    before = state()
    with pytest.raises(Refusal) as note:
        write_note(run=run, agent=bob, key=NOTE, value="overwritten")
    assert note.value.status == 404
    with pytest.raises(Refusal):
        delete_note(run=run, agent=bob, key=NOTE)
    with pytest.raises(Refusal) as journal:
        journal_intent(agent=bob, run=run, idempotency_key="bobs", action="refund", intent={})
    assert journal.value.code == "run_of_another_agent"
    assert state() == before
