"""Tool definitions an agent framework can hand to a model, derived from the API's own
input serializers so that a schema cannot promise what an endpoint refuses."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ledger.api.auth import policy_of
from ledger.api.fields import RefField
from ledger.api.journal import (
    JOURNAL_KEY_PATTERN,
    BoundedJSONField,
    IntentSerializer,
    JournalKeyField,
    OutcomeSerializer,
)
from ledger.api.ledger import LIST_PARAMETERS
from ledger.api.notes import NOTE_KEY_PATTERN, NoteKeySerializer, NoteValueSerializer
from ledger.api.recall import RecallParamsSerializer
from ledger.api.serializers import MemoryWriteSerializer, SlotKeyField
from ledger.rules.text import KEY_PATTERN, REF_PATTERN

# What the serializers leave unsaid, in words a model reads before calling the tool.
DESCRIPTIONS = {
    "remember": {
        "subject": "The subject's reference (account or person).",
        "kind": "preference, account_fact (about the account) or episode (something that "
        "happened).",
        "key": "Optional slot such as 'contact.channel'; two differing memories in one slot "
        "are a conflict.",
        "statement": "One sentence, as the person said it or as you concluded it.",
        "basis": "stated: the person said it; inferred: you concluded it.",
        "source": "Where it came from: the message or tool result. Required.",
        "expires_at": "When it stops being true (ISO 8601 with offset, in the future). Leave "
        "out for the policy's default; null only with permanent: true.",
        "permanent": "True only for a stated fact that cannot change.",
    },
    "recall": {
        "subject": "The subject's reference.",
        "goal": "What you are about to do; memories are ranked by relevance to it.",
        "k": "How many memories at most.",
        "run": "Your run's reference.",
        "turn": "The turn within the run.",
    },
    "source": {
        "kind": "user_message, tool_result, operator or import.",
        "ref": "The message id or tool result id.",
        "run": "The run it arrived in.",
        "turn": "The turn it arrived in.",
        "excerpt": "The words it came from, verbatim.",
    },
}
RUN = "Your run's reference; a run belongs to the agent that started it."


def field_schema(
    f: serializers.Field[Any, Any, Any, Any], notes: dict[str, str] | None = None
) -> dict[str, Any]:
    """The JSON Schema of one strict input field."""
    schema: dict[str, Any]
    if isinstance(f, serializers.Serializer):
        schema = object_schema(f, DESCRIPTIONS.get(f.field_name or "", {}))
    elif isinstance(f, serializers.ChoiceField):
        schema = {"type": "string", "enum": list(f.choices)}
    elif isinstance(f, serializers.BooleanField):
        schema = {"type": "boolean"}
    elif isinstance(f, serializers.IntegerField):
        schema = {"type": "integer"}
        if f.min_value is not None:
            schema["minimum"] = f.min_value
        if f.max_value is not None:
            schema["maximum"] = f.max_value
    elif isinstance(f, serializers.DateTimeField):
        schema = {"type": "string", "format": "date-time"}
    elif isinstance(f, BoundedJSONField):
        schema = {"type": "object"} if f.object_only else {}
    elif isinstance(f, serializers.CharField):
        schema = {"type": "string"}
        if not f.allow_blank:
            schema["minLength"] = 1
        if f.max_length is not None:
            schema["maxLength"] = f.max_length
        pattern = _pattern(f)
        if pattern:
            schema["pattern"] = pattern
    else:
        raise TypeError(f"No tool schema for {type(f).__name__}")
    if f.allow_null and "type" in schema:
        schema["type"] = [schema["type"], "null"]
    description = (notes or {}).get(f.field_name or "") or f.help_text
    if description:
        schema["description"] = str(description)
    return schema


def _pattern(f: serializers.Field[Any, Any, Any, Any]) -> str | None:
    if isinstance(f, RefField):
        return REF_PATTERN.pattern
    if isinstance(f, SlotKeyField):
        # The key may also be left empty.
        return f"^$|{KEY_PATTERN.pattern}"
    if isinstance(f, JournalKeyField):
        return JOURNAL_KEY_PATTERN.pattern
    return None


def object_schema(
    serializer: serializers.Serializer[Any], notes: dict[str, str] | None = None
) -> dict[str, Any]:
    fields = serializer.fields
    return {
        "type": "object",
        "properties": {name: field_schema(f, notes) for name, f in fields.items()},
        "required": [name for name, f in fields.items() if f.required],
        "additionalProperties": False,
    }


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    method: str
    path: str
    # Arguments that go into the path, the query string and the JSON body.
    path_args: dict[str, dict[str, Any]] = field(default_factory=dict)
    schema: dict[str, Any] = field(default_factory=dict)
    where: str = "body"

    def definition(self) -> dict[str, Any]:
        properties = {**self.path_args, **self.schema.get("properties", {})}
        required = [*self.path_args, *self.schema.get("required", [])]
        return {
            "name": self.name,
            "description": self.description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        }

    def endpoint(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "path": self.path,
            "path_arguments": list(self.path_args),
            "other_arguments": self.where,
        }


def query_schema(parameters: list[OpenApiParameter]) -> dict[str, Any]:
    """The JSON Schema of a view's documented query parameters, so the tool and the
    OpenAPI schema say the same thing about them."""
    properties: dict[str, Any] = {}
    for p in parameters:
        schema: dict[str, Any] = {"type": "boolean" if p.type is bool else "string"}
        if p.enum:
            schema["enum"] = list(p.enum)
        if p.description:
            schema["description"] = p.description
        properties[p.name] = schema
    return {"type": "object", "properties": properties, "required": []}


def _run_arg() -> dict[str, Any]:
    return {**field_schema(RefField()), "description": RUN}


def tools(recall_cap: int) -> list[Tool]:
    note_key = field_schema(NoteKeySerializer().fields["key"])
    note_key["pattern"] = NOTE_KEY_PATTERN.pattern
    note_key["description"] = "The note's name; writing it again overwrites the value."
    recall = object_schema(RecallParamsSerializer(), DESCRIPTIONS["recall"])
    recall["properties"]["k"]["maximum"] = recall_cap
    subject = {**field_schema(RefField()), "description": "The subject's reference."}
    return [
        Tool(
            name="write_note",
            description="Keep a small note for this run outside your context window, so it "
            "survives compaction and restarts. Writing the same key overwrites it.",
            method="PUT",
            path="/api/v1/runs/{run}/notes/{key}",
            path_args={"run": _run_arg(), "key": note_key},
            schema=object_schema(NoteValueSerializer()),
        ),
        Tool(
            name="read_notes",
            description="Read every note you kept for this run.",
            method="GET",
            path="/api/v1/runs/{run}/notes",
            path_args={"run": _run_arg()},
            where="none",
        ),
        Tool(
            name="remember",
            description="Ask to keep one memory about a subject. The write gate decides and "
            "says why; every memory needs its source.",
            method="POST",
            path="/api/v1/memories",
            schema=object_schema(MemoryWriteSerializer(), DESCRIPTIONS["remember"]),
        ),
        Tool(
            name="recall",
            description="Read a capped, labelled block of what is remembered about a subject, "
            "ranked by relevance to your goal, with any open conflicts. Records may be out of "
            "date: a live tool result wins.",
            method="GET",
            path="/api/v1/subjects/{subject}/recall",
            path_args={"subject": subject},
            schema=recall,
            where="query",
        ),
        Tool(
            name="journal_intent",
            description="Before any side effect, journal what you are about to do with an "
            "idempotency key. If the answer says an attempt may already exist, read the "
            "external system before acting: never retry blindly.",
            method="POST",
            path="/api/v1/runs/{run}/journal",
            path_args={"run": _run_arg()},
            schema=object_schema(IntentSerializer()),
        ),
        Tool(
            name="journal_result",
            description="Record what happened to a journaled action: done (verified), "
            "not_done (failed) or unknown (sent, no verified result). Moves: intended → done, "
            "not_done or unknown; unknown → done or not_done.",
            method="PATCH",
            path="/api/v1/journal/{idempotency_key}",
            path_args={
                "idempotency_key": {
                    **field_schema(JournalKeyField()),
                    "description": "The key you journaled the intent with.",
                }
            },
            schema=object_schema(OutcomeSerializer()),
        ),
        Tool(
            name="read_ledger",
            description="Read a subject's ledger: the facts and commitments that outlive "
            "compaction. Send active: true for only what is in force now, kind: commitment for "
            "the constraints you must honour. A proposal is not agreed: never act on it as if "
            "it were. Established facts that disagree come back under conflicts.",
            method="GET",
            path="/api/v1/subjects/{subject}/ledger",
            path_args={"subject": subject},
            schema=query_schema(LIST_PARAMETERS),
            where="query",
        ),
    ]


class ToolsView(APIView):
    """The tool definitions, in the common function-calling shape."""

    @extend_schema(
        responses={
            200: inline_serializer(
                "ToolDefinitions",
                {"tools": serializers.ListField(), "endpoints": serializers.DictField()},
            )
        }
    )
    def get(self, request: Request) -> Response:
        defined = tools(policy_of(request).recall_cap)
        return Response(
            {
                "tools": [t.definition() for t in defined],
                "endpoints": {t.name: t.endpoint() for t in defined},
            }
        )
