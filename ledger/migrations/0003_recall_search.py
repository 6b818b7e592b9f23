"""A GIN index for recall's full-text search, on PostgreSQL only.

The expression matches ``SearchVector("statement", config="english")`` in ``ledger.recall``
exactly, as the planner only uses an expression index for the same expression. SQLite has no
full-text search here (recall falls back to a plain ranking), so there this does nothing.
"""

from django.db import migrations

INDEX = "memory_statement_search"


def create_index(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(
        f"CREATE INDEX IF NOT EXISTS {INDEX} ON ledger_memory "
        "USING gin (to_tsvector('english'::regconfig, COALESCE(statement, '')))"
    )


def drop_index(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    dependencies = [
        ("ledger", "0002_roles_and_policy"),
    ]

    operations = [migrations.RunPython(create_index, drop_index)]
