"""Recall through the API: the block for a subject, and the record of who read a memory."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any

from django.db.models import QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from opentelemetry import trace
from rest_framework import generics, serializers, status
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ledger.actions.recalls import record_recall
from ledger.api.auth import agent_of, policy_of
from ledger.api.fields import RefField, StrictCharField, StrictSerializer
from ledger.api.pagination import Cursor
from ledger.choices import MemoryKind
from ledger.metrics import RECALL_DURATION, RECALL_ITEMS
from ledger.models import Agent, Memory, Recall, Run, Subject
from ledger.reads.recall import (
    DEFAULT_K,
    GOAL_MAX,
    ConflictGroup,
    recall_about,
    recalls_that_served,
)
from ledger.reads.retrieval import Ranked, Semantic
from ledger.rules.ranking import Why
from ledger.rules.text import KEY_PATTERN

tracer = trace.get_tracer(__name__)

TURN_MAX = 1_000_000
KEYS_MAX = 500
_WHOLE_NUMBER = re.compile(r"^[0-9]{1,7}$")


class PlainTextRenderer(BaseRenderer):
    """``Accept: text/plain`` or ``?format=text``: the block alone, exactly as recorded."""

    media_type = "text/plain"
    format = "text"
    charset = "utf-8"

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> bytes:
        if isinstance(data, str):
            return data.encode()
        return _error_text(data).encode()


def _error_text(data: Any) -> str:
    """An error asked for as text: one line per problem, naming the parameter."""
    if isinstance(data, dict) and "detail" in data:
        return f"{data['detail']}\n"
    if isinstance(data, dict):
        return "".join(
            f"{name}: {' '.join(str(m) for m in messages)}\n" for name, messages in data.items()
        )
    return f"{data}\n"


class ListField(StrictCharField):
    """Items of one pattern, comma-separated, no spaces: a set of them once read."""

    def __init__(self, *, item: str, say: str, **kwargs: Any) -> None:
        self.pattern = re.compile(f"^(?:{item})(?:,(?:{item}))*$")
        self.say = say
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> frozenset[str]:  # type: ignore[override]
        value = super().to_internal_value(data)
        assert self.pattern is not None
        if not self.pattern.fullmatch(value):
            raise serializers.ValidationError(f"Not a list of {self.say}.")
        return frozenset(value.split(","))


class QueryIntegerField(serializers.IntegerField):
    """A whole number written in a query string: digits only, no sign, point or spaces."""

    def to_internal_value(self, data: Any) -> int:
        if not isinstance(data, str) or not _WHOLE_NUMBER.match(data):
            raise serializers.ValidationError("Must be a whole number, e.g. 5.")
        return super().to_internal_value(data)


class RecallParamsSerializer(StrictSerializer):
    goal = StrictCharField(
        allow_blank=True,
        max_length=GOAL_MAX,
        default="",
        help_text=f"What the agent is about to do (≤ {GOAL_MAX} characters).",
    )
    # The cap is the admin's, changed at run time: GET /api/v1/tools shows the current one.
    k = QueryIntegerField(
        min_value=1,
        default=DEFAULT_K,
        help_text=f"How many memories at most: default {DEFAULT_K}, from 1 to the policy's "
        "recall cap (GET /api/v1/tools gives the current cap as the recall tool's maximum k).",
    )
    run = RefField(required=False, help_text="The reading run's reference; started if new.")
    turn = QueryIntegerField(
        required=False,
        min_value=0,
        max_value=TURN_MAX,
        help_text="The turn within the run (0 or more).",
    )
    keys = ListField(
        item=KEY_PATTERN.pattern.strip("^$"),
        say="slot keys, comma-separated, e.g. delivery.window,contact.channel",
        required=False,
        max_length=KEYS_MAX,
        help_text="Slots to serve first whenever they hold a servable memory, within k, "
        "comma-separated (delivery.window,contact.channel).",
    )
    kinds = ListField(
        item="|".join(MemoryKind.values),
        say=f"kinds, comma-separated, from {', '.join(MemoryKind.values)}",
        required=False,
        max_length=KEYS_MAX,
        help_text="Kinds to serve first the same way, comma-separated: "
        + ", ".join(MemoryKind.values)
        + ".",
    )

    def validate_k(self, value: int) -> int:
        cap = self.context["cap"]
        if value > cap:
            raise serializers.ValidationError(
                f"Ensure this value is less than or equal to {cap}, the policy's recall cap."
            )
        return value


def _query_params(request: Request) -> tuple[dict[str, str], dict[str, list[str]]]:
    """The query string as one value per name, and an error for each name given twice."""
    params: dict[str, str] = {}
    repeated: dict[str, list[str]] = {}
    for name, values in request.query_params.lists():
        if name == "format":
            continue  # DRF's own: it chooses JSON or the plain-text block.
        if len(values) > 1:
            repeated[name[:50]] = ["Give this parameter once."]
        params[name] = values[-1]
    return params, repeated


class WhySerializer(serializers.Serializer[Why]):
    via = serializers.ChoiceField(
        choices=["relevance", "key", "kind", "recent", "conflict"],
        help_text="relevance: ranked for the goal; key or kind: asked for; recent: no goal, "
        "the newest; conflict: shown only as a contender in an open conflict.",
    )
    score = serializers.FloatField(help_text="The fused relevance it was ranked by.")
    lexical = serializers.FloatField(help_text="BM25 of the goal's words in the statement.")
    matched = serializers.ListField(
        child=serializers.CharField(), help_text="The goal's words the statement contains."
    )
    semantic = serializers.FloatField(
        allow_null=True,
        help_text="Cosine of the goal's and the statement's meaning; null when not compared "
        "(no vector yet, or meaning unavailable).",
    )


class RecalledMemorySerializer(serializers.Serializer[Ranked]):
    id = serializers.UUIDField(source="memory.id")
    kind = serializers.CharField(source="memory.kind")
    key = serializers.CharField(source="memory.key")
    statement = serializers.CharField(source="memory.statement")
    basis = serializers.CharField(source="memory.basis")
    written_at = serializers.DateTimeField(source="memory.written_at")
    expires_at = serializers.DateTimeField(source="memory.expires_at", allow_null=True)
    rank = serializers.FloatField()
    why = WhySerializer(help_text="Why this memory was served.")


class ConflictStatementSerializer(serializers.Serializer[Memory]):
    memory = serializers.UUIDField(source="id")
    statement = serializers.CharField()
    basis = serializers.CharField()
    written_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(allow_null=True)


class RecallConflictSerializer(serializers.Serializer[ConflictGroup]):
    id = serializers.IntegerField()
    key = serializers.CharField()
    possible = serializers.BooleanField(
        help_text="Found by the statements' words, not a shared slot; the block quotes any "
        "ledger commitment in it."
    )
    statements = ConflictStatementSerializer(source="memories", many=True)


class RecallResponseSerializer(serializers.Serializer[dict[str, Any]]):
    recall = serializers.IntegerField(help_text="The id of the stored record of this read.")
    subject = serializers.CharField()
    goal = serializers.CharField()
    k = serializers.IntegerField()
    recalled_at = serializers.DateTimeField()
    semantic = serializers.ChoiceField(
        choices=[s.value for s in Semantic],
        help_text="used: ranked by meaning and words; partial: some memories not yet "
        "embedded were ranked by their words; unavailable: the embedding backend failed, "
        "words alone; off: embeddings are switched off; no goal: the newest memories.",
    )
    model = serializers.CharField(help_text="The embedding model that ranked, if any.")
    memories = RecalledMemorySerializer(many=True)
    conflicts = RecallConflictSerializer(many=True)
    block = serializers.CharField()


class SubjectRecallView(APIView):
    renderer_classes = [JSONRenderer, PlainTextRenderer]

    @extend_schema(
        operation_id="subjects_recall",
        summary="Recall a capped, labelled memory block for a subject",
        description=(
            "Servable memories only (active, not past their expiry), ranked by relevance to "
            "`goal`, at most `k`, plus every open conflict about the subject. Every call is "
            "recorded with the exact block served. `Accept: text/plain` or `format=text` "
            "returns the block alone."
        ),
        parameters=[RecallParamsSerializer, OpenApiParameter("format", str, enum=["json", "text"])],
        responses={
            (200, "application/json"): RecallResponseSerializer,
            (200, "text/plain"): OpenApiTypes.STR,
            400: OpenApiResponse(description="A parameter is invalid; the body names it."),
            403: OpenApiResponse(description="The API key lacks the read scope."),
            404: OpenApiResponse(description="No such subject."),
            409: OpenApiResponse(description="The run belongs to another agent."),
        },
    )
    def get(self, request: Request, ref: str) -> Response:
        params, repeated = _query_params(request)
        if repeated:
            return Response(repeated, status=status.HTTP_400_BAD_REQUEST)
        cap = policy_of(request).recall_cap
        incoming = RecallParamsSerializer(data=params, context={"cap": cap})
        if not incoming.is_valid():
            return Response(incoming.errors, status=status.HTTP_400_BAD_REQUEST)
        data = incoming.validated_data
        agent = agent_of(request)
        started = time.perf_counter()
        # Who read about whom, never what was asked or served (docs/logs-and-traces.md).
        attributes = {"memoryadmin.agent": agent.name, "memoryadmin.subject": ref}
        if data.get("run"):
            attributes["memoryadmin.run"] = data["run"]
        with tracer.start_as_current_span("memoryadmin.recall", attributes=attributes):
            result = recall_about(
                ref=ref,
                goal=data["goal"],
                k=data["k"],
                keys=data.get("keys", frozenset()),
                kinds=data.get("kinds", frozenset()),
            )
            if result is None:
                raise Http404
            record = record_recall(
                agent=agent, result=result, run_ref=data.get("run"), turn=data.get("turn")
            )
        # Ranked and recorded: what an agent waits for. "no goal" as a label is "no_goal".
        ranking = result.semantic.value.replace(" ", "_")
        RECALL_DURATION.labels(ranking=ranking).observe(time.perf_counter() - started)
        RECALL_ITEMS.observe(len(result.memories))
        headers = {"Cache-Control": "no-store", "X-Recall-Id": str(record.pk)}
        if request.accepted_renderer.format == PlainTextRenderer.format:
            return Response(result.block, headers=headers)
        body = {
            "recall": record.pk,
            "subject": result.subject.ref,
            "goal": result.goal,
            "k": result.k,
            "recalled_at": result.recalled_at,
            "semantic": result.semantic,
            "model": result.model,
            "memories": result.memories,
            "conflicts": result.conflicts,
            "block": result.block,
        }
        return Response(RecallResponseSerializer(body).data, headers=headers)


class RecallRecordSerializer(serializers.ModelSerializer[Recall]):
    agent = serializers.SlugRelatedField[Agent](slug_field="name", read_only=True)
    # A recall made without naming a run has none.
    run = serializers.SlugRelatedField[Run](slug_field="ref", read_only=True, allow_null=True)
    subject = serializers.SlugRelatedField[Subject](slug_field="ref", read_only=True)
    position = serializers.IntegerField(
        help_text="Where this memory stood in the recall, from 1; above k it was shown only "
        "as a contender in an open conflict."
    )
    rank = serializers.FloatField()

    class Meta:
        model = Recall
        fields = [
            "id",
            "recalled_at",
            "agent",
            "run",
            "turn",
            "subject",
            "goal",
            "k",
            "position",
            "rank",
            "block",
        ]


class NewestRecallFirst(Cursor):
    ordering = ("-recalled_at", "-id")
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200


@extend_schema_view(
    get=extend_schema(
        operation_id="memories_recalls",
        summary="The recalls that served a memory, newest first",
        description="Which of the calling agent's runs and turns were given this memory, with "
        "its position and rank in each recall and the exact block served (another agent's "
        "reads are not shown). Cursor-paginated.",
    )
)
class MemoryRecallsView(generics.ListAPIView[Recall]):
    serializer_class = RecallRecordSerializer
    pagination_class = NewestRecallFirst

    def get_queryset(self) -> QuerySet[Recall]:
        memory = get_object_or_404(Memory, pk=self.kwargs["pk"])
        return (
            recalls_that_served(memory)
            .readable_by(agent_of(self.request))
            .select_related("agent", "run", "subject")
        )
