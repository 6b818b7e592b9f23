"""Batch retractions: everything a misread message wrote, previewed, deleted as one batch,
and undone as one, on the support dashboard."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from ledger.actions import retractions as retraction_actions
from ledger.actions.lifecycle import correct_memory, restore_memory
from ledger.actions.recalls import record_recall
from ledger.actions.retractions import Selection, retract_batch, undo_batch
from ledger.actions.sources import SourceInput
from ledger.actors import Actor
from ledger.models import Agent, Memory, RetractionBatch, Subject
from ledger.reads.recall import recall
from ledger.rules import retractions as retraction_rules
from ledger.rules.refusals import Refusal
from ledger.views import retractions as retraction_views
from tests.conftest import signed_in

pytestmark = pytest.mark.django_db

MARCO = "acct_1f6b0c93d2e84a71"
PHONED = "Happy to be phoned about deliveries."
AFTER_SIX = "Best reached by phone after 6 pm."
PARCELS = "Leave parcels with the neighbour at number 12."


def misread(ref: str = "msg_0588", run: str = "run_150") -> SourceInput:
    return SourceInput(kind="user_message", ref=ref, run=run, turn=3, excerpt="not happy")


@pytest.fixture
def story(remember: Callable[..., Memory], agent: Agent) -> dict[str, Memory]:
    """Marco's complaint: one message misread into two memories, a third from another
    message, all read by three later runs."""
    memories = {
        "phoned": remember(PHONED, subject=MARCO, key="contact.channel", source=misread()),
        "after_six": remember(AFTER_SIX, subject=MARCO, key="contact.hours", source=misread()),
        "parcels": remember(PARCELS, subject=MARCO, source=misread("msg_0601", "run_149")),
    }
    subject = Subject.objects.get(ref=MARCO)
    for run in ("run_151", "run_152", "run_153"):
        result = recall(subject=subject, goal="delivery", k=5)
        record_recall(agent=agent, result=result, run_ref=run)
    return memories


@pytest.fixture
def sam(make_person: Callable[..., User]) -> User:
    return make_person("sam", role="support")


def statuses() -> dict[str, str]:
    return dict(Memory.objects.values_list("statement", "status"))


def block() -> str:
    return recall(subject=Subject.objects.get(ref=MARCO), goal="phone delivery", k=10).block


def test_preview_counts_exactly_what_the_message_wrote_and_changes_nothing(
    story: dict[str, Memory], sam: User
) -> None:
    response = signed_in(sam).get("/retractions/new/?source_ref=msg_0588")
    assert response.status_code == 200
    preview = response.context["preview"]
    assert preview.memories == 2
    assert [(s.ref, s.memories) for s in preview.by_subject] == [(MARCO, 2)]
    assert {m.statement: m.recalls for m in preview.listed} == {PHONED: 3, AFTER_SIX: 3}
    assert preview.recalls == 6
    page = response.content.decode()
    assert "2 memories would be deleted" in page
    assert "Delete 2 memories" in page
    assert set(statuses().values()) == {"active"}
    assert not RetractionBatch.objects.exists()


def test_run_and_time_window_select_too(story: dict[str, Memory], sam: User) -> None:
    client = signed_in(sam)
    assert client.get("/retractions/new/?run=run_150").context["preview"].memories == 2
    written = story["parcels"].written_at.isoformat()
    preview = client.get("/retractions/new/", {"written_before": written}).context["preview"]
    assert preview.memories == 2
    assert client.get("/retractions/new/?agent=nobody").context["preview"].memories == 0


def test_the_batch_deletes_both_and_recall_stops_serving_them(
    story: dict[str, Memory], sam: User
) -> None:
    assert PHONED in block()
    response = signed_in(sam).post(
        "/retractions/new/",
        {"source_ref": "msg_0588", "reason": "Misread: he asked not to be phoned.", "expected": 2},
    )
    batch = RetractionBatch.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/retractions/{batch.pk}/"
    assert statuses() == {PHONED: "retracted", AFTER_SIX: "retracted", PARCELS: "active"}
    assert batch.selection == {"source_ref": "msg_0588"}
    assert batch.retracted_by == "user:sam"
    assert sorted(batch.items.values_list("status_before", flat=True)) == ["active", "active"]
    last = story["phoned"].history.order_by("-history_date").first()
    assert last.history_actor == "user:sam"
    assert last.history_change_reason == (
        f"Deleted in batch {batch.pk}: Misread: he asked not to be phoned."
    )
    served = block()
    assert PHONED not in served and AFTER_SIX not in served and PARCELS in served

    page = signed_in(sam).get(f"/retractions/{batch.pk}/").content.decode()
    assert "2 memories deleted in one batch" in page
    assert "support (sam)" in page or "you" in page
    assert f"/memories/{story['phoned'].pk}/history/" in page
    listing = signed_in(sam).get("/retractions/").content.decode()
    assert "Misread: he asked not to be phoned." in listing


def test_undo_puts_both_back_as_one_action(
    story: dict[str, Memory], sam: User, make_person: Callable[..., User]
) -> None:
    batch = retract_batch(
        selection=Selection(source_ref="msg_0588"), actor=Actor.for_user(sam), reason="misread"
    )
    # It changes other people's memories: it says why first, or nothing comes back.
    deleted = statuses()
    for reason in ("", "  ", "nul\x00"):
        refused = signed_in(sam).post(f"/retractions/{batch.pk}/undo/", {"reason": reason})
        assert refused.status_code == 400
        assert statuses() == deleted
    before = signed_in(sam).get(f"/retractions/{batch.pk}/").content.decode()
    assert "<h1>2 memories deleted in one batch</h1>" in before
    response = signed_in(sam).post(
        f"/retractions/{batch.pk}/undo/",
        {"reason": "wrong call"},
        headers={"HX-Request": "true", "HX-Target": "undo"},
    )
    assert response.status_code == 200
    swapped = response.content.decode()
    assert "2 memories are back" in swapped
    # The heading is in what the undo swaps, and says what is true now.
    assert "<h1>Undone: the batch that deleted 2 memories</h1>" in swapped
    after = signed_in(sam).get(f"/retractions/{batch.pk}/").content.decode()
    assert "<h1>Undone: the batch that deleted 2 memories</h1>" in after
    # Who undid it, when and why, right after the undo and on any later visit.
    for page in (swapped, after):
        assert 'Undone by you, <time datetime="' in page
        assert '<strong>Why it was undone:</strong> <span class="ref">wrong call</span>' in page
    assert "deleted in one batch" not in after
    assert set(statuses().values()) == {"active"}
    batch.refresh_from_db()
    assert batch.undone_by == "user:sam" and batch.undone_at is not None
    last = story["phoned"].history.order_by("-history_date").first()
    assert last.history_change_reason == f"Batch {batch.pk} undone: wrong call"
    assert PHONED in block()
    # The audit names who undid it as it names anyone, never by the stored "user:sam".
    alex = signed_in(make_person("alex", role="admin"))
    audit = alex.get("/audit/", {"kind": "retractionbatch"}).content.decode()
    assert 'Undone by: <del title="">(none)</del> → <ins title="sam">sam</ins>' in audit
    assert "user:sam" not in audit


def test_undo_leaves_alone_a_memory_changed_since_and_reports_it(
    story: dict[str, Memory], sam: User, make_person: Callable[..., User]
) -> None:
    batch = retract_batch(
        selection=Selection(source_ref="msg_0588"), actor=Actor.for_user(sam), reason="misread"
    )
    # Someone put one back and corrected it in between: that later decision stands.
    restore_memory(memory=story["after_six"], actor=Actor.for_user(sam), within_seconds=60)
    correct_memory(
        memory=story["after_six"],
        actor=Actor.for_user(sam),
        statement="Best reached by e-mail.",
        reason="he phoned us",
    )
    response = signed_in(sam).post(f"/retractions/{batch.pk}/undo/", {"reason": "a mistake"})
    page = response.content.decode()
    assert response.status_code == 200
    assert "1 memory is back" in page
    assert "1 memory was left alone" in page
    assert "now: replaced by a correction" in page
    assert statuses()[PHONED] == "active"
    assert statuses()[AFTER_SIX] == "superseded"


def test_undoing_twice_is_refused_in_words(story: dict[str, Memory], sam: User) -> None:
    batch = retract_batch(
        selection=Selection(source_ref="msg_0588"), actor=Actor.for_user(sam), reason="misread"
    )
    undo_batch(batch=batch, actor=Actor.for_user(sam), reason="a mistake")
    response = signed_in(sam).post(f"/retractions/{batch.pk}/undo/", {"reason": "a mistake"})
    assert response.status_code == 409
    assert "already undone" in response.content.decode()
    with pytest.raises(Refusal) as refused:
        undo_batch(batch=batch, actor=Actor.for_user(sam), reason="a mistake")
    assert refused.value.status == 409


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("", "Choose at least one"),
        ("?written_after=yesterday", "Written after: give a date and time"),
        ("?colour=red", "Unknown filter: colour"),
        (
            "?written_after=2027-03-05T00:00Z&written_before=2027-03-04T00:00Z",
            "must be earlier",
        ),
    ],
)
def test_bad_selection_is_a_400_that_says_why(
    story: dict[str, Memory], sam: User, query: str, words: str
) -> None:
    client = signed_in(sam)
    response = client.get(f"/retractions/new/{query or '?source_ref='}")
    assert response.status_code == 400, query
    assert words in response.content.decode()


def test_a_batch_without_a_reason_or_after_the_selection_changed_writes_nothing(
    story: dict[str, Memory], sam: User
) -> None:
    client = signed_in(sam)
    no_reason = client.post("/retractions/new/", {"source_ref": "msg_0588", "expected": 2})
    assert no_reason.status_code == 400
    assert "Say why" in no_reason.content.decode()
    changed = client.post(
        "/retractions/new/", {"source_ref": "msg_0588", "reason": "misread", "expected": 3}
    )
    assert changed.status_code == 409
    assert "not the 3 you previewed" in changed.content.decode()
    assert set(statuses().values()) == {"active"}
    assert not RetractionBatch.objects.exists()


def test_the_preview_is_a_fragment_for_htmx(story: dict[str, Memory], sam: User) -> None:
    response = signed_in(sam).get("/retractions/new/?source_ref=msg_0588", HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert page.lstrip().startswith('<section id="preview"')
    assert "<html" not in page


def test_memory_text_is_escaped(remember: Callable[..., Memory], sam: User) -> None:
    remember("<script>alert(1)</script> likes tea", subject=MARCO, source=misread())
    page = signed_in(sam).get("/retractions/new/?source_ref=msg_0588").content.decode()
    assert "<script>alert(1)" not in page
    assert "&lt;script&gt;" in page


def test_everyone_but_staff_is_told_the_pages_do_not_exist(
    story: dict[str, Memory], sam: User, make_person: Callable[..., User]
) -> None:
    batch = retract_batch(
        selection=Selection(source_ref="msg_0588"), actor=Actor.for_user(sam), reason="misread"
    )
    marco = signed_in(make_person("marco", subject=MARCO))
    routes = [
        ("get", "/retractions/"),
        ("get", "/retractions/new/?source_ref=msg_0588"),
        ("post", "/retractions/new/"),
        ("get", f"/retractions/{batch.pk}/"),
        ("post", f"/retractions/{batch.pk}/undo/"),
    ]
    for method, url in routes:
        assert getattr(marco, method)(url).status_code == 404, url
        anonymous = getattr(Client(), method)(url)
        assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"], url
    assert statuses()[PHONED] == "retracted"


def _queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(captured)


def test_preview_and_batch_pages_query_the_same_at_2_and_20_memories(
    remember: Callable[..., Memory], agent: Agent, sam: User
) -> None:
    client = signed_in(sam)

    def grow_to(n: int) -> RetractionBatch:
        for i in range(Memory.objects.count(), n):
            remember(f"Poisoned claim number {i}.", subject=f"acct_{i % 3}", source=misread())
        subject = Subject.objects.get(ref="acct_0")
        record_recall(agent=agent, result=recall(subject=subject, goal="claim", k=20))
        batch = retract_batch(
            selection=Selection(source_ref="msg_0588"), actor=Actor.for_user(sam), reason="x"
        )
        undo_batch(batch=batch, actor=Actor.for_user(sam), reason="a mistake")
        return batch

    small = grow_to(2)
    counts_small = (
        _queries(client, "/retractions/new/?source_ref=msg_0588"),
        _queries(client, f"/retractions/{small.pk}/"),
        _queries(client, "/retractions/"),
    )
    large = grow_to(20)
    counts_large = (
        _queries(client, "/retractions/new/?source_ref=msg_0588"),
        _queries(client, f"/retractions/{large.pk}/"),
        _queries(client, "/retractions/"),
    )
    assert counts_small == counts_large


def test_the_list_continues_after_a_batch(
    story: dict[str, Memory], sam: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    retract_batch(
        selection=Selection(source_ref="msg_0588"),
        actor=Actor.for_user(sam),
        reason="the first batch of all",
    )
    client = signed_in(sam)
    assert "the first batch of all" in client.get("/retractions/").content.decode()
    retract_batch(
        selection=Selection(source_ref="msg_0601"), actor=Actor.for_user(sam), reason="the second"
    )
    monkeypatch.setattr(retraction_views, "BATCHES_SHOWN", 1)
    first = client.get("/retractions/").content.decode()
    assert "the second" in first
    assert "the first batch of all" not in first
    older = first.split('href="?after=')[1].split('"')[0]
    assert "the first batch of all" in client.get(f"/retractions/?after={older}").content.decode()
    assert client.get("/retractions/?after=nonsense").status_code == 400


def test_a_preview_larger_than_one_batch_says_so_and_offers_no_delete(
    story: dict[str, Memory], sam: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The rule and the action that previews with it read the same limit.
    monkeypatch.setattr(retraction_rules, "RETRACTION_BATCH_MAX", 1)
    monkeypatch.setattr(retraction_actions, "RETRACTION_BATCH_MAX", 1)
    page = signed_in(sam).get("/retractions/new/", {"source_ref": "msg_0588"}).content.decode()
    assert "2 memories would be deleted" in page
    assert "One batch takes at most 1 memories" in page
    assert "Delete 2 memories" not in page


def test_memories_ticked_in_the_search_are_deleted_as_one_undoable_batch(
    story: dict[str, Memory], sam: User
) -> None:
    client = signed_in(sam)
    phoned, parcels = story["phoned"], story["parcels"]
    retract_batch(
        selection=Selection(source_ref="msg_0601"), actor=Actor.for_user(sam), reason="earlier"
    )
    results = client.get("/", {"q": MARCO}).content.decode()
    # A box to tick on each memory a deletion can still reach; none on the deleted one.
    assert f'name="memories" value="{phoned.pk}"' in results
    assert f'name="memories" value="{parcels.pk}"' not in results
    assert 'action="/retractions/new/"' in results
    preview = client.get(f"/retractions/new/?memories={phoned.pk}").content.decode()
    assert "1 memory would be deleted" in preview
    # The page is about the ticked memories: no source, run or time fields whose examples
    # read like values chosen for them.
    assert "<h1>Delete the 1 ticked memory</h1>" in preview
    assert "Delete what a source wrote" not in preview
    for field in ("source_ref", "run", "agent", "written_after", "written_before"):
        assert f'name="{field}"' not in preview
    assert 'placeholder="msg_0588"' not in preview
    two = client.get(
        "/retractions/new/", {"memories": [str(phoned.pk), str(story["after_six"].pk)]}
    )
    assert "<h1>Delete the 2 ticked memories</h1>" in two.content.decode()
    assert f'name="memories" value="{phoned.pk}"' in preview
    response = client.post(
        "/retractions/new/", {"memories": str(phoned.pk), "expected": "1", "reason": "misread"}
    )
    assert response.status_code == 302
    assert statuses()[PHONED] == "retracted"
    assert statuses()[AFTER_SIX] == "active"
    batch = RetractionBatch.objects.get(reason="misread")
    assert (
        "Chosen by ticking them in the search" in client.get(response["Location"]).content.decode()
    )
    undo_batch(batch=batch, actor=Actor.for_user(sam), reason="wrong call")
    assert statuses()[PHONED] == "active"


@pytest.mark.parametrize(
    ("memories", "status", "words"),
    [
        ("not-an-id", 400, "“not-an-id” is not a memory&#x27;s id"),
        ("6b1f0c93-d2e8-4a71-9f6b-0c93d2e84a71", 404, "No memory has the id"),
    ],
)
def test_bad_ticked_memories_are_refused_in_words_and_nothing_is_written(
    story: dict[str, Memory], sam: User, memories: str, status: int, words: str
) -> None:
    client = signed_in(sam)
    before = statuses()
    ticked = f"{story['phoned'].pk},{memories}"
    preview = client.get("/retractions/new/", {"memories": ticked})
    assert preview.status_code == status
    assert words in preview.content.decode()
    posted = client.post(
        "/retractions/new/", {"memories": ticked, "expected": "2", "reason": "misread"}
    )
    assert posted.status_code == status
    assert words in posted.content.decode()
    assert statuses() == before
    assert not RetractionBatch.objects.exists()
