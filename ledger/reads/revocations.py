"""When, by whom and why an agent was revoked, read from its history.

Revoking cannot be undone, so the agent's first history row that is no longer active is
the revocation. The agent keeps its name with that history: the refusals that meet the
name again (a new agent of that name, a rotation) and the agent's page say it from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ledger.actors import Actor
from ledger.choices import ActorRole
from ledger.dates import when
from ledger.models import Agent

# A person's role then, as the words before their name ("an admin (ada)").
ROLE_WORDS: dict[str, str] = {ActorRole.ADMIN: "an admin", ActorRole.SUPPORT: "support"}


@dataclass(frozen=True)
class Revocation:
    at: datetime
    # The history label ("user:ada", "system:cli") and the role they had then.
    actor: str
    role: str
    reason: str

    @property
    def by(self) -> str:
        """Who revoked, for any reader (a command has no viewer to call "you")."""
        username = Actor.username_in(self.actor)
        if username is not None:
            role = ROLE_WORDS.get(self.role)
            return f"{role} ({username})" if role else username
        kind, _, name = self.actor.partition(":")
        return f"the system ({name})" if kind == "system" else self.actor or "someone unrecorded"

    @property
    def words(self) -> str:
        """'on 1 June 2030, 09:00 UTC by an admin (ada), who said: Key leaked.'"""
        said = " ".join(self.reason.split())
        return f"on {when(self.at)} by {self.by}" + (f", who said: {said}" if said else "")


def revocation_of(agent: Agent) -> Revocation | None:
    """The revocation of ``agent``; None while it is active (no query then) or when its
    history does not hold one (an agent stored revoked without a history row)."""
    if agent.is_active:
        return None
    row = (
        Agent.history.filter(id=agent.pk, is_active=False)
        .order_by("history_date", "history_id")
        .values("history_date", "history_actor", "history_role", "history_change_reason")
        .first()
    )
    if row is None:
        return None
    return Revocation(
        at=row["history_date"],
        actor=row["history_actor"] or "",
        role=row["history_role"] or "",
        reason=row["history_change_reason"] or "",
    )
