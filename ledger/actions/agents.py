"""Agents and their API keys. A key is shown once; only its hash is stored."""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from ledger import access
from ledger.actions._tracking import save_tracked
from ledger.actors import Actor
from ledger.dates import when
from ledger.keys import NewKey, hash_key, new_key, split_key
from ledger.models import Agent, AgentKey, Policy
from ledger.reads.revocations import revocation_of
from ledger.rules.agents import (
    Restriction,
    refuse_bad_agent_name,
    refuse_bad_grace,
    refuse_if_revoked,
    refuse_restricting_revoked,
    refuse_restriction_unchanged,
    refuse_revoked_twice,
    refuse_stale_rotation,
    refuse_taken_agent_name,
    refuse_without_scopes,
)
from ledger.rules.demo import DEMO_KEY_REFUSED, is_demo_key
from ledger.rules.reasons import refuse_without_reason


@dataclass(frozen=True)
class Rotation:
    """A rotation's new key (shown once), and when the keys it replaced stop working."""

    key: str
    old_keys_end: datetime
    replaced: int


def create_agent(
    *, name: str, scopes: list[str], actor: Actor, key: NewKey | None = None
) -> tuple[Agent, str]:
    """Create an agent and return it with its API key, which is never shown again.

    ``key`` is for a key chosen in advance (``ledger.keys.known_key``); by default a new
    random one is made. A working agent's name is refused in words that point to rotation;
    a revoked agent's, saying when, by whom and why it was revoked: names are never reused.
    """
    unknown = set(scopes) - set(Agent.Scope.values)
    if unknown:
        raise ValueError(f"unknown scope(s): {', '.join(sorted(unknown))}")
    if Agent.Scope.STAFF in scopes and not access.may_grant_staff_scope(actor):
        raise ValueError("only an admin may grant the staff scope")
    refuse_without_scopes(scopes)
    refuse_bad_agent_name(name)
    _refuse_taken(name)
    key = key or new_key()
    try:
        with transaction.atomic():
            agent = Agent(name=name, scopes=sorted(scopes))
            save_tracked(
                agent, actor=actor, reason=f"Agent created with scopes {', '.join(scopes)}."
            )
            _add_key(agent, key, actor=actor, reason="First key.")
    except IntegrityError:
        # Most likely another request created the same name between the check and the insert.
        _refuse_taken(name)
        raise
    return agent, key.key


def _refuse_taken(name: str) -> None:
    # Whatever its capitals: "CRM-Sync" beside a revoked "crm-sync" would be taken for it.
    existing = Agent.objects.filter(name__iexact=name).first()
    revoked = revocation_of(existing) if existing is not None else None
    refuse_taken_agent_name(name, existing=existing, revoked=revoked)


def rotate_agent_key(
    *,
    agent: Agent,
    actor: Actor,
    grace_hours: int,
    reason: str,
    expected_newest: str | None = None,
) -> Rotation:
    """Give ``agent`` a new key and return it; its older keys keep working for
    ``grace_hours`` (0: they stop at once), so the agent can switch over in between.

    ``expected_newest`` is the prefix of the newest key the admin saw: a form sent twice
    must not rotate twice and cut short the key the first answer handed out.
    """
    refuse_bad_grace(grace_hours)
    refuse_without_reason(reason, why="the key is rotated")
    now = timezone.now()
    ends = now + timedelta(hours=grace_hours)
    key = new_key()
    with transaction.atomic():
        locked = Agent.objects.select_for_update().get(pk=agent.pk)
        refuse_if_revoked(locked, revocation_of(locked))
        newest = (
            AgentKey.objects.filter(agent=locked)
            .order_by("-created_at", "-id")
            .values_list("prefix", flat=True)
            .first()
        )
        refuse_stale_rotation(expected_newest, newest)
        replaced = list(AgentKey.objects.filter(agent=locked).working_at(now))
        for old in replaced:
            old.expires_at = min(ends, old.expires_at) if old.expires_at else ends
            save_tracked(
                old,
                actor=actor,
                reason=f"Rotated: works until {when(old.expires_at)}. {reason.strip()}",
                update_fields=["expires_at"],
            )
        _add_key(locked, key, actor=actor, reason=f"Rotation. {reason.strip()}")
    return Rotation(key=key.key, old_keys_end=ends, replaced=len(replaced))


def revoke_agent(*, agent: Agent, actor: Actor, reason: str) -> Agent:
    """Every key of ``agent`` stops working at once; its history stays."""
    refuse_without_reason(reason, why="the agent is revoked")
    with transaction.atomic():
        locked = Agent.objects.select_for_update().get(pk=agent.pk)
        refuse_revoked_twice(locked)
        locked.is_active = False
        save_tracked(locked, actor=actor, reason=reason.strip(), update_fields=["is_active"])
    agent.is_active = False
    return locked


def restrict_agent(
    *, agent: Agent, actor: Actor, restriction: Restriction, on: bool, reason: str
) -> Agent:
    """Put one of ``Restriction`` on ``agent``'s writes, or lift it; both need a
    reason, which the write gate repeats in every decision the restriction changes.

    The history keeps the admin's words after what happened: "Quarantine started: …".
    """
    refuse_without_reason(reason, why="the agent's writes change")
    reason = " ".join(reason.split())
    with transaction.atomic():
        locked = Agent.objects.select_for_update().get(pk=agent.pk)
        refuse_restricting_revoked(locked, revocation_of(locked))
        refuse_restriction_unchanged(locked, restriction, on=on)
        setattr(locked, restriction.field, reason if on else "")
        save_tracked(
            locked,
            actor=actor,
            reason=f"{restriction.change(on=on)}: {reason}",
            update_fields=[restriction.field],
        )
    return locked


# Often enough to tell a live key from a dead one, rarely enough not to write on every call.
USE_RESOLUTION = timedelta(minutes=1)


class KeyRefused(Exception):
    """An API key that opens nothing, with why in the words the API answers."""


def use_key(key: str, *, now: datetime) -> AgentKey:
    """The working key row behind ``key``, its agent and the policy in force read along
    (``Policy.read_from``), noted as used; refused with why when it is not one.

    Every API request (and every MCP HTTP request) reads its key: the policy rides in the
    same statement, so a request that needs it (the recall cap, the write gate) pays no
    query for it."""
    # The README prints the demo's key: a deployment that kept the demo's agent (check
    # --deploy says so, if it is run) must not be opened with it.
    if not settings.DEBUG and is_demo_key(key):
        raise KeyRefused(DEMO_KEY_REFUSED)
    parts = split_key(key)
    row = (
        AgentKey.objects.select_related("agent")
        .annotate(**Policy.read_along())
        .filter(prefix=parts[0])
        .first()
        if parts
        else None
    )
    if row is None or not hmac.compare_digest(row.hash, hash_key(key)):
        raise KeyRefused("This API key is not valid.")
    if not row.agent.is_active:
        raise KeyRefused("This API key has been revoked.")
    if not row.works_at(now):
        raise KeyRefused("This API key was replaced by a rotation and its grace period is over.")
    note_key_use(row, now)
    return row


def note_key_use(key: AgentKey, now: datetime) -> None:
    """Remember when ``key`` was last used, for the keys page: at most once a minute, so a
    busy key costs one UPDATE a minute, not one a request."""
    if key.last_used_at is not None and now - key.last_used_at < USE_RESOLUTION:
        return
    # A plain update, outside the history: a key's use is not somebody changing it. Its
    # condition stops other processes that read the same old stamp from writing it again.
    stale = Q(last_used_at__isnull=True) | Q(last_used_at__lte=now - USE_RESOLUTION)
    AgentKey.objects.filter(stale, pk=key.pk).update(last_used_at=now)
    key.last_used_at = now


def _add_key(agent: Agent, key: NewKey, *, actor: Actor, reason: str) -> AgentKey:
    row = AgentKey(agent=agent, prefix=key.prefix, hash=key.hash, created_at=timezone.now())
    save_tracked(row, actor=actor, reason=reason)
    return row
