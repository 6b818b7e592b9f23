"""What the rules read of a row, as protocols: the rules never import the models.

A model instance passes wherever its protocol is asked for (``Agent`` for ``AgentFacts``),
and a test may pass any object with the same attributes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol


class PolicyFacts(Protocol):
    """The write policy in force (``ledger.models.Policy``)."""

    @property
    def system_of_record_keys(self) -> list[str]: ...
    @property
    def subject_active_cap(self) -> int: ...
    @property
    def inferred_max_days(self) -> int: ...
    @property
    def inferred_sources_required(self) -> int: ...
    def ttl_days(self, kind: str) -> int: ...
    def review_days(self, kind: str) -> int: ...


class AgentFacts(Protocol):
    """An agent and the restrictions an admin put on it (``ledger.models.Agent``)."""

    @property
    def name(self) -> str: ...
    @property
    def is_active(self) -> bool: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def writes_paused(self) -> bool: ...
    @property
    def writes_paused_because(self) -> str: ...
    @property
    def quarantined(self) -> bool: ...
    @property
    def quarantined_because(self) -> str: ...
    @property
    def stated_untrusted(self) -> bool: ...
    @property
    def stated_untrusted_because(self) -> str: ...


class LedgerEntryFacts(Protocol):
    """A ledger entry (``ledger.models.LedgerEntry``)."""

    @property
    def pk(self) -> object: ...
    @property
    def immutable(self) -> bool: ...
    @property
    def expires_at(self) -> datetime | None: ...


class RevocationFacts(Protocol):
    """When, by whom and why an agent was revoked (``ledger.reads.revocations``)."""

    @property
    def words(self) -> str: ...
