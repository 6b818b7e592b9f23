from dataclasses import replace

import django.db.models.deletion
from django.apps.registry import Apps
from django.core.management.base import CommandError
from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor

from ledger.reads import audit_chain
from ledger.actions import seals
from ledger.models.erasable import ERASABLE, Erasable

# audit rechain: what this migration changes in the audit chain's layout, written out here
# so that the step means the same whatever later releases change (ledger.audit_chain).
# What an erasure blanks (the seals' digest) by tracked model, as this migration leaves it.
ERASABLE_HERE = {
    "Memory": ("statement", "normalized", "key"),
    "LedgerEntry": ("fact", "key"),
    "Conflict": ("key",),
    "Source": ("excerpt", "ref"),
    "JournalEntry": ("intent", "effect", "verification", "action", "idempotency_key"),
    "RunNote": ("value", "key"),
    "Subject": ("display_name",),
}
# Of those, what 0008 still kept among the recorded values (a conflict had nothing erasable).
NEWLY_ERASABLE = {
    "Memory": ("key",),
    "LedgerEntry": ("key",),
    "Conflict": ("key",),
    "JournalEntry": ("action", "idempotency_key"),
    "RunNote": ("key",),
}
# The columns this migration adds to chained tables (by model), which 0008's seals lack.
ADDED = {
    "HistoricalConflict": ("possible", "commitment"),
    "Erasure": ("conflicts", "write_decisions"),
}


def _rules(left_out: dict[str, tuple[str, ...]]) -> dict[str, Erasable]:
    today = {model.__name__: rule for model, rule in ERASABLE.items()}
    rules: dict[str, Erasable] = {}
    for name, fields in ERASABLE_HERE.items():
        kept = [field for field in fields if field not in left_out.get(name, ())]
        if kept:
            rules[name] = replace(today[name], blank={f: today[name].blank[f] for f in kept})
    return rules


def _without_added(chain: audit_chain.Chain) -> audit_chain.Chain:
    names = ADDED.get(chain.model.__name__, ())
    added = {chain.model._meta.get_field(name).attname for name in names}
    return replace(chain, kept=tuple(column for column in chain.kept if column not in added))


def _layouts(apps: Apps) -> list[tuple[audit_chain.Chain, audit_chain.Chain]]:
    """Each chain as 0008 sealed it, with the same chain as this migration seals it."""
    before = audit_chain.chains_in(apps, _rules(NEWLY_ERASABLE))
    after = {chain.table: chain for chain in audit_chain.chains_in(apps, _rules({}))}
    return [(_without_added(chain), after[chain.table]) for chain in before]


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
        print(
            f"\n  Audit chain: {sum(resealed.values())} seals checked as {release} sealed "
            f"them and sealed again for {'this release' if forwards else 'ledger 0008'} "
            f"({tables})."
        )


def rechain_forwards(apps: Apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    _rechain(apps, forwards=True, release="the release before (ledger 0008)")


def rechain_backwards(apps: Apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    _rechain(apps, forwards=False, release="this release (ledger 0009)")


class Migration(migrations.Migration):
    dependencies = [
        ("ledger", "0008_admin_audit_and_keys"),
    ]

    operations = [
        # conflicts operations
        migrations.RemoveConstraint(
            model_name="conflict",
            name="conflict_one_open_per_slot",
        ),
        migrations.AddField(
            model_name="conflict",
            name="commitment",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="conflicts",
                to="ledger.ledgerentry",
            ),
        ),
        migrations.AddField(
            model_name="conflict",
            name="possible",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="historicalconflict",
            name="commitment",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                null=True,
                on_delete=django.db.models.deletion.DO_NOTHING,
                related_name="+",
                to="ledger.ledgerentry",
            ),
        ),
        migrations.AddField(
            model_name="historicalconflict",
            name="possible",
            field=models.BooleanField(default=False),
        ),
        migrations.AlterField(
            model_name="conflict",
            name="key",
            field=models.CharField(blank=True, default="", max_length=100),
        ),
        migrations.AlterField(
            model_name="conflict",
            name="resolution",
            field=models.CharField(
                blank=True,
                choices=[
                    ("kept", "one statement kept"),
                    ("rewritten", "rewritten in new words"),
                    ("dismissed", "not a conflict"),
                ],
                default="",
                max_length=10,
            ),
        ),
        migrations.AlterField(
            model_name="historicalconflict",
            name="key",
            field=models.CharField(blank=True, default="", max_length=100),
        ),
        migrations.AlterField(
            model_name="historicalconflict",
            name="resolution",
            field=models.CharField(
                blank=True,
                choices=[
                    ("kept", "one statement kept"),
                    ("rewritten", "rewritten in new words"),
                    ("dismissed", "not a conflict"),
                ],
                default="",
                max_length=10,
            ),
        ),
        migrations.AddConstraint(
            model_name="conflict",
            constraint=models.UniqueConstraint(
                condition=models.Q(("possible", False), ("status", "open")),
                fields=("subject", "key"),
                name="conflict_one_open_per_slot",
            ),
        ),
        # limits operations
        migrations.CreateModel(
            name="RateCounter",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("bucket", models.CharField(max_length=100)),
                ("window_start", models.BigIntegerField()),
                ("expires_at", models.BigIntegerField()),
                ("count", models.PositiveIntegerField(default=0)),
            ],
            options={
                "indexes": [models.Index(fields=["expires_at"], name="rate_counter_expires")],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("bucket", "window_start"), name="rate_counter_one_per_window"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="LockoutLift",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("username", models.CharField(blank=True, default="", max_length=255)),
                ("ip_address", models.GenericIPAddressField(blank=True, null=True)),
                ("failures", models.PositiveIntegerField()),
                ("locked_until", models.DateTimeField()),
                ("reason", models.TextField()),
                ("actor", models.CharField(max_length=200)),
                (
                    "actor_role",
                    models.CharField(
                        choices=[
                            ("user", "the person"),
                            ("support", "support"),
                            ("admin", "an admin"),
                            ("agent", "an agent"),
                            ("system", "the system"),
                        ],
                        max_length=10,
                    ),
                ),
                ("lifted_at", models.DateTimeField()),
            ],
            options={
                "ordering": ["-lifted_at", "-id"],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(
                            models.Q(("username", ""), ("ip_address__isnull", False)),
                            models.Q(
                                models.Q(("username", ""), _negated=True),
                                ("ip_address__isnull", True),
                            ),
                            _connector="OR",
                        ),
                        name="lockout_lift_of_one",
                    )
                ],
            },
        ),
        # erasure operations
        migrations.AddField(
            model_name="erasure",
            name="conflicts",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="erasure",
            name="write_decisions",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="idempotencyrecord",
            name="run",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="ledger.run",
            ),
        ),
        migrations.AddField(
            model_name="idempotencyrecord",
            name="subjects",
            field=models.ManyToManyField(related_name="+", to="ledger.subject"),
        ),
        # poison operations
        # audit rechain
        migrations.RunPython(rechain_forwards, rechain_backwards),
    ]
