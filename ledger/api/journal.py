"""The action journal through the API: intents before acting, outcomes after."""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

from django.db.models import QuerySet
from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ledger.actions.journal import UNSET, journal_intent, record_outcome, run_for_agent
from ledger.api.auth import agent_of
from ledger.api.fields import (
    RefField,
    StrictCharField,
    StrictChoiceField,
    StrictSerializer,
    json_problem,
)
from ledger.api.idempotency import idempotent
from ledger.api.openapi import exactly
from ledger.api.pagination import Cursor
from ledger.models import Agent, JournalEntry, Run, Subject
from ledger.rules.journal import journal_moves, stale_intent_cutoff

JSON_MAX_BYTES = 64 * 1024
ACTION_MAX = 200
JOURNAL_KEY_MAX = 200
JOURNAL_KEY_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,199}$")
JOURNAL_KEY_REGEX = r"[A-Za-z0-9][A-Za-z0-9_.:\-]{0,199}"
OUTCOME_STATES = [s for s in JournalEntry.State.values if s != JournalEntry.State.INTENDED]
OUTCOME_STATES_UNVERIFIED = [s for s in OUTCOME_STATES if s != JournalEntry.State.DONE]


@extend_schema_field(OpenApiTypes.ANY)
class BoundedJSONField(serializers.Field[Any, Any, Any, Any]):
    """Any JSON value (or only an object), at most 64 KB serialized and 20 levels deep."""

    def __init__(self, *, object_only: bool = False, **kwargs: Any) -> None:
        self.object_only = object_only
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> Any:
        if self.object_only and not isinstance(data, dict):
            raise serializers.ValidationError("Must be a JSON object.")
        problem = json_problem(data)
        if problem:
            raise serializers.ValidationError(problem)
        size = len(json.dumps(data, ensure_ascii=False).encode())
        if size > JSON_MAX_BYTES:
            raise serializers.ValidationError(
                f"Too large: {size} bytes serialized, the limit is {JSON_MAX_BYTES}."
            )
        return data

    def to_representation(self, value: Any) -> Any:
        return value


class JournalKeyField(StrictCharField):
    pattern = JOURNAL_KEY_PATTERN

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_length=JOURNAL_KEY_MAX, **kwargs)

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if not JOURNAL_KEY_PATTERN.match(value):
            raise serializers.ValidationError(
                "1–200 characters: letters, digits and _ . : - (starting with a letter or digit)."
            )
        return value


class IntentSerializer(StrictSerializer):
    idempotency_key = JournalKeyField(
        help_text="Your key for this one side effect; reuse it when you resume."
    )
    action = StrictCharField(max_length=ACTION_MAX, help_text="The tool you are about to call.")
    intent = BoundedJSONField(object_only=True, help_text="What you are about to do, as JSON.")


class OutcomeSerializer(StrictSerializer):
    state = StrictChoiceField(
        choices=OUTCOME_STATES,
        help_text="done: verified; not_done: recorded failure; unknown: sent, no verified result.",
    )
    effect = BoundedJSONField(required=False, allow_null=True, help_text="What the tool returned.")
    verification = BoundedJSONField(
        required=False,
        allow_null=True,
        help_text="What the external system says afterwards. Required for done.",
    )

    schema_rules: ClassVar[dict[str, Any]] = {
        "anyOf": [
            {"properties": {"state": exactly(*OUTCOME_STATES_UNVERIFIED)}},
            {"required": ["verification"], "properties": {"verification": {"not": exactly(None)}}},
        ]
    }

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["state"] == JournalEntry.State.DONE and attrs.get("verification") is None:
            raise serializers.ValidationError(
                {"verification": ["done means verified: say what the external system shows."]}
            )
        return attrs


class JournalEntrySerializer(serializers.ModelSerializer[JournalEntry]):
    run = serializers.SlugRelatedField[Run](slug_field="ref", read_only=True)
    agent = serializers.SlugRelatedField[Agent](slug_field="name", read_only=True)
    intent = BoundedJSONField(read_only=True)
    effect = BoundedJSONField(read_only=True)
    verification = BoundedJSONField(read_only=True)
    allowed_moves = serializers.SerializerMethodField()
    needs_resolution = serializers.SerializerMethodField()

    class Meta:
        model = JournalEntry
        fields = [
            "idempotency_key",
            "run",
            "agent",
            "action",
            "intent",
            "effect",
            "verification",
            "state",
            "allowed_moves",
            "needs_resolution",
            "created_at",
            "updated_at",
        ]

    def get_allowed_moves(self, entry: JournalEntry) -> list[str]:
        return list(journal_moves(entry.state))

    def get_needs_resolution(self, entry: JournalEntry) -> bool:
        return entry.needs_resolution(self.context.get("cutoff") or stale_intent_cutoff())


RESUME_ADVICE = {
    JournalEntry.State.INTENDED: "An attempt with this key was journaled and never reported "
    "back: it may have happened. Read the external system before acting, then record what "
    "you find with PATCH /api/v1/journal/{key}.",
    JournalEntry.State.UNKNOWN: "An attempt with this key was sent but its result was never "
    "verified. Read the external system before any retry, then record what you find with "
    "PATCH /api/v1/journal/{key}.",
    JournalEntry.State.DONE: "This action was already done and verified. Do not act again.",
    JournalEntry.State.NOT_DONE: "This attempt was recorded as not done. To try again, journal "
    "a new intent with a new key.",
}


class RunJournalView(APIView):
    """Journal an intent before acting. The same key twice returns the first entry."""

    refusals = {"post": (409, 423)}

    @extend_schema(
        request=IntentSerializer,
        responses={
            (code, "application/json"): inline_serializer(
                f"JournalIntent{code}",
                {
                    "entry": JournalEntrySerializer(),
                    "existing": serializers.BooleanField(),
                    "attempt_may_exist": serializers.BooleanField(required=False),
                    "detail": serializers.CharField(required=False),
                },
            )
            for code in (200, 201)
        },
    )
    def post(self, request: Request, ref: str) -> Response:
        if not valid_ref(ref):
            return Response({"run": ["Not a valid run reference."]}, status.HTTP_400_BAD_REQUEST)
        incoming = IntentSerializer(data=request.data)
        if not incoming.is_valid():
            return Response(incoming.errors, status=status.HTTP_400_BAD_REQUEST)
        agent = agent_of(request)
        run = run_for_agent(ref=ref, agent=agent)
        if run is None:
            raise Http404
        data = incoming.validated_data
        result = journal_intent(
            agent=agent,
            run=run,
            idempotency_key=data["idempotency_key"],
            action=data["action"],
            intent=data["intent"],
        )
        entry = JournalEntrySerializer(result.entry).data
        if result.created:
            return Response({"entry": entry, "existing": False}, status=status.HTTP_201_CREATED)
        advice = RESUME_ADVICE[JournalEntry.State(result.entry.state)]
        return Response(
            {
                "entry": entry,
                "existing": True,
                "attempt_may_exist": True,
                "detail": advice.replace("{key}", result.entry.idempotency_key),
            },
            status=status.HTTP_200_OK,
        )


def valid_ref(ref: str) -> bool:
    try:
        RefField().run_validation(ref)
    except serializers.ValidationError:
        return False
    return True


class OldestFirst(Cursor):
    ordering = ("created_at", "id")
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 500


class JournalViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet[JournalEntry]
):
    """The calling agent's journal: what must be resolved, one entry, an outcome."""

    serializer_class = JournalEntrySerializer
    pagination_class = OldestFirst
    lookup_field = "idempotency_key"
    lookup_url_kwarg = "key"
    lookup_value_regex = JOURNAL_KEY_REGEX
    http_method_names = ["get", "patch", "head", "options"]
    idempotent_writes = ("partial_update",)
    refusals = {"partial_update": (409, 422)}

    def get_queryset(self) -> QuerySet[JournalEntry]:
        entries = JournalEntry.objects.of_agent(agent_of(self.request)).select_related(
            "run", "agent"
        )
        if self.action != "list":
            return entries
        params = self.request.query_params
        errors: dict[str, list[str]] = {}
        if "state" in params and params["state"] not in JournalEntry.State.values:
            errors["state"] = [f"Not one of: {', '.join(JournalEntry.State.values)}."]
        if params.get("needs_resolution", "1") not in ("0", "1", "true", "false"):
            errors["needs_resolution"] = ["Use 1 or 0."]
        if errors:
            raise serializers.ValidationError(errors)
        if params.get("needs_resolution") in ("1", "true"):
            entries = entries.unresolved(stale_intent_cutoff())
        if "state" in params:
            entries = entries.filter(state=params["state"])
        if "run" in params:
            entries = entries.filter(run__ref=params["run"])
        return entries

    def get_serializer_context(self) -> dict[str, Any]:
        return {**super().get_serializer_context(), "cutoff": stale_intent_cutoff()}

    @extend_schema(
        parameters=[
            OpenApiParameter("state", str, enum=JournalEntry.State.values),
            OpenApiParameter(
                "needs_resolution",
                bool,
                description="1: unknowns and intents that never reported back in time.",
            ),
            OpenApiParameter("run", str),
        ]
    )
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().list(request, *args, **kwargs)

    @extend_schema(request=OutcomeSerializer, responses={200: JournalEntrySerializer})
    def partial_update(self, request: Request, key: str) -> Response:
        """Record an outcome. Allowed: intended → done | not_done | unknown; unknown → done |
        not_done. Anything else is refused with the moves allowed from the current state."""
        agent = agent_of(request)
        if not self.get_queryset().filter(idempotency_key=key).exists():
            raise Http404

        def write() -> tuple[Response, Subject | Run | None]:
            incoming = OutcomeSerializer(data=request.data)
            if not incoming.is_valid():
                return Response(incoming.errors, status=status.HTTP_400_BAD_REQUEST), None
            data = incoming.validated_data
            entry = record_outcome(
                agent=agent,
                idempotency_key=key,
                state=data["state"],
                effect=data.get("effect", UNSET),
                verification=data.get("verification", UNSET),
            )
            # Filed under the run: an erasure of its subject, now or once it has one, removes it.
            return Response(JournalEntrySerializer(entry).data), entry.run

        return idempotent(request, write)
