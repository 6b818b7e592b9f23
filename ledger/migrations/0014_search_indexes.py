"""GIN indexes for support's search across types (``ledger.reads.retrieval``), on
PostgreSQL only: what people said (source excerpts), ledger facts and agents' recall goals.

Each expression matches ``SearchVector(field, config="english")`` exactly, as the planner
uses an expression index only for the same expression (as migration 0003 does for
statements). The recall log is partitioned by month: an index on its parent is built on
every partition, and on each new one. SQLite finds words another way: nothing to do there.
"""

from django.db import migrations

INDEXES = {
    "source_excerpt_search": ("ledger_source", "excerpt"),
    "ledger_fact_search": ("ledger_ledgerentry", "fact"),
    "recall_goal_search": ("ledger_recall", "goal"),
}


def create_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name, (table, column) in INDEXES.items():
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON {table} "
            f"USING gin (to_tsvector('english'::regconfig, COALESCE({column}, '')))"
        )


def drop_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in INDEXES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [
        ("ledger", "0013_retrieval"),
    ]

    operations = [migrations.RunPython(create_indexes, drop_indexes)]
