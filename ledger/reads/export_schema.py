"""The JSON Schema of the export: the published contract of what a person downloads.

One document, here only: ``ledger.reads.exports`` builds the export, the API serves this schema
(``GET /api/v1/schemas/export``) and the tests validate every export against it. Every
object is closed (``additionalProperties: false``) and lists every field as required, so
the export and its schema cannot drift apart: a field added to one and not the other fails
the tests. docs/end-users.md says the same in words.

Imports only ``ledger.choices``, a leaf, for the stored vocabulary.
"""

from __future__ import annotations

from typing import Any

from ledger import choices

FORMAT = "memoryadmin.export/2"

# Who did something, in words that mean something to the person. ``actor`` beside it keeps
# the exact label: ``user:<username>``, ``agent:<name>`` or ``system:<task>``.
WHO_PERSON = "the person"
WHO_SUPPORT = "support"
WHO_ADMIN = "an admin"
WHO_OTHER_PERSON = "another person"
WHO_AGENT = "an agent"
WHO_SYSTEM = "the system"
WHO_UNKNOWN = "unknown"
WHO = (
    WHO_PERSON,
    WHO_SUPPORT,
    WHO_ADMIN,
    WHO_OTHER_PERSON,
    WHO_AGENT,
    WHO_SYSTEM,
    WHO_UNKNOWN,
)

# How a memory came to be: said by the person, guessed, a guess confirmed, a correction.
ORIGINS = ("said", "recorded", "guessed", "confirmed", "corrected")
# How a conflict was settled: a statement kept as it was, the kept one rewritten in the
# same step, a possible conflict dismissed as none, or none left standing (every contender
# deleted, expired or erased).
RESOLUTIONS = (*choices.ConflictResolution.values, "none_left")

# The stored vocabulary, from the one place it is defined, so a new status is exported
# and allowed by the schema at once.
MEMORY_KINDS = tuple(choices.MemoryKind.values)
MEMORY_STATUSES = tuple(choices.MemoryStatus.values)
# The export names a dashboard correction's source "correction", not "operator".
SOURCE_KINDS = (*choices.SourceKind.values, "correction")
LEDGER_KINDS = tuple(choices.LedgerKind.values)
LEDGER_STATUSES = tuple(choices.LedgerStatus.values)
CHANGES = ("created", "changed", "deleted")


def _closed(properties: dict[str, Any], description: str) -> dict[str, Any]:
    """An object with exactly these fields, every one of them present."""
    return {
        "type": "object",
        "description": description,
        "additionalProperties": False,
        "required": list(properties),
        "properties": properties,
    }


def _text(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _text_or_null(description: str) -> dict[str, Any]:
    return {"type": ["string", "null"], "description": description}


def _time(description: str) -> dict[str, Any]:
    return {"type": "string", "format": "date-time", "description": description}


def _time_or_null(description: str) -> dict[str, Any]:
    return {"type": ["string", "null"], "format": "date-time", "description": description}


def _enum(values: tuple[str, ...], description: str) -> dict[str, Any]:
    return {"type": "string", "enum": list(values), "description": description}


def _count(description: str) -> dict[str, Any]:
    return {"type": "integer", "minimum": 0, "description": description}


def _list(items: dict[str, Any], description: str) -> dict[str, Any]:
    return {"type": "array", "items": items, "description": description}


_MEMORY_ID = {
    "type": "string",
    "format": "uuid",
    "description": "A memory's id, as in the dashboard's addresses (/memories/<id>/history/).",
}
_MEMORY_ID_OR_NULL = {**_MEMORY_ID, "type": ["string", "null"]}
_WHO = _enum(WHO, "Who did it, in words.")
_ACTOR = _text(
    "Who did it, exactly: user:<username>, agent:<agent name> or system:<task>; "
    "empty when it was not recorded."
)
_REASON = _text_or_null("Why, as given when it was done; null when no reason was recorded.")

_SOURCE = _closed(
    {
        "kind": _enum(
            SOURCE_KINDS,
            "user_message: a message from the person; tool_result: something a tool the "
            "assistant used returned; operator: entered by hand by an operator; import: "
            "brought in from an earlier memory store; correction: a correction made on the "
            "dashboard.",
        ),
        "ref": _text(
            "The reference of what it came from: a message id or a tool call; for a "
            "correction, the id of the memory it corrected."
        ),
        "run": _text_or_null("The conversation (agent run) it came from, if any."),
        "turn": {
            "type": ["integer", "null"],
            "minimum": 0,
            "description": "The turn within the conversation, if known.",
        },
        "excerpt": _text("The words it came from, as received; empty when none were kept."),
        "received_at": _time("When it was received."),
    },
    "Where a claim came from.",
)

_CHANGE = {
    "version": _count("The version this change made (1 is the first)."),
    "changed_at": _time("When."),
    "change": _enum(CHANGES, "created, changed or deleted."),
    "who": _WHO,
    "actor": _ACTOR,
    "reason": _REASON,
}

_MEMORY_VERSION = _closed(
    {
        **_CHANGE,
        "status": _enum(MEMORY_STATUSES, "The status after this change."),
        "withheld": {
            "type": "boolean",
            "description": "Whether, after this change, the assistant was told not to use it.",
        },
        "statement": _text("The statement after this change (empty once erased)."),
        "basis": _enum(("stated", "inferred"), "The basis after this change."),
        "expires_at": _time_or_null("The expiry after this change."),
    },
    "One change to a memory, oldest first.",
)

_READ = _closed(
    {
        "read_at": _time("When an agent was given the memory."),
        "agent": _text("The agent (program) that read it."),
        "run": _text_or_null("The conversation (agent run) it was read in, if one was named."),
        "turn": {
            "type": ["integer", "null"],
            "minimum": 0,
            "description": "The turn within the conversation, if given.",
        },
        "goal": _text("What the agent said it was about to do (empty once erased)."),
    },
    "One time an agent was given the memory (a recall), oldest first.",
)

_MEMORY = _closed(
    {
        "id": _MEMORY_ID,
        "kind": _enum(
            MEMORY_KINDS, "preference, account_fact (a fact about the account) or episode."
        ),
        "key": _text("The slot it fills, such as contact.channel; empty when none."),
        "statement": _text("What is remembered (empty once erased)."),
        "basis": _enum(
            ("stated", "inferred"),
            "stated: not a guess (said by the person, recorded from a tool or an import, "
            "or a guess confirmed or corrected: origin says how and by whom, and a guess "
            "support confirmed is never the person's word); inferred: an agent guessed it "
            "and nobody confirmed it.",
        ),
        "origin": _closed(
            {
                "how": _enum(
                    ORIGINS,
                    "said: the person said it; recorded: stated by a tool's answer, an "
                    "import or a hand entry, not in the person's words; guessed: an agent "
                    "inferred it; confirmed: a "
                    "guess someone confirmed; corrected: written as a correction of an "
                    "earlier memory (see supersedes).",
                ),
                "who": _WHO,
            },
            "How the memory came to be, and who said, guessed, confirmed or corrected it.",
        ),
        "status": _enum(
            MEMORY_STATUSES,
            "active: in use; pending: a guess waiting for confirmation; superseded: replaced "
            "by a correction; retracted: deleted; expired; erased.",
        ),
        "withheld": {
            "type": "boolean",
            "description": 'True when the person said "true, but don\'t use it": it is kept '
            "and shown to them, but the assistant is never given it.",
        },
        "written_at": _time("When it was written."),
        "confirmed_at": _time_or_null("When it was last confirmed, if ever."),
        "expires_at": _time_or_null("When it stops being used; null: it does not expire."),
        "supersedes": {**_MEMORY_ID_OR_NULL, "description": "The memory it corrected, if any."},
        "superseded_by": {
            **_MEMORY_ID_OR_NULL,
            "description": "The correction that replaced it, if any.",
        },
        "agent": _text_or_null("The agent that wrote it, if an agent did."),
        "run": _text_or_null("The conversation (agent run) it was written in, if any."),
        "version": _count("How many versions it has had."),
        "sources": _list(_SOURCE, "Everything it came from, oldest first."),
        "history": _list(_MEMORY_VERSION, "Every change, oldest first."),
        "reads": _list(_READ, "Every time an agent was given it, oldest first."),
    },
    "One memory, in any status.",
)

_LEDGER_VERSION = _closed(
    {
        **_CHANGE,
        "status": _enum(LEDGER_STATUSES, "The status after this change."),
        "fact": _text("The fact after this change (empty once erased)."),
    },
    "One change to a ledger entry, oldest first.",
)

_LEDGER_ENTRY = _closed(
    {
        "id": {
            "type": "string",
            "format": "uuid",
            "description": "The entry's id; supersedes refers to it.",
        },
        "kind": _enum(
            LEDGER_KINDS,
            "established: verified against its source; interpretation: an agent's "
            "inference; proposal: not agreed; commitment: agreed, binding future actions.",
        ),
        "key": _text("What it is about, such as refund.amount; empty when none."),
        "fact": _text("The fact or commitment (empty once erased)."),
        "status": _enum(LEDGER_STATUSES, "Whether it is still in force."),
        "immutable": {"type": "boolean", "description": "Replaced, never edited, when true."},
        "recorded_at": _time("When it was recorded."),
        "expires_at": _time_or_null("When it stops being in force; null: it does not."),
        "supersedes": {
            "type": ["string", "null"],
            "format": "uuid",
            "description": "The entry it replaced, if any.",
        },
        "agent": _text_or_null("The agent that recorded it."),
        "run": _text_or_null("The conversation (agent run) it was recorded in."),
        "source": _SOURCE,
        "promotion_source": {
            "oneOf": [{"type": "null"}, _SOURCE],
            "description": "For a proposal that became a commitment: the person's agreement.",
        },
        "version": _count("How many versions it has had."),
        "history": _list(_LEDGER_VERSION, "Every change, oldest first."),
    },
    "A durable fact or commitment about the person.",
)

_CONFLICT = _closed(
    {
        "key": _text("The slot where statements disagreed; empty for a possible conflict."),
        "possible": {
            "type": "boolean",
            "description": "True when no slot was shared: the words looked contradictory, "
            "and a person decides whether they are.",
        },
        "commitment": {
            "type": ["string", "null"],
            "format": "uuid",
            "description": "The ledger entry (a commitment) a memory seemed to contradict; "
            "null when only memories took part.",
        },
        "status": _enum(("open", "resolved"), "open: still to be settled; resolved."),
        "opened_at": _time("When the statements were first found to disagree."),
        "resolved_at": _time_or_null("When it was settled."),
        "memories": _list(_MEMORY_ID, "Every memory that took part in it."),
        "resolution": {
            "oneOf": [
                {"type": "null"},
                _closed(
                    {
                        "who": _WHO,
                        "actor": _ACTOR,
                        "how": _enum(
                            RESOLUTIONS,
                            "kept: a statement was kept as it was and the others deleted "
                            "(or they expired); rewritten: the one kept was replaced, in the "
                            "same step, by a statement in the resolver's own words; "
                            "dismissed: a possible conflict a person found not to be one; "
                            "none_left: every statement was deleted, expired or erased.",
                        ),
                        "kept": _list(_MEMORY_ID, "The memories left in use by it."),
                    },
                    "Who settled it and how.",
                ),
            ],
            "description": "null while open.",
        },
    },
    "Statements in one slot that disagreed.",
)

_PAUSE = _closed(
    {
        "at": _time("When."),
        "paused": {
            "type": "boolean",
            "description": "true: memory was paused; false: it was switched back on.",
        },
        "who": _WHO,
        "actor": _ACTOR,
    },
    "Memory paused, or switched back on, oldest first.",
)

_ERASURE = _closed(
    {
        "erased_at": _time("When everything was erased."),
        "erased_by": _ACTOR,
        "who": _WHO,
        "memories": _count("How many memories lost their content."),
        "ledger_entries": _count("How many ledger entries lost their content."),
        "sources": _count("How many sources lost their content."),
    },
    "An erasure: what is left of it is that it happened.",
)

EXPORT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "memoryadmin export",
    **_closed(
        {
            "format": {"const": FORMAT, "description": "The format and its version."},
            "exported_at": _time("When this copy was made."),
            "subject": _closed(
                {
                    "ref": _text("The account's reference."),
                    "display_name": _text("The name shown on the pages (empty once erased)."),
                    "created_at": _time("When the first thing was remembered about it."),
                    "memory_paused": {
                        "type": "boolean",
                        "description": "Whether memory is paused now.",
                    },
                    "pauses": _list(_PAUSE, "Every pause and switch back on."),
                },
                "Who the memories are about.",
            ),
            "memories": _list(_MEMORY, "Every memory, in every status, oldest first."),
            "ledger_entries": _list(_LEDGER_ENTRY, "Every ledger entry, oldest first."),
            "conflicts": _list(_CONFLICT, "Every conflict, oldest first."),
            "erasures": _list(_ERASURE, "Every erasure, oldest first."),
        },
        "Everything memoryadmin keeps about one subject: a person's copy of their data.",
    ),
}
