"""The JSON Schema of a state document: the contract a compaction is written against.

The API publishes it as it stands, so an agent's harness can validate a document before
posting it, and it is the first check a posted document meets. Every string is bounded
and every name is one line, so the later checks can compare names as exact strings; a
date-time needs an offset and a URL must be http or https, because a source is only worth
keeping if it can be read again.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from jsonschema import FormatChecker

# A finding's status. "resolved" and "not_found" both answer the item (a negative result
# is an answer, and the costliest one to lose); "partial" means work remains.
FINDING_STATUSES = ("resolved", "not_found", "partial")
RESOLVED_STATUSES = frozenset({"resolved", "not_found"})
# How people read each status on the dashboard.
FINDING_STATUS_WORDS = {
    "resolved": "resolved",
    "not_found": "not found",
    "partial": "partly resolved",
}

# The parts of the context after compaction, in the order a chart stacks them.
BUDGET_PARTS = (
    "system_prompt",
    "tool_definitions",
    "goal",
    "pinned_facts",
    "summary",
    "recent_turns",
    "reserve",
)

ITEM_MAX = 200
_ONE_LINE = r"^\S(?:.*\S)?$"  # no surrounding white space, no line breaks


def _text(max_length: int, *, one_line: bool = False) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": max_length}
    if one_line:
        schema["pattern"] = _ONE_LINE
    return schema


_ITEM: dict[str, Any] = {
    **_text(ITEM_MAX, one_line=True),
    "description": "The name of one task item.",
}
_TIME: dict[str, Any] = {"type": "string", "format": "date-time", "maxLength": 40}

STATE_DOCUMENT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "State document",
    "description": (
        "The position a run has reached, written at one compaction for the next model "
        "call: what the task is, what has been found and on what evidence, what is still "
        "open and why, which queries were already run, which commitments bind the agent "
        "and which artefacts exist at which revision."
    ),
    "type": "object",
    "additionalProperties": False,
    "required": ["task", "findings", "open", "queries_run", "commitments", "artifacts"],
    "properties": {
        "task": {
            "type": "object",
            "additionalProperties": False,
            "required": ["text", "items"],
            "properties": {
                "text": _text(4000),
                "items": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 500,
                    "uniqueItems": True,
                    "items": _ITEM,
                    "description": "Every item the task is about; findings and open split them.",
                },
            },
        },
        "findings": {
            "type": "array",
            "maxItems": 500,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["item", "status"],
                "properties": {
                    "item": _ITEM,
                    "status": {"enum": list(FINDING_STATUSES)},
                    "evidence": {
                        **_text(2000),
                        "description": "The claim itself: what was established, or why "
                        "nothing was found.",
                    },
                    "tried": {**_text(2000), "description": "What was tried on the item."},
                    "source": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["ref", "at"],
                        "properties": {"ref": _text(500, one_line=True), "at": _TIME},
                        "description": "A key that reproduces the evidence, and when it was read.",
                    },
                },
            },
        },
        "open": {
            "type": "array",
            "maxItems": 500,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["item", "blocked_by"],
                "properties": {"item": _ITEM, "blocked_by": _text(1000)},
            },
        },
        "queries_run": {"type": "array", "maxItems": 2000, "items": _text(500)},
        "commitments": {
            "type": "array",
            "maxItems": 200,
            "items": _text(1000),
            "description": "Commitments carried verbatim from the ledger.",
        },
        "artifacts": {
            "type": "array",
            "maxItems": 500,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["gist"],
                "properties": {
                    "path": _text(500, one_line=True),
                    "revision": {
                        "oneOf": [
                            _text(100, one_line=True),
                            {"type": "integer", "minimum": 0},
                        ]
                    },
                    "url": {**_text(2000, one_line=True), "format": "uri"},
                    "fetched_at": _TIME,
                    "gist": {**_text(300, one_line=True), "description": "One line."},
                },
            },
        },
        "relational_note": {
            **_text(1000),
            "description": "Short prose about tone and relationship, kept apart from the "
            "fields that carry commitments.",
        },
    },
}


def _is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    parsed = datetime.fromisoformat(value.replace("z", "Z"))
    if parsed.tzinfo is None:
        raise ValueError("a date-time needs a UTC offset")
    return True


def _is_web_address(value: object) -> bool:
    if not isinstance(value, str):
        return True
    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


# The formats the schema names, and only those, checked the way this schema means them
# (jsonschema's own checkers accept any URI scheme and depend on optional packages).
# Validate with it: without a format checker, "format" is only an annotation.
FORMAT_CHECKER = FormatChecker(formats=())
# Registered by call, not as decorators: jsonschema is untyped, and a decorator from it
# would make the checkers untyped too.
FORMAT_CHECKER.checks("date-time", raises=ValueError)(_is_date_time)
FORMAT_CHECKER.checks("uri")(_is_web_address)
