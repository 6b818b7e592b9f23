"""The audit chain across the upgrade that changed its layout (ledger 0009): a history sealed
by the release before still verifies afterwards, an erasure after the upgrade still
verifies, and history changed before the upgrade makes the migration refuse, resealing
nothing. Each test migrates a real PostgreSQL database back to 0008 and forward again."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.apps.registry import Apps
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder

from ledger.actions.erasure import erase_subject
from ledger.actions.journal import journal_intent
from ledger.actions.ledger_entries import record_ledger_entry
from ledger.actions.lifecycle import correct_memory
from ledger.actions.notes import write_note
from ledger.actions.sources import SourceInput
from ledger.actors import Actor
from ledger.models import Conflict, Memory, Run, Subject
from ledger.models.erasable import ERASABLE, ERASED_REASON, REASON_REMOVED, Erasable
from ledger.reads import audit_chain
from tests.conftest import SUBJECT

# Minutes long: started first (tests/conftest.py), so it never ends the run alone.
pytestmark = pytest.mark.long

BEFORE = [("ledger", "0008_admin_audit_and_keys")]
OTHER = "acct_5c0ffee5c0ffee51"
WRITTEN = datetime(2025, 3, 4, 9, 30, tzinfo=UTC)
# What an erasure blanked as ledger 0008's release had it (its ERASABLE), by model: keys,
# journal actions and retry keys were recorded values then, and conflicts not erasable.
ERASABLE_0008 = {
    "Memory": ("statement", "normalized"),
    "LedgerEntry": ("fact",),
    "Source": ("excerpt", "ref"),
    "JournalEntry": ("intent", "effect", "verification"),
    "RunNote": ("value",),
    "Subject": ("display_name",),
}


def migrate(target: list[tuple[str, str]] | None = None) -> Apps:
    """Migrate to ``target`` (the latest migrations if none); the models as they are there."""
    executor = MigrationExecutor(connection)
    target = target or executor.loader.graph.leaf_nodes()
    executor.migrate(target)
    return executor.loader.project_state(target).apps


def rules_0008() -> dict[str, Erasable]:
    today = {model.__name__: rule for model, rule in ERASABLE.items()}
    return {
        name: replace(today[name], blank={field: today[name].blank[field] for field in fields})
        for name, fields in ERASABLE_0008.items()
    }


def seal_as_0008(apps: Apps) -> int:
    """Seal every row without a seal as the release before sealed it: its columns (the models
    at 0008) and its split between recorded values and the digest; how many."""
    seals = apps.get_model("ledger", "AuditSeal")
    count = 0
    for chain in audit_chain.chains_in(apps, rules_0008()):
        mine = seals.objects.filter(table=chain.table)
        last = mine.order_by("-seq").first()
        previous, seq = (last.hash, last.seq) if last else ("", 0)
        waiting = chain.rows().exclude(**{f"{chain.row_id}__in": mine.values("row_id")})
        for row in waiting.order_by(chain.row_id).values(*chain.columns):
            seq += 1
            digest = audit_chain.digest_of(chain, row)
            previous = audit_chain.hash_of(chain, previous, row, digest)
            seals.objects.create(
                table=chain.table,
                row_id=row[chain.row_id],
                seq=seq,
                digest=digest,
                hash=previous,
                sealed_at=WRITTEN,
            )
            count += 1
    return count


def sql(statement: str, params: list[Any] | None = None) -> None:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)


def verify() -> str:
    out = StringIO()
    call_command("verify_audit", stdout=out, stderr=out)
    return out.getvalue()


@pytest.fixture
def sealed_by_0008(
    remember: Callable[..., Memory], make_person: Callable[..., User], agent: Any, clock: Any
) -> Iterator[Apps]:
    """A history with a row in every chain 0009 changes (memory, conflict, ledger entry,
    journal entry and run note keys; an erasure record), sealed as 0008 sealed it; the
    database is at 0008. Whatever a test does, it ends at the latest migration."""
    clock(WRITTEN)
    dana = make_person("dana", subject=SUBJECT)
    memory = remember("Prefers email over telephone.", key="contact.channel")
    remember("Prefers telephone over email.", key="contact.channel")
    correct_memory(
        memory=memory,
        actor=Actor.for_user(dana),
        statement="Prefers letters over email.",
        reason="I never read email",
    )
    subject = Subject.objects.get(ref=SUBJECT)
    record_ledger_entry(
        subject=subject,
        agent=agent,
        fact="Promised a refund of 40 EUR.",
        kind="commitment",
        key="refund.promised",
        source=SourceInput(kind="user_message", ref="msg_r", excerpt="refund please"),
        run_ref="run_r",
    )
    run = Run.objects.get(ref="run_r")
    journal_intent(
        agent=agent, run=run, idempotency_key="r-1", action="refund", intent={"to": "Dana"}
    )
    write_note(run=run, agent=agent, key="hint", value="asked twice")
    remember("Works from Lisbon.", subject=OTHER)
    assert Conflict.history.filter(key="contact.channel").exists()
    # The seals this release wrote go: the release before seals these rows its own way, and
    # keeps no checkpoints of them.
    sql("DELETE FROM ledger_auditseal")
    Path(settings.MEMORYADMIN_AUDIT_CHECKPOINTS).unlink(missing_ok=True)
    apps = migrate(BEFORE)
    assert seal_as_0008(apps) > 10
    yield apps
    sql("DELETE FROM ledger_auditseal")
    migrate()


def erase_as_0008(apps: Apps, ref: str) -> None:
    """What 0008's erasure left in a memory's history, with its record (sealed, as the
    release before's sealer would have)."""
    subject = apps.get_model("ledger", "Subject").objects.get(ref=ref)
    history = apps.get_model("ledger", "HistoricalMemory")
    history.objects.filter(subject_id=subject.pk).update(
        statement="", normalized="", history_change_reason=REASON_REMOVED
    )
    # The live rows too, each with the version that says so (live rows equal their newest).
    memories = apps.get_model("ledger", "Memory")
    for memory in memories.objects.filter(subject_id=subject.pk):
        memory.statement = memory.normalized = ""
        memory.status = "erased"
        memory.save()
        history.objects.create(
            **{f.attname: getattr(memory, f.attname) for f in memories._meta.concrete_fields},
            history_date=datetime(2025, 3, 5, tzinfo=UTC),
            history_type="~",
            history_actor="system:test",
            history_role="system",
            history_subject_id=subject.pk,
            history_change_reason=ERASED_REASON,
        )
    apps.get_model("ledger", "Erasure").objects.create(
        subject_id=subject.pk,
        erased_by="system:test",
        erased_by_role="system",
        requested_by="by phone",
        erased_at=datetime(2025, 3, 5, tzinfo=UTC),
        memories=1,
    )
    assert seal_as_0008(apps) == 2


@pytest.mark.django_db(transaction=True)
def test_history_sealed_before_the_upgrade_verifies_after_it_and_after_an_erasure(
    sealed_by_0008: Apps, capsys: pytest.CaptureFixture[str]
) -> None:
    erase_as_0008(sealed_by_0008, OTHER)
    migrate()
    output = verify()
    assert "The audit chain follows" in output
    assert "conflict history: " in output
    assert "erasure: 1 row" in output
    assert "Audit chain: " in capsys.readouterr().out

    erase_subject(subject=Subject.objects.get(ref=SUBJECT), actor=Actor.system("test"))
    assert not Memory.history.exclude(key="").filter(subject__ref=SUBJECT).exists()
    output = verify()
    assert "The audit chain follows" in output
    assert "blanked by an erasure" in output

    # Back to the release before and up again: each way checks, then seals for the other.
    migrate(BEFORE)
    migrate()
    assert "The audit chain follows" in verify()


@pytest.mark.django_db(transaction=True)
def test_history_changed_before_the_upgrade_stops_it_and_nothing_is_resealed(
    sealed_by_0008: Apps,
) -> None:
    history = sealed_by_0008.get_model("ledger", "HistoricalMemory")
    first = history.objects.order_by("history_id").first()
    history.objects.filter(history_id=first.history_id).update(history_actor="user:mallory")
    seals = list(
        sealed_by_0008.get_model("ledger", "AuditSeal").objects.values_list("digest", "hash")
    )
    with pytest.raises(CommandError) as refusal:
        migrate()
    message = str(refusal.value)
    assert "ledger_historicalmemory does not follow" in message
    assert f"memory history row {first.history_id} (object {first.id}, " in message
    assert "reseals nothing" in message
    assert "verify_audit" in message
    assert ("ledger", "0009_hardening") not in MigrationRecorder(connection).applied_migrations()
    apps = migrate(BEFORE)
    after = list(apps.get_model("ledger", "AuditSeal").objects.values_list("digest", "hash"))
    assert sorted(after) == sorted(seals)


def layout(chain: audit_chain.Chain) -> tuple[str, set[str], set[str], set[str]]:
    return chain.table, set(chain.skeleton), set(chain.digested), set(chain.kept)


def test_the_upgrade_knows_every_column_0009_adds_and_every_field_it_makes_erasable() -> None:
    """Row by row the tests above cover the tables they write; this covers every chained
    table, rows or none: the migration's idea of the release before is the 0008 models'
    chains, and what it seals is what this release verifies (a later release that changes
    the layout again reseals in its own migration, and compares with that one here)."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    apps_0009 = loader.project_state([("ledger", "0009_hardening")]).apps
    layouts = importlib.import_module("ledger.migrations.0009_hardening")._layouts(apps_0009)
    at_0008 = audit_chain.chains_in(loader.project_state(BEFORE).apps, rules_0008())
    assert sorted(layout(old) for old, _ in layouts) == sorted(layout(c) for c in at_0008)
    resealed = {new.table for _, new in layouts}
    now = audit_chain.chains()
    # A chained table a later migration creates (webhook endpoints' history, in 0011) starts
    # with no rows, so there is nothing of it to reseal.
    tables_0009 = {model._meta.db_table for model in apps_0009.get_models()}
    assert {chain.table for chain in now} - resealed <= {
        chain.table for chain in now if chain.table not in tables_0009
    }
    # Each later migration that changes a layout starts from the one before it and reseals
    # (0016: a run's ref and a retraction batch's selection and reason erasable; 0017: the
    # policy's column 0015 added). The MAC 0017 adds is no part of any chain.
    expected = {new.table: layout(new) for _, new in layouts}
    for name in ("0016_erasure_requests", "0017_audit_mac"):
        state = loader.project_state([("ledger", name)]).apps
        later = importlib.import_module(f"ledger.migrations.{name}")._layouts(state)
        assert later, name
        for old, new in later:
            if old.table in expected:
                assert layout(old) == expected[old.table], (name, old.table)
            expected[new.table] = layout(new)
    assert sorted(expected.values()) == sorted(layout(c) for c in now if c.table in expected)
    assert all("history_mac" not in kept for *_, kept in expected.values())
