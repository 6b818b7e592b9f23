from dataclasses import replace

import django.db.models.deletion
import simple_history.models
from django.apps.registry import Apps
from django.conf import settings
from django.core.management.base import CommandError
from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor

from ledger.actions import seals
from ledger.models.erasable import ERASABLE
from ledger.reads import audit_chain

# audit rechain: what this migration changes in the audit chain's layout, written out here
# so that the step means the same whatever later releases change (as 0009 does). Erasure
# now also blanks a run's ref and a retraction batch's selection and reason, so those move
# from the history rows' recorded values into the seals' digest.
NEWLY_ERASABLE = {
    "Run": ("ref",),
    "RetractionBatch": ("selection", "reason"),
}


def _layouts(apps: Apps) -> list[tuple[audit_chain.Chain, audit_chain.Chain]]:
    """The two chains as the release before sealed them (nothing erasable), with the same
    chains as this migration seals them."""
    today = {model.__name__: rule for model, rule in ERASABLE.items()}
    rules = {
        name: replace(today[name], blank={field: today[name].blank[field] for field in fields})
        for name, fields in NEWLY_ERASABLE.items()
    }
    before = {chain.table: chain for chain in audit_chain.chains_in(apps, {})}
    after = audit_chain.chains_in(apps, rules)
    return [(before[chain.table], chain) for chain in after if chain.erasable is not None
            and chain.model.__name__.removeprefix("Historical") in NEWLY_ERASABLE]


def _rechain(apps: Apps, *, forwards: bool, release: str) -> None:
    resealed: dict[str, int] = {}
    for old, new in _layouts(apps):
        check, seal = (old, new) if forwards else (new, old)
        try:
            count = seals.reseal(check, seal)
        except seals.ChainDoesNotFollow as failure:
            raise CommandError(
                f"The audit chain of {check.table} does not follow as {release} sealed it, so "
                f"this migration reseals nothing and stops: {failure}. Run `manage.py "
                f"verify_audit` with {release} and find out who changed that row; the "
                "history must not be sealed again over it."
            ) from failure
        if count:
            resealed[check.label] = count
    if resealed:
        tables = ", ".join(f"{label} {count}" for label, count in resealed.items())
        print(f"\n  Audit chain: {sum(resealed.values())} seals resealed ({tables}).")


def rechain_forwards(apps: Apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    _rechain(apps, forwards=True, release="the release before")


def rechain_backwards(apps: Apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    _rechain(apps, forwards=False, release="this release (ledger 0016_erasure_requests)")


class Migration(migrations.Migration):

    dependencies = [
        ('ledger', '0015_agent_ownership'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='ErasureRequest',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('requested_by', models.CharField(max_length=200)),
                ('reason', models.CharField(max_length=200)),
                ('pause', models.BooleanField(default=True)),
                ('created_at', models.DateTimeField()),
                ('decision', models.CharField(blank=True, choices=[('', 'Waiting for an admin'), ('approved', 'Approved'), ('declined', 'Declined'), ('overtaken', 'Erased meanwhile')], default='', max_length=10)),
                ('decided_by', models.CharField(blank=True, default='', max_length=200)),
                ('decided_at', models.DateTimeField(blank=True, null=True)),
                ('decision_reason', models.TextField(blank=True, default='')),
                ('subject', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='erasure_requests', to='ledger.subject')),
            ],
            options={
                'ordering': ['-created_at', '-id'],
                'constraints': [models.UniqueConstraint(condition=models.Q(('decision', '')), fields=('subject',), name='erasure_request_one_waiting')],
            },
        ),
        migrations.CreateModel(
            name='HistoricalErasureRequest',
            fields=[
                ('id', models.BigIntegerField(auto_created=True, blank=True, db_index=True, verbose_name='ID')),
                ('history_actor', models.CharField(blank=True, default='', max_length=200)),
                ('history_role', models.CharField(blank=True, choices=[('user', 'the person'), ('support', 'support'), ('admin', 'an admin'), ('agent', 'an agent'), ('system', 'the system')], default='', max_length=10)),
                ('history_subject_id', models.BigIntegerField(blank=True, null=True)),
                ('history_mac', models.CharField(blank=True, default='', max_length=98)),
                ('requested_by', models.CharField(max_length=200)),
                ('reason', models.CharField(max_length=200)),
                ('pause', models.BooleanField(default=True)),
                ('created_at', models.DateTimeField()),
                ('decision', models.CharField(blank=True, choices=[('', 'Waiting for an admin'), ('approved', 'Approved'), ('declined', 'Declined'), ('overtaken', 'Erased meanwhile')], default='', max_length=10)),
                ('decided_by', models.CharField(blank=True, default='', max_length=200)),
                ('decided_at', models.DateTimeField(blank=True, null=True)),
                ('decision_reason', models.TextField(blank=True, default='')),
                ('history_change_reason', models.TextField(null=True)),
                ('history_id', models.AutoField(primary_key=True, serialize=False)),
                ('history_date', models.DateTimeField(db_index=True)),
                ('history_type', models.CharField(choices=[('+', 'Created'), ('~', 'Changed'), ('-', 'Deleted')], max_length=1)),
                ('history_user', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('subject', models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='ledger.subject')),
            ],
            options={
                'verbose_name': 'historical erasure request',
                'verbose_name_plural': 'historical erasure requests',
                'ordering': ('-history_date', '-history_id'),
                'get_latest_by': ('history_date', 'history_id'),
                'indexes': [models.Index(fields=['history_subject_id', '-history_date', '-history_id'], name='herasurereque_subject'), models.Index(fields=['history_actor', '-history_date', '-history_id'], name='herasurereque_actor'), models.Index(fields=['history_role', '-history_date', '-history_id'], name='herasurereque_role'), models.Index(condition=models.Q(('history_type', '-')), fields=['-history_date', '-history_id'], name='herasurereque_deleted')],
            },
            bases=(simple_history.models.HistoricalChanges, models.Model),
        ),
        migrations.RunPython(rechain_forwards, rechain_backwards),
    ]
