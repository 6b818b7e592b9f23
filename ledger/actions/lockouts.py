"""Lifting a sign-in lockout before it ends, from the People page: axes' records of the
failures are cleared (its own ``reset``, as ``manage.py axes_reset_username`` does) and a
``LockoutLift`` keeps who lifted what, when and why, for the audit.
"""

from __future__ import annotations

from axes.models import AccessAttempt
from axes.utils import reset
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from ledger.actions.people import facts_about
from ledger.actors import Actor
from ledger.models import LockoutLift
from ledger.reads import lockouts
from ledger.rules.people import PersonMove, refuse_nothing_to_lift, refuse_person_move
from ledger.rules.reasons import refuse_without_reason

WHY = "a sign-in lockout is lifted"
KEPT = "the audit log"


def lift_person_lockout(person: User, *, actor: Actor, reason: str) -> LockoutLift:
    """``person`` may sign in again at once (unless their address is locked out too)."""
    refuse_without_reason(reason, why=WHY, kept=KEPT)
    refuse_person_move(PersonMove.LIFT_LOCKOUT, facts_about(person, viewer=actor.user))
    username = person.get_username()
    with transaction.atomic():
        # Locked, so that two admins lifting at once lift (and record) it once.
        list(AccessAttempt.objects.select_for_update().filter(username=username))
        found = lockouts.of_usernames([username]).get(username)
        lockout = refuse_nothing_to_lift(found, name=username)
        reset(username=username)
        return _record(lockout, actor=actor, reason=reason)


def lift_address_lockout(address: str, *, actor: Actor, reason: str) -> LockoutLift:
    """Sign-ins from ``address`` are tried again at once, for every username."""
    refuse_without_reason(reason, why=WHY, kept=KEPT)
    with transaction.atomic():
        list(AccessAttempt.objects.select_for_update().filter(ip_address=address))
        found = next(iter(lockouts.of_addresses([address])), None)
        lockout = refuse_nothing_to_lift(found, name=f"The address {address}")
        reset(ip=address)
        return _record(lockout, actor=actor, reason=reason)


def _record(lockout: lockouts.Lockout, *, actor: Actor, reason: str) -> LockoutLift:
    return LockoutLift.objects.create(
        username=lockout.username,
        ip_address=lockout.address or None,
        failures=lockout.failures,
        locked_until=lockout.until,
        reason=reason,
        actor=actor.label,
        actor_role=actor.role,
        lifted_at=timezone.now(),
    )
