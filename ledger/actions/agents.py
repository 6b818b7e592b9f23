"""Agents and their API keys. A key is shown once; only its hash is stored."""

from __future__ import annotations

from ledger import access
from ledger.actions._tracking import save_tracked
from ledger.actors import Actor
from ledger.keys import NewKey, new_key
from ledger.models import Agent


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
    agent = Agent(name=name, key_prefix=key.prefix, key_hash=key.hash, scopes=sorted(scopes))
    save_tracked(agent, actor=actor, reason=f"Agent created with scopes {', '.join(scopes)}.")
    return agent, key.key


def revoke_agent(*, agent: Agent, actor: Actor, reason: str) -> Agent:
    agent.is_active = False
    save_tracked(agent, actor=actor, reason=reason, update_fields=["is_active"])
    return agent
