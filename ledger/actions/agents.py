"""Agents and their API keys. A key is shown once; only its hash is stored."""

from __future__ import annotations

import hashlib
import secrets

from ledger.actions.tracking import save_tracked
from ledger.actors import Actor
from ledger.models import Agent

KEY_PREFIX = "ma"


def hash_key(key: str) -> str:
    # Keys are 256 bits of randomness, so a fast hash is enough: there is nothing to brute-force.
    return hashlib.sha256(key.encode()).hexdigest()


def split_key(key: str) -> tuple[str, str] | None:
    """The lookup prefix of a well-formed key, or None."""
    parts = key.split("_", 2)
    if len(parts) != 3 or parts[0] != KEY_PREFIX or not parts[1] or not parts[2]:
        return None
    return parts[1], parts[2]


def create_agent(*, name: str, scopes: list[str], actor: Actor) -> tuple[Agent, str]:
    """Create an agent and return it with its API key, which is never shown again."""
    unknown = set(scopes) - set(Agent.Scope.values)
    if unknown:
        raise ValueError(f"unknown scope(s): {', '.join(sorted(unknown))}")
    prefix = secrets.token_hex(6)
    key = f"{KEY_PREFIX}_{prefix}_{secrets.token_urlsafe(32)}"
    agent = Agent(name=name, key_prefix=prefix, key_hash=hash_key(key), scopes=sorted(scopes))
    save_tracked(agent, actor=actor, reason=f"Agent created with scopes {', '.join(scopes)}.")
    return agent, key


def revoke_agent(*, agent: Agent, actor: Actor, reason: str) -> Agent:
    agent.is_active = False
    save_tracked(agent, actor=actor, reason=reason, update_fields=["is_active"])
    return agent
