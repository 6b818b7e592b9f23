"""The data memoryadmin keeps, one module per domain, each QuerySet beside its model.

Models hold data, constraints and small helpers; reads are QuerySet methods. Nothing
outside ``ledger.actions`` saves, updates or deletes a tracked model: those functions
record who changed it and why, and write the history row in the same transaction.
Everything is re-exported here, so ``from ledger.models import Memory`` is the one way in.
"""

from ledger.models.agents import Agent, AgentKey, AgentKeyQuerySet
from ledger.models.audit import AuditSeal
from ledger.models.erasure_requests import ErasureRequest, ErasureRequestQuerySet
from ledger.models.history import AUDIT_INDEXES, ActorHistory, AuditedRecords, tracked
from ledger.models.identities import SignInIdentity
from ledger.models.ledger_entries import LedgerEntry, LedgerEntryQuerySet, ledger_entry_in_force
from ledger.models.memories import (
    PAGE_HEADINGS,
    SEARCH_CONFIG,
    Conflict,
    ConflictQuerySet,
    Memory,
    MemoryQuerySet,
    Source,
    SourceQuerySet,
    Subject,
    SubjectQuerySet,
    WriteDecision,
    WriteDecisionQuerySet,
    open_conflict,
    servable_memory,
)
from ledger.models.people import Erasure, LockoutLift, PersonChange
from ledger.models.policy import POLICY_ALONG, Policy, default_system_of_record_keys
from ledger.models.recalls import (
    ConversationRow,
    Recall,
    RecallItem,
    RecallItemQuerySet,
    RecallQuerySet,
    RecallsRow,
    UsageRow,
)
from ledger.models.reminders import Reminder, ReminderQuerySet
from ledger.models.requests import IdempotencyRecord
from ledger.models.retractions import RetractionBatch, RetractionItem
from ledger.models.runs import (
    JournalEntry,
    JournalEntryQuerySet,
    Run,
    RunNote,
    RunQuerySet,
    Snapshot,
)
from ledger.models.vectors import MemoryVector, MemoryVectorQuerySet
from ledger.models.webhooks import (
    WebhookDelivery,
    WebhookDeliveryQuerySet,
    WebhookEndpoint,
    WebhookEndpointQuerySet,
)
from ledger.models.work import QueueNote, QueueWork, QueueWorkQuerySet

__all__ = [
    "AUDIT_INDEXES",
    "ActorHistory",
    "Agent",
    "AgentKey",
    "AgentKeyQuerySet",
    "AuditSeal",
    "AuditedRecords",
    "Conflict",
    "ConflictQuerySet",
    "ConversationRow",
    "Erasure",
    "ErasureRequest",
    "ErasureRequestQuerySet",
    "IdempotencyRecord",
    "JournalEntry",
    "JournalEntryQuerySet",
    "LedgerEntry",
    "LedgerEntryQuerySet",
    "LockoutLift",
    "Memory",
    "MemoryVector",
    "MemoryVectorQuerySet",
    "MemoryQuerySet",
    "PAGE_HEADINGS",
    "POLICY_ALONG",
    "PersonChange",
    "Policy",
    "QueueNote",
    "QueueWork",
    "QueueWorkQuerySet",
    "Recall",
    "RecallItem",
    "RecallItemQuerySet",
    "RecallQuerySet",
    "RecallsRow",
    "Reminder",
    "ReminderQuerySet",
    "RetractionBatch",
    "RetractionItem",
    "Run",
    "RunNote",
    "RunQuerySet",
    "SEARCH_CONFIG",
    "SignInIdentity",
    "Snapshot",
    "Source",
    "SourceQuerySet",
    "Subject",
    "SubjectQuerySet",
    "UsageRow",
    "WebhookDelivery",
    "WebhookDeliveryQuerySet",
    "WebhookEndpoint",
    "WebhookEndpointQuerySet",
    "WriteDecision",
    "WriteDecisionQuerySet",
    "default_system_of_record_keys",
    "ledger_entry_in_force",
    "open_conflict",
    "servable_memory",
    "tracked",
]
