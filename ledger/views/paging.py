"""Pages of long lists.

Keyset pages for support's lists across every subject: ordered by (a column, id), continued
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
from datetime import date, datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connections
from django.db.models import F, Field, Model, Q, QuerySet
from django.http import QueryDict


class BadCursor(ValueError):
    """A cursor this product did not give out (edited, truncated, or from another list)."""


class BadPage(ValueError):
    """A page number that is not a whole number from 1 (edited, or typed by hand)."""


@dataclass(frozen=True)
class Page[M: Model]:
    rows: list[M]
    next_cursor: str


def encode(field: str, value: Any, pk: Any) -> str:
    """The cursor after a row whose ``field`` holds ``value``: the field is named, so a cursor
    from another order of the same list is told apart."""
    shown = value.isoformat() if isinstance(value, datetime | date) else value
    raw = json.dumps([field, None if value is None else str(shown), str(pk)]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(cursor: str, queryset: QuerySet[Any], field: str) -> tuple[Any, Any]:
    """The (value, pk) a cursor names, each read as the column it is compared with."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        named, text, pk_text = json.loads(raw)
        if named != field or not (text is None or isinstance(text, str)):
            raise ValueError(named)
        value = None if text is None else _column(queryset, field).to_python(text)
        pk = queryset.model._meta.pk.to_python(pk_text)
    except (binascii.Error, ValueError, TypeError, ValidationError) as error:
        raise BadCursor("This “next page” link is not one this page gave out.") from error
    if isinstance(value, datetime) and value.tzinfo is None:
        raise BadCursor("This “next page” link is not one this page gave out.")
    return value, pk


def _column(queryset: QuerySet[Any], field: str) -> Field[Any, Any]:
    """The model field (or annotation's output) ``field`` names in ``queryset``."""
    output: Field[Any, Any] = queryset.query.chain().resolve_ref(field).output_field
    return output


def _value(row: Model, field: str) -> Any:
    """``row``'s value of ``field``, following ``__`` through related rows."""
    value: Any = row
    for name in field.split("__"):
        value = None if value is None else getattr(value, name)
    return value


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
    of the rows matching any of ``any_of`` when it is given. ``field`` may be any column
    or annotation, through relations too (``subject__ref``); blanks (NULL) come last going
    up and first going down, as PostgreSQL's own index order has them.

    One query: a row more than the page is read to tell whether another page follows.
    """
    nullable = bool(getattr(_column(queryset, field), "null", False))
    if cursor:
        value, pk = decode(cursor, queryset, field)
        queryset = queryset.filter(
            _after(field, value, pk, newest_first=newest_first, nullable=nullable)
        )
    order: list[Any]
    if nullable:
        column = F(field)
        key = column.desc(nulls_first=True) if newest_first else column.asc(nulls_last=True)
        order = [key, "-pk" if newest_first else "pk"]
    else:
        order = [f"-{field}", "-pk"] if newest_first else [field, "pk"]
    if any_of:
        queryset = _matching_any(queryset, any_of, order, size + 1)
    rows = list(queryset.order_by(*order)[: size + 1])
    if len(rows) <= size:
        return Page(rows, "")
    last = rows[size - 1]
    return Page(rows[:size], encode(field, _value(last, field), last.pk))


def _after(field: str, value: Any, pk: Any, *, newest_first: bool, nullable: bool) -> Q:
    """The rows after (``value``, ``pk``) in the page's order."""
    blank = Q(**{f"{field}__isnull": True})
    if value is None:
        if newest_first:
            return (blank & Q(pk__lt=pk)) | ~blank
        return blank & Q(pk__gt=pk)
    # The bound alone is what an index on (field, pk) starts its scan from; the tie on
    # ``field`` is then broken by the pk.
    if newest_first:
        return Q(**{f"{field}__lte": value}) & (
            Q(**{f"{field}__lt": value}) | Q(**{field: value, "pk__lt": pk})
        )
    later = Q(**{f"{field}__gte": value}) & (
        Q(**{f"{field}__gt": value}) | Q(**{field: value, "pk__gt": pk})
    )
    return later | blank if nullable else later


def _matching_any[M: Model](
    queryset: QuerySet[M], any_of: Sequence[Q], order: list[Any], limit: int
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
