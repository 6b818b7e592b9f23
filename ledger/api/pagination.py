"""Cursor pagination whose bad cursors are the client's mistake (400), not a missing page."""

from __future__ import annotations

from rest_framework import exceptions, pagination
from rest_framework.request import Request


class Cursor(pagination.CursorPagination):
    def decode_cursor(self, request: Request) -> pagination.Cursor | None:
        try:
            return super().decode_cursor(request)
        except exceptions.NotFound:
            raise exceptions.ValidationError(
                {self.cursor_query_param: ["Not a cursor this API gave out."]}
            ) from None
