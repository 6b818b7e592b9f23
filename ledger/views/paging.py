"""Keyset pages for support's long lists: ordered by (time, id), continued from an opaque
cursor naming the last row shown. No OFFSET and no count of the whole table: a page costs
the same on the millionth row as on the first."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Model, Q, QuerySet
from django.http import QueryDict


class BadCursor(ValueError):
    """A cursor this product did not give out (edited, truncated, or from another list)."""


@dataclass(frozen=True)
class Page[M: Model]:
    rows: list[M]
    next_cursor: str


def encode(at: datetime, pk: Any) -> str:
    raw = json.dumps([at.isoformat(), str(pk)]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(cursor: str, queryset: QuerySet[Any]) -> tuple[datetime, Any]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        at_text, pk_text = json.loads(raw)
        at = datetime.fromisoformat(at_text)
        pk = queryset.model._meta.pk.to_python(pk_text)
    except (binascii.Error, ValueError, TypeError, ValidationError) as error:
        raise BadCursor("This “next page” link is not one this page gave out.") from error
    if at.tzinfo is None:
        raise BadCursor("This “next page” link is not one this page gave out.")
    return at, pk


def keyset_page[M: Model](
    queryset: QuerySet[M], *, field: str, cursor: str, size: int, newest_first: bool
) -> Page[M]:
    """One page of ``queryset`` ordered by (``field``, pk), after the row ``cursor`` names.

    One query: a row more than the page is read to tell whether another page follows.
    """
    if cursor:
        at, pk = decode(cursor, queryset)
        if newest_first:
            later = Q(**{f"{field}__lt": at}) | Q(**{field: at, "pk__lt": pk})
        else:
            later = Q(**{f"{field}__gt": at}) | Q(**{field: at, "pk__gt": pk})
        queryset = queryset.filter(later)
    order = [f"-{field}", "-pk"] if newest_first else [field, "pk"]
    rows = list(queryset.order_by(*order)[: size + 1])
    if len(rows) <= size:
        return Page(rows, "")
    last = rows[size - 1]
    return Page(rows[:size], encode(getattr(last, field), last.pk))


def asked(data: QueryDict) -> QueryDict:
    """What a list was asked for, without the empty fields and without the page cursor
    (``after``): the address its first page is shared by."""
    wanted = QueryDict(mutable=True)
    for name, values in data.lists():
        if name != "after" and any(values):
            wanted.setlist(name, [value for value in values if value])
    return wanted


def next_query(data: QueryDict, cursor: str) -> str:
    """The query string of the page after this one, or "" when there is none."""
    if not cursor:
        return ""
    params = asked(data)
    params["after"] = cursor
    return params.urlencode()
