"""The write gate's pure decisions: system-of-record keys, pauses, caps, expiry, review
dates and when a guess is corroborated."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from ledger.choices import (
    Basis,
)
from ledger.rules.facts import PolicyFacts
from ledger.rules.refusals import Refusal


def refuse_system_of_record(policy: PolicyFacts, key: str) -> None:
    if key and key in policy.system_of_record_keys:
        raise Refusal(
            "system_of_record",
            f"The key '{key}' belongs to another system of record; read it from there.",
        )


def refuse_if_paused(memory_paused: bool) -> None:
    if memory_paused:
        raise Refusal(
            "memory_paused",
            "The person has paused memory for this subject; nothing new may be written.",
            status=423,
        )


def refuse_over_cap(policy: PolicyFacts, live_count: int) -> None:
    if live_count >= policy.subject_active_cap:
        raise Refusal(
            "subject_cap_reached",
            f"This subject already holds {live_count} live memories, the policy's "
            f"limit of {policy.subject_active_cap}. Retract or let some expire first.",
            status=409,
        )


@dataclass(frozen=True)
class Expiry:
    expires_at: datetime | None
    capped: bool


def expiry_for(
    policy: PolicyFacts,
    *,
    kind: str,
    basis: str,
    now: datetime,
    requested: datetime | None,
    omitted: bool,
) -> Expiry:
    """When a new memory dies: the request, else the kind's default; guesses are capped."""
    expires_at = now + timedelta(days=policy.ttl_days(kind)) if omitted else requested
    if basis != Basis.INFERRED:
        return Expiry(expires_at, capped=False)
    longest = now + timedelta(days=policy.inferred_max_days)
    if expires_at is None or expires_at > longest:
        return Expiry(longest, capped=not omitted)
    return Expiry(expires_at, capped=False)


def successor_expiry(
    policy: PolicyFacts,
    *,
    kind: str,
    basis: str,
    replaced_expires_at: datetime | None,
    now: datetime,
) -> datetime | None:
    """When a memory written in place of another dies (a correction, a revert): a stated
    one that never expired still never does; any other gets the life of a new memory."""
    if replaced_expires_at is None and basis == Basis.STATED:
        return None
    return expiry_for(
        policy, kind=kind, basis=basis, now=now, requested=None, omitted=True
    ).expires_at


def review_date_for(policy: PolicyFacts, *, kind: str, now: datetime) -> datetime:
    return now + timedelta(days=policy.review_days(kind))


def needs_corroboration(policy: PolicyFacts, *, basis: str, agents: int) -> bool:
    """Whether a guess still waits: ``agents`` is how many different agents wrote it. One
    agent's repeats, from however many messages or tools, never corroborate it; a person's
    confirmation is the other way out (``lifecycle.confirm_memory``)."""
    return basis == Basis.INFERRED and agents < policy.inferred_sources_required


# Why a repeat leaves a pending statement as it is.
HELD_STATEMENT_WAITS = (
    "It stays pending: it was held by an admin's restriction on the agent that wrote it, "
    "and only a person's confirmation makes it active."
)


def repeat_activates(policy: PolicyFacts, *, basis: str, agents: int) -> bool:
    """Whether a repeat makes a pending memory active: a guess, once enough different agents
    have written it.

    A statement is pending only because an admin's restriction held it: no repeat is a
    person's confirmation, whoever sends it (its own agent from a tool, say) and whether
    or not the restriction has been lifted since.
    """
    return basis == Basis.INFERRED and not needs_corroboration(policy, basis=basis, agents=agents)
