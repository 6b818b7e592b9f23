"""The management commands a newcomer and an operator use."""

from __future__ import annotations

import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import authenticate
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from ledger.models import Agent, Conflict, JournalEntry, LedgerEntry, Memory, Snapshot, Subject

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parent.parent


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_create_agent_key_prints_a_working_key_on_the_last_line() -> None:
    output = run("create_agent_key", "crm-bot", "--scopes", "read,write")
    key = output.strip().splitlines()[-1]
    agent = Agent.objects.get(name="crm-bot")
    assert agent.scopes == ["read", "write"]
    assert key not in agent.key_hash
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert client.get("/api/v1/memories").status_code == 200


def test_create_agent_key_refuses_unknown_scopes() -> None:
    with pytest.raises(CommandError, match="unknown scope"):
        run("create_agent_key", "bot", "--scopes", "read,admin")
    assert not Agent.objects.exists()


def test_create_person_uses_the_password_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("PERSON_PASSWORD", "correct-horse-battery")
    run("create_person", "dana", "--role", "user", "--subject", "acct_1")
    user = authenticate(username="dana", password="correct-horse-battery")
    assert user is not None
    assert Subject.objects.get(ref="acct_1").owner == user


def test_create_person_support_role_joins_the_group(monkeypatch) -> None:
    monkeypatch.setenv("PERSON_PASSWORD", "correct-horse-battery")
    run("create_person", "sam", "--role", "support")
    user = authenticate(username="sam", password="correct-horse-battery")
    assert [g.name for g in user.groups.all()] == ["support"]


def test_create_person_without_password_is_refused(monkeypatch) -> None:
    monkeypatch.delenv("PERSON_PASSWORD", raising=False)
    with pytest.raises(CommandError, match="PERSON_PASSWORD"):
        run("create_person", "dana", "--role", "user")


def test_seed_demo_loads_a_realistic_demo_once() -> None:
    run("seed_demo")
    counts = {s: Memory.objects.filter(status=s).count() for s in Memory.Status.values}
    assert counts["pending"] >= 1
    assert counts["expired"] == 1
    assert counts["superseded"] == 1
    assert Conflict.objects.open().count() == 1
    assert Memory.objects.filter(basis="inferred").exists()
    assert Subject.objects.get(owner__username="dana").ref == "acct_4b71c9e20d8af315"
    assert list(Snapshot.objects.order_by("generation").values_list("status", flat=True)) == [
        "accepted",
        "rejected",
        "accepted",
    ]
    assert JournalEntry.objects.filter(state="unknown").exists()
    assert LedgerEntry.objects.in_force().filter(kind="commitment").exists()
    before = Memory.objects.count()
    output = run("seed_demo")
    assert "already loaded" in output
    assert Memory.objects.count() == before


def test_production_settings_refuse_to_start_without_a_secret_key() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DEBUG")}
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env=env | {"DJANGO_SETTINGS_MODULE": "memoryadmin.settings"},
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_revoked_key_is_refused_at_once() -> None:
    key = run("create_agent_key", "leaky", "--scopes", "read").strip().splitlines()[-1]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert client.get("/api/v1/memories").status_code == 200
    run("revoke_agent_key", "leaky", "--reason", "Key pasted in a public chat.")
    response = client.get("/api/v1/memories")
    assert response.status_code == 401
    assert "revoked" in response.json()["detail"]
    assert Agent.history.first().history_change_reason == "Key pasted in a public chat."
