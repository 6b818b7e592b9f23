"""The published JSON Schemas: the state document agents send, and the export people get.

Public like the OpenAPI schema: each describes a format and holds no data.
"""

from __future__ import annotations

from typing import Any, ClassVar

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import permissions
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ledger.reads.export_schema import EXPORT_SCHEMA, FORMAT
from ledger.rules.snapshots.schema import STATE_DOCUMENT_SCHEMA


class PublishedSchemaView(APIView):
    authentication_classes: list[Any] = []
    permission_classes = [permissions.AllowAny]
    document: ClassVar[dict[str, Any]]

    def get(self, request: Request) -> Response:
        # The schema's own address, without whatever query string it was fetched with.
        return Response({"$id": request.build_absolute_uri(request.path), **self.document})


@extend_schema(
    auth=[],
    responses={200: OpenApiTypes.OBJECT},
    description="The JSON Schema (draft 2020-12) every state document is checked against.",
)
class StateDocumentSchemaView(PublishedSchemaView):
    document = STATE_DOCUMENT_SCHEMA


@extend_schema(
    auth=[],
    responses={200: OpenApiTypes.OBJECT},
    description=f"The JSON Schema (draft 2020-12) of the export ({FORMAT}): the file a person "
    "downloads with *Download everything* on their page (docs/end-users.md).",
)
class ExportSchemaView(PublishedSchemaView):
    document = EXPORT_SCHEMA
