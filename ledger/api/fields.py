"""Strict input fields: JSON types are checked, never coerced (``123`` is not a string)."""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime
from typing import Any

from django.utils import timezone
from rest_framework import serializers

from ledger.policy import forbidden_character, forbidden_in_excerpt

REF_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,99}$")
REF_HELP = "1–100 characters: letters, digits and _ . : - (starting with a letter or digit)."


class StrictCharField(serializers.CharField):
    """A string that must arrive as a JSON string and hold no invisible control characters."""

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

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError(
                    {name[:50]: ["Unknown field."] for name in unknown[:10]}
                )
        return super().to_internal_value(data)


JSON_MAX_DEPTH = 20


def json_problem(value: Any, depth: int = 0, max_depth: int = JSON_MAX_DEPTH) -> str | None:
    """What makes a JSON value unfit to store, or None.

    PostgreSQL refuses NUL and lone surrogates in JSON text, and a value nested past any
    sensible depth is refused before anything recurses into it.
    """
    if depth > max_depth:
        return f"Nested deeper than {max_depth} levels."
    if isinstance(value, dict):
        for key, item in value.items():
            problem = json_problem(key, depth + 1, max_depth) or json_problem(
                item, depth + 1, max_depth
            )
            if problem:
                return problem
    elif isinstance(value, list):
        for item in value:
            problem = json_problem(item, depth + 1, max_depth)
            if problem:
                return problem
    elif isinstance(value, str) and any(
        ch == "\x00" or unicodedata.category(ch) == "Cs" for ch in value
    ):
        return "Must not contain a NUL character or a lone surrogate."
    return None
