"""The ledger of durable facts and commitments through the API."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, ClassVar

from django.db.models import QuerySet
from django.http import Http404, QueryDict
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ledger.actions.ledger_entries import (
    edit_ledger_entry,
    promote_ledger_entry,
    record_ledger_entry,
    supersede_ledger_entry,
    withdraw_ledger_entry,
)
from ledger.api.auth import agent_of
from ledger.api.fields import (
    FutureDateTimeField,
    RefField,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictSerializer,
)
from ledger.api.idempotency import idempotent
from ledger.api.serializers import (
    REASON_MAX,
    SlotKeyField,
    SourceInputSerializer,
    SourceSerializer,
    source_input,
)
from ledger.choices import LEDGER_KIND_READINGS
from ledger.models import Agent, LedgerEntry, LedgerEntryQuerySet, Run, Subject
from ledger.rules.ledger_entries import refuse_if_immutable

LIST_MAX = 500
STATUS_FILTERS = LedgerEntry.Status.values


class FactField(StrictCharField):
    """The fact exactly as sent: inner spacing, numbers and negatives are never touched."""

    spaces_are_blank = True

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            max_length=LedgerEntry.FACT_MAX, multiline=True, trim_whitespace=False, **kwargs
        )

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if not value.strip():
            raise serializers.ValidationError("This field may not be blank.")
        return value


class ReasonField(StrictCharField):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_length=REASON_MAX, multiline=True, **kwargs)


class LedgerEntryWriteSerializer(StrictSerializer):
    fact = FactField(help_text="The fact verbatim, numbers and negatives intact.")
    kind = StrictChoiceField(choices=LedgerEntry.Kind.choices)
    # A field named source: see ledger.api.serializers.MemoryWriteSerializer.
    source = SourceInputSerializer()  # type: ignore[assignment]
    run = RefField(required=False)
    key = SlotKeyField(required=False, allow_blank=True)
    expires_at = FutureDateTimeField(required=False, allow_null=True)
    immutable = StrictBooleanField(required=False, default=False)


class SupersedeSerializer(LedgerEntryWriteSerializer):
    reason = ReasonField()
    immutable = StrictBooleanField(required=False)
    key = SlotKeyField(required=False, allow_blank=True)


class PromoteSerializer(StrictSerializer):
    # A field named source: see ledger.api.serializers.MemoryWriteSerializer.
    source = SourceInputSerializer(  # type: ignore[assignment]
        help_text="Where the person agreed: their message."
    )
    reason = ReasonField(required=False, allow_blank=True)


class WithdrawSerializer(StrictSerializer):
    reason = ReasonField()


class EditSerializer(StrictSerializer):
    fact = FactField(required=False)
    key = SlotKeyField(required=False, allow_blank=True)
    expires_at = FutureDateTimeField(required=False, allow_null=True)
    reason = ReasonField()

    schema_rules: ClassVar[dict[str, Any]] = {
        "anyOf": [{"required": [name]} for name in ("fact", "key", "expires_at")]
    }

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not {"fact", "key", "expires_at"} & set(attrs):
            raise serializers.ValidationError(
                {"non_field_errors": ["Send at least one of fact, key or expires_at."]}
            )
        return attrs


class LedgerEntrySerializer(serializers.ModelSerializer[LedgerEntry]):
    subject = serializers.SlugRelatedField[Subject](slug_field="ref", read_only=True)
    run = serializers.SlugRelatedField[Run](slug_field="ref", read_only=True, allow_null=True)
    agent = serializers.SlugRelatedField[Agent](slug_field="name", read_only=True, allow_null=True)
    # Fields named source and label: see ledger.api.serializers.MemoryWriteSerializer.
    source = SourceSerializer(read_only=True, allow_null=True)  # type: ignore[assignment]
    promotion_source = SourceSerializer(read_only=True, allow_null=True)
    supersedes = serializers.PrimaryKeyRelatedField[LedgerEntry](read_only=True, allow_null=True)
    superseded_by = serializers.SerializerMethodField()
    status = serializers.SerializerMethodField()
    in_force = serializers.SerializerMethodField()
    agreed = serializers.SerializerMethodField()
    label = serializers.SerializerMethodField()  # type: ignore[assignment]
    last_true_at = serializers.SerializerMethodField()

    class Meta:
        model = LedgerEntry
        fields = [
            "id",
            "subject",
            "kind",
            "label",
            "agreed",
            "key",
            "fact",
            "status",
            "in_force",
            "immutable",
            "expires_at",
            "last_true_at",
            "recorded_at",
            "version",
            "agent",
            "run",
            "source",
            "promotion_source",
            "supersedes",
            "superseded_by",
        ]

    def _now(self) -> datetime:
        return self.context.get("now") or timezone.now()

    def get_status(self, entry: LedgerEntry) -> str:
        return entry.status_at(self._now())

    def get_in_force(self, entry: LedgerEntry) -> bool:
        return entry.status_at(self._now()) == LedgerEntry.Status.ACTIVE

    def get_agreed(self, entry: LedgerEntry) -> bool:
        return entry.kind == LedgerEntry.Kind.COMMITMENT

    def get_label(self, entry: LedgerEntry) -> str:
        return LEDGER_KIND_READINGS[LedgerEntry.Kind(entry.kind)]

    def get_last_true_at(self, entry: LedgerEntry) -> str | None:
        if entry.status_at(self._now()) != LedgerEntry.Status.EXPIRED or entry.expires_at is None:
            return None
        return serializers.DateTimeField().to_representation(entry.expires_at)

    def get_superseded_by(self, entry: LedgerEntry) -> str | None:
        successor = getattr(entry, "superseded_by", None)
        return str(successor.pk) if successor else None


def contradiction_data(group: list[LedgerEntry]) -> dict[str, Any]:
    return {
        "subject": group[0].subject.ref,
        "key": group[0].key,
        "detail": f"{len(group)} established facts in force disagree on '{group[0].key}'; "
        "nothing picks a winner: supersede or withdraw the wrong one.",
        "entries": [
            {
                "id": str(e.pk),
                "fact": e.fact,
                "source": {"kind": e.source.kind, "ref": e.source.ref},
                "recorded_at": serializers.DateTimeField().to_representation(e.recorded_at),
            }
            for e in group
        ],
    }


def contradiction_for(entry: LedgerEntry) -> dict[str, Any] | None:
    if entry.kind != LedgerEntry.Kind.ESTABLISHED or not entry.key:
        return None
    groups = (
        LedgerEntry.objects.filter(subject=entry.subject, key=entry.key)
        .select_related("source")
        .contradictions()
    )
    return contradiction_data(groups[0]) if groups else None


def entry_queryset() -> LedgerEntryQuerySet:
    return LedgerEntry.objects.select_related(
        "subject",
        "run",
        "agent",
        "source__run",
        "promotion_source__run",
        "supersedes",
        "superseded_by",
    )


def _flag(params: QueryDict, name: str, errors: dict[str, list[str]]) -> bool:
    value = params.get(name)
    if value is None:
        return False
    if value.lower() in ("1", "true", "yes"):
        return True
    if value.lower() in ("0", "false", "no"):
        return False
    errors[name] = ["Use 1 or 0."]
    return False


LIST_PARAMETERS = [
    OpenApiParameter("active", bool, description="1: only the entries in force now."),
    OpenApiParameter(
        "stale", bool, description="1: only expired entries, with last_true_at (not with active)."
    ),
    OpenApiParameter("kind", str, enum=LedgerEntry.Kind.values),
    OpenApiParameter("status", str, enum=STATUS_FILTERS),
    OpenApiParameter("key", str),
]


class SubjectLedgerView(APIView):
    """GET the ledger of a subject; POST a new entry about it."""

    idempotent_writes = ("post",)
    refusals = {"post": (409, 422, 423)}

    def _subject(self, ref: str) -> Subject:
        subject = Subject.objects.filter(ref=ref).first()
        if subject is None:
            raise Http404
        return subject

    @extend_schema(
        parameters=LIST_PARAMETERS,
        responses={
            200: inline_serializer(
                "SubjectLedger",
                {
                    "subject": serializers.CharField(),
                    "entries": LedgerEntrySerializer(many=True),
                    "truncated": serializers.BooleanField(),
                    "conflicts": serializers.ListField(child=serializers.DictField()),
                },
            )
        },
    )
    def get(self, request: Request, ref: str) -> Response:
        subject = self._subject(ref)
        now = timezone.now()
        params = request.query_params
        errors: dict[str, list[str]] = {}
        active = _flag(params, "active", errors)
        stale = _flag(params, "stale", errors)
        if "kind" in params and params["kind"] not in LedgerEntry.Kind.values:
            errors["kind"] = [f"Not one of: {', '.join(LedgerEntry.Kind.values)}."]
        if "status" in params and params["status"] not in STATUS_FILTERS:
            errors["status"] = [f"Not one of: {', '.join(STATUS_FILTERS)}."]
        if active and stale:
            errors["stale"] = ["An entry in force is never stale: ask for one or the other."]
        if errors:
            return Response(errors, status=status.HTTP_400_BAD_REQUEST)

        entries = entry_queryset().filter(subject=subject)
        wanted = params.get("status")
        if active or wanted == LedgerEntry.Status.ACTIVE:
            entries = entries.in_force(now)
        elif stale or wanted == LedgerEntry.Status.EXPIRED:
            entries = entries.stale(now)
        elif wanted:
            entries = entries.filter(status=wanted)
        if "kind" in params:
            entries = entries.filter(kind=params["kind"])
        if "key" in params:
            entries = entries.filter(key=params["key"])
        rows = list(entries[: LIST_MAX + 1])
        conflicts = (
            LedgerEntry.objects.filter(subject=subject).select_related("source").contradictions(now)
        )
        return Response(
            {
                "subject": subject.ref,
                "entries": LedgerEntrySerializer(
                    rows[:LIST_MAX], many=True, context={"now": now}
                ).data,
                "truncated": len(rows) > LIST_MAX,
                "conflicts": [contradiction_data(g) for g in conflicts],
            }
        )

    @extend_schema(
        request=LedgerEntryWriteSerializer,
        responses={
            201: inline_serializer(
                "LedgerEntryRecorded",
                {
                    "entry": LedgerEntrySerializer(),
                    "conflict": serializers.DictField(allow_null=True),
                },
            )
        },
    )
    def post(self, request: Request, ref: str) -> Response:
        subject = self._subject(ref)

        def write() -> tuple[Response, Subject | None]:
            incoming = LedgerEntryWriteSerializer(data=request.data)
            if not incoming.is_valid():
                return Response(incoming.errors, status=status.HTTP_400_BAD_REQUEST), None
            data = incoming.validated_data
            entry = record_ledger_entry(
                subject=subject,
                agent=agent_of(request),
                fact=data["fact"],
                kind=data["kind"],
                source=source_input(data["source"]),
                run_ref=data.get("run"),
                key=data.get("key", ""),
                expires_at=data.get("expires_at"),
                immutable=data["immutable"],
            )
            entry = entry_queryset().get(pk=entry.pk)
            body = {
                "entry": LedgerEntrySerializer(entry).data,
                "conflict": contradiction_for(entry),
            }
            return Response(body, status=status.HTTP_201_CREATED), subject

        return idempotent(request, write)


# Its rows are simple-history's generated models, which are untyped.
class LedgerHistorySerializer(serializers.Serializer[Any]):
    version = serializers.IntegerField()
    kind = serializers.CharField()
    status = serializers.CharField()
    fact = serializers.CharField()
    key = serializers.CharField()
    expires_at = serializers.DateTimeField(allow_null=True)
    changed_at = serializers.DateTimeField(source="history_date")
    actor = serializers.CharField(source="history_actor")
    reason = serializers.CharField(source="history_change_reason", allow_null=True)


class LedgerEntryViewSet(mixins.RetrieveModelMixin, viewsets.GenericViewSet[LedgerEntry]):
    """One entry: read it, its history; promote, supersede, withdraw or edit it."""

    serializer_class = LedgerEntrySerializer
    http_method_names = ["get", "post", "patch", "head", "options"]
    idempotent_writes = ("promote", "supersede", "withdraw", "partial_update")
    refusals = dict.fromkeys(
        ("promote", "supersede", "withdraw", "partial_update"), (409, 422, 423)
    )

    def get_queryset(self) -> QuerySet[LedgerEntry]:
        return entry_queryset()

    def get_object(self) -> LedgerEntry:
        try:
            pk = uuid.UUID(str(self.kwargs["pk"]))
        except ValueError:
            raise Http404 from None
        entry = self.get_queryset().filter(pk=pk).first()
        if entry is None:
            raise Http404
        return entry

    def _fresh(self, entry: LedgerEntry, code: int = status.HTTP_200_OK) -> Response:
        return Response(LedgerEntrySerializer(self.get_queryset().get(pk=entry.pk)).data, code)

    @extend_schema(responses={200: LedgerHistorySerializer(many=True)})
    @action(detail=True, methods=["get"])
    def history(self, request: Request, pk: str) -> Response:
        entry = self.get_object()
        rows = entry.history.order_by("-history_date", "-history_id")[:LIST_MAX]
        return Response(LedgerHistorySerializer(rows, many=True).data)

    @extend_schema(request=PromoteSerializer, responses={200: LedgerEntrySerializer})
    @action(detail=True, methods=["post"])
    def promote(self, request: Request, pk: str) -> Response:
        entry = self.get_object()

        def write() -> tuple[Response, Subject | None]:
            incoming = PromoteSerializer(data=request.data)
            if not incoming.is_valid():
                return Response(incoming.errors, status=status.HTTP_400_BAD_REQUEST), None
            data = incoming.validated_data
            promoted = promote_ledger_entry(
                entry=entry,
                agent=agent_of(request),
                source=source_input(data["source"]),
                reason=data.get("reason", ""),
            )
            return self._fresh(promoted), entry.subject

        return idempotent(request, write)

    @extend_schema(request=SupersedeSerializer, responses={201: LedgerEntrySerializer})
    @action(detail=True, methods=["post"])
    def supersede(self, request: Request, pk: str) -> Response:
        entry = self.get_object()

        def write() -> tuple[Response, Subject | None]:
            incoming = SupersedeSerializer(data=request.data)
            if not incoming.is_valid():
                return Response(incoming.errors, status=status.HTTP_400_BAD_REQUEST), None
            data = incoming.validated_data
            new = supersede_ledger_entry(
                entry=entry,
                agent=agent_of(request),
                fact=data["fact"],
                kind=data["kind"],
                source=source_input(data["source"]),
                reason=data["reason"],
                key=data.get("key"),
                run_ref=data.get("run"),
                expires_at=data.get("expires_at"),
                immutable=data.get("immutable"),
            )
            return self._fresh(new, status.HTTP_201_CREATED), entry.subject

        return idempotent(request, write)

    @extend_schema(request=WithdrawSerializer, responses={200: LedgerEntrySerializer})
    @action(detail=True, methods=["post"])
    def withdraw(self, request: Request, pk: str) -> Response:
        entry = self.get_object()

        def write() -> tuple[Response, Subject | None]:
            incoming = WithdrawSerializer(data=request.data)
            if not incoming.is_valid():
                return Response(incoming.errors, status=status.HTTP_400_BAD_REQUEST), None
            withdrawn = withdraw_ledger_entry(
                entry=entry, agent=agent_of(request), reason=incoming.validated_data["reason"]
            )
            return self._fresh(withdrawn), entry.subject

        return idempotent(request, write)

    @extend_schema(request=EditSerializer, responses={200: LedgerEntrySerializer})
    def partial_update(self, request: Request, pk: str) -> Response:
        """Edit a mutable entry. An immutable one is refused: supersede it instead."""
        entry = self.get_object()
        refuse_if_immutable(entry, "edited")

        def write() -> tuple[Response, Subject | None]:
            incoming = EditSerializer(data=request.data)
            if not incoming.is_valid():
                return Response(incoming.errors, status=status.HTTP_400_BAD_REQUEST), None
            data = incoming.validated_data
            edited = edit_ledger_entry(
                entry=entry,
                agent=agent_of(request),
                reason=data["reason"],
                fact=data.get("fact"),
                key=data.get("key"),
                expires_at=data.get("expires_at"),
                clear_expiry="expires_at" in data and data["expires_at"] is None,
            )
            return self._fresh(edited), entry.subject

        return idempotent(request, write)
