"""`examples/agent_loop.py`, run as a reader runs it: a subprocess against a live server with
the demo loaded. It must tell its story, leave the rows it describes, print links that open
for the person it names, run again on the same database, and explain a missing server."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from ledger.models import JournalEntry, LedgerEntry, Memory, Recall, Run, Snapshot

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "examples" / "agent_loop.py"
SUBJECT = "acct_example_agent_loop"
PREFERENCE = "Prefers a text message to a phone call when a delivery is on its way."
GUESS = "Usually orders new stock on Tuesdays."
COMMITMENT = "Never deliver on a Saturday: the shop is closed."

pytestmark = pytest.mark.usefixtures("transactional_db")


@pytest.fixture
def demo(transactional_db: None, settings: Any) -> None:
    # seed_demo runs, and the API takes the demo's key, only with DEBUG on.
    settings.DEBUG = True
    call_command("seed_demo", stdout=StringIO())


def run_example(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYADMIN_")}
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def told(ran: subprocess.CompletedProcess[str]) -> str:
    assert ran.returncode == 0, f"The example failed:\n{ran.stdout}\n{ran.stderr}"
    assert "Traceback" not in ran.stderr
    return ran.stdout


def run_of(story: str) -> Run:
    found = re.search(r"^memoryadmin agent loop: run (example-\S+) about", story, re.M)
    assert found, story
    return Run.objects.get(ref=found.group(1))


def links_in(story: str, base: str) -> dict[str, str]:
    """The dashboard links the story prints, by their name, as paths."""
    return dict(re.findall(rf"^ +(.+?): +{re.escape(base)}(/\S*)$", story, re.M))


def test_the_story_is_told_and_leaves_the_rows_it_tells_of(live_server: Any, demo: None) -> None:
    story = told(run_example("--base-url", live_server.url))
    # The gate's answers, as the model got them.
    assert "refused (422 system_of_record): The key 'contact.email' belongs to another" in story
    assert "pending: Inferred by one agent" in story
    assert f"| {PREFERENCE}" in story and "<<<END MEMORY" in story
    assert "The guess is not in it" in story
    assert "not carried verbatim" in story and f"“{COMMITMENT}”" in story

    run = run_of(story)
    assert run.subject is not None and run.subject.ref == SUBJECT
    stated = Memory.objects.get(subject__ref=SUBJECT, statement=PREFERENCE)
    assert (stated.status, stated.basis) == ("active", "stated")
    assert [(s.kind, s.run_id, s.excerpt) for s in stated.sources.all()] == [
        ("user_message", run.pk, "please text me rather than ring")
    ]
    guess = Memory.objects.get(subject__ref=SUBJECT, statement=GUESS)
    assert (guess.status, guess.basis) == ("pending", "inferred")
    assert guess.sources.get().kind == "tool_result"
    assert not Memory.objects.filter(subject__ref=SUBJECT, key="contact.email").exists()

    recall = Recall.objects.get(run=run)
    assert recall.goal == "tell Robin that order HLB-1042 is on its way"
    assert PREFERENCE in recall.block and GUESS not in recall.block

    commitment = LedgerEntry.objects.in_force().get(subject__ref=SUBJECT, kind="commitment")
    assert commitment.fact == COMMITMENT and commitment.run == run

    entry = JournalEntry.objects.get(run=run)
    assert (entry.action, entry.state) == ("send_sms", "done")
    assert entry.verification is not None and entry.verification["status"] == "delivered"
    assert entry.effect == {"error": "SMS gateway timed out after 30 s"}
    states = list(entry.history.order_by("history_date").values_list("state", flat=True))
    assert states == ["intended", "unknown", "done"]

    first, second = Snapshot.objects.filter(run=run).order_by("generation")
    assert (first.generation, first.status, first.problems) == (1, "accepted", [])
    assert (second.generation, second.status) == (2, "rejected")
    assert [(p["check"], p["items"]) for p in second.problems] == [("commitments", [COMMITMENT])]


def test_every_printed_link_opens_for_the_person_it_names(live_server: Any, demo: None) -> None:
    story = told(run_example("--base-url", live_server.url))
    assert "Sign in as sam (support), password demo-password-1" in story
    links = links_in(story, live_server.url)
    run = run_of(story).ref
    # What each page must show a person who opens it.
    expected = {
        "Robin's memories": PREFERENCE,
        "the memory's trace": "please text me rather than ring",
        "the recall": "tell Robin that order HLB-1042 is on its way",
        "the ledger": COMMITMENT,
        "this run": run,
        "its journal": "send_sms",
        "its compactions": "not carried verbatim",
        "what gen. 2 lost": COMMITMENT,
    }
    assert set(links) == set(expected)
    sam = Client()
    assert sam.login(username="sam", password="demo-password-1")
    for name, path in links.items():
        page = sam.get(path)
        assert page.status_code == 200, f"{name}: {path} answered {page.status_code}"
        assert expected[name] in page.content.decode(), f"{name}: {path}"


def test_a_second_run_tells_the_same_story_with_repeats(live_server: Any, demo: None) -> None:
    first = run_of(told(run_example("--base-url", live_server.url)))
    again = told(run_example("--base-url", live_server.url))
    second = run_of(again)
    assert second.ref != first.ref
    assert "repeat: Same statement as a live memory: the source was added as evidence." in again
    assert "already in force since" in again and f"(run {first.ref}): not recorded twice" in again
    assert "refused (422 system_of_record)" in again and "not carried verbatim" in again

    # One memory each, now with the evidence of both runs; one commitment, not two.
    stated = Memory.objects.get(subject__ref=SUBJECT, statement=PREFERENCE)
    runs = sorted(s.run_id for s in stated.sources.all() if s.run_id is not None)
    assert runs == sorted([first.pk, second.pk])
    assert Memory.objects.get(subject__ref=SUBJECT, statement=GUESS).status == "pending"
    assert LedgerEntry.objects.in_force().filter(subject__ref=SUBJECT).count() == 1
    assert JournalEntry.objects.get(run=second).state == "done"
    statuses = Snapshot.objects.filter(run=second).order_by("generation")
    assert [s.status for s in statuses] == ["accepted", "rejected"]


def test_without_a_server_it_says_to_start_one() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Nothing listens on the port once the probe is closed.
    ran = run_example("--base-url", f"http://127.0.0.1:{port}")
    assert ran.returncode == 2
    assert f"memoryadmin is not reachable at http://127.0.0.1:{port}" in ran.stderr
    assert "Start it with `make run` first" in ran.stderr
    assert "Traceback" not in ran.stderr and ran.stdout == ""


def test_a_refused_key_is_named(live_server: Any, demo: None) -> None:
    ran = run_example("--base-url", live_server.url, "--key", "ma_wrong_not-a-key")
    assert ran.returncode == 3
    assert "The key was refused" in ran.stderr and "Traceback" not in ran.stderr
    assert not Memory.objects.filter(subject__ref=SUBJECT).exists()
