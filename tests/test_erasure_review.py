"""The admin's review of erasures: who asked, who carried it out, when, which subject and
how many rows of each kind were blanked — and none of the content, anywhere on the page."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from ledger.actions.erasure import erase_subject
from ledger.actors import Actor
from ledger.models import (
    Erasure,
    ErasureRequest,
    JournalEntry,
    LedgerEntry,
    Memory,
    Recall,
    RunNote,
    Snapshot,
    Source,
    Subject,
    WriteDecision,
)
from ledger.rules.refusals import Refusal
from ledger.views import corrections as view
from tests import test_erasure
from tests.conftest import signed_in
from tests.test_erasure import SECRETS, secret_words

pytestmark = pytest.mark.django_db

URL = "/audit/erasures/"
# Dana, with content about her in every place the product keeps any.
dana = test_erasure.dana
everything = test_erasure.everything
OTHER = "acct_9d3e1a77c0b24f58"


@pytest.fixture
def staff(make_person: Callable[..., User]) -> dict[str, User]:
    return {"ada": make_person("ada", role="admin"), "sam": make_person("sam", role="support")}


def kept_counts(subject: Subject) -> dict[str, int]:
    """What the erasure will blank, counted in the rows before it runs."""
    return {
        "memories": Memory.objects.filter(subject=subject).count(),
        "ledger_entries": LedgerEntry.objects.filter(subject=subject).count(),
        "journal_entries": JournalEntry.objects.filter(run__subject=subject).count(),
        "run_notes": RunNote.objects.filter(run__subject=subject).count(),
        "recalls": Recall.objects.filter(subject=subject).count(),
        "snapshots": Snapshot.objects.filter(run__subject=subject).count(),
    }


def test_a_persons_own_erasure_shows_counts_and_no_content(
    dana: Client, everything: Subject, staff: dict[str, User]
) -> None:
    expected = kept_counts(everything)
    assert all(expected.values()), expected
    history_before = Memory.history.filter(subject_id=everything.pk).count()
    memory_sources = Source.objects.filter(memory__subject=everything).count()
    response = dana.post(
        reverse("subject-erase", args=[everything.ref]),
        {"confirm_name": SECRETS["name"], "pause": "on"},
    )
    assert response.status_code == 302
    erasure = Erasure.objects.get(subject=everything)
    assert {name: getattr(erasure, name) for name in expected} == expected
    # The ledger entry's source too, not only the memories'.
    assert erasure.sources > memory_sources
    assert erasure.history_rows > history_before
    assert erasure.stored_responses >= 3
    assert (erasure.erased_by, erasure.erased_by_role, erasure.requested_by) == (
        "user:dana",
        "user",
        "user:dana",
    )

    page = signed_in(staff["ada"]).get(URL).content.decode()
    assert everything.ref in page
    assert "The person themselves, on the dashboard" in page
    assert "The person (dana)" in page
    assert f"{expected['memories']} memories" in page
    assert f"{expected['ledger_entries']} ledger entr" in page
    assert f"{erasure.sources} sources" in page
    assert f"{erasure.history_rows} earlier versions in the history" in page
    # The gate's reasons quote what was written: one decision per memory the agent wrote.
    assert erasure.write_decisions == WriteDecision.objects.filter(subject=everything).count()
    assert erasure.write_decisions >= 3
    assert f"{erasure.write_decisions} write decisions’ reasons" in page
    assert "the subject’s display name" in page
    text = page.casefold()
    for word in secret_words():
        assert word not in text, word
    for secret in SECRETS.values():
        assert secret.casefold() not in text, secret


def test_staff_erasing_for_someone_must_say_who_asked(
    remember: Callable[..., Memory], staff: dict[str, User]
) -> None:
    remember("Takes the early train on Mondays.", subject=OTHER)
    sam = signed_in(staff["sam"])
    url = reverse("subject-erase", args=[OTHER])
    assert "Who asked for it, and how" in sam.get(url).content.decode()
    refused = sam.post(url, {"confirm_name": OTHER, "requested_by": "  "})
    assert refused.status_code == 400
    assert "Say who asked for the erasure, and how. Nothing was erased." in (
        refused.content.decode()
    )
    too_long = sam.post(url, {"confirm_name": OTHER, "requested_by": "x" * 201})
    assert too_long.status_code == 400
    assert "Keep who asked to 200 characters" in too_long.content.decode()
    assert not Erasure.objects.exists()
    assert Memory.objects.get(subject__ref=OTHER).status == "active"

    # Support's erasure is a request: who asked is kept on it, and nothing is erased yet.
    done = sam.post(
        url, {"confirm_name": OTHER, "requested_by": "the person, by phone, ticket 4411"}
    )
    assert done.status_code == 302
    assert not Erasure.objects.exists()
    request = ErasureRequest.objects.get()
    assert (request.requested_by, request.reason) == (
        "user:sam",
        "the person, by phone, ticket 4411",
    )

    # An admin's approval runs it, and who asked carries over to the erasure.
    erasure = approve(request, staff["ada"])
    assert (erasure.erased_by, erasure.erased_by_role) == ("user:ada", "admin")
    assert erasure.requested_by == "the person, by phone, ticket 4411"
    page = signed_in(staff["ada"]).get(URL).content.decode()
    # Support recorded who asked; the admin who approved carried it out.
    assert (
        "“the person, by phone, ticket 4411”, as recorded by support (sam) and approved by "
        "an admin (ada)"
    ) in page
    assert "An admin (ada)" in page
    assert "Takes the early train" not in page and "1 memory<" in page


def approve(request: ErasureRequest, admin: User) -> Erasure:
    """An admin approves support's request on the queue page; the erasure it ran."""
    response = signed_in(admin).post(reverse("erasure-request-approve", args=[request.pk]))
    assert response.status_code == 302
    request.refresh_from_db()
    assert request.decision == ErasureRequest.Decision.APPROVED
    return Erasure.objects.get(subject=request.subject)


def test_the_person_erasing_for_themselves_asked_whatever_they_send(
    dana: Client, everything: Subject
) -> None:
    dana.post(
        reverse("subject-erase", args=[everything.ref]),
        {"confirm_name": SECRETS["name"], "requested_by": "support, by phone"},
    )
    assert Erasure.objects.get().requested_by == "user:dana"


def test_staff_naming_themselves_as_who_asked_is_not_taken_for_the_person(
    remember: Callable[..., Memory], staff: dict[str, User]
) -> None:
    remember("Keeps bees.", subject=OTHER)
    url = reverse("subject-erase", args=[OTHER])
    signed_in(staff["sam"]).post(url, {"confirm_name": OTHER, "requested_by": "user:sam"})
    assert ErasureRequest.objects.get().reason == "user:sam"
    assert approve(ErasureRequest.objects.get(), staff["ada"]).requested_by == "user:sam"
    page = signed_in(staff["ada"]).get(URL).content.decode()
    assert "The person themselves" not in page
    assert "“user:sam”, as recorded by support (sam) and approved by an admin (ada)" in page


def test_an_admins_own_later_erasure_is_not_taken_for_the_request_they_approved(
    remember: Callable[..., Memory], staff: dict[str, User]
) -> None:
    remember("Keeps bees.", subject=OTHER)
    url = reverse("subject-erase", args=[OTHER])
    signed_in(staff["sam"]).post(url, {"confirm_name": OTHER, "requested_by": "phone, ticket 1"})
    approve(ErasureRequest.objects.get(), staff["ada"])
    remember("Keeps wasps.", subject=OTHER)
    erase_subject(
        subject=Subject.objects.get(ref=OTHER),
        actor=Actor.for_user(staff["ada"]),
        requested_by="letter, ticket 2",
    )
    page = signed_in(staff["ada"]).get(URL).content.decode()
    assert "“phone, ticket 1”, as recorded by support (sam) and approved by an admin (ada)<" in (
        page
    )
    assert "“letter, ticket 2”, as recorded by an admin (ada)<" in page


def test_an_erasure_by_the_command_line_says_who_asked_is_not_recorded(
    remember: Callable[..., Memory], staff: dict[str, User]
) -> None:
    remember("Keeps bees.", subject=OTHER)
    erase_subject(subject=Subject.objects.get(ref=OTHER), actor=Actor.system("gdpr-script"))
    page = signed_in(staff["ada"]).get(URL).content.decode()
    assert "Not recorded" in page and "The system (gdpr-script)" in page
    with pytest.raises(Refusal) as refused:
        erase_subject(
            subject=Subject.objects.get(ref=OTHER), actor=Actor.system("x"), requested_by="a\x00"
        )
    assert refused.value.code == "request_invalid_character"


def test_only_an_admin_reviews_erasures(
    dana: Client, everything: Subject, staff: dict[str, User]
) -> None:
    erase_subject(subject=everything, actor=Actor.system("test"))
    assert dana.get(URL).status_code == 404
    assert signed_in(staff["sam"]).get(URL).status_code == 404
    assert Client().get(URL).status_code == 302
    assert signed_in(staff["ada"]).get(URL).status_code == 200


def test_erasures_page_newest_first_by_keyset_and_refuse_bad_links(
    remember: Callable[..., Memory],
    staff: dict[str, User],
    clock: Callable[[datetime], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    refs = [f"acct_erased_{n}" for n in range(3)]
    for n, ref in enumerate(refs):
        clock(datetime(2027, 5, 1, tzinfo=UTC) + timedelta(days=n))
        remember("Something to forget.", subject=ref)
        erase_subject(subject=Subject.objects.get(ref=ref), actor=Actor.system("test"))
    monkeypatch.setattr(view, "PAGE_SIZE", 2)
    ada = signed_in(staff["ada"])
    first = ada.get(URL)
    assert [e.erasure.subject.ref for e in first.context["entries"]] == [refs[2], refs[1]]
    second = ada.get(URL, {"after": first.context["next"]})
    assert [e.erasure.subject.ref for e in second.context["entries"]] == [refs[0]]
    assert second.context["next"] == ""
    bad = ada.get(URL, {"after": "garbage"})
    assert bad.status_code == 400 and "is not one this page gave out" in bad.content.decode()
    unknown = ada.get(URL, {"subject": "x"})
    assert unknown.status_code == 400 and "Unknown filter: subject." in unknown.content.decode()


def test_the_erasures_page_costs_the_same_queries_for_few_or_many(
    remember: Callable[..., Memory], staff: dict[str, User]
) -> None:
    def grow(start: int, times: int) -> None:
        for n in range(start, start + times):
            ref = f"acct_forget_{n}"
            remember("Something to forget.", subject=ref)
            erase_subject(subject=Subject.objects.get(ref=ref), actor=Actor.system("test"))

    ada = signed_in(staff["ada"])

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert ada.get(URL).status_code == 200
        return len(captured)

    grow(0, 2)
    few = queries()
    grow(2, 8)
    assert queries() == few
