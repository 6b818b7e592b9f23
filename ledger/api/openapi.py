"""The OpenAPI schema documents every error an operation can give, written once here.

Every authenticated operation can be refused for its key (401), its scope (403) and its
agent's rate limit (429, with ``Retry-After``); an operation with a path parameter can find
nothing (404); one that takes input can reject it (400). Refusals that depend on state
(409, 412, 422, 423) are declared by the view in ``refusals``; tests/test_openapi.py follows
each view's calls to the ``Refusal``s they can raise and checks each status is documented.

It also states every input rule JSON Schema can state, from the declarations that check
them: a strict text field's pattern (no invisible characters, not blank), a strict
serializer's ``schema_rules`` across its fields, and the ``Idempotency-Key`` header on the
writes a view declares in ``idempotent_writes`` (tests/test_openapi.py checks that these are
exactly the methods that call ``idempotent``).
"""

from __future__ import annotations

import copy
import re
from functools import cache
from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import ResolvedComponent

from ledger.api.fields import StrictCharField, StrictSerializer
from ledger.api.idempotency import HEADER as IDEMPOTENCY_HEADER
from ledger.api.idempotency import KEY_MAX as IDEMPOTENCY_KEY_MAX
from ledger.rules.text import forbidden_character, forbidden_in_excerpt

ERROR = ResolvedComponent(  # type: ignore[no-untyped-call]
    name="Error",
    type=ResolvedComponent.SCHEMA,
    object="Error",
    schema={
        "type": "object",
        "description": "A refusal: what is wrong in words, and a stable code to act on. "
        "Some refusals add fields (a write gate's refusal adds its `decision`).",
        "properties": {
            "detail": {"type": "string"},
            "code": {"type": "string"},
        },
        "required": ["detail", "code"],
    },
)
VALIDATION_ERROR = ResolvedComponent(  # type: ignore[no-untyped-call]
    name="ValidationError",
    type=ResolvedComponent.SCHEMA,
    object="ValidationError",
    schema={
        "type": "object",
        "description": "Bad input: each field that failed, with its messages (a nested "
        "object for the fields of a nested object or the items of a list).",
        "additionalProperties": {
            "anyOf": [{"type": "array", "items": {}}, {"type": "object"}],
        },
    },
)

DESCRIPTIONS = {
    "400": "Bad input: the fields that failed and why, or a request that could not be read.",
    "401": "No API key, or one that is not valid, revoked or past its rotation's grace period.",
    "403": "The key lacks the scope this operation needs, or the write policy lets this "
    "agent change only what it wrote (`not_your_write`).",
    "404": "Nothing with this reference that this key may see.",
    "409": "Refused in the current state of what it acts on: the detail says why.",
    "412": "`If-Match` names a version that is no longer current.",
    "413": "The body is over the server's `DATA_UPLOAD_MAX_MEMORY_SIZE`: nothing was read.",
    "422": "Well formed, but refused by the checks: the detail says which.",
    "423": "Refused while memory is paused for this subject, or while an admin has paused "
    "or quarantined this agent.",
    "429": "Too many requests from this agent: retry after the seconds in `Retry-After`.",
}
RETRY_AFTER = {
    "Retry-After": {
        "schema": {"type": "integer"},
        "description": "Seconds to wait before the next request.",
    }
}
WRITES = {"POST", "PUT", "PATCH", "DELETE"}
# A URL with NUL in it is refused before any view (ledger.middleware).
NO_NUL = "^[^\\u0000]*$"


def _class_of(code_points: list[int]) -> str:
    """A regular-expression character class of these code points, as ranges."""
    ranges: list[tuple[int, int]] = []
    for point in code_points:
        if ranges and ranges[-1][1] == point - 1:
            ranges[-1] = (ranges[-1][0], point)
        else:
            ranges.append((point, point))
    return "".join(f"\\u{a:04x}" if a == b else f"\\u{a:04x}-\\u{b:04x}" for a, b in ranges)


# The plane a pattern can name without the Unicode flag: a few rare format characters
# above it (U+E0001 and the like) are refused by the server and not told by the schema.
PLANE = [p for p in range(0x10000) if not 0xD800 <= p <= 0xDFFF]


@cache
def _forbidden(multiline: bool) -> str:
    check = forbidden_in_excerpt if multiline else forbidden_character
    return _class_of([p for p in PLANE if check(chr(p))])


@cache
def _spaces() -> str:
    # Python's own whitespace, which is what trimming and a blank check strip.
    return _class_of([p for p in PLANE if chr(p).isspace()])


def text_pattern(field: StrictCharField) -> str:
    """The pattern a strict text field accepts, from the same rules that check it."""
    if field.pattern is not None:
        return f"^$|{field.pattern.pattern}" if field.allow_blank else field.pattern.pattern
    allowed = f"[^{_forbidden(field.multiline)}]"
    if field.allow_blank:
        return f"^{allowed}*$"
    if field.trim_whitespace or field.spaces_are_blank:
        visible = f"[^{_forbidden(field.multiline)}{_spaces()}]"
        return f"^{allowed}*{visible}{allowed}*$"
    return f"^{allowed}+$"


def exactly(*values: Any) -> dict[str, Any]:
    """A rule's "one of these values", hidden in an ``allOf`` from drf-spectacular's enum
    hook, which would turn it into a named enum component (and drop a null)."""
    return {"allOf": [{"enum": list(values)}]}


def header_pattern() -> str:
    """A header value: printable, and neither blank nor padded (a server strips padding)."""
    visible = f"[^{_forbidden(False)}{_spaces()}]"
    return f"^{visible}(?:[^{_forbidden(False)}]*{visible})?$"


class ErrorsAutoSchema(AutoSchema):
    """drf-spectacular's schema, plus the error responses each operation can give."""

    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        responses: dict[str, Any] = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        # An operation that can answer in plain text answers its errors in plain text too.
        success: dict[str, Any] = next((r for c, r in responses.items() if c.startswith("2")), {})
        plain = "text/plain" in success.get("content", {})
        for code in self._error_codes():
            error = self._error_response(code)
            if plain:
                error["content"]["text/plain"] = {"schema": {"type": "string"}}
            documented = responses.setdefault(code, error)
            # A view may describe an error in its own words; its body is still this one.
            documented.setdefault("content", error["content"])
            if code == "422" and documented is not error and self._honours_idempotency_key():
                # Its own 422 body, or a refused reuse of an Idempotency-Key.
                own = documented["content"]["application/json"]["schema"]
                if own != ERROR.ref:
                    documented["content"]["application/json"]["schema"] = {
                        "anyOf": [own, ERROR.ref]
                    }
        return responses

    def _map_basic_serializer(self, serializer: Any, direction: Any) -> dict[str, Any]:
        schema: dict[str, Any] = super()._map_basic_serializer(  # type: ignore[no-untyped-call]
            serializer, direction
        )
        if isinstance(serializer, StrictSerializer):
            # It refuses fields it does not know: the schema says so.
            schema["additionalProperties"] = False
            schema.update(copy.deepcopy(serializer.schema_rules))
        return schema

    def _get_request_for_media_type(
        self, serializer: Any, direction: Any = "request"
    ) -> tuple[Any, bool]:
        schema, required = super()._get_request_for_media_type(  # type: ignore[no-untyped-call]
            serializer, direction
        )
        # A body whose rules ask for some field is required, though no one field is.
        return schema, required or bool(getattr(serializer, "schema_rules", None))

    def _get_parameters(self) -> list[dict[str, Any]]:
        parameters: list[dict[str, Any]] = super()._get_parameters()
        for parameter in parameters:
            schema = parameter.get("schema", {})
            alternatives = schema.get("oneOf", [])
            if alternatives and re.match(alternatives[0].get("pattern", "^$"), ""):
                # Blank is allowed by the pattern already: a second "or blank" breaks oneOf.
                parameter["schema"] = schema = alternatives[0]
            free = schema.get("type") == "string" and "enum" not in schema
            if parameter["in"] == "query" and free:
                schema.setdefault("pattern", NO_NUL)
        if self.method in WRITES and self._honours_idempotency_key():
            parameters.append(self._idempotency_key())
        return parameters

    def _honours_idempotency_key(self) -> bool:
        return self._action_name() in getattr(self.view, "idempotent_writes", ())

    def _idempotency_key(self) -> dict[str, Any]:
        return {
            "in": "header",
            "name": IDEMPOTENCY_HEADER,
            "schema": {
                "type": "string",
                "minLength": 1,
                "maxLength": IDEMPOTENCY_KEY_MAX,
                "pattern": header_pattern(),
            },
            "description": "Your key for this write: a retry with the same key and body "
            "returns the first answer and writes nothing new; the same key with another body "
            "is refused (422).",
        }

    def _map_serializer_field(
        self, field: Any, direction: Any, bypass_extensions: bool = False
    ) -> dict[str, Any]:
        schema: dict[str, Any] = super()._map_serializer_field(  # type: ignore[no-untyped-call]
            field, direction, bypass_extensions
        )
        if direction == "request" and isinstance(field, StrictCharField):
            # One string schema: the pattern says whether blank is allowed.
            schema.update(schema.pop("oneOf", [{}])[0])
            schema["pattern"] = text_pattern(field)
            if not field.allow_blank:
                schema["minLength"] = 1
        if direction == "request" and getattr(field, "object_only", False):
            # A JSON field that takes only an object (the journal's intent).
            schema["type"] = "object"
        return schema

    def _error_codes(self) -> list[str]:
        codes: list[str] = []
        if self.get_auth():
            codes += ["401", "403", "429"]
        if self.method in WRITES or self._takes_query():
            codes.append("400")
        if self.method in WRITES and self.get_request_serializer() is not None:
            # Django refuses to read a body over its limit (ledger.api.errors).
            codes.append("413")
        if "{" in self.path:
            codes.append("404")
        refusals: dict[str, tuple[int, ...]] = getattr(self.view, "refusals", {})
        codes += [str(code) for code in refusals.get(self._action_name(), ())]
        return sorted(set(codes))

    def _action_name(self) -> str:
        action = getattr(self.view, "action", None)
        return str(action) if action else self.method.lower()

    def _takes_query(self) -> bool:
        return any(parameter["in"] == "query" for parameter in self._get_parameters())

    def _error_response(self, code: str) -> dict[str, Any]:
        self.registry.register_on_missing(ERROR)
        schema: dict[str, Any] = ERROR.ref
        if code == "400":
            self.registry.register_on_missing(VALIDATION_ERROR)
            schema = {"anyOf": [VALIDATION_ERROR.ref, ERROR.ref]}
        response: dict[str, Any] = {
            "description": DESCRIPTIONS[code],
            "content": {"application/json": {"schema": schema}},
        }
        if code == "429":
            response["headers"] = RETRY_AFTER
        return response
