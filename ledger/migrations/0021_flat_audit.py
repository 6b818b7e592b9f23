"""The audit log's order, (when, id) newest first, as indexes on every history table: of
all its rows, and of its creations and of its changes alone (its deletions had theirs). A
page of the whole log, or of one action, reads its rows from the top of an index, however
many rows share one moment and however rare the action is among a table's newest rows."""

from django.db import migrations, models


def _indexes(model_name: str, prefix: str) -> list[migrations.AddIndex]:
    return [
        *(
            migrations.AddIndex(
                model_name=model_name,
                index=models.Index(
                    condition=models.Q(history_type=code),
                    fields=["-history_date", "-history_id"],
                    name=f"{prefix}_{action}",
                ),
            )
            for action, code in (("created", "+"), ("changed", "~"))
        ),
        migrations.AddIndex(
            model_name=model_name,
            index=models.Index(fields=["-history_date", "-history_id"], name=f"{prefix}_when"),
        ),
    ]


class Migration(migrations.Migration):
    dependencies = [("ledger", "0020_queue_work")]

    operations: list[migrations.operations.base.Operation] = [
        *_indexes("historicalagent", "hagent"),
        *_indexes("historicalagentkey", "hagentkey"),
        *_indexes("historicalconflict", "hconflict"),
        *_indexes("historicalerasurerequest", "herasurereque"),
        *_indexes("historicaljournalentry", "hjournalentry"),
        *_indexes("historicalledgerentry", "hledgerentry"),
        *_indexes("historicalmemory", "hmemory"),
        *_indexes("historicalpolicy", "hpolicy"),
        *_indexes("historicalqueuework", "hqueuework"),
        *_indexes("historicalretractionbatch", "hretractionba"),
        *_indexes("historicalrun", "hrun"),
        *_indexes("historicalrunnote", "hrunnote"),
        *_indexes("historicalsource", "hsource"),
        *_indexes("historicalsubject", "hsubject"),
        *_indexes("historicalwebhookendpoint", "hwebhookendpo"),
    ]
