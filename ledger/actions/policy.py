"""Changing the write policy: the one row every write is decided by."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from ledger import policy
from ledger.actions._tracking import save_tracked
from ledger.actors import Actor
from ledger.models import Policy


def change_policy(
    *, actor: Actor, reason: str, expected_version: int | None = None, **changes: Any
) -> Policy:
    """Set the named settings and keep the rest, as a new version: the next write is decided
    by it, while memories already written keep their expiry and the version that accepted
    them.

    Refused with nothing written (``policy.Refusal``) when a setting is unknown or would
    leave its bounds (``policy.POLICY_SETTINGS``, checked on the whole resulting policy),
    the reason is missing, nothing would change, or the policy is no longer
    ``expected_version`` (the one the admin was shown). The row is stored if a flushed
    database lost it, so its history starts here.
    """
    policy.refuse_unknown_settings(changes)
    policy.refuse_without_reason(
        reason, why="the policy changes", kept="its history, beside what changed"
    )
    with transaction.atomic():
        current = Policy.objects.select_for_update().filter(pk=1).first() or Policy(pk=1)
        policy.refuse_stale_policy(expected_version, current.version)
        changed = {
            name: value for name, value in changes.items() if getattr(current, name) != value
        }
        policy.refuse_unchanged_policy(changed)
        in_force = {name: getattr(current, name) for name in policy.POLICY_SETTING_NAMES}
        policy.refuse_bad_policy(in_force | changed)
        for name, value in changed.items():
            setattr(current, name, value)
        save_tracked(current, actor=actor, reason=reason.strip(), bump_version=True)
    return current
