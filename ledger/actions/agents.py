"""Agents and their API keys. A key is shown once; only its hash is stored."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from ledger import access, policy
from ledger.actions._tracking import save_tracked
from ledger.actors import Actor
from ledger.keys import NewKey, new_key
from ledger.models import Agent, AgentKey

# The restrictions an admin may put on an agent's writes, by the field holding the reason.
RESTRICTIONS = {
    "writes_paused": "writes_paused_because",
    "quarantined": "quarantined_because",
    "stated_untrusted": "stated_untrusted_because",
}


def create_agent(
    *, name: str, scopes: list[str], actor: Actor, key: NewKey | None = None
) -> tuple[Agent, str]:
    """Create an agent and return it with its API key, which is never shown again.

    ``key`` is for a key chosen in advance (``ledger.keys.known_key``); by default a new
    random one is made.
    """
    unknown = set(scopes) - set(Agent.Scope.values)
    if unknown:
        raise ValueError(f"unknown scope(s): {', '.join(sorted(unknown))}")
    if Agent.Scope.STAFF in scopes and not access.may_grant_staff_scope(actor):
        raise ValueError("only an admin may grant the staff scope")
    key = key or new_key()
    with transaction.atomic():
        agent = Agent(name=name, scopes=sorted(scopes))
        save_tracked(agent, actor=actor, reason=f"Agent created with scopes {', '.join(scopes)}.")
        _add_key(agent, key, actor=actor, reason="First key.")
    return agent, key.key


def rotate_agent_key(*, agent: Agent, actor: Actor, grace_hours: int, reason: str) -> str:
    """Give ``agent`` a new key and return it; its older keys keep working for
    ``grace_hours`` (0: they stop at once), so the agent can switch over in between."""
    policy.refuse_bad_grace(grace_hours)
    policy.refuse_without_reason(reason, why="the key is rotated")
    now = timezone.now()
    ends = now + timedelta(hours=grace_hours)
    key = new_key()
    with transaction.atomic():
        locked = Agent.objects.select_for_update().get(pk=agent.pk)
        policy.refuse_if_revoked(locked)
        for old in AgentKey.objects.filter(agent=locked).working_at(now):
            old.expires_at = min(ends, old.expires_at) if old.expires_at else ends
            save_tracked(
                old,
                actor=actor,
                reason=f"Rotated: works until {old.expires_at:%Y-%m-%d %H:%M} UTC. {reason}",
                update_fields=["expires_at"],
            )
        _add_key(locked, key, actor=actor, reason=f"Rotation. {reason}")
    return key.key


def revoke_agent(*, agent: Agent, actor: Actor, reason: str) -> Agent:
    """Every key of ``agent`` stops working at once; its history stays."""
    policy.refuse_without_reason(reason, why="the agent is revoked")
    agent.is_active = False
    save_tracked(agent, actor=actor, reason=reason, update_fields=["is_active"])
    return agent


def restrict_agent(*, agent: Agent, actor: Actor, restriction: str, on: bool, reason: str) -> Agent:
    """Put one of ``RESTRICTIONS`` on ``agent``'s writes, or lift it; both need a reason,
    which the write gate repeats in every decision the restriction changes."""
    field = RESTRICTIONS.get(restriction)
    if field is None:
        raise ValueError(f"restriction must be one of {', '.join(RESTRICTIONS)}")
    policy.refuse_without_reason(reason, why="the agent's writes change")
    setattr(agent, field, reason.strip() if on else "")
    verb = "on" if on else "lifted"
    save_tracked(
        agent, actor=actor, reason=f"{restriction} {verb}: {reason.strip()}", update_fields=[field]
    )
    return agent


# Often enough to tell a live key from a dead one, rarely enough not to write on every call.
USE_RESOLUTION = timedelta(minutes=1)


def note_key_use(key: AgentKey, now: datetime) -> None:
    """Remember when ``key`` was last used, for the keys page."""
    if key.last_used_at is not None and now - key.last_used_at < USE_RESOLUTION:
        return
    # A plain update, outside the history: a key's use is not somebody changing it.
    AgentKey.objects.filter(pk=key.pk).update(last_used_at=now)
    key.last_used_at = now


def _add_key(agent: Agent, key: NewKey, *, actor: Actor, reason: str) -> AgentKey:
    row = AgentKey(agent=agent, prefix=key.prefix, hash=key.hash, created_at=timezone.now())
    save_tracked(row, actor=actor, reason=reason)
    return row
