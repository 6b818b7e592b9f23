"""Tampering the audit chain alone cannot show, each named by ``verify_audit``: a history row
inserted with SQL (it has no MAC the application made), the newest rows removed together
with their seals (the signed checkpoint outside the database still has them), a forged
checkpoint, and a live row changed with SQL (it no longer equals its newest version). An
untouched database passes, however its history was written: one row at a time, in bulk,
by the expiry sweep's SQL, or rewritten by an erasure."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection

from ledger.actions import seals
from ledger.actions.checkpoints import record_checkpoint
from ledger.actions.erasure import erase_subject
from ledger.actions.expiry import expire_due
from ledger.actions.lifecycle import correct_memory
from ledger.actors import Actor
from ledger.checks import audit_key_is_set
from ledger.models import Agent, AuditSeal, Conflict, Memory, Policy, Subject
from ledger.models.audit import DEVELOPMENT_SECRET_KEY, audit_keys, derived_key, key_id
from ledger.reads import audit_chain
from ledger.tasks import checkpoint_audit
from memoryadmin.celery import app
from tests.conftest import SUBJECT
from tests.test_audit_chain import OTHER, WRITTEN, refused, sql, verify

pytestmark = pytest.mark.django_db

HISTORY = Memory.history.model
TABLE = HISTORY._meta.db_table


def checkpoints() -> Path:
    return Path(settings.MEMORYADMIN_AUDIT_CHECKPOINTS)


@pytest.fixture
def story(remember: Callable[..., Memory], make_person: Callable[..., User], clock: Any) -> Memory:
    """A person, memories about two subjects (two of them in conflict), one corrected."""
    clock(WRITTEN)
    dana = make_person("dana", subject=SUBJECT)
    memory = remember("Prefers email over telephone.", key="contact.channel")
    remember("Prefers telephone over email.", key="contact.channel")
    remember("Works from Lisbon.", subject=OTHER)
    correct_memory(
        memory=memory,
        actor=Actor.for_user(dana),
        statement="Prefers letters over email.",
        reason="I never read email",
    )
    clock(WRITTEN + timedelta(minutes=5))
    return memory


def forge_copy(history_id: int, **changes: str) -> int:
    """Insert a copy of a history row with SQL, as the database role may, with ``changes``
    as SQL expressions over the original's columns; the new row's id."""
    columns = [f.column for f in HISTORY._meta.concrete_fields if not f.primary_key]
    values = [changes.get(column, f'"{column}"') for column in columns]
    names = ", ".join(f'"{column}"' for column in columns)
    with connection.cursor() as cursor:
        cursor.execute(
            f'INSERT INTO "{TABLE}" ({names}) SELECT {", ".join(values)} FROM "{TABLE}" '
            "WHERE history_id = %s RETURNING history_id",
            [history_id],
        )
        return int(cursor.fetchone()[0])


# --- an untouched database ------------------------------------------------------------


def test_an_untouched_history_passes_every_check(story: Memory) -> None:
    assert Conflict.history.exists()  # written in bulk, by create_tracked
    output = verify()
    assert "The audit chain follows" in output
    assert f"Every history row carries its MAC: {_history_rows()} rows checked" in output
    assert "every live row of" in output
    assert "The chains extend the checkpoint of" in verify()


def _history_rows() -> int:
    return sum(
        chain.rows().count() for chain in audit_chain.chains() if chain.table.startswith("ledger_h")
    )


def test_rows_the_expiry_sweep_writes_in_sql_carry_their_mac(
    remember: Callable[..., Memory], clock: Any
) -> None:
    clock(WRITTEN)
    for n in range(3):
        remember(
            f"Is away until the {n + 10}th.",
            expires_at=WRITTEN + timedelta(days=1),
            expires_omitted=False,
        )
    clock(WRITTEN + timedelta(days=2))
    assert expire_due().memories == 3
    assert Memory.history.filter(history_actor="system:expiry").count() == 3
    assert "Every history row carries its MAC" in verify()


def test_an_erasure_gives_the_rows_it_blanks_a_fresh_mac(story: Memory) -> None:
    seals.seal_pending(full=True)
    before = set(Memory.history.filter(id=story.pk).values_list("history_mac", flat=True))
    erase_subject(subject=Subject.objects.get(ref=SUBJECT), actor=Actor.system("test"))
    after = set(Memory.history.filter(id=story.pk).values_list("history_mac", flat=True))
    assert not before & after
    output = verify()
    assert "blanked by an erasure" in output
    assert "Every history row carries its MAC" in output


def test_a_row_blanked_by_hand_is_also_not_the_applications(story: Memory) -> None:
    first = Memory.history.filter(id=story.pk).order_by("history_id").first()
    assert first is not None
    sql(f"UPDATE \"{TABLE}\" SET statement = '' WHERE history_id = %s", [first.history_id])
    message = refused()
    assert (
        f"memory history row {first.history_id} (table {TABLE}, object {story.pk}, "
        "2025-03-04 09:30:00 UTC): its MAC does not match its content"
    ) in message


# --- (a) a row the application did not write ------------------------------------------


def test_a_history_row_inserted_with_sql_is_named_and_never_sealed(
    story: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    """The probe's forgery: a copy of a real row under a new id, its text changed, an admin
    named as the actor, dated thirty days back."""
    real = Memory.history.filter(id=story.pk).order_by("history_id").first()
    assert real is not None
    forged = forge_copy(
        real.history_id,
        statement="'FORGED'",
        history_actor="'user:admin'",
        history_role="'admin'",
        history_date="history_date - interval '30 days'",
    )
    named = (
        f"memory history row {forged} (table {TABLE}, object {story.pk}, 2025-02-02 09:30:00 "
        "UTC): its MAC does not match its content"
    )
    with caplog.at_level(logging.ERROR, logger="ledger.actions.seals"):
        for _ in range(2):
            message = refused()
            assert "History rows the application did not write:" in message
            assert named in message
    assert not AuditSeal.objects.filter(table=TABLE, row_id=forged).exists()
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Not sealed")]
    assert len(lines) == 2, "one line for each pass, not for each row"
    assert lines[0].startswith(
        "Not sealed: 1 memory history row(s) the application did not write as they stand, "
        f"the first row {forged}: its MAC does not match"
    )


def test_a_history_row_inserted_without_a_mac_is_named(story: Memory) -> None:
    real = Memory.history.filter(id=story.pk).order_by("history_id").first()
    assert real is not None
    forged = forge_copy(real.history_id, history_mac="''", statement="'FORGED'")
    assert f"memory history row {forged} (table {TABLE}, " in refused()
    assert "it has no MAC: the application did not write it" in refused()


def test_an_exact_copy_under_a_new_id_is_named_as_a_copy(story: Memory) -> None:
    real = Memory.history.filter(id=story.pk).order_by("history_id").first()
    assert real is not None
    copy = forge_copy(real.history_id)
    assert (
        f"memory history row {copy} (table {TABLE}, object {story.pk}, 2025-03-04 09:30:00 "
        f"UTC): it carries the MAC of row {real.history_id}: a copy the application did not "
        "write"
    ) in refused()


def test_rows_made_with_a_key_since_rotated_out_still_verify(story: Memory, settings: Any) -> None:
    settings.MEMORYADMIN_AUDIT_KEY = "the-new-key-" + "x" * 32
    old = f"its MAC was made with key {key_id(derived_key(settings.SECRET_KEY))}"
    assert "neither MEMORYADMIN_AUDIT_KEY nor one of MEMORYADMIN_AUDIT_OLD_KEYS" in refused()
    assert old in refused()
    # The key before was derived from SECRET_KEY (none was set): listed, it verifies again.
    settings.MEMORYADMIN_AUDIT_OLD_KEYS = [derived_key(settings.SECRET_KEY)]
    assert old not in verify()
    assert "Every history row carries its MAC" in verify()


def test_without_a_key_of_its_own_what_make_run_wrote_verifies_beside_it(
    story: Memory, settings: Any
) -> None:
    """``make run`` writes with DEBUG=1 and the development SECRET_KEY; ``verify_audit``,
    run beside it without DEBUG, has the install's own ``.secret_key``."""
    if settings.SECRET_KEY != DEVELOPMENT_SECRET_KEY:
        pytest.skip("the suite runs with another SECRET_KEY than make run's (DEBUG=1)")
    seals.seal_pending(full=True)
    record_checkpoint(force=True)
    settings.SECRET_KEY = "the install's own key, from its .secret_key file"
    assert "The chains extend the checkpoint of" in verify()
    # A deployment's own key: then only it and the old keys it lists verify.
    settings.MEMORYADMIN_AUDIT_KEY = "the deployment's own key, long enough"
    assert f"made with key {key_id(derived_key(DEVELOPMENT_SECRET_KEY))}" in refused()


# --- (b) the newest rows removed with their seals -------------------------------------


def remove_newest(table: str, count: int) -> None:
    newest = list(
        AuditSeal.objects.filter(table=table).order_by("-seq").values_list("row_id", flat=True)
    )[:count]
    sql('DELETE FROM ledger_auditseal WHERE "table" = %s AND row_id = ANY(%s)', [table, newest])
    sql(f'DELETE FROM "{table}" WHERE history_id = ANY(%s)', [newest])


def test_the_newest_rows_removed_with_their_seals_are_named(story: Memory) -> None:
    verify()
    lines = checkpoints().read_text().splitlines()
    recorded = json.loads(lines[-1])["heads"][TABLE][0]
    assert recorded == Memory.history.count()
    # What the seals alone cannot show: the chain left still follows.
    remove_newest(TABLE, 2)
    message = refused()
    assert f"The chain was cut back since its last checkpoint ({checkpoints()}):" in message
    assert (
        f"memory history ({TABLE}): the chain has {recorded - 2} seals, but the checkpoint of "
        f"2025-03-04 09:35:00 UTC recorded {recorded}: seals after {recorded - 2} were removed"
    ) in message
    # The sealer's pass records no checkpoint of the cut chain: the last one still accuses.
    assert checkpoints().read_text().splitlines() == lines
    assert "the chain has" in refused()


def test_rows_removed_and_the_chain_sealed_again_to_its_length_are_named(
    story: Memory, remember: Callable[..., Memory]
) -> None:
    verify()
    recorded = json.loads(checkpoints().read_text().splitlines()[-1])["heads"][TABLE][0]
    remove_newest(TABLE, 1)
    remember("Lives near the harbour.", subject=OTHER)
    seals.seal_table(audit_chain.chain_for(TABLE))
    assert AuditSeal.objects.filter(table=TABLE).count() == recorded
    assert (
        f"memory history ({TABLE}): seal {recorded} is not the head the checkpoint of "
        "2025-03-04 09:35:00 UTC recorded"
    ) in refused("--no-seal")


def test_each_sealing_pass_records_a_checkpoint_when_a_head_moved(
    story: Memory, remember: Callable[..., Memory]
) -> None:
    seals.seal_pending()
    assert len(checkpoints().read_text().splitlines()) == 1
    seals.seal_pending()
    assert len(checkpoints().read_text().splitlines()) == 1
    remember("Lives near the harbour.", subject=OTHER)
    seals.seal_pending()
    lines = checkpoints().read_text().splitlines()
    assert len(lines) == 2
    line = json.loads(lines[-1])
    assert line["heads"][TABLE][0] == Memory.history.count()
    assert line["database"] == connection.settings_dict["NAME"]
    assert line["signature"].startswith(f"{audit_keys().current}:")


def test_the_beat_records_a_checkpoint_every_hour_whatever_happened(story: Memory) -> None:
    entry = settings.CELERY_BEAT_SCHEDULE["checkpoint-audit"]
    assert entry["task"] == "ledger.tasks.checkpoint_audit" and entry["task"] in app.tasks
    assert entry["schedule"] == 3600
    seals.seal_pending()
    assert checkpoint_audit() == {"written": True, "refused": False}
    assert len(checkpoints().read_text().splitlines()) == 2


def test_another_databases_checkpoints_are_not_compared(story: Memory, settings: Any) -> None:
    verify()
    line = json.loads(checkpoints().read_text().splitlines()[-1])
    line["database"] = "another"
    line["heads"][TABLE][0] += 100
    from ledger.reads.audit_checkpoints import signed_line

    heads = {table: (seq, head) for table, (seq, head) in line["heads"].items()}
    with checkpoints().open("a") as file:
        file.write(signed_line("another", WRITTEN, heads) + "\n")
    assert "The chains extend the checkpoint of" in verify()
    # Nor judged: another deployment signs its lines with its own key (a development
    # machine's test databases, say), and they are not this one's to accuse.
    settings.MEMORYADMIN_AUDIT_KEY = "another deployment's key, long enough"
    with checkpoints().open("a") as file:
        file.write(signed_line("test_another", WRITTEN, heads) + "\n")
    settings.MEMORYADMIN_AUDIT_KEY = ""
    output = verify()
    assert "The chains extend the checkpoint of" in output and "tampered" not in output


# --- a forged checkpoint -------------------------------------------------------------


def test_a_checkpoint_changed_in_the_file_is_reported_as_tampered(story: Memory) -> None:
    verify()
    lines = checkpoints().read_text().splitlines()
    line = json.loads(lines[-1])
    # Lowered so that a chain cut back would match it.
    line["heads"][TABLE][0] -= 2
    checkpoints().write_text("\n".join([*lines[:-1], json.dumps(line)]) + "\n")
    message = refused()
    assert f"The checkpoint file {checkpoints()} was tampered with:" in message
    assert f"line {len(lines)} ({line['at']}): its signature does not match" in message


def test_a_checkpoint_signed_with_another_key_is_reported_as_tampered(
    story: Memory, settings: Any
) -> None:
    verify()
    settings.MEMORYADMIN_AUDIT_KEY = "an attacker's own key, long enough"
    record_checkpoint(force=True)
    settings.MEMORYADMIN_AUDIT_KEY = ""
    message = refused()
    assert "was tampered with:" in message
    assert (
        f"it is signed with key {key_id('an attacker' + chr(39) + 's own key, long enough')}"
        in (message)
    )


def test_a_line_that_is_no_checkpoint_is_reported(story: Memory) -> None:
    verify()
    with checkpoints().open("a") as file:
        file.write('{"heads": {}}\n')
    assert "line 2 is not a checkpoint" in refused()


# --- (c) live rows changed behind the application's back ------------------------------


def test_a_statement_changed_in_the_live_table_is_named(story: Memory) -> None:
    newest = Memory.history.filter(id=story.pk).order_by("-history_id").first()
    assert newest is not None
    sql("UPDATE ledger_memory SET statement = 'Call at night.' WHERE id = %s", [story.pk])
    message = refused()
    assert "Live rows that differ from their history:" in message
    assert (
        f"memory {story.pk}: statement differ from its newest history version (row "
        f"{newest.history_id}): changed behind the application's back"
    ) in message


def test_an_agents_scopes_changed_in_the_live_table_are_named(story: Memory) -> None:
    agent = Agent.objects.get(name="fixture-agent")
    sql(
        "UPDATE ledger_agent SET scopes = %s WHERE id = %s",
        ['["read", "write", "admin"]', agent.pk],
    )
    assert f"agent {agent.pk}: scopes differ from its newest history version" in refused()


def test_a_live_row_inserted_with_sql_is_named(story: Memory) -> None:
    sql(
        "INSERT INTO ledger_subject (ref, display_name, memory_paused, created_at) "
        "VALUES ('acct_forged', '', false, now()) RETURNING id"
    )
    forged = Subject.objects.get(ref="acct_forged")
    assert f"subject {forged.pk}: it has no history: inserted behind" in refused()


def test_a_live_row_deleted_with_sql_is_named(story: Memory) -> None:
    other = Subject.objects.get(ref=OTHER)
    sql(
        "DELETE FROM ledger_source WHERE memory_id IN "
        "(SELECT id FROM ledger_memory WHERE subject_id = %s)",
        [other.pk],
    )
    memory = Memory.objects.get(subject=other)
    sql("DELETE FROM ledger_writedecision WHERE memory_id = %s", [memory.pk])
    sql("DELETE FROM ledger_memoryvector WHERE memory_id = %s", [memory.pk])
    sql("DELETE FROM ledger_memory WHERE id = %s", [memory.pk])
    message = refused()
    assert f"memory {memory.pk}: the row is gone, but its newest history version" in message


def the_policy_as_the_migration_makes_it() -> None:
    """The row ledger 0002 makes, unless it is there: a transactional test before this one
    flushes the database, the migration's row with it."""
    fields = Policy._meta.concrete_fields
    shipped = Policy(pk=1)
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    sql(
        f"INSERT INTO ledger_policy ({columns}) VALUES ({', '.join(['%s'] * len(fields))}) "
        "ON CONFLICT (id) DO NOTHING",
        [f.get_db_prep_save(getattr(shipped, f.attname), connection) for f in fields],
    )


def test_the_policy_a_migration_made_has_no_history_and_passes_until_changed(
    story: Memory,
) -> None:
    the_policy_as_the_migration_makes_it()
    assert not Policy.history.exists()
    assert "every live row of" in verify()
    sql("UPDATE ledger_policy SET inferred_max_days = inferred_max_days + 1")
    assert (
        "policy 1: it has no history, and inferred_max_days differ from what the migration "
        "that made it wrote: changed behind the application's back"
    ) in refused()


def test_a_policy_row_restored_to_what_the_migration_wrote_passes(story: Memory) -> None:
    """What the check cannot tell (docs/audit-chain.md): a policy without history that
    holds what memoryadmin ships, whether it was never changed or changed back by hand."""
    the_policy_as_the_migration_makes_it()
    sql("UPDATE ledger_policy SET inferred_max_days = inferred_max_days + 1")
    sql("UPDATE ledger_policy SET inferred_max_days = inferred_max_days - 1")
    assert "every live row of" in verify()


# --- the key ----------------------------------------------------------------------------


def test_a_deployment_without_its_own_audit_key_fails_the_deploy_check(settings: Any) -> None:
    settings.MEMORYADMIN_AUDIT_KEY = ""
    (error,) = audit_key_is_set(None)
    assert error.id == "memoryadmin.E020"
    assert "MEMORYADMIN_AUDIT_KEY is not set" in error.msg
    settings.MEMORYADMIN_AUDIT_KEY = "a-long-random-secret-" + "k" * 24
    assert audit_key_is_set(None) == []
