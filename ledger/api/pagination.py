"""Cursor pagination whose bad cursors and page sizes are the client's mistake (400)."""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions, pagination
from rest_framework.request import Request


class Cursor(pagination.CursorPagination):
    def get_page_size(self, request: Request) -> int | None:
        # A page size that is not a whole number is a mistake to name, not to ignore.
        name = self.page_size_query_param
        value = request.query_params.get(name, "") if name else ""
        if name and name in request.query_params and not (value.isdigit() and int(value) > 0):
            raise exceptions.ValidationError({name: ["A whole number greater than 0."]})
        return super().get_page_size(request)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters: list[dict[str, Any]] = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"]["minimum"] = 1
        return parameters

    def decode_cursor(self, request: Request) -> pagination.Cursor | None:
        try:
            return super().decode_cursor(request)
        except exceptions.NotFound:
            raise exceptions.ValidationError(
                {self.cursor_query_param: ["Not a cursor this API gave out."]}
            ) from None
