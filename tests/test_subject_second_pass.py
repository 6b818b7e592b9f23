"""The end user's subject page, second pass (issue 31): "no reason given" instead of a
made-up reason, where a memory was used, the as-of page for a future date, the demo's
wording, and one reason box per decision on support's conflict card."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from ledger.models import Memory
from tests.conftest import SUBJECT, signed_in

pytestmark = pytest.mark.django_db

SAID = "Prefers a phone call after 6 pm about deliveries."
CORRECTED = "Prefers e-mail about deliveries, never a phone call."
MADE_UP = "the person's own correction"


@pytest.fixture
def people(make_person: Callable[..., User]) -> dict[str, User]:
    return {
        "dana": make_person("dana", subject=SUBJECT),
        "sam": make_person("sam", role="support"),
        "ada": make_person("ada", role="admin"),
    }


def corrected_without_reason(
    remember: Callable[..., Memory], dana: User, statement: str = CORRECTED
) -> tuple[Memory, Memory]:
    original = remember(SAID, key="contact.channel")
    response = signed_in(dana).post(
        reverse("memory-edit", args=[original.pk]), {"statement": statement, "reason": ""}
    )
    assert response.status_code == 302
    return original, Memory.objects.get(supersedes=original)


def said_everywhere(people: dict[str, User], original: Memory, replacement: Memory) -> list[str]:
    """The correction's Why on the admin's Corrections page, the audit, the memory's
    history and the person's export."""
    ada = signed_in(people["ada"])
    dana = signed_in(people["dana"])
    export = dana.get(reverse("subject-export", args=[SUBJECT]))
    reasons = [
        change["reason"]
        for memory in json.loads(
            b"".join(export.streaming_content if export.streaming else [export.content])
        )["memories"]
        for change in memory["history"]
    ]
    return [
        ada.get(reverse("audit-correction", args=[replacement.pk])).content.decode(),
        ada.get(reverse("audit") + "?kind=memory").content.decode(),
        dana.get(reverse("memory-history", args=[original.pk])).content.decode(),
        json.dumps(reasons),
    ]


def test_a_correction_without_a_reason_says_no_reason_given_not_a_made_up_one(
    people: dict[str, User], remember: Callable[..., Memory]
) -> None:
    original, replacement = corrected_without_reason(remember, people["dana"])
    stored = [
        r.history_change_reason for r in Memory.history.filter(id__in=[original.pk, replacement.pk])
    ]
    assert not any(MADE_UP in (reason or "") for reason in stored)
    correction, audit, history, export = said_everywhere(people, original, replacement)
    assert "no reason given" in correction
    assert "Corrected: no reason given" in audit
    assert "no reason given" in history
    assert "Corrected: no reason given" in export
    for page in (correction, audit, history, export):
        assert "own correction" not in page


def test_rows_stored_with_the_made_up_reason_are_said_as_having_none(
    people: dict[str, User], remember: Callable[..., Memory]
) -> None:
    original, replacement = corrected_without_reason(remember, people["dana"])
    # What earlier versions stored for a person's correction given without a reason.
    Memory.history.filter(id=original.pk, history_change_reason="Corrected: ").update(
        history_change_reason=f"Corrected: {MADE_UP}"
    )
    Memory.history.filter(id=replacement.pk, history_type="+").update(
        history_change_reason=f"Correction of an earlier memory: {MADE_UP}"
    )
    correction, audit, history, export = said_everywhere(people, original, replacement)
    assert "no reason given" in correction
    assert "Corrected: no reason given" in audit
    assert "Correction of an earlier memory: no reason given" in export
    for page in (correction, audit, history, export):
        assert "own correction" not in page


def test_the_as_of_page_refuses_a_future_moment_and_reads_today_as_now(
    people: dict[str, User], remember: Callable[..., Memory], clock: Callable[[datetime], None]
) -> None:
    clock(datetime(2027, 3, 2, 10, 0, tzinfo=UTC))
    remember(SAID, key="contact.channel")
    sam = signed_in(people["sam"])
    url = reverse("subject-as-of", args=[SUBJECT])
    for future in ("2027-03-03", "2027-03-02T23:00", "2030-01-01T00:00:00+00:00"):
        for htmx in ({}, {"HTTP_HX_REQUEST": "true"}):
            response = sam.get(url, {"at": future}, **htmx)
            page = response.content.decode()
            assert response.status_code == 400, future
            assert "has not come yet" in page
            assert "In use then" not in page
    # Today's date means the end of today: so far, that is now, with what is in use now.
    response = sam.get(url, {"at": "2027-03-02"})
    assert response.status_code == 200
    page = response.content.decode()
    assert "In use then (1)" in page and SAID in page


def test_supports_conflict_card_has_one_reason_per_decision_before_its_button(
    people: dict[str, User], remember: Callable[..., Memory]
) -> None:
    remember("Prefers morning deliveries.", key="delivery.time")
    remember("Prefers evening deliveries.", key="delivery.time")
    page = signed_in(people["sam"]).get(reverse("subject", args=[SUBJECT])).content.decode()
    card = page.split('<section class="card conflict', 1)[1].split("</section>", 1)[0]
    forms = re.findall(r"<form.*?</form>", card, flags=re.S)
    assert len(forms) == 3  # keep one, keep the other, write what is right
    labels = []
    for form in forms:
        assert form.count('name="reason"') == 1, form
        # The box comes before the button it is for, never below it.
        assert form.index('name="reason"') < form.index('type="submit"'), form
        labels.append(re.search(r"<label for=\"[a-z-]+-reason-[^\"]+\">([^<]+)</label>", form)[1])
    assert labels == [
        "Why keep this one (required for support)",
        "Why keep this one (required for support)",
        "Why write it anew (required for support)",
    ]
