"""The support and admin groups, and the one write-policy row, exist from the start."""

from django.db import migrations


def create_roles_and_policy(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    for name in ("support", "admin"):
        Group.objects.get_or_create(name=name)
    Policy = apps.get_model("ledger", "Policy")
    Policy.objects.get_or_create(
        pk=1,
        defaults={
            "system_of_record_keys": [
                "billing.address",
                "billing.email",
                "contact.email",
                "contact.phone",
                "payment.method",
            ]
        },
    )


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("ledger", "0001_initial"),
    ]

    operations = [migrations.RunPython(create_roles_and_policy, migrations.RunPython.noop)]
