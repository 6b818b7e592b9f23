"""Fast at production scale.

Each part of this migration is under its own anchor comment, so the parts can be read
(and reviewed) one at a time.
"""

from datetime import UTC, datetime

import django.db.models.deletion
from django.contrib.postgres.indexes import GinIndex, OpClass
from django.contrib.postgres.operations import TrigramExtension
from django.db import migrations, models
from django.db.models import OuterRef, Subquery
from django.db.models.functions import Cast, Upper
from django.utils import timezone


def copy_recall_columns(apps, schema_editor):
    """Every existing recall item takes its recall's subject and time, in one UPDATE."""
    Recall = apps.get_model("ledger", "Recall")
    RecallItem = apps.get_model("ledger", "RecallItem")
    recall = Recall.objects.filter(pk=OuterRef("recall_id"))
    RecallItem.objects.update(
        subject_id=Subquery(recall.values("subject_id")[:1]),
        recalled_at=Subquery(recall.values("recalled_at")[:1]),
    )


# recall log partitions: on PostgreSQL, ``ledger_recall`` and ``ledger_recallitem`` become
# partitioned by the month of ``recalled_at``, with a default partition for a moment no
# month covers yet (``ledger.recall_log`` keeps the months from then on). PostgreSQL wants
# the partition key in every unique constraint, so the primary keys become (id,
# recalled_at) and a recall item points at its recall by both columns; Django still sees
# ``id``. Rows, indexes, foreign keys and the ids' sequences carry over, and the reverse
# makes plain tables again. SQLite keeps its plain tables.
PARTITIONS_TABLES = ("ledger_recall", "ledger_recallitem")
PARTITIONS_LINK = "recall_item_of_recall"
# Months made ahead, so that a new month's recalls never start in the default partition.
PARTITIONS_AHEAD = 3


def partitions_bounds(year, month):
    """The first moment of a month (UTC) and of the month after it."""
    start = datetime(year, month, 1, tzinfo=UTC)
    return start, datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)


def partitions_months(cursor):
    """Every month that holds a recall, and this month with the next few."""
    cursor.execute(
        "SELECT DISTINCT extract(year FROM recalled_at AT TIME ZONE 'UTC')::int, "
        "extract(month FROM recalled_at AT TIME ZONE 'UTC')::int FROM ledger_recall"
    )
    months = set(cursor.fetchall())
    now = timezone.now()
    year, month = now.year, now.month
    for _ in range(PARTITIONS_AHEAD + 1):
        months.add((year, month))
        year, month = year + month // 12, month % 12 + 1
    return sorted(months)


def partitions_rebuild(cursor, table, months):
    """Make ``table`` again with its rows: partitioned by month (one partition for each of
    ``months``, and the default), or plain (``months`` None). Columns, defaults and checks
    come along with LIKE; indexes, foreign keys and unique constraints are made again as
    the catalog had them, once the rows are in; the ids go on from where they were."""
    cursor.execute(
        "SELECT pg_get_indexdef(x.indexrelid) FROM pg_index x WHERE x.indrelid = %s::regclass "
        "AND NOT EXISTS (SELECT 1 FROM pg_constraint c "
        "WHERE c.conindid = x.indexrelid AND c.conrelid = x.indrelid)",
        [table],
    )
    # A partitioned table's index is defined ON ONLY the parent; a plain one is not.
    indexes = [definition.replace(" ON ONLY ", " ON ", 1) for (definition,) in cursor.fetchall()]
    cursor.execute(
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = "
        "%s::regclass AND contype IN ('f', 'u') AND conname <> %s ORDER BY conname",
        [table, PARTITIONS_LINK],
    )
    constraints = cursor.fetchall()
    cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [table])
    (sequence,) = cursor.fetchone()
    cursor.execute(f"SELECT last_value, is_called FROM {sequence}")
    last_value, is_called = cursor.fetchone()

    old = f"{table}_rebuilt"
    cursor.execute(f'ALTER TABLE "{table}" RENAME TO "{old}"')
    partitioned = " PARTITION BY RANGE (recalled_at)" if months is not None else ""
    cursor.execute(
        f'CREATE TABLE "{table}" (LIKE "{old}" INCLUDING DEFAULTS INCLUDING CONSTRAINTS)'
        + partitioned
    )
    # The old table's sequence goes with it; the new one is made below.
    cursor.execute(f'ALTER TABLE "{table}" ALTER COLUMN id DROP DEFAULT')
    for year, month in months or ():
        start, end = partitions_bounds(year, month)
        cursor.execute(
            f'CREATE TABLE "{table}_p{year:04d}_{month:02d}" PARTITION OF "{table}" '
            f"FOR VALUES FROM ('{start.isoformat()}') TO ('{end.isoformat()}')"
        )
    if months is not None:
        cursor.execute(f'CREATE TABLE "{table}_default" PARTITION OF "{table}" DEFAULT')
    cursor.execute(f'INSERT INTO "{table}" SELECT * FROM "{old}"')
    cursor.execute(f'DROP TABLE "{old}"')

    key = "id, recalled_at" if months is not None else "id"
    cursor.execute(f'ALTER TABLE "{table}" ADD CONSTRAINT "{table}_pkey" PRIMARY KEY ({key})')
    for definition in indexes:
        cursor.execute(definition)
    for name, definition in constraints:
        cursor.execute(f'ALTER TABLE "{table}" ADD CONSTRAINT "{name}" {definition}')
    if months is not None:
        # A partitioned table takes no identity column (before PostgreSQL 17): a sequence.
        cursor.execute(f'CREATE SEQUENCE "{table}_id_seq" OWNED BY "{table}".id')
        cursor.execute(
            f'ALTER TABLE "{table}" ALTER COLUMN id SET DEFAULT nextval(\'"{table}_id_seq"\')'
        )
    else:
        cursor.execute(
            f'ALTER TABLE "{table}" ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY'
        )
    cursor.execute(
        "SELECT setval(pg_get_serial_sequence(%s, 'id'), %s, %s)", [table, last_value, is_called]
    )


def partitions_forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    # What an earlier operation here left for the migration's end (the index of the recall
    # item's subject) goes in first: the tables are made again from what the catalog holds.
    for statement in schema_editor.deferred_sql:
        schema_editor.execute(statement)
    schema_editor.deferred_sql.clear()
    with schema_editor.connection.cursor() as cursor:
        months = partitions_months(cursor)
        for table in PARTITIONS_TABLES:
            partitions_rebuild(cursor, table, months)
        cursor.execute(
            f'ALTER TABLE ledger_recallitem ADD CONSTRAINT "{PARTITIONS_LINK}" '
            "FOREIGN KEY (recall_id, recalled_at) REFERENCES ledger_recall (id, recalled_at) "
            "ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED"
        )
        # Autovacuum never analyzes a partitioned parent: once here, for the planner.
        cursor.execute("ANALYZE ledger_recall, ledger_recallitem")


def partitions_backwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f'ALTER TABLE ledger_recallitem DROP CONSTRAINT "{PARTITIONS_LINK}"')
        for table in reversed(PARTITIONS_TABLES):
            partitions_rebuild(cursor, table, None)


# page and admin list operations: every history table gets the audit's filters (subject,
# actor, role) each followed by the log's order, and its rare deletions in that order; the
# subject's takes over the plain index on ``history_subject_id``. On PostgreSQL, trigram
# indexes serve a part of a subject's reference or name (support's search, the Django
# admin); SQLite scans its small tables.
PAGES_HISTORIES = (
    "agent",
    "agentkey",
    "conflict",
    "journalentry",
    "ledgerentry",
    "memory",
    "policy",
    "retractionbatch",
    "run",
    "runnote",
    "source",
    "subject",
)
PAGES_AUDIT_INDEXES = {
    "subject": "history_subject_id",
    "actor": "history_actor",
    "role": "history_role",
}
PAGES_TRIGRAMS = {"subject_ref_trigram": "ref", "subject_name_trigram": "display_name"}


def pages_history_operations():
    for model in PAGES_HISTORIES:
        history = f"historical{model}"
        yield migrations.AlterField(
            model_name=history,
            name="history_subject_id",
            field=models.BigIntegerField(blank=True, null=True),
        )
        for suffix, column in PAGES_AUDIT_INDEXES.items():
            yield migrations.AddIndex(
                model_name=history,
                index=models.Index(
                    fields=[column, "-history_date", "-history_id"],
                    name=f"h{model}"[:13] + f"_{suffix}",
                ),
            )
        yield migrations.AddIndex(
            model_name=history,
            index=models.Index(
                fields=["-history_date", "-history_id"],
                name=f"h{model}"[:13] + "_deleted",
                condition=models.Q(history_type="-"),
            ),
        )


def pages_trigram_index(name, column):
    # The expression Django's icontains compares: UPPER("ref"::text) LIKE UPPER('%…%').
    upper = Upper(Cast(column, models.TextField()))
    return GinIndex(OpClass(upper, name="gin_trgm_ops"), name=name)


def pages_add_trigrams(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    subject = apps.get_model("ledger", "Subject")
    for name, column in PAGES_TRIGRAMS.items():
        schema_editor.add_index(subject, pages_trigram_index(name, column))


def pages_drop_trigrams(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    subject = apps.get_model("ledger", "Subject")
    for name, column in PAGES_TRIGRAMS.items():
        schema_editor.remove_index(subject, pages_trigram_index(name, column))


class Migration(migrations.Migration):
    dependencies = [
        ("ledger", "0009_hardening"),
    ]

    operations = [
        # recall item columns
        migrations.AddField(
            model_name="recallitem",
            name="recalled_at",
            field=models.DateTimeField(null=True),
        ),
        migrations.AddField(
            model_name="recallitem",
            name="subject",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="ledger.subject",
            ),
        ),
        migrations.RunPython(copy_recall_columns, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="recallitem",
            name="recalled_at",
            field=models.DateTimeField(),
        ),
        migrations.AlterField(
            model_name="recallitem",
            name="subject",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="ledger.subject",
            ),
        ),
        # recall log partitions
        migrations.RemoveConstraint(model_name="recallitem", name="recall_item_once"),
        migrations.AlterField(
            model_name="recallitem",
            name="recall",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="items",
                to="ledger.recall",
            ),
        ),
        migrations.AlterField(
            model_name="recallitem",
            name="memory",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="recall_items",
                to="ledger.memory",
            ),
        ),
        migrations.RunPython(partitions_forwards, partitions_backwards),
        migrations.AddConstraint(
            model_name="recallitem",
            constraint=models.UniqueConstraint(
                fields=("recall", "memory", "recalled_at"), name="recall_item_once"
            ),
        ),
        migrations.AddIndex(
            model_name="recallitem",
            index=models.Index(fields=["memory", "-recalled_at"], name="recall_item_memory_recent"),
        ),
        # recall and key operations
        # write gate operations
        # expiry sweep operations
        # page and admin list operations
        *pages_history_operations(),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(fields=["subject", "-started_at"], name="run_subject_recent"),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(fields=["key"], name="memory_key", condition=~models.Q(key="")),
        ),
        migrations.AddIndex(
            model_name="writedecision",
            index=models.Index(fields=["-decided_at", "-id"], name="write_decision_newest"),
        ),
        migrations.AddIndex(
            model_name="writedecision",
            index=models.Index(fields=["code", "-decided_at", "-id"], name="write_decision_code"),
        ),
        migrations.AddIndex(
            model_name="ledgerentry",
            index=models.Index(fields=["-recorded_at", "-id"], name="ledger_newest"),
        ),
        migrations.AddIndex(
            model_name="journalentry",
            index=models.Index(fields=["-created_at", "-id"], name="journal_newest"),
        ),
        TrigramExtension(),
        migrations.RunPython(pages_add_trigrams, pages_drop_trigrams),
    ]
