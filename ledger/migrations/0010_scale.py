"""Fast at production scale.

Each part of this migration is under its own anchor comment, so the parts can be read
(and reviewed) one at a time.
"""

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def copy_recall_columns(apps, schema_editor):
    """Every existing recall item takes its recall's subject and time, in one UPDATE."""
    Recall = apps.get_model("ledger", "Recall")
    RecallItem = apps.get_model("ledger", "RecallItem")
    recall = Recall.objects.filter(pk=OuterRef("recall_id"))
    RecallItem.objects.update(
        subject_id=Subquery(recall.values("subject_id")[:1]),
        recalled_at=Subquery(recall.values("recalled_at")[:1]),
    )


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
        # recall and key operations
        # write gate operations
        # expiry sweep operations
        # page and admin list operations
    ]
