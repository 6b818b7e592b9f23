"""The JSON Schema of the export a person downloads from their page."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import permissions
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ledger.export_schema import EXPORT_SCHEMA, FORMAT


class ExportSchemaView(APIView):
    # Public like the OpenAPI schema: it describes a format and holds no data.
    authentication_classes: list[Any] = []
    permission_classes = [permissions.AllowAny]

    @extend_schema(
        auth=[],
        responses={200: OpenApiTypes.OBJECT},
        description=f"The JSON Schema (draft 2020-12) of the export ({FORMAT}): the file a "
        "person downloads with *Download everything* on their page (docs/end-users.md).",
    )
    def get(self, request: Request) -> Response:
        return Response({"$id": request.build_absolute_uri(request.path), **EXPORT_SCHEMA})
