"""History on every tracked model: who acted, their role, the subject, the MAC that vouches
for each row, and the indexes the audit reads it by."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import models
from django.db.models import Q
from django.db.models.signals import pre_save
from django.dispatch import receiver
from simple_history.models import HistoricalRecords

from ledger import choices
from ledger.models.audit import MAC_FIELD, MAC_LENGTH, make_mac


def stamp_mac(row: models.Model) -> None:
    """Give a history row about to be written the MAC of what it holds."""
    model = type(row)
    setattr(row, MAC_FIELD, make_mac(model, row.__dict__))


class HistoryRowQuerySet[M: models.Model](models.QuerySet[M]):
    """A history table's rows: those inserted in bulk carry their MACs too (the rows
    ``create_tracked`` and simple-history's ``bulk_history_create`` write). On the queryset,
    not only the manager: ``objects.using(alias).bulk_create`` reaches it through a queryset."""

    def bulk_create(self, objs: Iterable[M], *args: Any, **kwargs: Any) -> list[M]:
        rows = list(objs)
        for row in rows:
            stamp_mac(row)
        return super().bulk_create(rows, *args, **kwargs)


HistoryRowManager = models.Manager.from_queryset(HistoryRowQuerySet)


class ActorHistory(models.Model):
    """Extra columns on every history table: who acted, in words that survive the actor,
    their role at the time, and the subject the change was about (for the audit's filters)."""

    history_actor = models.CharField(max_length=200, blank=True, default="")
    history_role = models.CharField(
        max_length=10, choices=choices.ActorRole.choices, blank=True, default=""
    )
    # A plain number, not a key: the audit of a subject outlives nothing it points at.
    # Indexed with the time, by ``AuditedRecords``.
    history_subject_id = models.BigIntegerField(null=True, blank=True)
    # The application's word that it wrote this row as it stands (``ledger.models.audit``):
    # made before every insert, and again when an erasure blanks the row.
    # Empty in the database's default: a row inserted there without one is named, not refused.
    history_mac = models.CharField(max_length=MAC_LENGTH, blank=True, default="", db_default="")

    objects = HistoryRowManager()

    class Meta:
        abstract = True


@receiver(pre_save, dispatch_uid="ledger.models.history.mac_before_save")
def mac_before_save(
    sender: type[models.Model],
    instance: models.Model,
    raw: bool = False,
    update_fields: frozenset[str] | None = None,
    **kwargs: Any,
) -> None:
    """Every history row saved one at a time (simple-history's, after its own
    ``pre_create_historical_record`` receivers have named the actor) gets the MAC of what
    it holds: the last thing before the insert, so nothing set later escapes it. A signal,
    not a ``save()`` override: history rows are written by the actions, never by a model.
    Rows a fixture loads (``raw``) keep the MAC they carry."""
    if raw or not isinstance(instance, ActorHistory):
        return
    if update_fields is not None and MAC_FIELD not in update_fields:
        # The new MAC would not be written, and the row would no longer match its old one.
        raise ValueError(f"A history row saved with update_fields must include {MAC_FIELD}.")
    stamp_mac(instance)


# The audit's filters, each with the log's order (newest first) after it, so that a page of
# one person's, one role's or one subject's changes is read from the start of an index,
# however rare they are in the table. On every history table, as ``h<model>_<suffix>``.
AUDIT_INDEXES = {
    "subject": "history_subject_id",
    "actor": "history_actor",
    "role": "history_role",
}
# The action filter's values, each with an index of its own rows in the log's order: any of
# them can be rare in a table (none of a million sources is ever changed), or rare among its
# newest rows, and a page of them must not read the table to say so. Partial, so that the
# planner, which cannot see that rows are rare only at the top, still prefers them.
AUDIT_ACTIONS = {"created": "+", "changed": "~", "deleted": "-"}


class AuditedRecords(HistoricalRecords):  # type: ignore[misc]
    """simple-history's records, with the indexes the audit log reads them by."""

    def get_meta_options(self, model: type[models.Model]) -> dict[str, Any]:
        options: dict[str, Any] = super().get_meta_options(model)
        prefix = f"h{model._meta.model_name}"[:13]
        options["indexes"] = [
            *(
                models.Index(
                    fields=[column, "-history_date", "-history_id"], name=f"{prefix}_{suffix}"
                )
                for suffix, column in AUDIT_INDEXES.items()
            ),
            *(
                models.Index(
                    fields=["-history_date", "-history_id"],
                    name=f"{prefix}_{action}",
                    condition=Q(history_type=code),
                )
                for action, code in AUDIT_ACTIONS.items()
            ),
            # The log's order itself: a page of everything is the first rows of this index,
            # however many rows share a moment (a bulk write stamps thousands alike).
            models.Index(fields=["-history_date", "-history_id"], name=f"{prefix}_when"),
        ]
        return options


def tracked(*, untracked: tuple[str, ...] = ()) -> HistoricalRecords:
    """History for a model that people or agents change: who, when and an unbounded why.

    ``untracked`` columns are not changes anyone makes (a key's last use): history never
    holds them, so updating them in place goes behind nobody's back."""
    return AuditedRecords(
        bases=[ActorHistory],
        history_change_reason_field=models.TextField(null=True),
        cascade_delete_history=False,
        excluded_fields=list(untracked),
    )
