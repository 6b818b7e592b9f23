"""The audit log: every change by a person, an agent or the system, read from the history
tables of every tracked model and from the changes to people, as one list, newest first.

Each table is read on its own (filtered and ordered in SQL, with a LIMIT) and the pieces are
merged here, so a page costs a fixed number of queries per table however long the history
is: one for its rows, one for the rows they are compared with, and one per kind of object
the changes point at. The order is (when, kind, id), newest first; a cursor names the last
entry shown, and the next page starts after it, so entries written meanwhile never shift it.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from django.apps import apps
from django.db.models import Field, ForeignKey, Model, OuterRef, Q, QuerySet, Subquery
from django.urls import NoReverseMatch, reverse

from ledger.actions.people import Field as PersonField
from ledger.dates import day, when
from ledger.models import Agent, PersonChange, Run, Source, Subject

# What simple-history's ``history_type`` records, in the words the filter and the page use.
ACTIONS = {"+": "created", "~": "changed", "-": "deleted"}
# What a field was before the first history row of an object made without one.
UNRECORDED = "(not recorded)"
# People have no history rows: each of their changes is one field changed.
PERSON = "person"
# Columns that change with every save or say nothing a person decided: counters, derived
# copies, secrets' hashes, usage stamps. Shown, they would bury the real changes.
BOOKKEEPING = {"version", "normalized", "hash", "last_used_at", "updated_at", "status_changed_at"}
# How the objects a change points at are named, instead of by their bare id; one query per
# model a page's changes point at.
NAMED_BY: dict[type[Model], str] = {Subject: "ref", Agent: "name", Run: "ref", Source: "ref"}


class BadCursor(ValueError):
    """An "older" link this log did not give out (edited, truncated, or from another list)."""


@dataclass(frozen=True)
class Cursor:
    """The last entry a page showed: the next page holds what is older."""

    at: datetime
    kind: str
    id: int

    def encode(self) -> str:
        raw = json.dumps([self.at.isoformat(), self.kind, self.id]).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str) -> Cursor:
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
            at_text, kind, pk = json.loads(raw)
            at = datetime.fromisoformat(at_text)
        except (binascii.Error, ValueError, TypeError) as error:
            raise BadCursor("This “older” link is not one this page gave out.") from error
        if at.tzinfo is None or kind not in kinds() or type(pk) is not int:
            raise BadCursor("This “older” link is not one this page gave out.")
        return cls(at, kind, pk)


@dataclass(frozen=True)
class Filters:
    """What the log is narrowed to; empty values do not narrow."""

    actor: str = ""  # a history label: "user:dana", "agent:crm-bot"
    role: str = ""  # choices.ActorRole
    subject_id: int | None = None
    action: str = ""  # created, changed or deleted
    kind: str = ""  # a table's kind (``kinds()``)
    start: datetime | None = None  # included
    end: datetime | None = None  # excluded


@dataclass(frozen=True)
class Change:
    """One field of an object, before and after; ``before`` is empty when it was created."""

    field: str
    before: str
    after: str


@dataclass(frozen=True)
class Entry:
    at: datetime
    kind: str
    id: int
    kind_label: str
    actor: str
    role: str
    action: str  # created, changed or deleted: what the action filter matches
    action_words: str  # the same, or the field a person's change was to
    object_id: str
    object_words: str
    subject: str  # the reference of the subject it is about, or ""
    subject_link: str
    reason: str
    changes: tuple[Change, ...]
    # Every field set, not compared with an earlier row: a creation, or the first row kept
    # of an object made before its history was.
    listed: bool
    link: str

    @property
    def cursor(self) -> Cursor:
        return Cursor(self.at, self.kind, self.id)


@dataclass(frozen=True)
class Page:
    entries: list[Entry]
    next_cursor: str


# How a history row names its object, by kind; any other kind is named by its id.
DESCRIBED: dict[str, Callable[[Any], str]] = {
    "subject": lambda row: row.display_name or row.ref,
    "agent": lambda row: row.name,
    "agentkey": lambda row: f"key {row.prefix}…",
    "run": lambda row: row.ref,
    "source": lambda row: row.ref,
    "memory": lambda row: f"“{row.statement}”" if row.statement else "(erased)",
    "conflict": lambda row: f"slot {row.key}",
    "policy": lambda row: "the write policy",
    "ledgerentry": lambda row: row.fact or "(erased)",
    "journalentry": lambda row: row.action,
    "runnote": lambda row: f"note {row.key}",
    "retractionbatch": lambda row: f"batch deletion of {day(row.retracted_at)}",
    PERSON: lambda row: row.username,
}

# The page each kind of object has, and the field of its rows (a history row, or a change to a
# person) that its address needs. A kind with a page gets its link by being named here.
PAGES: dict[str, tuple[str, str]] = {
    "memory": ("memory-history", "id"),
    "subject": ("subject", "ref"),
    "run": ("run", "ref"),
    "retractionbatch": ("retraction", "id"),
    "agent": ("agent", "name"),
    "person": ("person", "username"),
    # The policy is one row: a change links to its version in the policy page's history.
    "policy": ("policy", ""),
}


def link_for(kind: str, row: Any) -> str:
    """The address of the object a change was to, for the kinds that have a page; else ""."""
    page = PAGES.get(kind)
    if page is None:
        return ""
    name, attribute = page
    if not attribute:
        return f"{reverse(name)}#version-{row.version}"
    try:
        return reverse(name, args=[getattr(row, attribute)])
    except NoReverseMatch:
        # A reference no address can hold (one written before references were checked).
        return ""


def _words(field: Field[Any, Any], value: Any, named: dict[tuple[type[Model], Any], str]) -> str:
    """A stored value as a person reads it: a choice's label, a date, an object's name."""
    if value is None or value == "":
        return ""
    if isinstance(field, ForeignKey):
        return named.get((field.related_model, value), str(value))
    if field.choices:
        return str(dict(field.flatchoices).get(value, value))
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, datetime):
        return when(value)
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


class Table:
    """One source of entries: a history table, or the changes to people."""

    kind: str
    label: str
    rows: type[Model]
    at_field: str
    id_field: str
    actor_field: str
    role_field: str

    def filtered(self, filters: Filters) -> QuerySet[Any] | None:
        """The table's rows that pass ``filters``; None when none can."""
        if filters.kind and filters.kind != self.kind:
            return None
        rows = self.rows._default_manager.all()
        if filters.actor:
            rows = rows.filter(**{self.actor_field: filters.actor})
        if filters.role:
            rows = rows.filter(**{self.role_field: filters.role})
        if filters.start:
            rows = rows.filter(**{f"{self.at_field}__gte": filters.start})
        if filters.end:
            rows = rows.filter(**{f"{self.at_field}__lt": filters.end})
        return rows

    def newest(self, filters: Filters, after: Cursor | None, limit: int) -> list[Any]:
        """Up to ``limit`` rows passing ``filters``, newest first, older than ``after``."""
        rows = self.filtered(filters)
        if rows is None:
            return []
        if after is not None:
            at, pk = self.at_field, self.id_field
            older = Q(**{f"{at}__lt": after.at})
            if self.kind < after.kind:
                older |= Q(**{at: after.at})
            elif self.kind == after.kind:
                older |= Q(**{at: after.at, f"{pk}__lt": after.id})
            rows = rows.filter(older)
        return list(rows.order_by(f"-{self.at_field}", f"-{self.id_field}")[:limit])

    def key(self, row: Any) -> tuple[datetime, str, int]:
        return (getattr(row, self.at_field), self.kind, getattr(row, self.id_field))

    def pointed_at(self, rows: list[Any]) -> Iterator[tuple[type[Model], Any]]:
        """The named objects these rows point at, to look their names up in bulk."""
        return iter(())

    def entries(self, rows: list[Any], named: dict[tuple[type[Model], Any], str]) -> list[Entry]:
        raise NotImplementedError


class HistoryTable(Table):
    """The history of one tracked model, as simple-history keeps it."""

    at_field, id_field = "history_date", "history_id"
    actor_field, role_field = "history_actor", "history_role"

    def __init__(self, model: type[Model]) -> None:
        self.kind = model._meta.model_name or ""
        self.label = str(model._meta.verbose_name)
        self.rows = model.history.model  # type: ignore[attr-defined]
        # The tracked object's id, copied onto each of its history rows.
        self.object_field = model._meta.pk.attname
        self.compared = [
            field
            for field in self.rows._meta.concrete_fields
            if not field.name.startswith("history_")
            and field.name not in BOOKKEEPING
            and field.attname != self.object_field
        ]

    def filtered(self, filters: Filters) -> QuerySet[Any] | None:
        rows = super().filtered(filters)
        if rows is None:
            return None
        if filters.subject_id is not None:
            rows = rows.filter(history_subject_id=filters.subject_id)
        if filters.action:
            code = next(code for code, words in ACTIONS.items() if words == filters.action)
            rows = rows.filter(history_type=code)
        return rows

    def pointed_at(self, rows: list[Any]) -> Iterator[tuple[type[Model], Any]]:
        for row in rows:
            if row.history_subject_id is not None:
                yield Subject, row.history_subject_id
            for field in self.compared:
                value = getattr(row, field.attname)
                if isinstance(field, ForeignKey) and field.related_model in NAMED_BY and value:
                    yield field.related_model, value

    def previous(self, rows: list[Any]) -> list[Any]:
        """The row before each of ``rows`` in its object's history, in one query: what each
        change is compared with (a creation has none)."""
        history = self.rows._default_manager
        earlier = (
            history.filter(**{self.object_field: OuterRef(self.object_field)})
            .filter(
                Q(history_date__lt=OuterRef("history_date"))
                | Q(history_date=OuterRef("history_date"), history_id__lt=OuterRef("history_id"))
            )
            .order_by("-history_date", "-history_id")
            .values("history_id")[:1]
        )
        wanted = (
            history.filter(history_id__in=[row.history_id for row in rows])
            .annotate(previous_id=Subquery(earlier))
            .values("previous_id")
        )
        return list(history.filter(history_id__in=wanted))

    def entries(self, rows: list[Any], named: dict[tuple[type[Model], Any], str]) -> list[Entry]:
        # A row's previous one is among these and the page itself: the latest older row of
        # the same object there is the one just before it.
        known = [*rows, *self.previous(rows)]
        by_object: dict[Any, list[Any]] = {}
        for row in known:
            by_object.setdefault(getattr(row, self.object_field), []).append(row)
        entries = []
        for row in rows:
            mine = self._order(row)
            older = [r for r in by_object[getattr(row, self.object_field)] if self._order(r) < mine]
            before = max(older, key=self._order) if older else None
            action = ACTIONS.get(row.history_type, row.history_type)
            # A subject's own entries are about itself: its name already says which.
            about = row.history_subject_id if self.kind != "subject" else None
            subject = named.get((Subject, about), "")
            entries.append(
                Entry(
                    at=row.history_date,
                    kind=self.kind,
                    id=row.history_id,
                    kind_label=self.label,
                    actor=row.history_actor,
                    role=row.history_role,
                    action=action,
                    action_words=action,
                    object_id=str(getattr(row, self.object_field)),
                    object_words=self._described(row),
                    subject=subject,
                    subject_link=link_for("subject", Subject(ref=subject)) if subject else "",
                    reason=row.history_change_reason or "",
                    changes=self._changes(before, row, named),
                    listed=before is None,
                    link=link_for(self.kind, row),
                )
            )
        return entries

    def _described(self, row: Any) -> str:
        describe = DESCRIBED.get(self.kind)
        return describe(row) if describe else str(getattr(row, self.object_field))

    @staticmethod
    def _order(row: Any) -> tuple[datetime, int]:
        return (row.history_date, row.history_id)

    def _changes(
        self, before: Any, after: Any, named: dict[tuple[type[Model], Any], str]
    ) -> tuple[Change, ...]:
        """The fields that differ from the row before; for a creation, every field set.

        A change with no row before it (an object made before its history was kept) lists
        every field set, with what it was before unknown.
        """
        unknown = "" if after.history_type == "+" else UNRECORDED
        found = []
        for field in self.compared:
            new = getattr(after, field.attname)
            if before is None:
                if new in (None, "", False, [], {}):
                    continue
                found.append(Change(_label(field), unknown, _words(field, new, named)))
            elif getattr(before, field.attname) != new:
                old = getattr(before, field.attname)
                found.append(
                    Change(_label(field), _words(field, old, named), _words(field, new, named))
                )
        return tuple(found)


def _label(field: Field[Any, Any]) -> str:
    name = str(field.verbose_name)
    return name[:1].upper() + name[1:]


class PersonTable(Table):
    """The changes to people (``PersonChange``): each is one field, before and after."""

    kind, label, rows = PERSON, "person", PersonChange
    at_field, id_field = "changed_at", "id"
    actor_field, role_field = "actor", "actor_role"

    def filtered(self, filters: Filters) -> QuerySet[Any] | None:
        # A person is no subject's, and is never deleted (only their access is ended).
        if filters.subject_id is not None or filters.action == "deleted":
            return None
        rows = super().filtered(filters)
        if rows is None or not filters.action:
            return rows
        if filters.action == "created":
            return rows.filter(field=PersonField.PERSON)
        return rows.exclude(field=PersonField.PERSON)

    def entries(self, rows: list[Any], named: dict[tuple[type[Model], Any], str]) -> list[Entry]:
        return [self._entry(row) for row in rows]

    def _entry(self, row: PersonChange) -> Entry:
        created = row.field == PersonField.PERSON
        field = row.field.replace("_", " ")
        return Entry(
            at=row.changed_at,
            kind=self.kind,
            id=row.id,
            kind_label=self.label,
            actor=row.actor,
            role=row.actor_role,
            action="created" if created else "changed",
            action_words="created" if created else field,
            object_id=str(row.person_id or ""),
            object_words=row.username,
            subject="",
            subject_link="",
            reason=row.reason,
            # A person's creation is its own entry; what they were given follows it.
            changes=() if created else (Change(field, row.before, row.after),),
            listed=False,
            link=link_for(self.kind, row),
        )


@cache
def tables() -> tuple[Table, ...]:
    """Every source of the log: each tracked model's history (whatever models are tracked
    now, so a new one joins the log by being tracked), then the changes to people."""
    tracked = [
        model for model in apps.get_app_config("ledger").get_models() if hasattr(model, "history")
    ]
    return (*(HistoryTable(model) for model in tracked), PersonTable())


def kinds() -> dict[str, str]:
    """Each kind of object in the log, and its name in words."""
    return {table.kind: table.label for table in tables()}


def subject_id_for(ref: str) -> int | None:
    """The subject a reference names, now or in its history (a subject's audit outlives it)."""
    found = Subject.objects.filter(ref=ref).values_list("pk", flat=True).first()
    if found is None:
        found = Subject.history.filter(ref=ref).values_list("id", flat=True).first()
    return found


def _names(wanted: Iterable[tuple[type[Model], Any]]) -> dict[tuple[type[Model], Any], str]:
    by_model: dict[type[Model], set[Any]] = {}
    for model, pk in wanted:
        by_model.setdefault(model, set()).add(pk)
    named: dict[tuple[type[Model], Any], str] = {}
    for model, pks in by_model.items():
        attribute = NAMED_BY[model]
        rows = model._default_manager.filter(pk__in=pks).order_by()
        for pk, name in rows.values_list("pk", attribute):
            named[(model, pk)] = name
    return named


def page(filters: Filters, *, after: Cursor | None = None, size: int) -> Page:
    """The ``size`` newest entries passing ``filters`` that are older than ``after``."""
    found: list[tuple[tuple[datetime, str, int], Table, Any]] = []
    for table in tables():
        found.extend((table.key(row), table, row) for row in table.newest(filters, after, size + 1))
    found.sort(key=lambda item: item[0], reverse=True)
    shown = found[:size]
    rows_of: dict[Table, list[Any]] = {}
    for _, table, row in shown:
        rows_of.setdefault(table, []).append(row)
    named = _names(pair for table, rows in rows_of.items() for pair in table.pointed_at(rows))
    entries = [entry for table, rows in rows_of.items() for entry in table.entries(rows, named)]
    entries.sort(key=lambda entry: (entry.at, entry.kind, entry.id), reverse=True)
    more = len(found) > size
    return Page(entries, entries[-1].cursor.encode() if more and entries else "")


def every_entry(filters: Filters, *, chunk: int) -> Iterator[Entry]:
    """Every entry passing ``filters``, newest first, read ``chunk`` at a time so that a
    long log is never held whole."""
    after: Cursor | None = None
    while True:
        batch = page(filters, after=after, size=chunk)
        yield from batch.entries
        if not batch.next_cursor:
            return
        after = batch.entries[-1].cursor
