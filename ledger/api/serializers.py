"""Input serializers check a request's shape; output serializers say what a row looks like.

Input serializers never save: the API view hands their data to a write function.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rest_framework import serializers

from ledger.actions.gate import MemoryInput
from ledger.actions.sources import SourceInput
from ledger.api.fields import (
    FutureDateTimeField,
    RefField,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictIntegerField,
    StrictSerializer,
)
from ledger.api.openapi import exactly
from ledger.models import Agent, Conflict, Memory, Run, Source, Subject
from ledger.rules.text import KEY_PATTERN

EXCERPT_MAX = 2000
REASON_MAX = 10_000


class SourceInputSerializer(StrictSerializer):
    kind = StrictChoiceField(choices=Source.Kind.values)
    ref = StrictCharField(max_length=200)
    run = RefField(required=False)
    turn = StrictIntegerField(required=False, min_value=0, max_value=1_000_000)
    excerpt = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=EXCERPT_MAX,
        multiline=True,
        trim_whitespace=False,
    )


def source_input(data: dict[str, Any]) -> SourceInput:
    return SourceInput(
        kind=data["kind"],
        ref=data["ref"],
        run=data.get("run"),
        turn=data.get("turn"),
        excerpt=data.get("excerpt", ""),
    )


class StatementField(StrictCharField):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_length=Memory.STATEMENT_MAX, **kwargs)


class SlotKeyField(StrictCharField):
    pattern = KEY_PATTERN

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_length=100, **kwargs)

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if value and not KEY_PATTERN.match(value):
            raise serializers.ValidationError(
                "A key is lower-case letters, digits and _ . - (e.g. 'contact.channel')."
            )
        return value


class MemoryWriteSerializer(StrictSerializer):
    subject = RefField()
    kind = StrictChoiceField(choices=Memory.Kind.values)
    key = SlotKeyField(required=False, allow_blank=True)
    statement = StatementField()
    basis = StrictChoiceField(choices=Memory.Basis.values)
    # The stubs take a field named like a Field attribute (source, label) for that
    # attribute; DRF's metaclass moves declared fields off the class, so nothing clashes.
    # https://github.com/typeddjango/djangorestframework-stubs/issues/158
    source = SourceInputSerializer()  # type: ignore[assignment]
    expires_at = FutureDateTimeField(required=False, allow_null=True)
    permanent = StrictBooleanField(required=False, default=False)

    schema_rules: ClassVar[dict[str, Any]] = {
        "anyOf": [
            # Not permanent: a time, or the policy's default when left out.
            {"properties": {"permanent": exactly(False), "expires_at": {"type": "string"}}},
            # Permanent: only what the person stated, and with no expiry.
            {
                "required": ["permanent"],
                "properties": {
                    "permanent": exactly(True),
                    "basis": exactly(Memory.Basis.STATED.value),
                    "expires_at": exactly(None),
                },
            },
        ]
    }

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        permanent = attrs.get("permanent", False)
        has_expiry_field = "expires_at" in attrs
        if permanent and attrs["basis"] != Memory.Basis.STATED:
            raise serializers.ValidationError(
                {"permanent": ["Only a stated memory can be permanent; a guess always expires."]}
            )
        if permanent and attrs.get("expires_at") is not None:
            raise serializers.ValidationError(
                {"expires_at": ["A permanent memory has no expiry: send null or leave it out."]}
            )
        if has_expiry_field and attrs["expires_at"] is None and not permanent:
            raise serializers.ValidationError(
                {"expires_at": ['null is only allowed with "permanent": true.']}
            )
        return attrs

    def to_input(self) -> MemoryInput:
        data = self.validated_data
        permanent = data.get("permanent", False)
        return MemoryInput(
            subject=data["subject"],
            kind=data["kind"],
            key=data.get("key", ""),
            statement=data["statement"],
            basis=data["basis"],
            source=source_input(data["source"]),
            expires_at=data.get("expires_at"),
            expires_omitted="expires_at" not in data and not permanent,
            permanent=permanent,
        )


class CorrectionSerializer(StrictSerializer):
    statement = StatementField()
    reason = StrictCharField(max_length=REASON_MAX, multiline=True)
    # A field named source: see MemoryWriteSerializer.
    source = SourceInputSerializer(required=False)  # type: ignore[assignment]


class RetractSerializer(StrictSerializer):
    reason = StrictCharField(max_length=REASON_MAX, multiline=True)


class SourceSerializer(serializers.ModelSerializer[Source]):
    run = serializers.SlugRelatedField[Run](slug_field="ref", read_only=True, allow_null=True)

    class Meta:
        model = Source
        fields = ["kind", "ref", "run", "turn", "excerpt", "received_at"]


class MemorySerializer(serializers.ModelSerializer[Memory]):
    subject = serializers.SlugRelatedField[Subject](slug_field="ref", read_only=True)
    run = serializers.SlugRelatedField[Run](slug_field="ref", read_only=True, allow_null=True)
    agent = serializers.SlugRelatedField[Agent](slug_field="name", read_only=True, allow_null=True)
    sources = SourceSerializer(many=True, read_only=True)
    supersedes = serializers.PrimaryKeyRelatedField[Memory](read_only=True, allow_null=True)
    superseded_by = serializers.SerializerMethodField()
    open_conflicts = serializers.SerializerMethodField()

    class Meta:
        model = Memory
        fields = [
            "id",
            "subject",
            "kind",
            "key",
            "statement",
            "basis",
            "status",
            "withheld",
            "stated_by",
            "written_at",
            "confirmed_at",
            "expires_at",
            "review_at",
            "version",
            "agent",
            "run",
            "supersedes",
            "superseded_by",
            "sources",
            "open_conflicts",
        ]
        # The person's "don't use it": shown to agents, changed only on the person's page.
        read_only_fields = ["withheld"]
        extra_kwargs = {
            "withheld": {
                "help_text": "The person asked that it not be used: it is kept, but recall "
                "never serves it, and it must not be used."
            }
        }

    def get_superseded_by(self, memory: Memory) -> str | None:
        successor = getattr(memory, "superseded_by", None)
        return str(successor.pk) if successor else None

    def get_open_conflicts(self, memory: Memory) -> list[int]:
        return [c.pk for c in memory.conflicts.all() if c.status == Conflict.Status.OPEN]


class ConflictSerializer(serializers.ModelSerializer[Conflict]):
    subject = serializers.SlugRelatedField[Subject](slug_field="ref", read_only=True)
    statements = serializers.SerializerMethodField()

    class Meta:
        model = Conflict
        fields = [
            "id",
            "subject",
            "key",
            "possible",
            "status",
            "opened_at",
            "resolved_at",
            "statements",
        ]

    def get_statements(self, conflict: Conflict) -> list[dict[str, Any]]:
        return [
            {
                "memory": str(m.pk),
                "statement": m.statement,
                "basis": m.basis,
                "status": m.status,
                # The person's "true, but don't use it": shown so an agent knows not to.
                "withheld": m.withheld,
            }
            for m in conflict.memories.all()
        ]


class SubjectSerializer(serializers.ModelSerializer[Subject]):
    counts = serializers.SerializerMethodField()
    open_conflicts = serializers.SerializerMethodField()

    class Meta:
        model = Subject
        fields = ["ref", "display_name", "memory_paused", "created_at", "counts", "open_conflicts"]

    # Its subject comes from ``SubjectQuerySet.with_status_counts``: the counts, and whether
    # there is any open conflict to list, are read with it.

    def get_counts(self, subject: Subject) -> dict[str, int]:
        return {status: getattr(subject, f"count_{status}") for status in Memory.Status.values}

    def get_open_conflicts(self, subject: Subject) -> list[dict[str, Any]]:
        if not subject.in_conflict:  # type: ignore[attr-defined]
            return []
        conflicts = subject.conflicts.open().prefetch_related("memories")
        # many=True makes a ListSerializer, whose data is a list; the stubs cannot say so.
        # https://github.com/typeddjango/djangorestframework-stubs/issues/827
        return ConflictSerializer(conflicts, many=True).data  # type: ignore[return-value]


# Its rows are simple-history's generated models, which are untyped.
class HistoryEntrySerializer(serializers.Serializer[Any]):
    version = serializers.IntegerField()
    status = serializers.CharField()
    statement = serializers.CharField()
    basis = serializers.CharField()
    expires_at = serializers.DateTimeField(allow_null=True)
    withheld = serializers.BooleanField()
    changed_at = serializers.DateTimeField(source="history_date")
    change = serializers.SerializerMethodField()
    actor = serializers.CharField(source="history_actor")
    reason = serializers.CharField(source="history_change_reason", allow_null=True)
    changed_fields = serializers.SerializerMethodField()

    def get_change(self, row: Any) -> str:
        return {"+": "created", "~": "changed", "-": "deleted"}[row.history_type]

    def get_changed_fields(self, row: Any) -> list[str]:
        previous = row.prev_record
        if previous is None:
            return []
        return sorted(c.field for c in row.diff_against(previous).changes)
