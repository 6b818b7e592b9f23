"""The audit log: every change by a person, an agent or the system, read from the history
tables of every tracked model and from the changes to people, as one list, newest first.

A page is two queries however many tables, kinds or filters there are: one merges every
table (each filtered and ordered by its own index, with a LIMIT) in SQL, each row coming as
JSON beside the row it is compared with; the other names what the rows point at. The order
is (when, kind, id), newest first; a cursor names the last entry shown, and the next page
starts after it, so entries written meanwhile never shift it.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any, cast

from axes.models import AccessFailureLog
from django.apps import apps
from django.db import connection
from django.db.models import (
    Case,
    Exists,
    F,
    Field,
    ForeignKey,
    JSONField,
    Model,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    TextField,
    Value,
    When,
)
from django.db.models.expressions import BaseExpression, CombinedExpression, RawSQL
from django.db.models.functions import Cast, JSONObject
from django.urls import reverse
from django.utils import timezone

from ledger.choices import (
    ActorRole,
    PersonField,
)
from ledger.models import (
    LockoutLift,
    PersonChange,
    Policy,
    Subject,
)
from ledger.reads import lockouts
from ledger.reads.audit_words import (
    DESCRIBED,
    NAMED_BY,
    PERSON,
    SAID,
    SUMMARIES,
    link_for,
    words_for,
)
from ledger.words import reason_words

# What simple-history's ``history_type`` records, in the words the filter and the page use.
ACTIONS = {"+": "created", "~": "changed", "-": "deleted"}
# What a field was before the first history row of an object made without one.
UNRECORDED = "(not recorded)"
# Sign-in lockouts and their lifts have no history rows either: kinds of their own.
LOCKOUT = "lockout"
LOCKOUT_LIFT = "lockout_lift"
# Columns that change with every save or say nothing a person decided: counters, derived
# copies, secrets' hashes, usage stamps. Shown, they would bury the real changes.
BOOKKEEPING = {"version", "normalized", "hash", "updated_at", "status_changed_at", "changed_at"}
# The rows ``create_person`` writes beside a person's own ("person") row, in the same
# transaction: what they were given when they were made, so part of their creation.
CREATED_WITH = (
    PersonField.NAME,
    PersonField.ROLE,
    PersonField.EMAIL,
    PersonField.PASSWORD,
    PersonField.SUBJECT,
)
# How soon after the "person" row the rest of a creation's rows come: they are written in
# its transaction, moments apart, and a later edit takes a new request at the least.
CREATION_WINDOW = timedelta(seconds=5)


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
    # The values as the export writes them where they differ from the words: a moment in
    # ISO 8601, as the export's ``when`` column.
    before_data: str | None = None
    after_data: str | None = None

    @property
    def exported(self) -> tuple[str, str]:
        before = self.before if self.before_data is None else self.before_data
        return before, self.after if self.after_data is None else self.after_data


@dataclass(frozen=True)
class Known:
    """What a page's changes point at, looked up in one query per model: each object's name,
    and each subject's reference (the address of its page, and the export's ``subject``)."""

    names: dict[tuple[type[Model], Any], str]
    subject_refs: dict[Any, str]


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
    subject_name: str  # its name, as the pages say it (``Subject.name``)
    subject_link: str
    reason: str
    changes: tuple[Change, ...]
    # Every field set, not compared with an earlier row: a creation, or the first row kept
    # of an object made before its history was.
    listed: bool
    link: str
    # What a creation made, in a line, before the list of every field it set ("" for none).
    summary: str = ""

    @property
    def cursor(self) -> Cursor:
        return Cursor(self.at, self.kind, self.id)


@dataclass(frozen=True)
class Page:
    entries: list[Entry]
    next_cursor: str


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

    # What a row's JSON holds beside its model's columns: annotations ``entries`` reads.
    extra: tuple[str, ...] = ()

    def following(
        self,
        filters: Filters,
        after: Cursor | None,
        limit: int,
        *,
        position: int,
        oldest_first: bool = False,
    ) -> QuerySet[Any] | None:
        """Up to ``limit`` rows passing ``filters`` that come after ``after`` (newest first,
        older than it; or ``oldest_first``, newer than it), as this table's part of the page's
        one query: when, ``position`` (the kind's place in the order of kinds), id, the row
        as JSON and the row it is compared with. None when no row can pass."""
        rows = self.filtered(filters)
        if rows is None:
            return None
        at, pk = self.at_field, self.id_field
        if after is not None:
            # Past the cursor in the list's order, (when, kind, id) compared in turn.
            past = "gt" if oldest_first else "lt"
            kind_past = self.kind > after.kind if oldest_first else self.kind < after.kind
            beyond = Q(**{f"{at}__{past}": after.at})
            if kind_past:
                beyond |= Q(**{at: after.at})
            elif self.kind == after.kind:
                beyond |= Q(**{at: after.at, f"{pk}__{past}": after.id})
            # The bound alone is what the table's (filter, time, id) index starts from: a
            # following page then reads as little as the first one.
            bound = "gte" if oldest_first else "lte"
            rows = rows.filter(Q(**{f"{at}__{bound}": after.at}) & beyond)
        found = rows.values(
            entry_at=F(at),
            entry_kind=Value(position),
            entry_id=F(pk),
            entry_row=_as_json(self.rows, self.extra),
            entry_before=self.before(),
        )
        if not connection.features.supports_slicing_ordering_in_compound:
            # SQLite orders the merged rows only: each table is read whole, as a small
            # install's are.
            return found.order_by()
        sign = "" if oldest_first else "-"
        return found.order_by(f"{sign}entry_at", f"{sign}entry_id")[:limit]

    def before(self) -> BaseExpression:
        """The row each row is compared with, as JSON: none by default."""
        return Value(None, output_field=JSONField())

    def decoded(self, data: dict[str, Any]) -> Any:
        """A row from its JSON, as the ORM would have read it."""
        row = self.rows.from_db(
            None,
            [field.attname for field in self.rows._meta.concrete_fields],
            [_python(field, data[_column(field)]) for field in self.rows._meta.concrete_fields],
        )
        for name in self.extra:
            setattr(row, name, data[name])
        return row

    def pointed_at(self, rows: list[Any]) -> Iterator[tuple[type[Model], Any]]:
        """The named objects these rows point at, to look their names up in bulk."""
        return iter(())

    def entries(self, rows: list[tuple[Any, Any]], known: Known) -> list[Entry]:
        """``rows`` as entries, each with the row it is compared with (or None)."""
        raise NotImplementedError


def _as_json(model: type[Model], extra: tuple[str, ...] = ()) -> BaseExpression:
    """Every column of a row of ``model`` (and the annotations ``extra``), by column name, as
    one JSON object: how rows of tables with different columns come back in one query."""
    more = JSONObject(**{name: F(name) for name in extra})
    if connection.vendor == "postgresql":
        # The whole row at once: named column by column, the 18 tables' rows take the ORM
        # longer to build and compile than PostgreSQL takes to run the query.
        whole = RawSQL(f"to_jsonb({_quoted(model._meta.db_table)})", (), JSONField())
        return CombinedExpression(whole, "||", more, JSONField()) if extra else whole
    columns = {_column(field): F(field.attname) for field in model._meta.concrete_fields}
    return JSONObject(**columns, **{name: F(name) for name in extra})


def _quoted(name: str) -> str:
    return connection.ops.quote_name(name)


def _column(field: Field[Any, Any]) -> str:
    # Only a many-to-many field has no column, and a table's concrete fields are none.
    return cast(str, field.column)


def _python(field: Field[Any, Any], value: Any) -> Any:
    """A column's value as JSON carried it, as the ORM gives it (a moment, a UUID …)."""
    if value is None or isinstance(field, JSONField):
        return value
    found = field.to_python(value)
    if isinstance(found, datetime) and timezone.is_naive(found):
        # SQLite keeps a moment as text in UTC, without its offset.
        return timezone.make_aware(found, UTC)
    return found


class HistoryTable(Table):
    """The history of one tracked model, as simple-history keeps it."""

    at_field, id_field = "history_date", "history_id"
    actor_field, role_field = "history_actor", "history_role"

    def __init__(self, model: type[Model]) -> None:
        self.kind = model._meta.model_name or ""
        self.label = str(model._meta.verbose_name)
        self.model = model
        self.rows = model.history.model  # type: ignore[attr-defined]
        # The tracked object's id, copied onto each of its history rows.
        self.object_field = model._meta.pk.attname
        self.object_column = _column(model._meta.pk)
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

    def before(self) -> BaseExpression:
        """The row before each in its object's history, as JSON: what a change is compared
        with (a creation has none). Read for the page's rows only, each from the object's
        index."""
        if connection.vendor == "postgresql":
            # As ``_as_json``, the whole row: the ORM's subquery would name every column.
            table, pk = _quoted(self.rows._meta.db_table), _quoted(self.object_column)
            return RawSQL(
                f"(SELECT to_jsonb(earlier) FROM {table} earlier WHERE earlier.{pk} = {table}.{pk}"
                f" AND (earlier.history_date, earlier.history_id)"
                f" < ({table}.history_date, {table}.history_id)"
                " ORDER BY earlier.history_date DESC, earlier.history_id DESC LIMIT 1)",
                (),
                JSONField(),
            )
        earlier = (
            self.rows._default_manager.filter(**{self.object_field: OuterRef(self.object_field)})
            .filter(
                Q(history_date__lt=OuterRef("history_date"))
                | Q(history_date=OuterRef("history_date"), history_id__lt=OuterRef("history_id"))
            )
            .order_by("-history_date", "-history_id")
            .values(row=_as_json(self.rows))[:1]
        )
        return Subquery(earlier, output_field=JSONField())

    def entries(self, rows: list[tuple[Any, Any]], known: Known) -> list[Entry]:
        entries = []
        for row, previous in rows:
            before = previous if previous is not None else self._first_compared_with()
            action = ACTIONS.get(row.history_type, row.history_type)
            # A subject's own entries are about itself: its name already says which.
            about = row.history_subject_id if self.kind != "subject" else None
            subject = known.subject_refs.get(about, "")
            summary = SUMMARIES.get(self.kind) if row.history_type == "+" else None
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
                    subject_name=known.names.get((Subject, about), subject),
                    subject_link=link_for("subject", Subject(ref=subject)) if subject else "",
                    reason=reason_words(row.history_change_reason or ""),
                    changes=self._changes(before, row, known.names),
                    listed=before is None,
                    link=link_for(self.kind, row),
                    summary=summary(row) if summary else "",
                )
            )
        return entries

    def _first_compared_with(self) -> Any:
        """What an object's first history row is compared with: nothing (every field it
        set is listed), but for the policy, the settings memoryadmin ships with (version 1,
        the row a migration made, which has no history of its own) as its page says."""
        return Policy(pk=1) if self.model is Policy else None

    def _described(self, row: Any) -> str:
        describe = DESCRIBED.get(self.kind)
        return describe(row) if describe else str(getattr(row, self.object_field))

    def _changes(
        self, before: Any, after: Any, names: dict[tuple[type[Model], Any], str]
    ) -> tuple[Change, ...]:
        """The fields that differ from the row before; for a creation, every field set.

        A change with no row before it (an object made before its history was kept) lists
        every field set, with what it was before unknown.
        """
        unknown = "" if after.history_type == "+" else UNRECORDED
        found = []
        for field in self.compared:
            new = getattr(after, field.attname)
            label = self._label(field)
            if before is None:
                if new in (None, "", False, [], {}):
                    continue
                words, data = self._value(field, after, names)
                found.append(Change(label, unknown, words, None, data))
            elif getattr(before, field.attname) != new:
                old_words, old_data = self._value(field, before, names)
                words, data = self._value(field, after, names)
                found.append(Change(label, old_words, words, old_data, data))
        return tuple(found)

    def _label(self, field: Field[Any, Any]) -> str:
        wording = SAID.get((self.kind, field.attname))
        if wording is not None:
            return wording.label
        name = str(field.verbose_name)
        return name[:1].upper() + name[1:]

    def _value(
        self, field: Field[Any, Any], row: Any, names: dict[tuple[type[Model], Any], str]
    ) -> tuple[str, str | None]:
        """A field's value on ``row`` in words, and as the export writes it when that
        differs (None when it does not)."""
        value = getattr(row, field.attname)
        wording = SAID.get((self.kind, field.attname))
        if wording is not None:
            return wording.words(row, value), None
        words = words_for(field, value, names)
        return words, value.isoformat() if isinstance(value, datetime) else None


class PersonTable(Table):
    """The changes to people (``PersonChange``): each is one field, before and after."""

    kind, label, rows = PERSON, "person", PersonChange
    at_field, id_field = "changed_at", "id"
    actor_field, role_field = "actor", "actor_role"
    extra = ("in_creation",)

    def filtered(self, filters: Filters) -> QuerySet[Any] | None:
        # A person is no subject's, and is never deleted (only their access is ended).
        if filters.subject_id is not None or filters.action == "deleted":
            return None
        found = super().filtered(filters)
        if found is None:
            return None
        rows: QuerySet[Any] = found.annotate(in_creation=self._in_creation())
        if filters.action:
            rows = rows.filter(in_creation=filters.action == "created")
        return rows

    @staticmethod
    def _in_creation() -> Case:
        """Whether a row is of a person's creation: their own row, or one of what they were
        given then (``CREATED_WITH``, from nothing), written with it: after it, by the same
        actor for the same reason, within ``CREATION_WINDOW``."""
        creation = PersonChange.objects.filter(
            username=OuterRef("username"),
            field=PersonField.PERSON,
            actor=OuterRef("actor"),
            reason=OuterRef("reason"),
            id__lt=OuterRef("id"),
            changed_at__gte=OuterRef("changed_at") - CREATION_WINDOW,
        )
        given = Q(field__in=CREATED_WITH, before="") & Exists(creation)
        return Case(
            When(Q(field=PersonField.PERSON) | given, then=Value(True)),
            default=Value(False),
        )

    def entries(self, rows: list[tuple[Any, Any]], known: Known) -> list[Entry]:
        return [self._entry(row) for row, _ in rows]

    def _entry(self, row: Any) -> Entry:
        created = row.in_creation
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
            subject_name="",
            subject_link="",
            reason=row.reason,
            # A person's creation is its own entry; what they were given follows it.
            changes=()
            if row.field == PersonField.PERSON
            else (Change(field, row.before, row.after),),
            listed=False,
            link=link_for(self.kind, row),
        )


class LockoutTable(Table):
    """Sign-in lockouts (django-axes' failure log): the failed sign-in that locked a username
    or an address out, with who was tried from where. Each refused try after it is in the
    same log, but would bury the rest of the audit; the lockout is one entry."""

    kind, label, rows = LOCKOUT, "sign-in lockout", AccessFailureLog
    at_field, id_field = "attempt_time", "id"
    # Nobody is named as its actor: the sign-in limits lock, as the system.
    actor_field, role_field = "", ""

    def filtered(self, filters: Filters) -> QuerySet[Any] | None:
        if filters.kind and filters.kind != self.kind:
            return None
        if filters.subject_id is not None or filters.actor or filters.action not in ("", "created"):
            return None
        if filters.role and filters.role != ActorRole.SYSTEM:
            return None
        before = AccessFailureLog.objects.filter(
            username=OuterRef("username"), ip_address=OuterRef("ip_address"), id__lt=OuterRef("id")
        ).order_by("-id")
        rows: QuerySet[Any] = AccessFailureLog.objects.alias(
            was_locked=Subquery(before.values("locked_out")[:1])
        ).filter(Q(was_locked=False) | Q(was_locked__isnull=True), locked_out=True)
        if filters.start:
            rows = rows.filter(attempt_time__gte=filters.start)
        if filters.end:
            rows = rows.filter(attempt_time__lt=filters.end)
        return rows

    def entries(self, rows: list[tuple[Any, Any]], known: Known) -> list[Entry]:
        return [self._entry(row) for row, _ in rows]

    def _entry(self, row: Any) -> Entry:
        return Entry(
            at=row.attempt_time,
            kind=self.kind,
            id=row.id,
            kind_label=self.label,
            actor="system:sign-in limits",
            role=ActorRole.SYSTEM,
            action="created",
            action_words="locked out",
            object_id=row.username or "",
            object_words=f"{row.username or '(no username)'} from {row.ip_address}",
            subject="",
            subject_name="",
            subject_link="",
            # The first refused try of a name from an address: the one that locked it out, or a
            # try (even with the right password) while the name or the address was locked.
            reason="Sign-in refused: too many failed sign-ins for this account or this address.",
            changes=(),
            listed=False,
            link="",
        )


class LockoutLiftTable(Table):
    """Sign-in lockouts an admin lifted early (``LockoutLift``): of whom or of which
    address, what the lockout was, and who lifted it and why."""

    kind, label, rows = LOCKOUT_LIFT, "sign-in lockout lift", LockoutLift
    at_field, id_field = "lifted_at", "id"
    actor_field, role_field = "actor", "actor_role"

    def filtered(self, filters: Filters) -> QuerySet[Any] | None:
        # The lockout ends: to the filter, the lockout's deletion.
        if filters.subject_id is not None or filters.action not in ("", "deleted"):
            return None
        return super().filtered(filters)

    def entries(self, rows: list[tuple[Any, Any]], known: Known) -> list[Entry]:
        return [self._entry(row) for row, _ in rows]

    def _entry(self, row: Any) -> Entry:
        lockout = lockouts.Lockout(
            row.username, row.ip_address or "", row.failures, row.locked_until
        )
        return Entry(
            at=row.lifted_at,
            kind=self.kind,
            id=row.id,
            kind_label=self.label,
            actor=row.actor,
            role=row.actor_role,
            action="deleted",
            action_words="sign-in lockout lifted",
            object_id=row.username or row.ip_address,
            object_words=row.username or f"the address {row.ip_address}",
            subject="",
            subject_name="",
            subject_link="",
            reason=row.reason,
            changes=(Change("sign-in", lockout.words, "lifted: may sign in again"),),
            listed=False,
            link=reverse("person", args=[row.username]) if row.username else "",
        )


@cache
def tables() -> tuple[Table, ...]:
    """Every source of the log: each tracked model's history (whatever models are tracked
    now, so a new one joins the log by being tracked), then the changes to people."""
    tracked = [
        model for model in apps.get_app_config("ledger").get_models() if hasattr(model, "history")
    ]
    return (
        *(HistoryTable(model) for model in tracked),
        PersonTable(),
        LockoutTable(),
        LockoutLiftTable(),
    )


def kinds() -> dict[str, str]:
    """Each kind of object in the log, and its name in words."""
    return {table.kind: table.label for table in tables()}


def subject_id_for(ref: str) -> int | None:
    """The subject a reference names, now or in its history (a subject's audit outlives it)."""
    found = Subject.objects.filter(ref=ref).values_list("pk", flat=True).first()
    if found is None:
        found = Subject.history.filter(ref=ref).values_list("id", flat=True).first()
    return found


def _known(wanted: Iterable[tuple[type[Model], Any]]) -> Known:
    """The names of ``wanted``, in one query over every model among them."""
    by_model: dict[type[Model], set[Any]] = {}
    for model, pk in wanted:
        by_model.setdefault(model, set()).add(pk)
    known = Known(names={}, subject_refs={})
    if not by_model:
        return known
    models = list(by_model)
    reads = []
    for position, model in enumerate(models):
        columns, _ = NAMED_BY[model]
        # A subject's reference is read with its name: its page's address needs it.
        read = {"ref", *columns} if model is Subject else set(columns)
        reads.append(
            model._default_manager.filter(pk__in=by_model[model])
            .order_by()
            .values(
                named_by=Value(position),
                named_pk=Cast("pk", TextField()),
                named=JSONObject(**{column: F(column) for column in read}),
            )
        )
    for found in reads[0].union(*reads[1:], all=True).order_by():
        model = models[found["named_by"]]
        pk = model._meta.pk.to_python(found["named_pk"])
        columns, name = NAMED_BY[model]
        values = found["named"]
        if model is Subject:
            known.subject_refs[pk] = values["ref"]
        known.names[(model, pk)] = name(*(values[column] for column in columns))
    return known


def page(
    filters: Filters, *, after: Cursor | None = None, size: int, oldest_first: bool = False
) -> Page:
    """The ``size`` newest entries passing ``filters`` that are older than ``after`` (or
    ``oldest_first``, the oldest that are newer)."""
    # The kinds are ordered by their place in Python's order of their names, the order the
    # cursor compares them in, whatever the database's collation would say.
    ordered = sorted(tables(), key=lambda table: table.kind)
    parts = [
        part
        for position, table in enumerate(ordered)
        if (
            part := table.following(
                filters, after, size + 1, position=position, oldest_first=oldest_first
            )
        )
        is not None
    ]
    if not parts:
        return Page([], "")
    sign = "" if oldest_first else "-"
    merged = parts[0].union(*parts[1:], all=True)
    if not merged.query.is_sliced:
        # (A table read alone is already in the log's order and cut to the page.)
        merged = merged.order_by(f"{sign}entry_at", f"{sign}entry_kind", f"{sign}entry_id")
    found = list(merged[: size + 1])
    rows_of: dict[Table, list[tuple[Any, Any]]] = {}
    for item in found[:size]:
        table = ordered[item["entry_kind"]]
        before = item["entry_before"]
        rows_of.setdefault(table, []).append(
            (table.decoded(item["entry_row"]), None if before is None else table.decoded(before))
        )
    # What the rows before point at is named too: a value a change replaced.
    known = _known(
        pair
        for table, rows in rows_of.items()
        for row, before in rows
        for pair in table.pointed_at([row] if before is None else [row, before])
    )
    entries = [entry for table, rows in rows_of.items() for entry in table.entries(rows, known)]
    entries.sort(key=lambda entry: (entry.at, entry.kind, entry.id), reverse=not oldest_first)
    more = len(found) > size
    return Page(entries, entries[-1].cursor.encode() if more and entries else "")


def every_entry(filters: Filters, *, chunk: int, oldest_first: bool = False) -> Iterator[Entry]:
    """Every entry passing ``filters``, newest first (or ``oldest_first``), read ``chunk``
    at a time so that a long log is never held whole."""
    after: Cursor | None = None
    while True:
        batch = page(filters, after=after, size=chunk, oldest_first=oldest_first)
        yield from batch.entries
        if not batch.next_cursor:
            return
        after = batch.entries[-1].cursor


def kinds_of_tables() -> dict[str, str]:
    """The kind of entry each table's rows are, by the table's name: how a verification's
    failures, named by table and row, find their entries."""
    return {table.rows._meta.db_table: table.kind for table in tables()}
