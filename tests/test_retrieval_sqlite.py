"""Retrieval on SQLite, the embedded default `make run` uses: the same ranking as on
PostgreSQL (it is done in Python), and finding by words that reach other forms of a word
("deliveries" finds "delivery"). Run in a process of its own on a fresh SQLite database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from ledger.actions.vectors import embed_missing
from ledger.models import Subject
from ledger.reads.recall import recall
from ledger.reads.retrieval import search_everything
from tests.conftest import SUBJECT

# Minutes long: started first (tests/conftest.py), so it never ends the run alone.
pytestmark = pytest.mark.long

STATEMENTS = (
    "Likes aisle seats on flights.",
    "Has a dog called Rex.",
    "Wants the delivery left with the neighbour.",
    "Pays by direct debit.",
)
GOAL = "pick where he sits on the plane"

SCRIPT = """
import json
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from ledger.actions.agents import create_agent
from ledger.actions.gate import MemoryInput, write_memory
from ledger.actions.people import create_person
from ledger.actions.sources import SourceInput
from ledger.actions.vectors import embed_missing
from ledger.actors import Actor
from ledger.models import Subject
from ledger.reads.recall import recall
from ledger.reads.retrieval import search_everything
actor = Actor.system("test")
agent = create_agent(name="fixture-agent", scopes=["write"], actor=actor)[0]
for statement in {statements!r}:
    write_memory(agent=agent, data=MemoryInput(
        subject="acct_sqlite", kind="preference", basis="stated", key="",
        statement=statement, source=SourceInput(kind="user_message", ref="msg_1")))
embed_missing()
sam = create_person(username="sam", password="a-long-password-1", role="support",
    subject_ref="", actor=actor)
result = recall(subject=Subject.objects.get(ref="acct_sqlite"), goal={goal!r}, k=2)
groups = search_everything("deliveries", sam)
print(json.dumps({{
    "served": [r.memory.statement for r in result.memories],
    "semantic": result.semantic,
    "found": {{g.title: [h.text for h in g.hits] for g in groups}},
}}))
"""


@pytest.mark.django_db
def test_sqlite_ranks_as_postgresql_and_finds_other_forms_of_a_word(
    remember, tmp_path: Path, make_person
) -> None:
    for statement in STATEMENTS:
        remember(statement, key="")
    embed_missing()
    result = recall(subject=Subject.objects.get(ref=SUBJECT), goal=GOAL, k=2)
    on_postgresql = [r.memory.statement for r in result.memories]
    (tmp_path / "broker" / "queue").mkdir(parents=True)
    (tmp_path / "broker" / "control").mkdir()
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "CELERY_BROKER_DIR": str(tmp_path / "broker"),
        "DJANGO_SETTINGS_MODULE": "memoryadmin.settings",
        "DEBUG": "1",
    }
    env.pop("CELERY_BROKER_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(statements=STATEMENTS, goal=GOAL)],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    there = json.loads(done.stdout.strip().splitlines()[-1])
    assert there["semantic"] == "used"
    assert there["served"] == on_postgresql
    assert there["served"][0] == "Likes aisle seats on flights."
    found = [text for texts in there["found"].values() for text in texts]
    assert "Wants the delivery left with the neighbour." in found
    # The same on PostgreSQL, through the same function.
    groups = search_everything("deliveries", make_person("sam", role="support"))
    assert "Wants the delivery left with the neighbour." in [
        hit.text for group in groups for hit in group.hits
    ]
