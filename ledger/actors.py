"""Who changed something: a person, an agent or the system itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ledger import access
from ledger.choices import ActorRole

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from ledger.models import Agent


@dataclass(frozen=True)
class Actor:
    label: str
    user: User | None = None
    agent: Agent | None = None
    # ``choices.ActorRole``: the role the audit records beside every change, as it was then.
    role: str = ActorRole.SYSTEM

    @classmethod
    def for_user(cls, user: User) -> Actor:
        return cls(
            label=cls.label_for_user(user.get_username()),
            user=user,
            role=str(access.role_of(user) or ActorRole.PERSON),
        )

    @staticmethod
    def label_for_user(username: str) -> str:
        """How history names a person: what ``for_user`` stamps on every row they change."""
        return f"user:{username}"

    @staticmethod
    def username_in(label: str) -> str | None:
        """The person a history label names (``user:<username>``); None for an agent or task."""
        kind, _, name = label.partition(":")
        return name if kind == "user" else None

    @classmethod
    def for_agent(cls, agent: Agent) -> Actor:
        return cls(label=f"agent:{agent.name}", agent=agent, role=ActorRole.AGENT)

    @classmethod
    def system(cls, name: str) -> Actor:
        return cls(label=f"system:{name}")
