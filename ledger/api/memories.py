"""Memories through the API: the gated write, reads, history, corrections, retraction."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from ledger.actions.gate import write_memory
from ledger.actions.lifecycle import correct_memory, retract_memory
from ledger.actors import Actor
from ledger.api.auth import agent_of, policy_of
from ledger.api.idempotency import idempotent
from ledger.api.pagination import Cursor
from ledger.api.serializers import (
    ConflictSerializer,
    CorrectionSerializer,
    HistoryEntrySerializer,
    MemorySerializer,
    MemoryWriteSerializer,
    RetractSerializer,
    SourceSerializer,
    SubjectSerializer,
    source_input,
)
from ledger.models import Conflict, Memory, Subject


class NewestFirst(Cursor):
    ordering = ("-written_at", "-id")
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200


class HistoryPage(Cursor):
    ordering = ("-history_date", "-history_id")
    page_size = 100
    # The schema offers page_size on every page of memories; history takes it too.
    page_size_query_param = "page_size"
    max_page_size = 200


FILTERS = {
    "kind": Memory.Kind.values,
    "basis": Memory.Basis.values,
    "status": Memory.Status.values,
}


DECISION = inline_serializer(
    "WriteDecision",
    {
        "outcome": serializers.CharField(),
        "reason": serializers.CharField(),
        "restriction": serializers.DictField(required=False),
    },
)


def check_if_match(request: Request, memory: Memory) -> Response | None:
    """Refuse a change made against a stale copy: the ETag the client holds must match."""
    expected = request.headers.get("If-Match")
    if expected is None or expected in ("*", memory.etag, memory.etag.strip('"')):
        return None
    return Response(
        {
            "detail": f"The memory has changed: its current version is {memory.version}.",
            "code": "stale_version",
        },
        status=status.HTTP_412_PRECONDITION_FAILED,
        headers={"ETag": memory.etag},
    )


class WrittenMemorySerializer(MemorySerializer):
    """A memory the gate has just created, shown from what the gate holds: its one source
    and the conflicts it opened or joined (``context``), nothing read back. A memory just
    written is superseded by none."""

    # The same list as the nested serializer it stands for, from the context.
    sources = serializers.SerializerMethodField()  # type: ignore[assignment]

    def get_sources(self, memory: Memory) -> Any:
        return SourceSerializer(self.context["sources"], many=True).data

    def get_superseded_by(self, memory: Memory) -> str | None:
        return None

    def get_open_conflicts(self, memory: Memory) -> list[int]:
        return [c.pk for c in self.context["conflicts"] if c.status == Conflict.Status.OPEN]


class MemoryViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet[Memory]
):
    serializer_class = MemorySerializer
    pagination_class = NewestFirst
    idempotent_writes = ("create", "corrections", "retract")
    refusals = {
        "create": (409, 422, 423),
        "corrections": (409, 412, 422, 423),
        "retract": (409, 412, 422, 423),
    }

    def get_queryset(self) -> QuerySet[Memory]:
        queryset = Memory.objects.select_related(
            "subject", "run", "agent", "superseded_by"
        ).prefetch_related("sources__run", "conflicts")
        if self.action != "list":
            return queryset
        params = self.request.query_params
        errors = {
            name: [f"'{params[name][:50]}' is not one of: {', '.join(allowed)}."]
            for name, allowed in FILTERS.items()
            if name in params and params[name] not in allowed
        }
        if errors:
            raise serializers.ValidationError(errors)
        for name in (*FILTERS, "key"):
            if name in params:
                queryset = queryset.filter(**{name: params[name]})
        if "subject" in params:
            queryset = queryset.filter(subject__ref=params["subject"])
        return queryset

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        memory = self.get_object()
        return Response(MemorySerializer(memory).data, headers={"ETag": memory.etag})

    @extend_schema(
        request=MemoryWriteSerializer,
        responses={
            code: inline_serializer(
                f"MemoryWrite{code}",
                {
                    "decision": DECISION,
                    "memory": MemorySerializer(),
                    "expires_at_capped": serializers.BooleanField(),
                    "conflict": ConflictSerializer(allow_null=True),
                },
            )
            for code in (200, 201)
        },
        description="The write gate: 201 when a memory is kept (active or pending), 200 when "
        "the write repeats a memory it merges into; a refusal carries the `decision` too.",
    )
    def create(self, request: Request) -> Response:
        """The write gate. Every decision, including a refusal, is recorded."""

        def write() -> tuple[Response, Subject | None]:
            incoming = MemoryWriteSerializer(data=request.data)
            if not incoming.is_valid():
                return Response(incoming.errors, status=status.HTTP_400_BAD_REQUEST), None
            result = write_memory(
                agent=agent_of(request), data=incoming.to_input(), in_force=policy_of(request)
            )
            body: dict[str, Any] = {
                "decision": {"outcome": result.outcome, "reason": result.reason},
            }
            if result.code:
                # What held or refused it, for programs (held_for_review, agent_quarantined).
                body["decision"]["code"] = result.code
            if result.restriction is not None:
                # An admin's restriction on this agent decided it: say which, and why.
                body["decision"]["restriction"] = {
                    "name": result.restriction.value,
                    "reason": result.restricted_because,
                }
            if result.refused:
                body.update(detail=result.reason, code=result.code)
                # The refusal quotes the write: an erasure of the subject it named removes it.
                return Response(body, status=result.status), result.subject
            # Every outcome but a refusal keeps a memory.
            assert result.memory is not None
            if result.conflicts is None:
                memory = self.get_queryset().get(pk=result.memory.pk)
                body["memory"] = MemorySerializer(memory).data
            else:
                memory = result.memory
                body["memory"] = WrittenMemorySerializer(
                    memory, context={"sources": [result.source], "conflicts": result.conflicts}
                ).data
            body["expires_at_capped"] = result.expires_capped
            body["conflict"] = ConflictSerializer(result.conflict).data if result.conflict else None
            return (
                Response(body, status=result.status, headers={"ETag": memory.etag}),
                memory.subject,
            )

        return idempotent(request, write)

    @extend_schema(responses={200: HistoryEntrySerializer(many=True)})
    @action(detail=True, methods=["get"])
    def history(self, request: Request, pk: str) -> Response:
        memory = self.get_object()
        paginator = HistoryPage()
        # simple-history's rows are untyped.
        page: list[Any] | None = paginator.paginate_queryset(
            memory.history.all(), request, view=self
        )
        return paginator.get_paginated_response(HistoryEntrySerializer(page, many=True).data)

    @extend_schema(
        request=CorrectionSerializer, responses={201: MemorySerializer, 200: MemorySerializer}
    )
    @action(detail=True, methods=["post"])
    def corrections(self, request: Request, pk: str) -> Response:
        memory = self.get_object()

        def write() -> tuple[Response, Subject | None]:
            stale = check_if_match(request, memory)
            if stale is not None:
                return stale, None
            incoming = CorrectionSerializer(data=request.data)
            if not incoming.is_valid():
                return Response(incoming.errors, status=status.HTTP_400_BAD_REQUEST), None
            data = incoming.validated_data
            new = correct_memory(
                memory=memory,
                actor=Actor.for_agent(agent_of(request)),
                statement=data["statement"],
                reason=data["reason"],
                source=source_input(data["source"]) if "source" in data else None,
            )
            new = self.get_queryset().get(pk=new.pk)
            # 200: no new memory, the words were already another live memory's (merged).
            code = 201 if new.supersedes_id == memory.pk else 200
            return (
                Response(MemorySerializer(new).data, status=code, headers={"ETag": new.etag}),
                memory.subject,
            )

        return idempotent(request, write)

    @extend_schema(request=RetractSerializer, responses={200: MemorySerializer})
    @action(detail=True, methods=["post"])
    def retract(self, request: Request, pk: str) -> Response:
        memory = self.get_object()

        def write() -> tuple[Response, Subject | None]:
            stale = check_if_match(request, memory)
            if stale is not None:
                return stale, None
            incoming = RetractSerializer(data=request.data)
            if not incoming.is_valid():
                return Response(incoming.errors, status=status.HTTP_400_BAD_REQUEST), None
            retract_memory(
                memory=memory,
                actor=Actor.for_agent(agent_of(request)),
                reason=incoming.validated_data["reason"],
            )
            fresh = self.get_queryset().get(pk=memory.pk)
            return (
                Response(MemorySerializer(fresh).data, headers={"ETag": fresh.etag}),
                memory.subject,
            )

        return idempotent(request, write)


class SubjectViewSet(mixins.RetrieveModelMixin, viewsets.GenericViewSet[Subject]):
    serializer_class = SubjectSerializer
    lookup_field = "ref"
    lookup_value_regex = r"[^/]+"
    queryset = Subject.objects.with_status_counts()
