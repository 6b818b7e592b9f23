"""Strict input fields: JSON types are checked, never coerced (``123`` is not a string)."""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime
from typing import Any, ClassVar

from django.utils import timezone
from rest_framework import serializers

from ledger.rules.text import REF_HELP, REF_PATTERN, forbidden_character, forbidden_in_excerpt


class StrictCharField(serializers.CharField):
    """A string that must arrive as a JSON string and hold no invisible control characters."""

    # The whole-value pattern a subclass also checks, published in the OpenAPI schema.
    pattern: re.Pattern[str] | None = None
    # Whether only spaces count as blank even where the value is kept untrimmed.
    spaces_are_blank = False

    def __init__(self, *, multiline: bool = False, **kwargs: Any) -> None:
        self.multiline = multiline
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            raise serializers.ValidationError(f"Must be a string, not {type(data).__name__}.")
        if "\x00" in data:
            raise serializers.ValidationError("Must not contain a NUL character.")
        check = forbidden_in_excerpt if self.multiline else forbidden_character
        bad = check(data)
        if bad:
            raise serializers.ValidationError(f"Must not contain the control character {bad}.")
        return super().to_internal_value(data)


class RefField(StrictCharField):
    pattern = REF_PATTERN

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", 100)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if not REF_PATTERN.match(value):
            raise serializers.ValidationError(f"Not a valid reference: {REF_HELP}")
        return value


class StrictIntegerField(serializers.IntegerField):
    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise serializers.ValidationError(f"Must be an integer, not {type(data).__name__}.")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            raise serializers.ValidationError("Must be true or false.")
        return data


class StrictChoiceField(serializers.ChoiceField):
    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            raise serializers.ValidationError(f"Must be a string, not {type(data).__name__}.")
        if data not in self.choices:
            allowed = ", ".join(str(c) for c in self.choices)
            raise serializers.ValidationError(f"'{data[:50]}' is not one of: {allowed}.")
        return data


class FutureDateTimeField(serializers.DateTimeField):
    """An ISO 8601 time with an offset, later than now."""

    def to_internal_value(self, value: Any) -> datetime:
        if not isinstance(value, str):
            raise serializers.ValidationError("Must be an ISO 8601 date-time string.")
        if len(value) > 40:
            raise serializers.ValidationError("Too long for an ISO 8601 date-time.")
        parsed = super().to_internal_value(value)
        if timezone.is_naive(parsed) or not _has_offset(value):
            raise serializers.ValidationError("Include a UTC offset, e.g. 2027-03-04T00:00:00Z.")
        if parsed <= timezone.now():
            raise serializers.ValidationError("Must lie in the future.")
        return parsed


def _has_offset(value: str) -> bool:
    return value.endswith(("Z", "z")) or bool(re.search(r"[+-]\d{2}:?\d{2}$", value))


# Input only: it is never given an instance, so there is no instance type to name.
class StrictSerializer(serializers.Serializer[Any]):
    """Refuses fields it does not know, so a typo is an error rather than silently ignored."""

    # The rules across fields that ``validate`` checks, as JSON Schema for the OpenAPI schema.
    schema_rules: ClassVar[dict[str, Any]] = {}

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError(
                    {name[:50]: ["Unknown field."] for name in unknown[:10]}
                )
        return super().to_internal_value(data)


JSON_MAX_DEPTH = 20


def json_problem(
    value: Any, depth: int = 0, max_depth: int = JSON_MAX_DEPTH, path: str = ""
) -> str | None:
    """What makes a JSON value unfit to store, or None, saying where (``steps[2].note``).

    PostgreSQL refuses NUL and lone surrogates in JSON text; invisible and bidirectional
    characters, in a key or a string at any depth, would hide or reorder what people read
    on a page and a model reads in a prompt (line breaks and tabs stay: tools' output has
    them). A value nested past any sensible depth is refused before anything recurses.
    """
    if depth > max_depth:
        return f"Nested deeper than {max_depth} levels."
    if isinstance(value, dict):
        for key, item in value.items():
            problem = _text_problem(str(key), f"a key in {path or 'the top level'}", lines=False)
            problem = problem or json_problem(item, depth + 1, max_depth, _step(path, str(key)))
            if problem:
                return problem
    elif isinstance(value, list):
        for i, item in enumerate(value):
            problem = json_problem(item, depth + 1, max_depth, f"{path}[{i}]")
            if problem:
                return problem
    elif isinstance(value, str):
        return _text_problem(value, path or "the top level", lines=True)
    return None


def _step(path: str, key: str) -> str:
    return f"{path}.{key[:50]}" if path else key[:50]


def _text_problem(text: str, where: str, *, lines: bool) -> str | None:
    if any(ch == "\x00" or unicodedata.category(ch) == "Cs" for ch in text):
        return f"Must not contain a NUL character or a lone surrogate (at {where})."
    bad = forbidden_in_excerpt(text) if lines else forbidden_character(text)
    if bad:
        return f"Must not contain the invisible character {bad} (at {where})."
    return None
