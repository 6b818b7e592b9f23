"""Live rows changed behind the application's back: every row of a tracked model equals
its newest history version, since the application writes both in one transaction.

The chain and the MACs cover history; a memory's statement changed in the live table with
SQL, or an agent's scopes, leaves history as it was and is served all the same. So each
live row is compared, field by field (the fields history tracks), with its newest version:
the history row with the highest id, the last one written (a version's date may run behind
an earlier one's when clocks differ; ids do not, since a row's writers take its lock in
turn). A live row with no history, whose newest version records its deletion, or gone while
its history says it exists, is named too. The one row a migration makes (the policy) has no
history until it is first changed: it passes while it holds what the migration wrote, and is
named, with the fields that differ, once it does not.

Two things differ legitimately and are allowed: a link Django clears when the row it points
at is deleted (``on_delete=SET_NULL``) is null in the live row while history keeps the old
id, as long as that row is indeed gone; and columns history does not track (a key's last
use) are not compared.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.apps import apps
from django.db import connection, models

# Rows named per model: beyond it, counted.
NAMED = 20
# Versions the Audit page can mark per model.
MARKED = 500


@dataclass
class LiveCheck:
    """One tracked model's live rows that are not what their history says."""

    model: type[models.Model]
    problems: list[str] = field(default_factory=list)
    bad: int = 0
    # (history row id, problem) of the newest versions a live row contradicts, for the
    # Audit page's marks; a live row with no history has no version to mark.
    marks: list[tuple[int, str]] = field(default_factory=list)

    def add(self, problem: str, version: int | None = None, mark: str = "") -> None:
        self.bad += 1
        if len(self.problems) < NAMED:
            self.problems.append(problem)
        if version is not None and len(self.marks) < MARKED:
            self.marks.append((version, mark))

    @property
    def table(self) -> str:
        """The history table its marks are rows of."""
        return str(self.model.history.model._meta.db_table)  # type: ignore[attr-defined]


def check_live_rows() -> list[LiveCheck]:
    return [_check(model) for model in tracked_models()]


def tracked_models() -> Iterator[type[models.Model]]:
    for model in apps.get_app_config("ledger").get_models():
        if hasattr(model._meta, "simple_history_manager_attribute"):
            yield model


def _check(model: type[models.Model]) -> LiveCheck:
    check = LiveCheck(model)
    history: type[models.Model] = model.history.model  # type: ignore[attr-defined]
    name = model._meta.verbose_name
    compared = [f for f in history.tracked_fields if not f.primary_key]  # type: ignore[attr-defined]
    unrecorded = []
    with connection.cursor() as cursor:
        cursor.execute(_differing(model, history, compared))
        for raw, history_id, kind, *flags in cursor.fetchall():
            pk = model._meta.pk.to_python(raw)
            if history_id is None:
                unrecorded.append(pk)
            elif kind == "-":
                check.add(
                    f"{name} {pk}: its newest history version (row {history_id}) records its "
                    "deletion, yet the row is there",
                    history_id,
                    f"it records the {name}'s deletion, yet the live row is there",
                )
            else:
                differ = ", ".join(
                    f.name for f, differs in zip(compared, flags, strict=True) if differs
                )
                check.add(
                    f"{name} {pk}: {differ} differ from its newest history version (row "
                    f"{history_id}): changed behind the application's back",
                    history_id,
                    f"the live {name}'s {differ} differ from this version: changed behind "
                    "the application's back",
                )
        cursor.execute(_vanished(model, history))
        for raw, history_id in cursor.fetchall():
            pk = model._meta.pk.to_python(raw)
            check.add(
                f"{name} {pk}: the row is gone, but its newest history version (row "
                f"{history_id}) records no deletion: deleted behind the application's back",
                history_id,
                f"the live {name} is gone, but this version records no deletion: deleted "
                "behind the application's back",
            )
    for pk, unlike in _without_history(model, compared, unrecorded):
        if unlike is None:
            check.add(f"{name} {pk}: it has no history: inserted behind the application's back")
        elif unlike:
            check.add(
                f"{name} {pk}: it has no history, and {', '.join(unlike)} differ from what the "
                "migration that made it wrote: changed behind the application's back"
            )
    return check


# Rows a migration makes, which writes no history: they have none until someone first
# changes them through the application, and until then hold what memoryadmin ships (each
# field's default, as ``ledger/migrations/0002_roles_and_policy.py`` writes the policy).
MADE_BY_MIGRATIONS: dict[str, set[Any]] = {"Policy": {1}}


def _without_history(
    model: type[models.Model], compared: list[models.Field[Any, Any]], pks: list[Any]
) -> list[tuple[Any, list[str] | None]]:
    """Each row without history, with the fields in which it is not as the migration that
    made it wrote it (empty: as made, so it passes); None for a row no migration makes."""
    shipped = MADE_BY_MIGRATIONS.get(model.__name__, set())
    found: list[tuple[Any, list[str] | None]] = [(pk, None) for pk in pks if pk not in shipped]
    made = [pk for pk in pks if pk in shipped]
    if made:
        names = [f.attname for f in compared]
        for row in model._default_manager.filter(pk__in=made).values("pk", *names):
            as_made = model(pk=row["pk"])
            found.append(
                (row["pk"], [name for name in names if row[name] != getattr(as_made, name)])
            )
    return found


def _differing(
    model: type[models.Model], history: type[models.Model], compared: list[models.Field[Any, Any]]
) -> str:
    qn = connection.ops.quote_name
    pk = _column(model._meta.pk)
    table, versions = qn(model._meta.db_table), qn(history._meta.db_table)
    flags = [_differs(f, _column(history._meta.get_field(f.name))) for f in compared]
    # Each object's newest version found once for the whole table (one grouped pass), then
    # joined by id: a join on a correlated MAX() is evaluated per pair of rows, which takes
    # minutes at 100,000 rows.
    return (
        f"SELECT t.{pk}, h.history_id, h.history_type, {', '.join(flags)}"
        f" FROM {table} t LEFT JOIN (SELECT {pk} AS object_id, MAX(history_id) AS newest"
        f" FROM {versions} GROUP BY {pk}) n ON n.object_id = t.{pk}"
        f" LEFT JOIN {versions} h ON h.history_id = n.newest"
        f" WHERE h.history_id IS NULL OR h.history_type = '-' OR {' OR '.join(flags)}"
    )


def _differs(live: models.Field[Any, Any], column: str) -> str:
    """The SQL that is true when the live row's ``live`` differs from the version's
    ``column``, nulls included."""
    qn = connection.ops.quote_name
    distinct = "IS DISTINCT FROM" if connection.vendor == "postgresql" else "IS NOT"
    mine = f"t.{_column(live)}"
    differs = f"{mine} {distinct} h.{column}"
    if (
        not isinstance(live, models.ForeignKey)
        or live.remote_field.on_delete is not models.SET_NULL
    ):
        return f"({differs})"
    target = live.target_field
    gone = (
        f"NOT EXISTS (SELECT 1 FROM {qn(target.model._meta.db_table)} x"
        f" WHERE x.{_column(target)} = h.{column})"
    )
    return f"({differs} AND NOT ({mine} IS NULL AND {gone}))"


def _column(field: Any) -> str:
    """A concrete field's column, quoted."""
    assert isinstance(field, models.Field) and field.column
    return connection.ops.quote_name(field.column)


def _vanished(model: type[models.Model], history: type[models.Model]) -> str:
    qn = connection.ops.quote_name
    pk = _column(model._meta.pk)
    table, versions = qn(model._meta.db_table), qn(history._meta.db_table)
    return (
        f"SELECT h.{pk}, h.history_id FROM {versions} h"
        f" WHERE h.history_id IN (SELECT MAX(history_id) FROM {versions} GROUP BY {pk})"
        f" AND h.history_type <> '-'"
        f" AND NOT EXISTS (SELECT 1 FROM {table} t WHERE t.{pk} = h.{pk})"
    )
