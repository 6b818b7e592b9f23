"""The expiry sweep reads the due memories in its own order, expiry then id: an index in that
order (replacing the one on the expiry alone) hands a batch its rows with no sort, so a batch
reads as many entries as it expires however many rows share an expiry."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("ledger", "0023_flat_search")]

    operations: list[migrations.operations.base.Operation] = [
        migrations.RemoveIndex(model_name="memory", name="memory_expiring"),
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(
                condition=models.Q(("status__in", ["active", "pending"])),
                fields=["expires_at", "id"],
                name="memory_due",
            ),
        ),
    ]
