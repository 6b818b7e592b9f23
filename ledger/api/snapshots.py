"""Compaction snapshots through the API: post one, list a run's, fetch the latest accepted,
and the JSON Schema of the state document.

Where 400 ends and 422 begins: the request around the document (its fields, their JSON
types, the size of the document, a document that is not a JSON object) must be right, or
nothing is stored and the answer is 400. Anything about the document's own contents is a
problem of the snapshot: it is stored as rejected and the answer is 422, so people can see
what the compaction would have lost.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ledger.actions.snapshots import SnapshotInput, store_snapshot
from ledger.api.auth import agent_of
from ledger.api.fields import (
    RefField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    json_problem,
)
from ledger.api.idempotency import idempotent
from ledger.api.pagination import Cursor
from ledger.models import Run, Snapshot, Subject
from ledger.rules.snapshots.schema import BUDGET_PARTS
from ledger.rules.text import REF_HELP, REF_PATTERN

DOCUMENT_MAX_BYTES = 256 * 1024
TOKENS_MAX = 100_000_000
NARRATIVE_MAX = 20_000
# A state document is a few levels deep; far deeper is not a state document.
DOCUMENT_MAX_DEPTH = 32


@extend_schema_field(
    {
        "type": "object",
        "description": "The state document, checked against /api/v1/schemas/state-document.",
    }
)
class StateDocumentField(serializers.Field[dict[str, Any], Any, Any, Any]):
    """Any JSON object of bounded size; its contents are judged by the checks, not here."""

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise serializers.ValidationError(
                f"Must be a JSON object (the state document), not {type(data).__name__}."
            )
        # Checked first: everything after it walks the document.
        problem = json_problem(data, max_depth=DOCUMENT_MAX_DEPTH)
        if problem:
            raise serializers.ValidationError(problem)
        size = len(json.dumps(data, ensure_ascii=False, default=str).encode())
        if size > DOCUMENT_MAX_BYTES:
            raise serializers.ValidationError(
                f"Is {size} bytes; a state document may be at most {DOCUMENT_MAX_BYTES}."
            )
        return data

    def to_representation(self, value: Any) -> Any:
        return value


class BudgetSerializer(StrictSerializer):
    schema_rules: ClassVar[dict[str, Any]] = {"minProperties": 1}

    system_prompt = StrictIntegerField(required=False, min_value=0, max_value=TOKENS_MAX)
    tool_definitions = StrictIntegerField(required=False, min_value=0, max_value=TOKENS_MAX)
    goal = StrictIntegerField(required=False, min_value=0, max_value=TOKENS_MAX)
    pinned_facts = StrictIntegerField(required=False, min_value=0, max_value=TOKENS_MAX)
    summary = StrictIntegerField(required=False, min_value=0, max_value=TOKENS_MAX)
    recent_turns = StrictIntegerField(required=False, min_value=0, max_value=TOKENS_MAX)
    reserve = StrictIntegerField(required=False, min_value=0, max_value=TOKENS_MAX)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError(
                f"Give the tokens of at least one part: {', '.join(BUDGET_PARTS)}."
            )
        return attrs


class SnapshotWriteSerializer(StrictSerializer):
    generation = StrictIntegerField(required=False, min_value=1, max_value=1_000_000)
    subject = RefField(required=False, help_text="The reference of a subject that exists.")
    document = StateDocumentField()
    pinned = serializers.ListField(
        child=StrictCharField(max_length=1000, trim_whitespace=False),
        required=False,
        max_length=200,
    )
    tokens_before = StrictIntegerField(min_value=0, max_value=TOKENS_MAX)
    tokens_after = StrictIntegerField(min_value=0, max_value=TOKENS_MAX)
    budget = BudgetSerializer(required=False)
    narrative = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=NARRATIVE_MAX,
        multiline=True,
        trim_whitespace=False,
    )

    def to_input(self) -> SnapshotInput:
        data = self.validated_data
        return SnapshotInput(
            document=data["document"],
            tokens_before=data["tokens_before"],
            tokens_after=data["tokens_after"],
            pinned=list(data.get("pinned", [])),
            budget=dict(data["budget"]) if "budget" in data else None,
            narrative=data.get("narrative", ""),
            generation=data.get("generation"),
            subject_ref=data.get("subject"),
        )


class ProblemSerializer(serializers.Serializer[dict[str, Any]]):
    check = serializers.ChoiceField(
        choices=["schema", "partition", "monotonic", "commitments", "references"]
    )
    code = serializers.CharField()
    message = serializers.CharField()
    items = serializers.ListField(child=serializers.CharField())


class SnapshotResultSerializer(serializers.Serializer[dict[str, Any]]):
    run = serializers.CharField()
    generation = serializers.IntegerField()
    status = serializers.ChoiceField(choices=Snapshot.Status.values)
    problems = ProblemSerializer(many=True)


class SnapshotSummarySerializer(serializers.ModelSerializer[Snapshot]):
    run = serializers.CharField(source="run.ref")
    agent = serializers.CharField(source="agent.name")
    problems = ProblemSerializer(many=True)

    class Meta:
        model = Snapshot
        fields = [
            "run",
            "agent",
            "generation",
            "status",
            "tokens_before",
            "tokens_after",
            "budget",
            "problems",
            "created_at",
        ]


class SnapshotSerializer(SnapshotSummarySerializer):
    class Meta(SnapshotSummarySerializer.Meta):
        fields = [*SnapshotSummarySerializer.Meta.fields, "document", "pinned", "narrative"]


class ByGeneration(Cursor):
    ordering = ("generation",)
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 500


def _result(snapshot: Snapshot) -> dict[str, Any]:
    return {
        "run": snapshot.run.ref,
        "generation": snapshot.generation,
        "status": snapshot.status,
        "problems": snapshot.problems,
    }


def _not_found(detail: str = "No run with this reference.", code: str = "not_found") -> Response:
    return Response({"detail": detail, "code": code}, status=status.HTTP_404_NOT_FOUND)


class RunSnapshotsView(APIView):
    # GET pages with it; declared here so the schema documents the page, not a bare list.
    pagination_class = ByGeneration
    idempotent_writes = ("post",)
    refusals = {"post": (409, 422)}

    @extend_schema(
        operation_id="runs_snapshots_list",
        responses={200: SnapshotSummarySerializer(many=True)},
        description="Every snapshot of a run, accepted and rejected, oldest generation first.",
    )
    def get(self, request: Request, ref: str) -> Response:
        run: Run | None = Run.objects.of_agent(agent_of(request)).filter(ref=ref).first()
        if run is None:
            return _not_found()
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(
            run.snapshots.select_related("run", "agent"), request, view=self
        )
        return paginator.get_paginated_response(SnapshotSummarySerializer(page, many=True).data)

    @extend_schema(
        operation_id="runs_snapshots_create",
        request=SnapshotWriteSerializer,
        responses={
            201: OpenApiResponse(SnapshotResultSerializer, description="Accepted and stored."),
            422: OpenApiResponse(
                SnapshotResultSerializer,
                description="Stored as rejected; every problem is listed. Retry with a fix.",
            ),
            400: OpenApiResponse(description="Not a snapshot request; nothing stored."),
            404: OpenApiResponse(description="The run belongs to another agent."),
            409: OpenApiResponse(description="That generation exists already."),
        },
        description="Store one compaction's state document. Generation defaults to the next.",
    )
    def post(self, request: Request, ref: str) -> Response:
        if not REF_PATTERN.match(ref):
            return Response(
                {"detail": f"Not a valid run reference: {REF_HELP}", "code": "invalid_ref"},
                status=status.HTTP_400_BAD_REQUEST,
            )

        def write() -> tuple[Response, Subject | None]:
            incoming = SnapshotWriteSerializer(data=request.data)
            if not incoming.is_valid():
                return Response(incoming.errors, status=status.HTTP_400_BAD_REQUEST), None
            snapshot = store_snapshot(
                run_ref=ref, agent=agent_of(request), data=incoming.to_input()
            )
            accepted = snapshot.status == Snapshot.Status.ACCEPTED
            return (
                Response(
                    _result(snapshot),
                    status=status.HTTP_201_CREATED
                    if accepted
                    else status.HTTP_422_UNPROCESSABLE_ENTITY,
                ),
                snapshot.run.subject,
            )

        return idempotent(request, write)


class LatestSnapshotView(APIView):
    @extend_schema(
        responses={200: SnapshotSerializer},
        description="The accepted snapshot with the highest generation, with its document.",
    )
    def get(self, request: Request, ref: str) -> Response:
        run: Run | None = Run.objects.of_agent(agent_of(request)).filter(ref=ref).first()
        if run is None:
            return _not_found()
        snapshot = (
            run.snapshots.filter(status=Snapshot.Status.ACCEPTED)
            .select_related("run", "agent")
            .order_by("-generation")
            .first()
        )
        if snapshot is None:
            return _not_found(
                f"Run '{run.ref}' has no accepted snapshot yet.", "no_accepted_snapshot"
            )
        return Response(SnapshotSerializer(snapshot).data)
