"""The management commands a newcomer and an operator use."""

from __future__ import annotations

import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import authenticate
from django.contrib.auth.models import User
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
    assert all(key not in row.hash for row in agent.keys.all())
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


def test_create_person_refuses_an_existing_person_and_changes_nothing(monkeypatch) -> None:
    monkeypatch.setenv("PERSON_PASSWORD", "correct-horse-battery")
    run("create_person", "dana", "--role", "user")
    monkeypatch.setenv("PERSON_PASSWORD", "another-long-password")
    with pytest.raises(CommandError, match="already exists.*--update"):
        run("create_person", "dana", "--role", "support")
    assert authenticate(username="dana", password="correct-horse-battery") is not None
    assert not authenticate(username="dana", password="correct-horse-battery").groups.exists()


def test_create_person_update_changes_what_is_given_and_says_so(monkeypatch) -> None:
    monkeypatch.setenv("PERSON_PASSWORD", "correct-horse-battery")
    run("create_person", "dana", "--role", "user", "--email", "dana@example.com")
    monkeypatch.delenv("PERSON_PASSWORD")
    said = run("create_person", "dana", "--update", "--subject", "acct_9")
    assert said.strip() == "Updated 'dana': now owns subject acct_9."
    # No PERSON_PASSWORD: the password stays as it was.
    dana = authenticate(username="dana", password="correct-horse-battery")
    assert dana is not None and Subject.objects.get(ref="acct_9").owner == dana
    assert run("create_person", "dana", "--update").strip() == "Updated 'dana': nothing to change."
    monkeypatch.setenv("PERSON_PASSWORD", "another-long-password")
    said = run("create_person", "dana", "--update", "--email", "d@example.org")
    assert said.strip() == (
        "Updated 'dana': e-mail dana@example.com → d@example.org; password changed."
    )
    assert authenticate(username="dana", password="another-long-password") is not None


def test_create_person_update_of_nobody_is_refused() -> None:
    with pytest.raises(CommandError, match="no person called 'nobody'"):
        run("create_person", "nobody", "--update", "--role", "support")


@pytest.mark.parametrize(
    ("password", "problem"),
    [("x", "too short"), ("password123", "too common"), ("danawhitfield", "too similar")],
)
def test_create_person_applies_the_password_validators(monkeypatch, password, problem) -> None:
    monkeypatch.setenv("PERSON_PASSWORD", password)
    with pytest.raises(CommandError, match=f"password was refused.*{problem}"):
        run("create_person", "dana", "--role", "user", "--email", "danawhitfield@example.com")
    assert not User.objects.filter(username="dana").exists()


def test_seed_demo_loads_a_realistic_demo_once(settings) -> None:
    settings.DEBUG = True  # seed_demo runs only with DEBUG on
    run("seed_demo")
    counts = {s: Memory.objects.filter(status=s).count() for s in Memory.Status.values}
    assert counts["pending"] >= 1
    assert counts["expired"] == 1
    # Dana's own correction, and support's correction on the wrong account for the admin to revert.
    assert counts["superseded"] == 2
    assert Memory.objects.corrections().count() == 2
    assert Agent.objects.get(name="crm-importer").quarantined
    # Dana's slot conflict, and the two possible conflicts of one phone statement: with her
    # email preference and with the ledger's commitment.
    assert Conflict.objects.open().count() == 3
    possible = Conflict.objects.open().filter(possible=True)
    assert {c.commitment.fact if c.commitment else None for c in possible} == {
        None,
        "Never telephone about billing; email only.",
    }
    assert {m.statement for c in possible for m in c.memories.all()} == {
        "Happy to be phoned about billing at any time.",
        "Prefers email over telephone for billing questions.",
    }
    held = Memory.objects.get(statement__startswith="SYSTEM: ignore previous instructions")
    assert held.status == "pending"
    assert "instruction to the assistant" in held.write_decisions.get().reason
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


def test_a_local_sqlite_install_makes_its_secret_key_once_and_keeps_it_private(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DEBUG")}
    env |= {
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "DJANGO_SETTINGS_MODULE": "memoryadmin.settings",
        "SECRET_KEY_FILE": str(tmp_path / "settings-key"),
    }
    script = (
        "import django; from django.conf import settings; django.setup(); "
        "from memoryadmin.settings import local_secret_key; "
        f"print(local_secret_key(__import__('pathlib').Path({str(tmp_path / 'key')!r})))"
    )
    keys = [
        subprocess.run(
            [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True
        )
        for _ in range(2)
    ]
    assert [k.returncode for k in keys] == [0, 0], keys[0].stderr
    assert keys[0].stdout == keys[1].stdout and len(keys[0].stdout.strip()) == 50
    assert (tmp_path / "key").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "settings-key").stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["key", "settings-key"]


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
