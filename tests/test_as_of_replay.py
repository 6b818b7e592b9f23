"""The as-of page replays a past recall's ranking for its goal, with the embedding model
that recall recorded, and says when it cannot."""

from __future__ import annotations

import html
from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from ledger.actions.vectors import embed_missing
from ledger.models import Recall, RecallItem
from tests.conftest import SUBJECT, signed_in

pytestmark = pytest.mark.django_db
URL = f"/subjects/{SUBJECT}/as-of/"
AISLE = "Likes aisle seats on flights."
GOAL = "pick where he sits on the plane"


@pytest.fixture
def recalled(api: APIClient, remember: Callable[..., object]) -> Recall:
    for statement in (AISLE, "Has a dog called Rex.", "Pays by direct debit."):
        remember(statement)
    embed_missing()
    response = api.get(f"/api/v1/subjects/{SUBJECT}/recall", {"goal": GOAL, "k": 1})
    assert response.json()["memories"][0]["statement"] == AISLE
    return Recall.objects.get(pk=response.json()["recall"])


def replay(user: User, recall: Recall, goal: str = GOAL) -> str:
    at = recall.recalled_at.isoformat()
    response = signed_in(user).get(URL, {"at": at, "goal": goal, "k": recall.k})
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def test_a_recall_is_replayed_with_the_model_it_recorded(
    recalled: Recall, make_person: Callable[..., User]
) -> None:
    page = replay(make_person("sam", role="support"), recalled)
    assert "Ranked by meaning with all-MiniLM-L6-v2, the model recalls used then" in page
    ranked = page.split('<ol class="plain replay">', 1)[1].split("</ol>", 1)[0]
    # The replay serves first what the recall served.
    served = RecallItem.objects.get(recall=recalled).memory.statement
    first = ranked.split("<li>", 2)[1]
    assert served == AISLE and AISLE in first and "meaning 0." in first
    assert AISLE in page.split('<pre class="document">', 1)[1].split("</pre>", 1)[0]
    # The page links each goal-bearing recall around to its replay, at the recall's size.
    assert "Replay its ranking" in page and f"k={recalled.k}" in page
    assert "for at most 1 record." in page


def test_a_recall_made_with_another_model_is_replayed_by_words_and_says_so(
    recalled: Recall, make_person: Callable[..., User]
) -> None:
    Recall.objects.filter(pk=recalled.pk).update(model="text-embedding-3-small")
    page = replay(make_person("sam", role="support"), recalled)
    assert "Ranked by words alone: recalls then used text-embedding-3-small" in page


def test_a_person_cannot_replay_recalls(recalled: Recall, make_person: Callable[..., User]) -> None:
    person = make_person("pat", subject=SUBJECT)
    response = signed_in(person).get(URL, {"goal": GOAL})
    assert response.status_code in (302, 403, 404)


@pytest.mark.parametrize("k", ["²", "9" * 5000, "-1", "x"])
def test_an_odd_size_is_the_default_size(
    recalled: Recall, make_person: Callable[..., User], k: str
) -> None:
    response = signed_in(make_person("sam", role="support")).get(URL, {"goal": GOAL, "k": k})
    assert response.status_code == 200
    assert "for at most 5 records." in html.unescape(response.content.decode())
