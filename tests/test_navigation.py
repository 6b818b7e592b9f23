"""People can reach every page from the pages they already have."""

from __future__ import annotations

import pytest

from ledger.actions.sources import SourceInput
from ledger.models import Memory
from tests.conftest import SUBJECT, signed_in

pytestmark = pytest.mark.django_db


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


def test_support_traces_a_memory_to_its_source_and_the_runs_that_read_it(
    subject_with_a_run, api
) -> None:
    recalled = api.get(
        f"/api/v1/subjects/{SUBJECT}/recall", {"goal": "email", "run": "run_read_1", "turn": 3}
    )
    assert recalled.status_code == 200
    memory = Memory.objects.get(statement="Prefers email.")
    html = signed_in("sam").get(f"/memories/{memory.pk}/history/").content.decode()
    assert "Where it came from" in html
    assert "<code>m1</code></a> in run" in html
    assert "Its reach" in html
    assert 'href="/runs/run_read_1/">run_read_1</a>, 3' in html


def test_the_person_sees_the_history_without_the_trace(subject_with_a_run) -> None:
    memory = Memory.objects.get(statement="Prefers email.")
    html = signed_in("dana").get(f"/memories/{memory.pk}/history/").content.decode()
    assert "History of a memory" in html
    assert "Its reach" not in html


def test_every_page_and_the_admin_have_an_icon_and_favicon_ico_finds_it(
    subject_with_a_run, client
) -> None:
    icon = '<link rel="icon" href="/static/ledger/favicon.svg" type="image/svg+xml">'
    assert icon in client.get("/accounts/login/").content.decode()
    assert icon in client.get("/admin/login/").content.decode()
    assert icon in signed_in("sam").get(f"/subjects/{SUBJECT}/").content.decode()
    response = client.get("/favicon.ico")
    assert response.status_code == 302
    assert response["Location"] == "/static/ledger/favicon.svg"


def test_the_staff_search_has_a_button_and_works_without_javascript(subject_with_a_run) -> None:
    sam = signed_in("sam")
    html = sam.get("/").content.decode()
    assert '<button type="submit">Search</button>' in html
    found = sam.get("/", {"q": SUBJECT[:8]}).content.decode()
    assert f'href="/subjects/{SUBJECT}/"' in found
    assert "No memory matches" in sam.get("/", {"q": "nobody-like-this"}).content.decode()


def test_the_staff_search_answers_htmx_with_only_the_results(subject_with_a_run) -> None:
    response = signed_in("sam").get(
        "/", {"q": SUBJECT[:8]}, headers={"HX-Request": "true", "HX-Target": "subject-results"}
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="subject-results">')
    assert f'href="/subjects/{SUBJECT}/"' in html
    assert "<html" not in html
    assert "HX-Request" in response["Vary"]
