"""Support's search looks among each type's newest rows first (``ledger.reads.retrieval``):
the excerpts (those that quote something) and the recall log get an index on their time, as
memories and ledger entries have. On the partitioned recall log the index is built on every
partition, and on each new one."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("ledger", "0022_flat_pages")]

    operations: list[migrations.operations.base.Operation] = [
        migrations.AddIndex(
            model_name="recall",
            index=models.Index(fields=["-recalled_at", "-id"], name="recall_newest"),
        ),
        migrations.AddIndex(
            model_name="source",
            index=models.Index(
                fields=["-received_at", "-id"],
                name="source_newest",
                condition=models.Q(("excerpt", ""), _negated=True),
            ),
        ),
    ]
