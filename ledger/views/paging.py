"""Pages of long lists.

Keyset pages for support's lists across every subject: ordered by (time, id), continued
from an opaque cursor naming the last row shown. No OFFSET and no count of the whole table:
a page costs the same on the millionth row as on the first.

Numbered pages for one subject's lists, which a person reads through and jumps about in
("page 3 of 12"): their OFFSET and count are bounded by what one subject holds.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connections
from django.db.models import Model, Q, QuerySet
from django.http import QueryDict


class BadCursor(ValueError):
    """A cursor this product did not give out (edited, truncated, or from another list)."""


class BadPage(ValueError):
    """A page number that is not a whole number from 1 (edited, or typed by hand)."""


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
    queryset: QuerySet[M],
    *,
    field: str,
    cursor: str,
    size: int,
    newest_first: bool,
    any_of: Sequence[Q] = (),
) -> Page[M]:
    """One page of ``queryset`` ordered by (``field``, pk), after the row ``cursor`` names,
    of the rows matching any of ``any_of`` when it is given.

    One query: a row more than the page is read to tell whether another page follows.
    """
    if cursor:
        at, pk = decode(cursor, queryset)
        # The bound alone is what an index on (field, pk) starts its scan from; the tie on
        # ``field`` is then broken by the pk.
        if newest_first:
            later = Q(**{f"{field}__lte": at}) & (
                Q(**{f"{field}__lt": at}) | Q(**{field: at, "pk__lt": pk})
            )
        else:
            later = Q(**{f"{field}__gte": at}) & (
                Q(**{f"{field}__gt": at}) | Q(**{field: at, "pk__gt": pk})
            )
        queryset = queryset.filter(later)
    order = [f"-{field}", "-pk"] if newest_first else [field, "pk"]
    if any_of:
        queryset = _matching_any(queryset, any_of, order, size + 1)
    rows = list(queryset.order_by(*order)[: size + 1])
    if len(rows) <= size:
        return Page(rows, "")
    last = rows[size - 1]
    return Page(rows[:size], encode(getattr(last, field), last.pk))


def _matching_any[M: Model](
    queryset: QuerySet[M], any_of: Sequence[Q], order: list[str], limit: int
) -> QuerySet[M]:
    """The rows of ``queryset`` matching any of ``any_of``.

    Where the database can, each condition finds its own first ``limit`` rows in the page's
    order, by its own index, and the page is read from their union: ORed in one WHERE, the
    conditions (on other tables, through joins) would have every row read to test them.
    Elsewhere (SQLite: no LIMIT inside a UNION), the plain OR.
    """
    if not connections[queryset.db].features.supports_slicing_ordering_in_compound:
        return queryset.filter(functools.reduce(operator.or_, any_of))
    firsts = [queryset.filter(q).order_by(*order).values("pk")[:limit] for q in any_of]
    return queryset.filter(pk__in=firsts[0].union(*firsts[1:]))


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


@dataclass(frozen=True)
class Numbered:
    """Where one numbered page is in its list: its ``number`` (from 1), of ``count`` pages
    holding ``total`` rows, ``size`` to a page."""

    number: int
    count: int
    total: int
    size: int

    @property
    def offset(self) -> int:
        return (self.number - 1) * self.size

    @property
    def previous(self) -> int | None:
        return self.number - 1 if self.number > 1 else None

    @property
    def next(self) -> int | None:
        return self.number + 1 if self.number < self.count else None


def page_number(text: str) -> int | None:
    """The page a ``page`` parameter asks for; None when none was asked for."""
    if not text:
        return None
    if not text.isdecimal() or int(text) < 1:
        raise BadPage(f"There is no page “{text[:20]}”: pages are numbered from 1.")
    return int(text)


def numbered(*, number: int, total: int, size: int) -> Numbered:
    """Page ``number`` of a list of ``total`` rows; one past the end is the last page, as
    a list shrinks between a link being made and followed (a deletion on another tab)."""
    count = max(1, -(-total // size))
    return Numbered(number=min(number, count), count=count, total=total, size=size)
