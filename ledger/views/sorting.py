"""Staff tables sorted by a column the person clicks, kept in the address (``?sort=-opened``).

Each list names the columns it may be sorted by (``Sortable``); the page then comes from
``Sort.page``, a keyset page on that column and the pk, so sorting by any column costs what
the default order costs, on the millionth row as on the first. The column headers come from
``{% sort_header sort "opened" "Opened" %}`` (``ledger/templatetags/sorting.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from django.db.models import Model, Q, QuerySet
from django.http import QueryDict

from ledger.views.paging import Page, asked, keyset_page


class BadSort(ValueError):
    """A ``sort`` parameter naming a column the list is not sorted by (edited by hand)."""


@dataclass(frozen=True)
class Sortable:
    """The columns a list may be sorted by, each a name in the address → the field or
    annotation it orders by (``{"opened": "created_at", "subject": "subject__ref"}``), and
    the order the list has when none is asked for (``"-opened"``: newest first)."""

    columns: Mapping[str, str]
    default: str

    def chosen(self, data: QueryDict) -> Sort:
        """The order ``data`` asks for (its ``sort``), or the default one; BadSort (its text
        names the column and the ones there are) for a column the list does not offer."""
        text = data.get("sort", "").strip() or self.default
        name = text.removeprefix("-")
        if name not in self.columns:
            offered = ", ".join(f"“{column}”" for column in self.columns)
            raise BadSort(f"This list cannot be sorted by “{name[:50]}”: only by {offered}.")
        wanted = asked(data)
        wanted.pop("sort", None)
        return Sort(
            name=name,
            field=self.columns[name],
            descending=text.startswith("-"),
            default=self.default,
            kept=wanted,
        )


@dataclass(frozen=True)
class Sort:
    """One order of a list: by column ``name`` (the model ``field``), and what else the list
    was asked for (``kept``), which a header's link carries over."""

    name: str
    field: str
    descending: bool
    default: str
    kept: QueryDict

    def page[M: Model](
        self, queryset: QuerySet[M], *, cursor: str, size: int, any_of: Sequence[Q] = ()
    ) -> Page[M]:
        return keyset_page(
            queryset,
            field=self.field,
            cursor=cursor,
            size=size,
            newest_first=self.descending,
            any_of=any_of,
        )

    def aria(self, name: str) -> str:
        """The ``aria-sort`` of column ``name``'s header: "" when the list is not sorted by it."""
        if name != self.name:
            return ""
        return "descending" if self.descending else "ascending"

    def link(self, name: str) -> str:
        """The query string sorting by column ``name``: the other way round when the list is
        sorted by it already, going up otherwise. The first page, with the filters kept."""
        wanted = self.kept.copy()
        text = f"-{name}" if name == self.name and not self.descending else name
        if text != self.default:
            wanted["sort"] = text
        return wanted.urlencode()
