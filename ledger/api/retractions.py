"""Batch retractions for staff tooling: only a key holding the ``staff`` scope may call them.

The dry run answers what a batch would take; the real one deletes it all in one batch,
as the calling agent (``agent:<name>`` in every history row). An unknown agent or run is
not an error: it simply selects nothing.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, ClassVar

from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ledger.actions.retractions import (
    Preview,
    Selection,
    UndoReport,
    preview_retraction,
    retract_batch,
    undo_batch,
)
from ledger.actors import Actor
from ledger.api.auth import agent_of
from ledger.api.fields import StrictBooleanField, StrictCharField, StrictSerializer
from ledger.api.idempotency import PREVIEW, About, idempotent
from ledger.api.openapi import exactly
from ledger.api.serializers import REASON_MAX
from ledger.models import Memory, RetractionBatch

OFFSET = re.compile(r"(?:[Zz]|[+-]\d{2}:?\d{2})$")
SELECTORS = ("source_ref", "run", "agent", "written_after", "written_before")


class OffsetDateTimeField(serializers.DateTimeField):
    """An ISO 8601 time that says its offset: a window must not shift with a server's zone."""

    def to_internal_value(self, value: Any) -> datetime:
        if not isinstance(value, str) or len(value) > 40:
            raise serializers.ValidationError("Must be an ISO 8601 date-time string.")
        if not OFFSET.search(value):
            raise serializers.ValidationError("Include a UTC offset, e.g. 2027-03-04T00:00:00Z.")
        return super().to_internal_value(value)


class RetractionRequestSerializer(StrictSerializer):
    source_ref = StrictCharField(required=False, max_length=200)
    run = StrictCharField(required=False, max_length=100)
    agent = StrictCharField(required=False, max_length=100)
    written_after = OffsetDateTimeField(required=False)
    written_before = OffsetDateTimeField(required=False, help_text="Later than written_after.")
    reason = StrictCharField(required=False, max_length=REASON_MAX, multiline=True)
    dry_run = StrictBooleanField(required=False, default=False)
    expected = serializers.IntegerField(
        required=False,
        min_value=0,
        help_text="The count the dry run showed: a selection that matches another number "
        "now is refused (409 selection_changed) instead of taking what nobody previewed.",
    )

    schema_rules: ClassVar[dict[str, Any]] = {
        "allOf": [
            # A reason, unless it is only a dry run.
            {
                "anyOf": [
                    {"required": ["dry_run"], "properties": {"dry_run": exactly(True)}},
                    {"required": ["reason"]},
                ]
            },
            # Something to select by: retracting every memory is never what anyone meant.
            {"anyOf": [{"required": [name]} for name in SELECTORS]},
        ]
    }

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs.get("dry_run") and not attrs.get("reason", "").strip():
            raise serializers.ValidationError(
                {"reason": ["Say why these memories are deleted (not needed for a dry run)."]}
            )
        return attrs

    def selection(self) -> Selection:
        return Selection.from_data(self.validated_data)


class UndoRequestSerializer(StrictSerializer):
    reason = StrictCharField(max_length=REASON_MAX, multiline=True)


class PreviewMemorySerializer(serializers.Serializer[Memory]):
    id = serializers.UUIDField()
    subject = serializers.CharField(source="subject.ref")
    statement = serializers.CharField()
    status = serializers.CharField()
    recalls = serializers.IntegerField()


class SubjectCountSerializer(serializers.Serializer[Any]):
    ref = serializers.CharField()
    memories = serializers.IntegerField()


class PreviewSerializer(serializers.Serializer[Preview]):
    dry_run = serializers.SerializerMethodField()
    selection = serializers.SerializerMethodField()
    memories = serializers.IntegerField(help_text="Exactly how many memories would be deleted.")
    subjects = serializers.IntegerField()
    recalls = serializers.IntegerField(help_text="Times agents were given these memories.")
    by_subject = SubjectCountSerializer(many=True)
    listed = PreviewMemorySerializer(many=True, help_text="The first 50, oldest first.")

    def get_dry_run(self, preview: Preview) -> bool:
        return True

    def get_selection(self, preview: Preview) -> dict[str, str]:
        return preview.selection.as_json()


class BatchSerializer(serializers.ModelSerializer[RetractionBatch]):
    memories = serializers.SerializerMethodField()
    count = serializers.SerializerMethodField()
    links = serializers.SerializerMethodField()

    class Meta:
        model = RetractionBatch
        fields = [
            "id",
            "selection",
            "reason",
            "retracted_by",
            "retracted_at",
            "undone_by",
            "undone_at",
            "count",
            "memories",
            "links",
        ]

    def get_memories(self, batch: RetractionBatch) -> list[str]:
        return [str(pk) for pk in batch.items.order_by("id").values_list("memory_id", flat=True)]

    def get_count(self, batch: RetractionBatch) -> int:
        return batch.items.count()

    def get_links(self, batch: RetractionBatch) -> dict[str, str]:
        return {
            "self": reverse("api-retraction", args=[batch.pk]),
            "undo": reverse("api-retraction-undo", args=[batch.pk]),
            "page": reverse("retraction", args=[batch.pk]),
        }


class UndoMemorySerializer(serializers.Serializer[Memory]):
    id = serializers.UUIDField()
    subject = serializers.CharField(source="subject.ref")
    status = serializers.CharField()
    version = serializers.IntegerField()


class UndoReportSerializer(serializers.Serializer[UndoReport]):
    batch = BatchSerializer()
    restored = UndoMemorySerializer(many=True)
    left_alone = UndoMemorySerializer(
        many=True, help_text="Changed since the batch, so left as they are now."
    )


class StaffOnly(APIView):
    required_scope = "staff"


class RetractionsView(StaffOnly):
    idempotent_writes = ("post",)
    refusals = {"post": (409, 422, 423)}

    @extend_schema(
        request=RetractionRequestSerializer,
        responses={200: PreviewSerializer, 201: BatchSerializer},
    )
    def post(self, request: Request) -> Response:
        """Select memories by source, run, agent and/or time window: preview the selection
        (``"dry_run": true``) or delete it all in one batch with a reason."""

        def write() -> tuple[Response, About]:
            incoming = RetractionRequestSerializer(data=request.data)
            if not incoming.is_valid():
                return Response(incoming.errors, status=status.HTTP_400_BAD_REQUEST), None
            selection = incoming.selection()
            if incoming.validated_data["dry_run"]:
                preview = preview_retraction(selection)
                return Response(PreviewSerializer(preview).data), PREVIEW
            batch = retract_batch(
                selection=selection,
                actor=Actor.for_agent(agent_of(request)),
                reason=incoming.validated_data["reason"],
                expected=incoming.validated_data.get("expected"),
            )
            answer = Response(BatchSerializer(batch).data, status=status.HTTP_201_CREATED)
            return answer, list(batch.subjects())

        return idempotent(request, write)


class RetractionView(StaffOnly):
    @extend_schema(responses={200: BatchSerializer})
    def get(self, request: Request, pk: str) -> Response:
        """One batch: what chose it, who, when, why, its memories, and whether it was undone."""
        return Response(BatchSerializer(get_object_or_404(RetractionBatch, pk=pk)).data)


class RetractionUndoView(StaffOnly):
    idempotent_writes = ("post",)
    refusals = {"post": (409, 422, 423)}

    @extend_schema(request=UndoRequestSerializer, responses={200: UndoReportSerializer})
    def post(self, request: Request, pk: str) -> Response:
        """Undo a batch as one: memories still as it left them come back; the ones changed
        since are listed and left alone. A second undo is refused (409)."""
        batch = get_object_or_404(RetractionBatch, pk=pk)

        def write() -> tuple[Response, About]:
            incoming = UndoRequestSerializer(data=request.data)
            if not incoming.is_valid():
                return Response(incoming.errors, status=status.HTTP_400_BAD_REQUEST), None
            report = undo_batch(
                batch=batch,
                actor=Actor.for_agent(agent_of(request)),
                reason=incoming.validated_data["reason"],
            )
            # Named by the batch's subjects: its answer lists their memories.
            answer = Response(UndoReportSerializer(report).data)
            return answer, list(batch.subjects())

        return idempotent(request, write)
