"""The audit's hash chain: every history row sealed, ``verify_audit`` naming the first row
changed behind the application's back, erasure leaving it whole, and the grants that make
history append-only for the application's database role, tried on PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from io import StringIO
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.db.utils import ProgrammingError
from django.test.utils import CaptureQueriesContext

from ledger.actions import seals
from ledger.actions.agents import create_agent
from ledger.actions.erasure import erase_subject
from ledger.actions.gate import MemoryInput, write_memory
from ledger.actions.journal import journal_intent, record_outcome
from ledger.actions.ledger_entries import record_ledger_entry
from ledger.actions.lifecycle import correct_memory
from ledger.actions.notes import write_note
from ledger.actions.runs import start_run
from ledger.actions.sources import SourceInput
from ledger.actions.subjects import set_display_name
from ledger.actors import Actor
from ledger.models import (
    Agent,
    AgentKey,
    AuditSeal,
    JournalEntry,
    Memory,
    PersonChange,
    Run,
    Source,
    Subject,
)
from ledger.models.erasable import REASON_REMOVED
from ledger.reads import audit_chain
from ledger.tasks import seal_audit
from memoryadmin.celery import app
from tests.conftest import SUBJECT

pytestmark = pytest.mark.django_db

OTHER = "acct_5c0ffee5c0ffee51"
MEMORY_HISTORY = Memory.history.model._meta.db_table
WRITTEN = datetime(2025, 3, 4, 9, 30, tzinfo=UTC)


def verify(*args: str) -> str:
    out = StringIO()
    call_command("verify_audit", *args, stdout=out, stderr=out)
    return out.getvalue()


def refused(*args: str) -> str:
    with pytest.raises(CommandError) as failure:
        verify(*args)
    return str(failure.value)


def sql(statement: str, params: list[Any] | None = None) -> None:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)


def history_rows(memory: Memory) -> list[Any]:
    return list(Memory.history.filter(id=memory.pk).order_by("history_id"))


def where(row: Any) -> str:
    """How verify_audit names a memory's history row."""
    when = f"{row.history_date:%Y-%m-%d %H:%M:%S} UTC"
    return f"memory history row {row.history_id} (object {row.id}, {when})"


@pytest.fixture
def story(remember: Callable[..., Memory], make_person: Callable[..., User], clock: Any) -> Memory:
    """A small history: a person, memories about two subjects, one of them corrected."""
    clock(WRITTEN)
    dana = make_person("dana", subject=SUBJECT)
    memory = remember("Prefers email over telephone.", key="contact.channel")
    remember("Works from Lisbon.", subject=OTHER)
    correct_memory(
        memory=memory,
        actor=Actor.for_user(dana),
        statement="Prefers letters over email.",
        reason="I never read email",
    )
    return memory


@pytest.fixture
def sealed(story: Memory) -> Memory:
    seals.seal_pending(full=True)
    return story


def test_a_fresh_history_follows(story: Memory) -> None:
    output = verify()
    assert "The audit chain follows:" in output
    memories = Memory.history.count()
    assert f"memory history: {memories} rows" in output
    assert "0 not sealed yet" in output
    assert AuditSeal.objects.filter(table=MEMORY_HISTORY).count() == memories


def test_each_table_is_a_chain_of_its_own(sealed: Memory) -> None:
    seqs = list(
        AuditSeal.objects.filter(table=MEMORY_HISTORY).order_by("seq").values_list("seq", flat=True)
    )
    assert seqs == list(range(1, Memory.history.count() + 1))
    person_table = PersonChange._meta.db_table
    assert AuditSeal.objects.filter(table=person_table).count() == PersonChange.objects.count() > 0


def test_a_changed_statement_is_named(sealed: Memory) -> None:
    first = history_rows(sealed)[0]
    sql(
        f'UPDATE "{MEMORY_HISTORY}" SET statement = %s WHERE history_id = %s',
        ["Prefers calls at night.", first.history_id],
    )
    message = refused()
    assert f"{where(first)}: its text or reason no longer matches its seal" in message


def test_a_changed_reason_is_named(sealed: Memory) -> None:
    correction = Memory.history.get(history_change_reason="Corrected: I never read email")
    sql(
        f'UPDATE "{MEMORY_HISTORY}" SET history_change_reason = %s WHERE history_id = %s',
        ["Support said so", correction.history_id],
    )
    assert f"{where(correction)}: its text or reason" in refused()


def test_a_changed_actor_is_named(sealed: Memory) -> None:
    first = history_rows(sealed)[0]
    sql(
        f'UPDATE "{MEMORY_HISTORY}" SET history_actor = %s WHERE history_id = %s',
        ["user:dana", first.history_id],
    )
    assert f"{where(first)}: it no longer matches its seal: who made the change" in refused()


def test_a_backdated_row_is_named(sealed: Memory) -> None:
    last = history_rows(sealed)[-1]
    earlier = last.history_date - timedelta(days=30)
    sql(
        f'UPDATE "{MEMORY_HISTORY}" SET history_date = %s WHERE history_id = %s',
        [earlier, last.history_id],
    )
    last.history_date = earlier
    assert f"{where(last)}: it no longer matches its seal" in refused()


def test_a_changed_status_is_named(sealed: Memory) -> None:
    first = history_rows(sealed)[0]
    sql(
        f"UPDATE \"{MEMORY_HISTORY}\" SET status = 'retracted' WHERE history_id = %s",
        [first.history_id],
    )
    assert f"{where(first)}: it no longer matches its seal" in refused()


def test_a_deleted_row_is_named(sealed: Memory) -> None:
    first = history_rows(sealed)[0]
    sql(f'DELETE FROM "{MEMORY_HISTORY}" WHERE history_id = %s', [first.history_id])
    message = refused()
    assert f"memory history row {first.history_id}: it was deleted after it was sealed" in message


def test_a_removed_seal_breaks_the_chain_at_the_next_row(sealed: Memory) -> None:
    seals = list(AuditSeal.objects.filter(table=MEMORY_HISTORY).order_by("seq"))
    sql("DELETE FROM ledger_auditseal WHERE id = %s", [seals[1].pk])
    after = Memory.history.get(history_id=seals[2].row_id)
    assert f"{where(after)}: the chain does not follow: seal 2 before it is missing" in refused()


def test_only_the_first_bad_row_of_a_table_is_named_and_other_tables_still_checked(
    sealed: Memory,
) -> None:
    rows = history_rows(sealed)
    for row in rows:
        sql(
            f"UPDATE \"{MEMORY_HISTORY}\" SET history_role = 'admin' WHERE history_id = %s",
            [row.history_id],
        )
    sql("UPDATE ledger_personchange SET actor = 'user:mallory'")
    message = refused()
    assert where(rows[0]) in message
    assert where(rows[1]) not in message
    assert "person change row" in message


def test_an_erasure_keeps_the_chain_whole(
    sealed: Memory, agent: Agent, make_person: Callable[..., User]
) -> None:
    subject = Subject.objects.get(ref=SUBJECT)
    set_display_name(subject=subject, display_name="Dana Quill", actor=Actor.system("test"))
    record_ledger_entry(
        subject=subject,
        agent=agent,
        fact="Promised a refund of 40 EUR.",
        kind="commitment",
        source=SourceInput(kind="user_message", ref="msg_r", excerpt="refund please"),
        run_ref="run_r",
    )
    run = Run.objects.get(ref="run_r")
    journal_intent(
        agent=agent, run=run, idempotency_key="r-1", action="refund", intent={"to": "Dana"}
    )
    record_outcome(agent=agent, idempotency_key="r-1", state="done", effect={"id": "r9"})
    write_note(run=run, agent=agent, key="hint", value="asked twice")
    seals.seal_pending(full=True)
    assert "The audit chain follows" in verify()

    erase_subject(subject=subject, actor=Actor.system("test"), requested_by="Dana, by phone")
    first = history_rows(sealed)[0]
    assert (first.statement, first.history_change_reason) == ("", REASON_REMOVED)
    output = verify()
    assert "The audit chain follows" in output
    assert "blanked by an erasure" in output


def test_blanking_a_row_like_an_erasure_without_one_is_named(sealed: Memory) -> None:
    first = history_rows(sealed)[0]
    sql(
        f"UPDATE \"{MEMORY_HISTORY}\" SET statement = '', normalized = '', key = '', "
        "history_change_reason = %s WHERE history_id = %s",
        [REASON_REMOVED, first.history_id],
    )
    assert f"{where(first)}: its text or reason no longer matches its seal, and not in" in (
        refused()
    )


def test_an_erasure_record_moved_to_another_subject_is_named(sealed: Memory) -> None:
    erasure = erase_subject(
        subject=Subject.objects.get(ref=SUBJECT), actor=Actor.system("test"), requested_by="Dana"
    )
    assert "erasure: 1 row" in verify()
    # Moved, it would excuse the other subject's history blanked by hand.
    other = Subject.objects.get(ref=OTHER)
    sql("UPDATE ledger_erasure SET subject_id = %s WHERE id = %s", [other.pk, erasure.pk])
    message = refused()
    assert f"erasure row {erasure.pk} (object {other.pk}, " in message
    assert "it no longer matches its seal" in message


def test_an_erased_key_taken_from_another_row_is_named(sealed: Memory, agent: Agent) -> None:
    """A unique key is blanked to words made of its row's id: any other value is not the
    shape an erasure leaves, even one an erasure left on another row."""
    run = start_run(ref="run_k", agent=agent, subject=Subject.objects.get(ref=SUBJECT))
    for key in ("k-1", "k-2"):
        journal_intent(agent=agent, run=run, idempotency_key=key, action="call", intent={})
    erase_subject(subject=Subject.objects.get(ref=SUBJECT), actor=Actor.system("test"))
    assert "The audit chain follows" in verify()
    first, second = JournalEntry.history.order_by("history_id")[:2]
    assert first.idempotency_key == f"(erased {first.id})"
    table = JournalEntry.history.model._meta.db_table
    sql(
        f'UPDATE "{table}" SET idempotency_key = %s WHERE history_id = %s',
        [second.idempotency_key, first.history_id],
    )
    assert f"journal entry history row {first.history_id}" in refused()


def test_an_erased_row_changed_in_any_other_way_is_named(sealed: Memory) -> None:
    erase_subject(subject=Subject.objects.get(ref=SUBJECT), actor=Actor.system("test"))
    first = history_rows(sealed)[0]
    sql(
        f"UPDATE \"{MEMORY_HISTORY}\" SET history_type = '-' WHERE history_id = %s",
        [first.history_id],
    )
    assert f"memory history row {first.history_id}" in refused()


def blank_like_an_erasure(row: Any) -> None:
    sql(
        f"UPDATE \"{MEMORY_HISTORY}\" SET statement = '', normalized = '', key = '', "
        "history_change_reason = %s WHERE history_id = %s",
        [REASON_REMOVED, row.history_id],
    )


def test_blanking_a_row_written_after_the_erasure_is_named(
    sealed: Memory, remember: Callable[..., Memory], clock: Any
) -> None:
    erase_subject(subject=Subject.objects.get(ref=SUBJECT), actor=Actor.system("test"))
    clock(WRITTEN + timedelta(days=1))
    (later,) = history_rows(remember("Moved to Porto."))
    assert "The audit chain follows" in verify()
    # In exactly the shape an erasure leaves, but the subject's erasure was the day before.
    blank_like_an_erasure(later)
    assert f"{where(later)}: its text or reason no longer matches its seal, and not in" in (
        refused()
    )


def test_a_second_erasure_covers_the_rows_written_since_the_first(
    sealed: Memory, remember: Callable[..., Memory], clock: Any
) -> None:
    subject = Subject.objects.get(ref=SUBJECT)
    erase_subject(subject=subject, actor=Actor.system("test"))
    clock(WRITTEN + timedelta(days=1))
    later = remember("Moved to Porto.")
    seals.seal_pending(full=True)
    clock(WRITTEN + timedelta(days=2))
    erase_subject(subject=subject, actor=Actor.system("test"))
    first = history_rows(later)[0]
    assert (first.statement, first.history_change_reason) == ("", REASON_REMOVED)
    output = verify()
    assert "The audit chain follows" in output
    assert "erasure: 2 rows" in output


def test_an_erasure_blanks_no_row_dated_after_it(
    sealed: Memory, remember: Callable[..., Memory], clock: Any
) -> None:
    """A version dated after the erasure (its server's clock ran ahead) is not the
    erasure's to blank: the check would rightly call it blanked by hand. The subject's
    next erasure reaches it."""
    subject = Subject.objects.get(ref=SUBJECT)
    clock(WRITTEN + timedelta(hours=1))
    ahead = remember("Moved to Porto.")
    seals.seal_pending(full=True)
    clock(WRITTEN)
    erase_subject(subject=subject, actor=Actor.system("test"))
    assert "The audit chain follows" in verify()
    clock(WRITTEN + timedelta(hours=2))
    erase_subject(subject=subject, actor=Actor.system("test"))
    assert history_rows(ahead)[0].statement == ""
    assert "The audit chain follows" in verify()


def test_checking_erased_rows_costs_the_same_however_many_erasures_there_are(
    sealed: Memory, clock: Any
) -> None:
    def queries_to_verify() -> int:
        seals.seal_pending(full=True)
        with CaptureQueriesContext(connection) as queries:
            audit_chain.verify()
        return len(queries)

    erase_subject(subject=Subject.objects.get(ref=SUBJECT), actor=Actor.system("test"))
    once = queries_to_verify()
    for hours in (1, 2, 3):
        clock(WRITTEN + timedelta(hours=hours))
        erase_subject(subject=Subject.objects.get(ref=OTHER), actor=Actor.system("test"))
    assert queries_to_verify() == once


def test_a_row_committed_after_a_later_one_was_sealed_is_sealed_next(story: Memory) -> None:
    middle = history_rows(story)[1]
    # As if its transaction were still open while the sealer ran: absent, then committed.
    sql(
        f'CREATE TEMP TABLE late AS SELECT * FROM "{MEMORY_HISTORY}" WHERE history_id = %s',
        [middle.history_id],
    )
    sql(f'DELETE FROM "{MEMORY_HISTORY}" WHERE history_id = %s', [middle.history_id])
    seals.seal_pending()
    sql(f'INSERT INTO "{MEMORY_HISTORY}" SELECT * FROM late')
    assert not AuditSeal.objects.filter(row_id=middle.history_id, table=MEMORY_HISTORY).exists()
    # A commit's own sealer looks only above the highest sealed row; the beat's looks back.
    assert seals.seal_batch(audit_chain.chain_for(MEMORY_HISTORY)) == 0
    assert seals.seal_pending() == 1
    seal = AuditSeal.objects.get(table=MEMORY_HISTORY, row_id=middle.history_id)
    assert seal.seq == Memory.history.count()
    assert "The audit chain follows" in verify("--no-seal")


def test_rows_left_unsealed_by_a_stopped_sealer_are_warned_about(story: Memory, clock: Any) -> None:
    clock(WRITTEN + timedelta(minutes=20))
    output = verify("--no-seal")
    assert "Warning: memory history: " in output
    assert "rows without a seal, the oldest written 2025-03-04 09:30:00 UTC" in output
    assert "Is the sealer running" in output
    assert "Warning" not in verify()


def test_a_backlog_is_sealed_batch_by_batch_in_id_order(
    story: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(seals, "SEAL_BATCH", 2)
    chain = audit_chain.chain_for(MEMORY_HISTORY)
    assert seals.seal_batch(chain) == 2
    assert seals.seal_table(chain) == Memory.history.count() - 2
    sealed = AuditSeal.objects.filter(table=MEMORY_HISTORY).order_by("seq")
    assert list(sealed.values_list("row_id", flat=True)) == sorted(
        Memory.history.values_list("history_id", flat=True)
    )
    assert "The audit chain follows" in verify("--no-seal")


@pytest.mark.parametrize("count", [1, 12])
def test_a_commit_queues_one_sealer_for_every_table_it_wrote_which_seals_them_all(
    django_capture_on_commit_callbacks: Any,
    django_assert_max_num_queries: Any,
    count: int,
) -> None:
    with django_capture_on_commit_callbacks() as queued:
        agent = create_agent(name="sealed-agent", scopes=["write"], actor=Actor.system("test"))[0]
        for n in range(count):
            write_memory(
                agent=agent,
                data=MemoryInput(
                    subject=f"acct_{count}_{n}",
                    kind="preference",
                    statement=f"Fact number {n} of {count}.",
                    basis="stated",
                    source=SourceInput(kind="user_message", ref="msg_1"),
                ),
            )
    # The writer runs no sealing query: it hands the tables it wrote to one sealer.
    (sealer,) = [c for c in queued if isinstance(c, seals._SealAfterCommit)]
    tracked = {Agent, AgentKey, Subject, Memory, Source}
    assert sealer.tables == {m.history.model._meta.db_table for m in tracked}
    # What the sealer task does, each table: a savepoint, the lock, the last seal, the rows
    # waiting, the seals, a release.
    with django_assert_max_num_queries(6 * len(tracked)):
        seals.seal_written(sealer.tables)
    assert not audit_chain.unsealed(audit_chain.chain_for(MEMORY_HISTORY)).exists()


@pytest.mark.django_db(transaction=True)
def test_seals_appear_once_a_write_commits_when_tasks_run_at_once(
    remember: Callable[..., Memory],
) -> None:
    """With no worker (``CELERY_TASK_ALWAYS_EAGER``) the commit seals its own rows; with
    one, the sealer it queues does (``tests/test_write_cost.py``)."""
    app.conf.task_always_eager = True
    try:
        memory = remember("Prefers email over telephone.")
    finally:
        app.conf.task_always_eager = settings.CELERY_TASK_ALWAYS_EAGER
    rows = Memory.history.filter(id=memory.pk).values_list("history_id", flat=True)
    seals = AuditSeal.objects.filter(table=MEMORY_HISTORY, row_id__in=list(rows))
    assert seals.count() == len(rows) == 1
    assert "The audit chain follows" in verify("--no-seal")


def test_the_beat_seals_every_minute() -> None:
    entry = settings.CELERY_BEAT_SCHEDULE["seal-audit"]
    assert entry["task"] == "ledger.tasks.seal_audit" and entry["task"] in app.tasks
    assert entry["schedule"] == 60 == entry["options"]["expires"]  # type: ignore[index]


def test_the_beat_task_seals_what_is_waiting(story: Memory) -> None:
    waiting = sum(audit_chain.unsealed(chain).count() for chain in audit_chain.chains())
    assert seal_audit() == {"sealed": waiting}
    assert seal_audit() == {"sealed": 0}


# --- the grants ---------------------------------------------------------------------------


def grants(role: str) -> list[str]:
    out = StringIO()
    call_command("audit_grants", role, stdout=out)
    return [line for line in out.getvalue().splitlines() if not line.startswith("--")]


@pytest.fixture
def app_role(story: Memory) -> Iterator[str]:
    """A role with audit_grants' privileges, for the rest of the test. Roles and grants
    are transactional in PostgreSQL: the test's rollback removes them."""
    role = f"ma_h3_app_{uuid.uuid4().hex[:8]}"
    sql(f'CREATE ROLE "{role}" NOLOGIN')
    for statement in grants(role):
        if statement not in ("BEGIN;", "COMMIT;"):
            sql(statement)
    # Until the test's transaction ends, as every SET LOCAL does.
    sql(f'SET LOCAL ROLE "{role}"')
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_user")
        assert cursor.fetchone() == (role,)
    yield role


def is_refused(statement: str, params: list[Any] | None = None) -> bool:
    try:
        with transaction.atomic():
            sql(statement, params)
    except ProgrammingError as error:
        assert "permission denied" in str(error)
        return True
    return False


def test_the_application_role_cannot_rewrite_history(app_role: str, story: Memory) -> None:
    first = history_rows(story)[0]
    assert is_refused(
        f'UPDATE "{MEMORY_HISTORY}" SET history_actor = %s WHERE history_id = %s',
        ["user:dana", first.history_id],
    )
    assert is_refused(f'DELETE FROM "{MEMORY_HISTORY}" WHERE history_id = %s', [first.history_id])
    assert is_refused("UPDATE ledger_personchange SET reason = 'x'")
    assert is_refused("UPDATE ledger_auditseal SET hash = 'x'")
    assert is_refused("DELETE FROM ledger_auditseal")
    assert is_refused("UPDATE ledger_erasure SET subject_id = subject_id")
    assert is_refused("DELETE FROM ledger_erasure")


def test_the_application_role_can_still_write_seal_and_erase(
    app_role: str, story: Memory, remember: Callable[..., Memory]
) -> None:
    remember("Lives near the harbour.", subject=OTHER)
    assert seals.seal_pending(full=True) > 0
    erasure = erase_subject(subject=Subject.objects.get(ref=SUBJECT), actor=Actor.system("test"))
    assert erasure.memories == 2
    assert seals.seal_pending(full=True) > 0
    assert "The audit chain follows" in verify()


def test_audit_grants_keeps_skeleton_columns_out_of_updates() -> None:
    statements = grants("app")
    memory = [s for s in statements if f'"{MEMORY_HISTORY}"' in s]
    assert memory == [
        f'REVOKE ALL ON "{MEMORY_HISTORY}" FROM "app";',
        f'GRANT SELECT, INSERT ON "{MEMORY_HISTORY}" TO "app";',
        f'GRANT UPDATE ("statement", "normalized", "key", "history_change_reason", '
        f'"history_mac", "history_user_id") ON "{MEMORY_HISTORY}" TO "app";',
    ]
    assert 'GRANT SELECT, INSERT ON "ledger_auditseal" TO "app";' in statements
    assert 'GRANT SELECT, INSERT, UPDATE, DELETE ON "ledger_memory" TO "app";' in statements
    assert statements[0] == "BEGIN;" and statements[-1] == "COMMIT;"


def test_audit_grants_refuses_a_role_name_that_is_not_plain() -> None:
    with pytest.raises(CommandError, match="is not a plain role name"):
        grants('app"; DROP TABLE ledger_memory; --')
