"""Staff tables sorted by a clicked column header, kept in the address, page after page."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from ledger.actions.retractions import Selection, retract_batch
from ledger.actions.sources import SourceInput
from ledger.actors import Actor
from ledger.models import Memory
from ledger.views import retractions, search
from ledger.views.paging import keyset_page
from tests.conftest import signed_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def sam(make_person: Callable[..., User]) -> User:
    return make_person("sam", role="support")


def pages(client: Client, path: str, params: dict[str, str]) -> list[str]:
    """Every page's HTML, following "Next page" links to the end."""
    seen: list[str] = []
    query = "&".join(f"{name}={value}" for name, value in params.items())
    for _ in range(20):
        response = client.get(f"{path}?{query}")
        assert response.status_code == 200, response.content.decode()
        html = response.content.decode()
        seen.append(html)
        found = re.search(
            r'<a class="button" href="\?([^"]+)"[^>]*>Next page|href="\?([^"]+)">Next page', html
        )
        if not found:
            return seen
        query = (found.group(1) or found.group(2)).replace("&amp;", "&")
    raise AssertionError("the pages never end")


def subjects_in_order(html: str) -> list[str]:
    table = html.split('id="memory-results-title"', 1)[1]
    return re.findall(r'href="/subjects/(acct_[a-z0-9]+)/"', table)


@pytest.mark.parametrize("sort", ["subject", "-subject"])
def test_search_results_sorted_by_subject_page_after_page(
    sam: User, remember: Callable[..., Memory], monkeypatch: Any, sort: str
) -> None:
    monkeypatch.setattr(search, "PAGE_SIZE", 3)
    for letter in "dbgaecfh":
        remember(f"Parcel for {letter} went by phone.", subject=f"acct_{letter}", kind="episode")
    htmls = pages(signed_in(sam), "/", {"q": "phone", "sort": sort})
    order = [ref for html in htmls for ref in subjects_in_order(html)]
    expected = sorted(f"acct_{letter}" for letter in "abcdefgh")
    assert order == (expected if sort == "subject" else expected[::-1])
    assert len(htmls) == 3
    # The sorted header says so, and its link turns the order round, keeping the words.
    header = re.search(r'<th scope="col" aria-sort="(\w+)"><a href="\?([^"]+)">Subject', htmls[0])
    assert header is not None
    flipped = "-subject" if sort == "subject" else "subject"
    assert header.group(1) == ("ascending" if sort == "subject" else "descending")
    assert header.group(2).replace("&amp;", "&") == f"q=phone&sort={flipped}"
    assert htmls[0].count("aria-sort=") == 1


def test_the_default_order_is_newest_first_and_its_header_says_so(
    sam: User, remember: Callable[..., Memory], clock: Callable[..., None]
) -> None:
    start = timezone.now()
    for n in range(3):
        clock(start + timedelta(minutes=n))
        remember(f"Phone call {n}.", subject=f"acct_n{n}", kind="episode")
    html = signed_in(sam).get("/", {"q": "phone"}).content.decode()
    assert subjects_in_order(html) == ["acct_n2", "acct_n1", "acct_n0"]
    assert re.search(r'aria-sort="descending"><a href="\?q=phone&amp;sort=written">Written', html)
    oldest = signed_in(sam).get("/", {"q": "phone", "sort": "written"}).content.decode()
    assert subjects_in_order(oldest) == ["acct_n0", "acct_n1", "acct_n2"]
    assert "Memories, oldest first" in oldest


@pytest.mark.parametrize("path", ["/", "/retractions/"])
def test_an_unknown_sort_column_is_a_400_naming_it(sam: User, path: str) -> None:
    response = signed_in(sam).get(
        path, {"q": "phone", "sort": "-password"} if path == "/" else {"sort": "-password"}
    )
    assert response.status_code == 400
    assert "cannot be sorted by “password”" in response.content.decode()


def test_a_cursor_from_another_order_is_a_400(
    sam: User, remember: Callable[..., Memory], monkeypatch: Any
) -> None:
    monkeypatch.setattr(search, "PAGE_SIZE", 1)
    for n in range(2):
        remember(f"Phone call {n}.", subject=f"acct_c{n}", kind="episode")
    client = signed_in(sam)
    first = pages(client, "/", {"q": "phone", "sort": "subject"})[0]
    cursor = re.search(r"after=([\w-]+)", first)
    assert cursor is not None
    response = client.get("/", {"q": "phone", "sort": "kind", "after": cursor.group(1)})
    assert response.status_code == 400
    assert "not one this page gave out" in response.content.decode()


def test_a_sorted_search_runs_the_same_queries_for_3_or_30_rows(
    sam: User, remember: Callable[..., Memory]
) -> None:
    client = signed_in(sam)

    def count() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/", {"q": "phone", "sort": "-subject"}).status_code == 200
        return len(captured)

    for n in range(3):
        remember(f"Phone call {n}.", subject=f"acct_q{n}", kind="episode")
    few = count()
    for n in range(3, 30):
        remember(f"Phone call {n}.", subject=f"acct_q{n}", kind="episode")
    assert count() == few


def test_batch_deletions_sorted_by_size_page_after_page(
    sam: User, remember: Callable[..., Memory], monkeypatch: Any
) -> None:
    monkeypatch.setattr(retractions, "BATCHES_SHOWN", 2)
    for n, size in enumerate([2, 1, 3]):
        for i in range(size):
            source = SourceInput(kind="user_message", ref=f"msg_{n}", run=f"run_{n}", turn=1)
            remember(f"Note {n}.{i}", subject=f"acct_b{n}", source=source)
        retract_batch(
            selection=Selection(source_ref=f"msg_{n}"),
            actor=Actor.for_user(sam),
            reason=f"batch of {size}",
        )
    htmls = pages(signed_in(sam), "/retractions/", {"sort": "-memories"})
    reasons = [r for html in htmls for r in re.findall(r"batch of \d", html)]
    assert reasons == ["batch of 3", "batch of 2", "batch of 1"]
    assert 'aria-sort="descending"><a href="?sort=memories">Memories' in htmls[0]


@pytest.mark.parametrize("newest_first", [True, False])
def test_a_column_with_blanks_pages_through_every_row_once(
    remember: Callable[..., Memory], newest_first: bool
) -> None:
    now = timezone.now()
    for n in range(7):
        memory = remember(f"Note {n}.", subject=f"acct_e{n}")
        if n % 2:
            Memory.objects.filter(pk=memory.pk).update(expires_at=now + timedelta(days=n % 3))
    seen: list[uuid.UUID] = []
    cursor = ""
    for _ in range(10):
        page = keyset_page(
            Memory.objects.all(),
            field="expires_at",
            cursor=cursor,
            size=2,
            newest_first=newest_first,
        )
        seen += [m.pk for m in page.rows]
        cursor = page.next_cursor
        if not cursor:
            break
    assert sorted(seen) == sorted(Memory.objects.values_list("pk", flat=True))
    assert len(seen) == 7
    dated = [Memory.objects.get(pk=pk).expires_at for pk in seen]
    blanks = [d is None for d in dated]
    # Blanks come last going up and first going down, as PostgreSQL's index order has them.
    assert blanks == sorted(blanks, reverse=newest_first)
    values = [d for d in dated if d is not None]
    assert values == sorted(values, reverse=newest_first)
