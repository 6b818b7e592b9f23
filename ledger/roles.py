"""The two staff roles, as Django groups, and what the admin role may do in the Django admin.

Made after every `migrate` (and after a test database flush), so the groups and their
permissions always exist whatever state the database was in.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group, Permission

from ledger.querysets import ADMIN_GROUP, SUPPORT_GROUP

# Admins read everything in the Django admin, manage people and change the write policy;
# every other change goes through memoryadmin's own pages and API.
ADMIN_CAN = [
    ("auth", "view_user"),
    ("auth", "add_user"),
    ("auth", "change_user"),
    ("auth", "view_group"),
    ("ledger", "change_policy"),
]


def ensure_roles(**kwargs: Any) -> None:
    Group.objects.get_or_create(name=SUPPORT_GROUP)
    admin, _ = Group.objects.get_or_create(name=ADMIN_GROUP)
    views = Permission.objects.filter(
        content_type__app_label="ledger", codename__startswith="view_"
    )
    named = Permission.objects.filter(
        content_type__app_label__in={app for app, _ in ADMIN_CAN},
        codename__in=[codename for _, codename in ADMIN_CAN],
    )
    admin.permissions.add(*views, *named)
