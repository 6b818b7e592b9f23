"""A memory's reads with their recall's id, and each recall's run beside its key: the subject
page's cards count each memory's conversations from these two indexes alone, without reading
a row of the recall log (which grows with every agent turn)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("ledger", "0021_flat_audit")]

    operations: list[migrations.operations.base.Operation] = [
        migrations.AddIndex(
            model_name="recall",
            index=models.Index(fields=["id", "recalled_at"], include=["run"], name="recall_id_run"),
        ),
        migrations.RemoveIndex(model_name="recallitem", name="recall_item_memory_recent"),
        migrations.AddIndex(
            model_name="recallitem",
            index=models.Index(
                fields=["memory", "-recalled_at"],
                include=["recall"],
                name="recall_item_memory_reads",
            ),
        ),
    ]
