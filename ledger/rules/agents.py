"""Agents: their names, keys' grace periods, revocation, and the restrictions an admin
puts on their writes."""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum

from ledger.dates import when
from ledger.rules.facts import AgentFacts, RevocationFacts
from ledger.rules.refusals import Refusal
from ledger.rules.text import sentence

# A rotated key's grace period: long enough to redeploy an agent, short enough to matter.
GRACE_HOURS_MAX = 24 * 30


def refuse_bad_grace(hours: int) -> None:
    if not 0 <= hours <= GRACE_HOURS_MAX:
        raise Refusal(
            "grace_out_of_range",
            f"The grace period is between 0 and {GRACE_HOURS_MAX} hours (30 days); "
            f"{hours} is outside it.",
            400,
        )


def refuse_if_revoked(agent: AgentFacts, revoked: RevocationFacts | None) -> None:
    if not agent.is_active:
        raise Refusal(
            "agent_revoked",
            f"The agent '{agent.name}' was revoked {_revoked_words(revoked)} A revoked agent "
            "gets no new key and its name is not used again: make a new agent, with another "
            "name, to give the program a key.",
            409,
        )


# Names appear in addresses (/agents/<name>/) and in history labels ("agent:<name>").
AGENT_NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}")


# Addresses under /agents/ that are pages, not agents.
RESERVED_AGENT_NAMES = frozenset({"new"})


def refuse_bad_agent_name(name: str) -> None:
    if not AGENT_NAME_PATTERN.fullmatch(name):
        raise Refusal(
            "agent_name_invalid",
            "An agent's name is 1 to 100 letters, digits, dots, dashes or underscores, "
            "starting with a letter or a digit (such as crm-assistant).",
            400,
        )
    if name.lower() in RESERVED_AGENT_NAMES:
        raise Refusal(
            "agent_name_reserved",
            f"'{name}' is the address of a page: choose another name for the agent.",
            400,
        )


def refuse_taken_agent_name(
    name: str, *, existing: AgentFacts | None, revoked: RevocationFacts | None
) -> None:
    """A name is never used twice. A revoked agent keeps its name with its history, which
    the audit and everything it wrote show under that name: another agent of that name
    would be taken for it. Only a working agent's name points to rotation."""
    if existing is None:
        return
    if not existing.is_active:
        raise Refusal(
            "agent_name_revoked",
            f"The name '{name}' belonged to an agent revoked {_revoked_words(revoked)} A "
            "revoked agent keeps its name with its history, so the name must not be used "
            "again: choose another name.",
            409,
        )
    raise Refusal(
        "agent_name_taken",
        f"An agent named '{name}' already exists, made on {when(existing.created_at)}: its "
        "key was shown once, then, and cannot be shown again. To give it a new key, rotate "
        "its key: its old key keeps working for a grace period you choose, then stops.",
        409,
    )


def _revoked_words(revoked: RevocationFacts | None) -> str:
    if revoked is None:
        return "(its history does not say when)."
    return sentence(revoked.words)


def refuse_without_scopes(scopes: list[str]) -> None:
    if not scopes:
        raise Refusal("scopes_required", "Choose at least one scope: read, write or staff.", 400)


def refuse_stale_rotation(expected_newest: str | None, newest: str | None) -> None:
    """A rotation asked for against keys that have changed since (the same form sent twice)."""
    if expected_newest is not None and expected_newest != newest:
        raise Refusal(
            "keys_changed",
            "This agent's keys changed since the page was shown (it was rotated again, "
            "perhaps by this same form sent twice). Nothing was changed: check its keys, "
            "and rotate again only if you still need a new key.",
            409,
        )


def refuse_revoked_twice(agent: AgentFacts) -> None:
    if not agent.is_active:
        raise Refusal(
            "agent_revoked", f"The agent '{agent.name}' is already revoked; nothing changed.", 409
        )


def refuse_restricting_revoked(agent: AgentFacts, revoked: RevocationFacts | None) -> None:
    """A revoked agent has no working key: there are no writes left to restrict."""
    if not agent.is_active:
        raise Refusal(
            "agent_revoked",
            f"The agent '{agent.name}' was revoked {_revoked_words(revoked)} None of its "
            "keys works, so it has no writes to restrict. Nothing changed.",
            409,
        )


class Restriction(StrEnum):
    """What an admin may do to an agent's writes; each is kept as the admin's reason in the
    agent's ``<name>_because`` field (empty: not restricted)."""

    WRITES_PAUSED = "writes_paused"
    QUARANTINED = "quarantined"
    STATED_UNTRUSTED = "stated_untrusted"

    @property
    def field(self) -> str:
        return f"{self.value}_because"

    @property
    def words(self) -> str:
        return _RESTRICTION_WORDS[self]

    @property
    def code(self) -> str:
        """The stable code a program reads in a decision the restriction changed."""
        return f"agent_{self.value}"

    def change(self, *, on: bool) -> str:
        """What putting it on (or lifting it) is called: the start of the reason kept in the
        agent's history, before the admin's own words."""
        return _RESTRICTION_CHANGES[self][0 if on else 1]


_RESTRICTION_WORDS = {
    Restriction.WRITES_PAUSED: "writes paused",
    Restriction.QUARANTINED: "quarantined",
    Restriction.STATED_UNTRUSTED: "not trusted for stated memories",
}
_RESTRICTION_CHANGES = {
    Restriction.WRITES_PAUSED: ("Writes paused", "Pause lifted"),
    Restriction.QUARANTINED: ("Quarantine started", "Quarantine ended"),
    Restriction.STATED_UNTRUSTED: (
        "Stated memories no longer trusted",
        "Stated memories trusted again",
    ),
}

# 423 Locked: the request may be fine; an admin holds this agent's writes until they lift
# the restriction (a person's paused memory answers the same).
RESTRICTED_STATUS = 423


def restriction_reason(agent: AgentFacts, restriction: Restriction) -> str:
    """The admin's reason for ``restriction`` on ``agent``; empty when it is not on."""
    reason: str = getattr(agent, restriction.field)
    return reason


def refuse_restriction_unchanged(agent: AgentFacts, restriction: Restriction, *, on: bool) -> None:
    """Putting on what is on, or lifting what is off, is a mistake worth saying."""
    if bool(restriction_reason(agent, restriction)) != on:
        return
    if on:
        detail = (
            f"The agent '{agent.name}' is already {restriction.words} "
            f"(reason: {sentence(restriction_reason(agent, restriction))}) Nothing changed."
        )
    else:
        detail = f"The agent '{agent.name}' is not {restriction.words}; nothing to lift."
    raise Refusal("restriction_unchanged", detail, 409)


class RestrictedRefusal(Refusal):
    """A write refused because of a restriction an admin put on the agent, with their reason."""

    def __init__(self, restriction: Restriction, because: str, detail: str) -> None:
        super().__init__(restriction.code, detail, RESTRICTED_STATUS)
        self.restriction = restriction
        self.because = because


def _written_by(writer: str | None) -> str:
    return f"the agent '{writer}'" if writer is not None else "a person or an import"


def refuse_others_write(*, agent: str, writer: str | None, what: str, others_allowed: bool) -> None:
    """An agent changes only what it wrote itself (``what``: "This memory", "This ledger
    entry"), unless the write policy lets agents change each other's writes
    (``others_allowed``). Whose key may change any write is ``access.may_change_any_write``.

    ``writer`` is the name of the agent that wrote it, or None when no agent did (a person
    on the dashboard, or an older store's import): a person's words are no more an agent's
    to overwrite than another agent's are.
    """
    if writer == agent or others_allowed:
        return
    raise Refusal(
        "not_your_write",
        f"{what} was written by {_written_by(writer)}, not by '{agent}'; the write policy "
        "lets an agent change only its own writes. Nothing was changed.",
        403,
    )


def refuse_others_writes(
    *, agent: str, others: Mapping[str | None, int], what: str, others_allowed: bool
) -> None:
    """All or nothing: a change to many rows at once (``what``: "A batch deletion") that
    would take any row another agent or a person wrote (``others``: how many, by writer) is
    refused as a whole, so that nobody is left guessing which part of it happened."""
    if not others or others_allowed:
        return
    count = sum(others.values())
    by = "; ".join(
        f"{_written_by(writer)}: {n}"
        for writer, n in sorted(others.items(), key=lambda pair: (pair[0] is None, pair[0] or ""))
    )
    raise Refusal(
        "not_your_write",
        f"{what} would change {count} memor{'ies' if count != 1 else 'y'} '{agent}' did not write "
        f"({by}); the write policy lets an agent change only its own writes, so nothing was "
        f"changed. Narrow it to what '{agent}' wrote.",
        403,
    )
