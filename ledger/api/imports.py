"""``POST /api/v1/imports``: a file of memories from another system, through the write gate.

The file travels as text in a JSON body (``content``) with its ``name``, so that each
memory's source says where it came from: ``{"kind": "import", "ref": "<name>:<line>"}``.
Every entry is first checked as ``POST /api/v1/memories`` checks a write (the same
serializer); a file with any bad entry is refused whole, every bad line named, so nothing
of a file half-read is written. A request the schema can tell is wrong (no name, an
unknown format, text over the cap) is a 400; a well-formed request whose file cannot be
imported (not JSON, no statement on line 14, over 1,000 memories) is a 422
``invalid_import``, as a snapshot whose document fails its checks is: what the file must
hold is more than a schema of the request can say. Then each entry is its own gate decision, as the
calling agent: a refused line does not stop the others, and the report names every line.

An import of N memories counts N writes against the agent's limit: a file is not a way
around ``MEMORYADMIN_RATE_WRITES``. The throttle counted the request; the other N - 1 are
``charge``d in one step before the import's transaction begins, so a refused import has
written nothing. A refused charge counts none of them, so it leaves the agent its next
write. A dry run writes nothing and counts as the one request it is.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ledger.actions.imports import (
    OUTCOMES,
    ImportLine,
    ImportReport,
    LineReport,
    import_memories,
)
from ledger.api.auth import agent_of, policy_of
from ledger.api.fields import (
    RefField,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictSerializer,
)
from ledger.api.idempotency import PREVIEW, About, idempotent
from ledger.api.serializers import MemoryWriteSerializer
from ledger.api.throttling import charge
from ledger.models import Memory, Source, Subject
from ledger.rules.import_formats import (
    DEFAULT_KIND,
    FORMATS,
    MAX_CHARS,
    Entry,
    Problem,
    UnreadableFile,
    parse,
    without_bom,
)

NAME_MAX = 100


class ContentField(StrictCharField):
    def to_internal_value(self, data: Any) -> str:
        # A byte order mark is how an editor saved the file, not a character in it: left
        # in, it would be refused below as an invisible control character.
        return super().to_internal_value(without_bom(data) if isinstance(data, str) else data)


class ImportRequestSerializer(StrictSerializer):
    name = StrictCharField(
        max_length=NAME_MAX,
        help_text="The file's name, e.g. `dana-export.json`: each memory's source ref is "
        "`<name>:<line>`.",
    )
    content = ContentField(
        max_length=MAX_CHARS,
        multiline=True,
        trim_whitespace=False,
        help_text="The file's text. It must be readable in its format (valid JSON for "
        "`export` and `statements`) and hold 1–1,000 memories, each a valid write.",
    )
    format = StrictChoiceField(
        choices=FORMATS,
        required=False,
        default="auto",
        help_text="`auto` (the default): a JSON object whose `format` starts "
        "`memoryadmin.export/` is an `export`, any other JSON object `statements`, "
        "anything else `lines`.",
    )
    subject = RefField(
        required=False,
        help_text="For `lines`, the subject (required); for `export`, a subject to import "
        "into instead of the one the export names. Not taken with `statements`.",
    )
    kind = StrictChoiceField(
        # With their labels: the schema then names them as every memory's kinds.
        choices=Memory.Kind.choices,
        required=False,
        default=DEFAULT_KIND,
        help_text="The kind of each statement of `statements` and `lines` (an export "
        "says each memory's own).",
    )
    dry_run = StrictBooleanField(
        required=False,
        default=False,
        help_text="Decide every line as the real import would, and write nothing.",
    )

    def lines(self) -> tuple[str, list[ImportLine]]:
        """The file's format and its entries, each checked as a memory write; or
        ``UnreadableFile`` naming every entry that is not one."""
        data = self.validated_data
        parsed = parse(
            data["content"],
            now=timezone.now(),
            format=data["format"],
            subject=data.get("subject"),
            kind=data["kind"],
        )
        return parsed.format, checked_lines(data["name"], parsed.entries)


def checked_lines(name: str, entries: list[Entry]) -> list[ImportLine]:
    """Each entry as the write it asks for, checked by the API's own write serializer, with
    ``<name>:<line>`` as its source; or ``UnreadableFile`` naming every entry that fails."""
    lines, problems = [], []
    for entry in entries:
        ref = f"{name}:{entry.line}"
        if entry.skipped:
            fields = entry.fields
            lines.append(
                ImportLine(
                    line=entry.line,
                    ref=ref,
                    subject=fields["subject"],
                    statement=fields["statement"],
                    memory=None,
                    skipped=entry.skipped,
                )
            )
            continue
        incoming = MemoryWriteSerializer(
            data={**entry.fields, "source": {"kind": Source.Kind.IMPORT, "ref": ref}}
        )
        if not incoming.is_valid():
            problems += [
                Problem(entry.line, message, field) for field, message in _flat(incoming.errors)
            ]
            continue
        memory = incoming.to_input()
        lines.append(
            ImportLine(
                line=entry.line,
                ref=ref,
                subject=memory.subject,
                statement=memory.statement,
                memory=memory,
            )
        )
    if problems:
        raise UnreadableFile(problems)
    return lines


def _flat(errors: Any, prefix: str = "") -> list[tuple[str, str]]:
    """A serializer's errors as (field, message) pairs, a nested field named with a dot."""
    if isinstance(errors, dict):
        return [
            pair
            for name, inner in errors.items()
            for pair in _flat(inner, f"{prefix}.{name}" if prefix else str(name))
        ]
    if isinstance(errors, list):
        return [pair for inner in errors for pair in _flat(inner, prefix)]
    return [(prefix or "content", str(errors))]


def unreadable(error: UnreadableFile) -> Response:
    return Response(
        {
            "detail": f"Nothing was imported. {error}",
            "code": "invalid_import",
            "problems": [
                {"line": p.line, "field": p.field, "message": p.message} for p in error.problems
            ],
        },
        status=status.HTTP_422_UNPROCESSABLE_ENTITY,
    )


class LineReportSerializer(serializers.Serializer[LineReport]):
    line = serializers.IntegerField(help_text="Where the entry starts in the file.")
    ref = serializers.CharField(help_text="The source ref: `<name>:<line>`.")
    subject = serializers.CharField()
    statement = serializers.CharField()
    outcome = serializers.ChoiceField(
        choices=OUTCOMES,
        help_text="The write gate's decision; `skipped` for an export's memory not in use there.",
    )
    reason = serializers.CharField()
    code = serializers.CharField(
        help_text="What held or refused it (`held_for_review`, `system_of_record`, …); "
        "empty otherwise."
    )
    memory = serializers.CharField(
        allow_null=True,
        help_text="The memory kept or merged into; in a dry run only the one a repeat merges into.",
    )
    memory_status = serializers.CharField(allow_null=True)


class TotalsSerializer(serializers.Serializer[dict[str, int]]):
    entries = serializers.IntegerField()
    accepted = serializers.IntegerField()
    pending = serializers.IntegerField(help_text="Held: kept, never recalled until confirmed.")
    merged = serializers.IntegerField(help_text="Repeats of a live memory, kept as evidence.")
    conflict = serializers.IntegerField()
    refused = serializers.IntegerField()
    skipped = serializers.IntegerField()


class ImportReportSerializer(serializers.Serializer[ImportReport]):
    name = serializers.CharField()
    format = serializers.ChoiceField(choices=FORMATS[1:])
    dry_run = serializers.BooleanField()
    totals = TotalsSerializer()
    lines = LineReportSerializer(many=True)


class ImportsView(APIView):
    idempotent_writes = ("post",)
    # The gate's refusals are reported per line, never as the answer's status; 422 is a
    # file that cannot be imported, or a reused Idempotency-Key.
    refusals = {"post": (409, 422, 423)}

    @extend_schema(
        request=ImportRequestSerializer,
        responses={200: ImportReportSerializer, 201: ImportReportSerializer},
        description="Import a file of memories through the write gate, each as this agent's "
        "write with `source.kind = import` and `<name>:<line>` as its ref. 200 with the "
        "report for a dry run (nothing written), 201 for the import; a file with any bad "
        "entry is refused whole (422 `invalid_import`, every problem with its line).",
    )
    def post(self, request: Request) -> Response:
        incoming = ImportRequestSerializer(data=request.data)
        if not incoming.is_valid():
            return Response(incoming.errors, status=status.HTTP_400_BAD_REQUEST)
        try:
            format, lines = incoming.lines()
        except UnreadableFile as error:
            # Not kept for a retry either: it wrote nothing, and the client sends it mended.
            return unreadable(error)
        dry_run = incoming.validated_data["dry_run"]
        if not dry_run:
            # Before ``idempotent`` opens its transaction: a file over the limit is refused
            # before anything is locked or written. The throttle counted this request.
            charge(agent_of(request), "writes", sum(line.memory is not None for line in lines) - 1)

        def write() -> tuple[Response, About]:
            report = import_memories(
                agent=agent_of(request),
                name=incoming.validated_data["name"],
                format=format,
                lines=lines,
                dry_run=dry_run,
                in_force=policy_of(request),
            )
            answer = ImportReportSerializer(report).data
            if dry_run:
                return Response(answer), PREVIEW
            # The report quotes every line: an erasure of any subject it names removes it.
            named = list(Subject.objects.filter(ref__in=report.subjects))
            return Response(answer, status=status.HTTP_201_CREATED), named

        return idempotent(request, write)
