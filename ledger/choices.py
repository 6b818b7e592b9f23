"""The words memoryadmin's rows are made of: every kind, basis, status and state.

A leaf module: models, querysets, policy and pages all import it, and it imports nothing
of the project, so none of them needs an import inside a function to reach these names.
Which status may move to which is not here: that is each lifecycle's table in ``ledger.rules``.
"""

from __future__ import annotations

from enum import StrEnum

from django.db import models


class MemoryKind(models.TextChoices):
    PREFERENCE = "preference", "preference"
    ACCOUNT_FACT = "account_fact", "fact about the account"
    EPISODE = "episode", "past episode"


class Basis(models.TextChoices):
    STATED = "stated", "stated"
    INFERRED = "inferred", "inferred"


class MemoryStatus(models.TextChoices):
    ACTIVE = "active", "in use"
    PENDING = "pending", "waiting for confirmation"
    SUPERSEDED = "superseded", "replaced by a correction"
    RETRACTED = "retracted", "deleted"
    EXPIRED = "expired", "expired"
    ERASED = "erased", "erased"


class StatedBy(models.TextChoices):
    """How a memory came to be stated: the person said it, confirmed a guess, or rewrote it;
    or support confirmed or rewrote it, which is never shown as the person's word."""

    PERSON = "", "the person"
    CONFIRMATION = "confirmation", "a confirmation"
    # Staff never speak for the person: a guess support confirmed says so, everywhere.
    SUPPORT_CONFIRMATION = "support_confirmation", "a confirmation by support"
    CORRECTION = "correction", "a correction"
    SUPPORT_CORRECTION = "support_correction", "a correction by support"


# Rewritten on the dashboard, by the person or by support.
CORRECTIONS = (StatedBy.CORRECTION, StatedBy.SUPPORT_CORRECTION)


class SourceKind(models.TextChoices):
    USER_MESSAGE = "user_message", "message from the person"
    TOOL_RESULT = "tool_result", "tool result"
    OPERATOR = "operator", "operator"
    IMPORT = "import", "import"


class Scope(models.TextChoices):
    READ = "read"
    WRITE = "write"
    # Staff tooling: batch retractions across subjects. Only an admin grants it.
    STAFF = "staff"


class ActorRole(models.TextChoices):
    """Who made a change, as the audit records it at the time: a person in their role then,
    an agent, or the system (expiry, the command line)."""

    PERSON = "user", "the person"
    SUPPORT = "support", "support"
    ADMIN = "admin", "an admin"
    AGENT = "agent", "an agent"
    SYSTEM = "system", "the system"


class ConflictStatus(models.TextChoices):
    OPEN = "open"
    RESOLVED = "resolved"


class ConflictResolution(models.TextChoices):
    """How a person settled a conflict; blank when it closed because a contender went."""

    KEPT = "kept", "one statement kept"
    REWRITTEN = "rewritten", "rewritten in new words"
    # A possible conflict a person read and found not to be one: both statements stay.
    DISMISSED = "dismissed", "not a conflict"


class Outcome(models.TextChoices):
    """What the write gate decided for one request."""

    ACCEPTED = "accepted"
    PENDING = "pending"
    MERGED = "merged"
    CONFLICT = "conflict"
    REFUSED = "refused"


class ReminderKind(models.TextChoices):
    REVIEW = "review", "due for review"
    EXPIRING = "expiring", "expiring soon"


class Audience(models.TextChoices):
    OWNER = "owner", "the subject's owner"
    SUPPORT = "support", "the support queue"


class LedgerKind(models.TextChoices):
    ESTABLISHED = "established"
    INTERPRETATION = "interpretation"
    PROPOSAL = "proposal"
    COMMITMENT = "commitment"


class LedgerStatus(models.TextChoices):
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    WITHDRAWN = "withdrawn"
    EXPIRED = "expired"
    ERASED = "erased"


class JournalState(models.TextChoices):
    INTENDED = "intended", "intended"
    DONE = "done", "done"
    NOT_DONE = "not_done", "not done"
    UNKNOWN = "unknown", "outcome unknown"


class SnapshotStatus(models.TextChoices):
    ACCEPTED = "accepted"
    REJECTED = "rejected"


# How each kind must be read, wherever an entry is shown: to an agent or to a person.
LEDGER_KIND_READINGS = {
    LedgerKind.ESTABLISHED: "Established: verified against the named source.",
    LedgerKind.INTERPRETATION: "Interpretation: the agent's own inference, not verified.",
    LedgerKind.PROPOSAL: "Proposal: not agreed. Do not act on it as if it were agreed.",
    LedgerKind.COMMITMENT: "Commitment: agreed; a constraint on future actions.",
}


class PersonField(StrEnum):
    """What a ``PersonChange`` row is about (its ``field``)."""

    PERSON = "person"
    NAME = "name"
    ROLE = "role"
    EMAIL = "email"
    SUBJECT = "subject"
    ACCESS = "access"
    PASSWORD = "password"
    PASSWORD_LINK = "password_link"
    # A link recorded as sent that the mail server then refused (after the record was kept).
    PASSWORD_LINK_FAILED = "password_link_failed"
    # Their account at the company's identity provider, linked at their first sign-in there.
    IDENTITY = "identity"
