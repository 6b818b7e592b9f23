"""People read words, not the values stored for programs: no enum value, actor label or
internal reference reaches a page, and every date reads one way, with its time zone."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from typing import Any

import pytest
import time_machine
from django.template import Context, Template
from django.urls import reverse

from ledger.actions.lifecycle import correct_memory
from ledger.actors import Actor
from ledger.models import Memory
from tests.conftest import SUBJECT, signed_in

pytestmark = pytest.mark.django_db


def text(html: str) -> str:
    """What a person reads: the page without its tags, white space folded."""
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_a_moment_reads_with_its_time_zone_and_a_day_without_a_time() -> None:
    rendered = Template("{% load dates %}{{ at|when }} / {{ on|day }} / {{ none|when }}.").render(
        Context({"at": datetime(2027, 12, 1, 14, 5, tzinfo=UTC), "on": date(2027, 12, 1)})
    )
    assert rendered == "1 December 2027, 14:05 UTC / 1 December 2027 / ."


def test_a_card_gives_the_year_even_in_this_year(make_person: Any, remember: Any) -> None:
    with time_machine.travel(datetime(2027, 3, 4, 9, 0, tzinfo=UTC), tick=False):
        make_person("dana", subject=SUBJECT)
        remember(
            "Likes short answers.",
            expires_at=datetime(2027, 9, 1, tzinfo=UTC),
            expires_omitted=False,
        )
        page = text(signed_in("dana").get(reverse("subject", args=[SUBJECT])).content.decode())
    assert "Expires on 1 September 2027." in page
    assert "of 4 March 2027." in page


def test_the_gate_reason_on_the_history_page_is_in_words(make_person: Any, remember: Any) -> None:
    make_person("dana", subject=SUBJECT)
    memory = remember("Works from the Lisbon office.", kind="account_fact")
    page = text(signed_in("dana").get(reverse("memory-history", args=[memory.pk])).content.decode())
    assert "Accepted: stated fact about the account." in page
    assert "account_fact" not in page


def test_a_dashboard_correction_is_said_in_words_to_support(
    make_person: Any, remember: Any
) -> None:
    make_person("dana", subject=SUBJECT)
    sam = make_person("sam", role="support")
    old = remember("Likes short answers.")
    new = correct_memory(
        memory=old, actor=Actor.for_user(sam), statement="Likes long answers.", reason="asked"
    )
    page = text(signed_in("sam").get(reverse("memory-history", args=[new.pk])).content.decode())
    assert "Corrected on the dashboard by you" in page
    assert "correction:" not in page
    assert "operator" not in page
    # The versions' states in words, not stored values.
    assert "Replaced by a correction" in page
    assert "Superseded" not in page
    # Dana reads who corrected it, and her card where it came from, in words too.
    card = text(signed_in("dana").get(reverse("subject", args=[SUBJECT])).content.decode())
    assert "Corrected by support" in card
    assert "Written on the dashboard on" in card
    assert Memory.objects.get(pk=new.pk).status == "active"


def test_run_notes_say_who_wrote_them_in_words(make_person: Any, api: Any) -> None:
    make_person("sam", role="support")
    api.put("/api/v1/runs/run_words/notes/next", {"value": "call back"}, format="json")
    page = text(signed_in("sam").get(reverse("run-notes", args=["run_words"])).content.decode())
    assert "the assistant (test-agent)" in page
    assert "agent:test-agent" not in page
