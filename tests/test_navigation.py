"""People can reach every page from the pages they already have."""

from __future__ import annotations

import pytest
from django.test import Client

from ledger.actions.memories import SourceInput
from tests.conftest import PASSWORD, SUBJECT

pytestmark = pytest.mark.django_db


def signed_in(username: str) -> Client:
    client = Client()
    assert client.login(username=username, password=PASSWORD)
    return client


@pytest.fixture
def subject_with_a_run(make_person, remember) -> None:
    make_person("dana", subject=SUBJECT)
    make_person("sam", role="support")
    remember("Prefers email.", source=SourceInput(kind="user_message", ref="m1", run="run_9"))


def test_support_reaches_a_persons_runs_from_their_page(subject_with_a_run) -> None:
    html = signed_in("sam").get(f"/subjects/{SUBJECT}/").content.decode()
    assert "Agent runs about this person" in html
    for page in ("journal", "notes", "snapshots"):
        assert f'href="/runs/run_9/{page}/"' in html


def test_the_person_sees_no_runs_but_reaches_their_commitments(subject_with_a_run) -> None:
    html = signed_in("dana").get(f"/subjects/{SUBJECT}/").content.decode()
    assert "Agent runs" not in html
    assert f'href="/subjects/{SUBJECT}/ledger/"' in html


def test_the_pages_of_a_run_link_to_each_other(subject_with_a_run) -> None:
    sam = signed_in("sam")
    for page in ("journal", "notes", "snapshots"):
        html = sam.get(f"/runs/run_9/{page}/").content.decode()
        assert f'href="/runs/run_9/{page}/" aria-current="page"' in html
        assert f'href="/subjects/{SUBJECT}/"' in html
