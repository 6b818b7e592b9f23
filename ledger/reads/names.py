"""Who acted, in words for one viewer: history labels become "you", "support (sam)",
"an admin (ada)", "the assistant (x)"."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ledger import access
from ledger.actors import Actor


@dataclass(frozen=True)
class Names:
    """Who acted, in words for one viewer: history actors ('user:dana', 'agent:x',
    'system:expiry') become 'you', 'support (sam)', 'an admin (ada)', 'the assistant (x)'."""

    viewer: str
    staff: frozenset[str]
    admins: frozenset[str] = frozenset()

    @classmethod
    def for_labels(cls, viewer: access.Person, labels: Iterable[str]) -> Names:
        """Names for these labels, looking up in one query which people are staff."""
        people = {name for label in labels if (name := Actor.username_in(label))}
        roles = access.roles_of(people)
        return cls(
            viewer.get_username(),
            frozenset(name for name, role in roles.items() if role in access.STAFF_ROLES),
            frozenset(name for name, role in roles.items() if role == access.Role.ADMIN),
        )

    def who(self, label: str) -> str:
        kind, _, name = label.partition(":")
        if kind == "user":
            if name == self.viewer:
                return "you"
            if name in self.admins:
                return f"an admin ({name})"
            return f"support ({name})" if name in self.staff else name
        if kind == "agent":
            return f"the assistant ({name})"
        if kind == "system" and name == "expiry":
            return "the expiry task"
        if kind == "system":
            return f"the system ({name})"
        return label or "someone unrecorded"
