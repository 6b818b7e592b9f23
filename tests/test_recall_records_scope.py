"""An agent reads the recall records of its own reads only: another agent's runs, goals
and blocks are that agent's working state, not something to learn through a memory."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ledger.models import Memory, Recall
from tests.conftest import SUBJECT, agent_client

pytestmark = pytest.mark.django_db


def recalls_url(memory: Memory) -> str:
    return f"/api/v1/memories/{memory.pk}/recalls"


def test_an_agent_sees_only_its_own_recalls_of_a_memory(
    remember: Callable[..., Memory],
) -> None:
    memory = remember("Prefers email.")
    alpha, _ = agent_client("alpha", ["read"])
    beta, _ = agent_client("beta", ["read"])
    recall = f"/api/v1/subjects/{SUBJECT}/recall"
    assert (
        alpha.get(recall, {"run": "run_alpha", "goal": "plan the alpha launch"}).status_code == 200
    )
    assert beta.get(recall, {"run": "run_beta", "goal": "beta's private errand"}).status_code == 200

    seen_by_alpha = alpha.get(recalls_url(memory)).json()["results"]
    seen_by_beta = beta.get(recalls_url(memory)).json()["results"]

    assert [(r["agent"], r["run"], r["goal"]) for r in seen_by_alpha] == [
        ("alpha", "run_alpha", "plan the alpha launch")
    ]
    assert [(r["agent"], r["run"], r["goal"]) for r in seen_by_beta] == [
        ("beta", "run_beta", "beta's private errand")
    ]


def test_an_agent_that_never_read_a_memory_sees_no_recalls_of_it(
    remember: Callable[..., Memory],
) -> None:
    memory = remember("Prefers email.")
    alpha, _ = agent_client("alpha", ["read"])
    outsider, _ = agent_client("outsider", ["read"])
    assert alpha.get(f"/api/v1/subjects/{SUBJECT}/recall", {"run": "run_alpha"}).status_code == 200

    response = outsider.get(recalls_url(memory))

    assert response.status_code == 200
    assert response.json()["results"] == []


def test_the_recalls_an_agent_may_read_are_one_chainable_rule(
    remember: Callable[..., Memory],
) -> None:
    # Every read of recall records asks the same question, on any queryset of them.
    remember("Prefers email.")
    alpha, alpha_agent = agent_client("alpha", ["read"])
    beta, _ = agent_client("beta", ["read"])
    for client, run in ((alpha, "run_alpha"), (beta, "run_beta")):
        assert client.get(f"/api/v1/subjects/{SUBJECT}/recall", {"run": run}).status_code == 200

    readable = Recall.objects.filter(subject__ref=SUBJECT).readable_by(alpha_agent)

    assert [recall.run.ref for recall in readable if recall.run] == ["run_alpha"]
