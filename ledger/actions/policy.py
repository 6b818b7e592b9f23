"""Changing the write policy: the one row every write is decided by."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from ledger.actions._tracking import save_tracked
from ledger.actors import Actor
from ledger.models import Policy
from ledger.rules.reasons import refuse_without_reason
from ledger.rules.write_policy import (
    POLICY_SETTING_NAMES,
    refuse_bad_policy,
    refuse_stale_policy,
    refuse_unchanged_policy,
    refuse_unknown_settings,
)


def change_policy(
    *, actor: Actor, reason: str, expected_version: int | None = None, **changes: Any
) -> Policy:
    """Set the named settings and keep the rest, as a new version: the next write is decided
    by it, while memories already written keep their expiry and the version that accepted
    them.

    Refused with nothing written (``Refusal``) when a setting is unknown or would
    leave its bounds (``POLICY_SETTINGS``, checked on the whole resulting policy),
    the reason is missing, nothing would change, or the policy is no longer
    ``expected_version`` (the one the admin was shown). The row is stored if a flushed
    database lost it, so its history starts here.
    """
    refuse_unknown_settings(changes)
    refuse_without_reason(reason, why="the policy changes", kept="its history, beside what changed")
    with transaction.atomic():
        current = Policy.objects.select_for_update().filter(pk=1).first() or Policy(pk=1)
        refuse_stale_policy(expected_version, current.version)
        changed = {
            name: value for name, value in changes.items() if getattr(current, name) != value
        }
        refuse_unchanged_policy(changed)
        in_force = {name: getattr(current, name) for name in POLICY_SETTING_NAMES}
        refuse_bad_policy(in_force | changed)
        for name, value in changed.items():
            setattr(current, name, value)
        save_tracked(current, actor=actor, reason=reason.strip(), bump_version=True)
    return current
