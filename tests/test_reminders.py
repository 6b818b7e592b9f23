"""Review reminders, in process: who is reminded of what, once, by one digest, and the page.

Time is travelled with time_machine; e-mail goes to Django's in-memory outbox.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.test import Client

from ledger.actions.erasure import erase_subject
from ledger.actions.lifecycle import confirm_memory, correct_memory, renew_memory, retract_memory
from ledger.actions.reminders import create_due_reminders, send_digests
from ledger.actors import Actor
from ledger.models import Memory, Reminder
from ledger.tasks import send_reminders
from tests.conftest import SUBJECT, signed_in

pytestmark = pytest.mark.django_db

WRITTEN = datetime(2026, 1, 10, 9, 0, tzinfo=UTC)
# The default policy reviews a preference after 180 days.
DUE = WRITTEN + timedelta(days=180)
OTHER = "acct_9d3e1a77c05b42e8"


@pytest.fixture
def clock(clock: Callable[[datetime], None]) -> Callable[[datetime], None]:
    """The shared clock, starting when the memories are written."""
    clock(WRITTEN)
    return clock


@pytest.fixture
def people(make_person: Callable[..., User]) -> dict[str, User]:
    def with_email(user: User, email: str) -> User:
        user.email = email
        user.save(update_fields=["email"])
        return user

    return {
        "dana": with_email(make_person("dana", subject=SUBJECT), "dana@example.com"),
        "marco": make_person("marco", subject=OTHER),
        "sam": with_email(make_person("sam", role="support"), "sam@example.com"),
        "kim": with_email(make_person("kim", role="support"), "kim@example.com"),
        "lee": make_person("lee", role="support"),
    }


def test_memory_due_for_review_reminds_its_owner_and_the_support_queue_once(
    remember: Callable[..., Memory], people: dict[str, User], clock: Callable[[datetime], None]
) -> None:
    memory = remember("Prefers email over telephone.")
    clock(DUE - timedelta(minutes=1))
    assert create_due_reminders() == 0
    clock(DUE)
    assert create_due_reminders() == 1
    for later in (DUE, DUE + timedelta(hours=5), DUE + timedelta(days=3)):
        clock(later)
        create_due_reminders()
    reminders = Reminder.objects.filter(memory=memory)
    assert sorted((r.kind, r.audience, r.recipient_id) for r in reminders) == [
        ("review", "owner", people["dana"].pk),
        ("review", "support", None),
    ]
    assert {r.due_on for r in reminders} == {date(2026, 7, 9)}


def test_one_digest_per_recipient_lists_every_due_memory(
    remember: Callable[..., Memory], people: dict[str, User], clock: Callable[[datetime], None]
) -> None:
    remember("Prefers email over telephone.")
    remember("Deliveries should arrive before noon.")
    remember("Orders flour in 25 kg sacks.", subject=OTHER)
    clock(DUE + timedelta(days=1))
    result = send_reminders()
    assert result == {"memories_reminded": 3, "digests_sent": 3}
    by_recipient = {tuple(m.to): m for m in mail.outbox}
    # lee is in support but has no address; marco owns a subject but has no address.
    assert sorted(by_recipient) == [
        ("dana@example.com",),
        ("kim@example.com",),
        ("sam@example.com",),
    ]
    dana = by_recipient[("dana@example.com",)]
    assert dana.subject == "2 memories to check on memoryadmin"
    assert "Prefers email over telephone." in dana.body
    assert "Deliveries should arrive before noon." in dana.body
    assert "Orders flour" not in dana.body
    assert "http://127.0.0.1:8000/reminders/" in dana.body
    sam = by_recipient[("sam@example.com",)]
    assert sam.subject == "3 memories to check on memoryadmin"
    assert sam.body.count("support queue") == 3
    assert not Reminder.objects.filter(sent_at__isnull=True).exclude(recipient=people["marco"])
    mail.outbox.clear()
    clock(DUE + timedelta(days=2))
    assert send_reminders() == {"memories_reminded": 0, "digests_sent": 0}
    assert mail.outbox == []


def test_statement_is_sent_as_written_in_the_plain_text_digest(
    remember: Callable[..., Memory], people: dict[str, User], clock: Callable[[datetime], None]
) -> None:
    remember('Says <b>"R&D"</b> owns the budget.')
    clock(DUE)
    send_reminders()
    assert 'Says <b>"R&D"</b> owns the budget.' in mail.outbox[0].body


def test_a_long_statement_is_sent_readable_and_each_digest_logs_one_line(
    remember: Callable[..., Memory],
    people: dict[str, User],
    clock: Callable[[datetime], None],
    caplog: pytest.LogCaptureFixture,
) -> None:
    statement = "Prefers a call back from the same advisor who handled the billing dispute · " * 2
    remember(statement.strip())
    clock(DUE)
    with caplog.at_level("INFO", logger="ledger.actions.reminders"):
        send_reminders()
    to_dana = next(m for m in mail.outbox if m.to == ["dana@example.com"])
    raw = to_dana.message().as_bytes().decode()
    # 8-bit text, not quoted-printable: the statement reads as written in the raw message.
    assert "Content-Transfer-Encoding: 8bit" in raw
    assert statement.strip() in raw
    assert caplog.messages == [
        f"Reminder digest sent to person #{people[name].pk}: 1 reminder(s)."
        for name in ("sam", "kim", "dana")
    ]


def test_owner_without_email_still_has_the_reminder_on_their_page(
    remember: Callable[..., Memory], people: dict[str, User], clock: Callable[[datetime], None]
) -> None:
    remember("Orders flour in 25 kg sacks.", subject=OTHER)
    clock(DUE)
    send_reminders()
    assert [m.to for m in mail.outbox] == [["sam@example.com"], ["kim@example.com"]]
    page = signed_in(people["marco"]).get("/reminders/")
    assert "Orders flour in 25 kg sacks." in page.text
    assert 'class="nav-count">1<' in page.text


def test_memory_expiring_within_the_window_is_reminded_once(
    remember: Callable[..., Memory],
    people: dict[str, User],
    clock: Callable[[datetime], None],
    settings: Any,
) -> None:
    settings.MEMORYADMIN_EXPIRING_SOON_DAYS = 10
    memory = remember(
        "Trial ends with the quarter.",
        kind="account_fact",
        expires_at=WRITTEN + timedelta(days=30),
        expires_omitted=False,
    )
    clock(WRITTEN + timedelta(days=19))
    create_due_reminders()
    assert not Reminder.objects.exists()
    for day in (21, 22, 25, 29):
        clock(WRITTEN + timedelta(days=day))
        create_due_reminders()
        send_digests()
    reminders = Reminder.objects.filter(memory=memory, kind="expiring")
    assert reminders.count() == 2
    assert {r.due_on for r in reminders} == {date(2026, 2, 9)}
    assert [m.subject for m in mail.outbox if m.to == ["dana@example.com"]] == [
        "1 memory to check on memoryadmin"
    ]
    assert "Expiring soon (1)" in mail.outbox[0].body


def test_mail_server_down_leaves_reminders_unsent_for_the_retry(
    remember: Callable[..., Memory],
    people: dict[str, User],
    clock: Callable[[datetime], None],
    settings: Any,
) -> None:
    remember("Prefers email over telephone.")
    clock(DUE)
    create_due_reminders()
    settings.MAILERS = {
        "default": {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            # Port 9 (discard) is closed here: the connection is refused at once.
            "OPTIONS": {"host": "127.0.0.1", "port": 9, "timeout": 2},
        }
    }
    with pytest.raises(OSError):
        send_digests()
    assert Reminder.objects.filter(sent_at__isnull=True).count() == 2
    settings.MAILERS = {"default": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"}}
    assert send_digests() == 3


REVIEWS: dict[str, Callable[[Memory, Actor], Memory]] = {
    "confirm": lambda m, a: confirm_memory(memory=m, actor=a),
    "correct": lambda m, a: correct_memory(
        memory=m, actor=a, statement="Prefers email, even for urgent things.", reason="Clearer."
    ),
    "retract": lambda m, a: retract_memory(memory=m, actor=a, reason="Not true any more."),
    "renew": lambda m, a: renew_memory(
        memory=m, actor=a, expires_at=DUE + timedelta(days=365), reason="Still true."
    ),
}


@pytest.mark.parametrize("review", list(REVIEWS))
def test_reviewing_a_memory_clears_its_reminders(
    remember: Callable[..., Memory],
    people: dict[str, User],
    clock: Callable[[datetime], None],
    review: str,
) -> None:
    memory = remember("Prefers email over telephone.")
    clock(DUE + timedelta(days=1))
    create_due_reminders()
    client = signed_in(people["dana"])
    assert "Prefers email over telephone." in client.get("/reminders/").text
    REVIEWS[review](memory, Actor.for_user(people["dana"]))
    assert not Reminder.objects.open().exists()
    assert "Prefers email over telephone." not in client.get("/reminders/").text
    create_due_reminders()
    assert not Reminder.objects.open().exists()


def test_undoing_a_deletion_gives_the_memory_its_reminders_back(
    remember: Callable[..., Memory], people: dict[str, User], clock: Callable[[datetime], None]
) -> None:
    memory = remember("Prefers email over telephone.")
    clock(DUE + timedelta(days=1))
    create_due_reminders()
    client = signed_in(people["dana"])
    assert client.post(f"/memories/{memory.pk}/delete/").status_code == 302
    assert "Prefers email over telephone." not in client.get("/reminders/").text
    assert client.post(f"/memories/{memory.pk}/undo/").status_code == 302
    assert "Prefers email over telephone." in client.get("/reminders/").text
    assert "Prefers email over telephone." in signed_in(people["sam"]).get("/reminders/").text


def test_reminder_of_a_memory_gone_by_another_path_is_neither_shown_nor_sent(
    remember: Callable[..., Memory], people: dict[str, User], clock: Callable[[datetime], None]
) -> None:
    memory = remember("Prefers email over telephone.")
    clock(DUE)
    create_due_reminders()
    # Erased: not one of the four reviews, and erasure leaves its reminders alone.
    erase_subject(subject=memory.subject, actor=Actor.system("test"))
    assert "Prefers email" not in signed_in(people["dana"]).get("/reminders/").text
    assert send_digests() == 0
    assert mail.outbox == []


def test_confirming_sets_the_next_review_date_which_reminds_again(
    remember: Callable[..., Memory], people: dict[str, User], clock: Callable[[datetime], None]
) -> None:
    memory = remember("Prefers email over telephone.")
    clock(DUE + timedelta(days=1))
    create_due_reminders()
    confirmed = confirm_memory(memory=memory, actor=Actor.for_user(people["dana"]))
    assert confirmed.review_at == DUE + timedelta(days=181)
    clock(DUE + timedelta(days=181))
    create_due_reminders()
    assert list(
        Reminder.objects.open()
        .filter(audience="owner", kind="review")
        .values_list("due_on", flat=True)
    ) == [date(2027, 1, 6)]


def test_people_see_only_their_own_reminders_and_support_sees_the_queue(
    remember: Callable[..., Memory], people: dict[str, User], clock: Callable[[datetime], None]
) -> None:
    remember("Prefers email over telephone.")
    remember("Orders flour in 25 kg sacks.", subject=OTHER)
    clock(DUE)
    create_due_reminders()
    dana_page = signed_in(people["dana"]).get("/reminders/").text
    assert "Prefers email over telephone." in dana_page
    assert "Orders flour" not in dana_page
    assert "Support queue" not in dana_page
    sam_page = signed_in(people["sam"]).get("/reminders/").text
    assert "Support queue" in sam_page
    assert "Prefers email over telephone." in sam_page and "Orders flour" in sam_page


def test_marking_someone_elses_reminder_read_is_not_found(
    remember: Callable[..., Memory], people: dict[str, User], clock: Callable[[datetime], None]
) -> None:
    remember("Orders flour in 25 kg sacks.", subject=OTHER)
    clock(DUE)
    create_due_reminders()
    marcos = Reminder.objects.get(audience="owner")
    support = Reminder.objects.get(audience="support")
    client = signed_in(people["dana"])
    assert client.post(f"/reminders/{marcos.pk}/read/").status_code == 404
    assert client.post(f"/reminders/{support.pk}/read/").status_code == 404
    assert not Reminder.objects.filter(read_at__isnull=False).exists()


def test_mark_read_with_a_plain_form_redirects_back_with_a_message(
    remember: Callable[..., Memory], people: dict[str, User], clock: Callable[[datetime], None]
) -> None:
    remember("Prefers email over telephone.")
    clock(DUE)
    create_due_reminders()
    reminder = Reminder.objects.get(audience="owner")
    client = signed_in(people["dana"])
    assert 'class="nav-count">1<' in client.get("/reminders/").text
    response = client.post(f"/reminders/{reminder.pk}/read/", follow=True)
    assert response.redirect_chain == [("/reminders/", 302)]
    assert "Reminder marked as read." in response.text
    assert 'class="nav-count"></span>' in response.text
    reminder.refresh_from_db()
    assert reminder.read_at == DUE


def test_mark_read_with_htmx_swaps_only_that_reminder(
    remember: Callable[..., Memory], people: dict[str, User], clock: Callable[[datetime], None]
) -> None:
    remember("Prefers email over telephone.")
    clock(DUE)
    create_due_reminders()
    reminder = Reminder.objects.get(audience="support")
    response = signed_in(people["sam"]).post(
        f"/reminders/{reminder.pk}/read/", headers={"HX-Request": "true"}
    )
    assert response.status_code == 200
    assert response.text.lstrip().startswith(
        f'<li class="card reminder" id="reminder-{reminder.pk}"'
    )
    assert "Read " in response.text and "Mark as read" not in response.text
    assert "<html" not in response.text
    # The unread count in the navigation is updated out of band.
    assert '<span id="nav-unread" class="nav-count" hx-swap-oob="true"></span>' in response.text


def test_reminders_page_needs_sign_in(client: Client) -> None:
    response = client.get("/reminders/")
    assert response.status_code == 302
    assert response.url.startswith("/accounts/login/")


def test_a_former_owner_is_not_mailed_the_memories_of_a_subject_that_changed_hands(
    remember: Callable[..., Memory],
    people: dict[str, User],
    make_person: Callable[..., User],
    clock: Callable[[datetime], None],
) -> None:
    remember("Prefers email over telephone.")
    clock(DUE)
    create_due_reminders()
    make_person("noor", subject=SUBJECT)  # the subject now belongs to someone else
    send_digests()
    recipients = {address for message in mail.outbox for address in message.to}
    assert "dana@example.com" not in recipients
    assert "sam@example.com" in recipients
