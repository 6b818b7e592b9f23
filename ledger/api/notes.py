"""Run notes through the API: keyed, small, overwritten in place, kept in the database."""

from __future__ import annotations

import re
from typing import Any

from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ledger.actions.journal import run_for_agent
from ledger.actions.notes import delete_note, write_note
from ledger.api.auth import agent_of, own_run
from ledger.api.fields import StrictCharField, StrictSerializer
from ledger.api.idempotency import idempotent
from ledger.api.journal import valid_ref
from ledger.models import Run, RunNote, Subject

NOTE_KEY_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]*$")


class NoteKeySerializer(StrictSerializer):
    key = StrictCharField(max_length=RunNote.KEY_MAX)

    def validate_key(self, value: str) -> str:
        if not NOTE_KEY_PATTERN.match(value):
            raise serializers.ValidationError(
                "Letters, digits and _ . : - (starting with a letter or digit)."
            )
        return value


class NoteValueSerializer(StrictSerializer):
    value = StrictCharField(
        max_length=RunNote.VALUE_MAX,
        multiline=True,
        trim_whitespace=False,
        help_text="The note, verbatim. A write to the same key overwrites it.",
    )


class RunNoteSerializer(serializers.ModelSerializer[RunNote]):
    class Meta:
        model = RunNote
        fields = ["key", "value", "updated_at"]


class RunNotesSerializer(serializers.Serializer[dict[str, Any]]):
    run = serializers.CharField()
    notes = RunNoteSerializer(many=True)


def bad_path(ref: str, key: str | None = None) -> Response | None:
    errors: dict[str, Any] = {}
    if not valid_ref(ref):
        errors["run"] = ["Not a valid run reference."]
    if key is not None:
        checked = NoteKeySerializer(data={"key": key})
        if not checked.is_valid():
            errors.update(checked.errors)
    return Response(errors, status=status.HTTP_400_BAD_REQUEST) if errors else None


class RunNotesView(APIView):
    @extend_schema(responses={200: RunNotesSerializer})
    def get(self, request: Request, ref: str) -> Response:
        """Every note of one of your runs, by key."""
        run = own_run(request, ref)
        return Response(
            {"run": run.ref, "notes": RunNoteSerializer(run.notes.all(), many=True).data}
        )


# The path's key, as NoteKeySerializer checks it: the schema states the same rule.
NOTE_KEY = OpenApiParameter(
    "key",
    {
        "type": "string",
        "minLength": 1,
        "maxLength": RunNote.KEY_MAX,
        "pattern": NOTE_KEY_PATTERN.pattern,
    },
    OpenApiParameter.PATH,
)


class RunNoteView(APIView):
    idempotent_writes = ("put",)
    refusals = {"put": (409, 422)}

    @extend_schema(
        parameters=[NOTE_KEY],
        request=NoteValueSerializer,
        responses={
            200: OpenApiResponse(RunNoteSerializer, "The key's value, overwritten."),
            201: OpenApiResponse(RunNoteSerializer, "A new key: the note is created."),
        },
    )
    def put(self, request: Request, ref: str, key: str) -> Response:
        """Write a note: a new key is created (201), one already there overwritten (200); the
        run is created on its first use."""
        refused = bad_path(ref, key)
        if refused is not None:
            return refused
        agent = agent_of(request)

        def write() -> tuple[Response, Subject | Run | None]:
            incoming = NoteValueSerializer(data=request.data)
            if not incoming.is_valid():
                return Response(incoming.errors, status=status.HTTP_400_BAD_REQUEST), None
            run = run_for_agent(ref=ref, agent=agent)
            if run is None:
                raise Http404
            note, created = write_note(
                run=run, agent=agent, key=key, value=incoming.validated_data["value"]
            )
            code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
            # Filed under the run: an erasure of its subject, now or once it has one, removes it.
            return Response(RunNoteSerializer(note).data, status=code), run

        return idempotent(request, write)

    @extend_schema(parameters=[NOTE_KEY], request=None, responses={204: None})
    def delete(self, request: Request, ref: str, key: str) -> Response:
        """Delete one note. Deleting is naturally idempotent: a repeat is a 404."""
        run = own_run(request, ref)
        delete_note(run=run, agent=agent_of(request), key=key)
        return Response(status=status.HTTP_204_NO_CONTENT)
