# The API's rate limits are counted by the ``limits`` library (Redis, else each process's
# memory): the database's counters are no longer read or written.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("ledger", "0017_audit_mac"),
    ]

    operations = [
        migrations.DeleteModel(
            name="RateCounter",
        ),
    ]
