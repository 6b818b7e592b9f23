"""History on every tracked model: who acted, their role, the subject, and the indexes
the audit reads it by."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models import Q
from simple_history.models import HistoricalRecords

from ledger import choices


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

    class Meta:
        abstract = True


# The audit's filters, each with the log's order (newest first) after it, so that a page of
# one person's, one role's or one subject's changes is read from the start of an index,
# however rare they are in the table. On every history table, as ``h<model>_<suffix>``.
AUDIT_INDEXES = {
    "subject": "history_subject_id",
    "actor": "history_actor",
    "role": "history_role",
}


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
            # Deletions are rare among changes: found by their own index, not by reading
            # every change for them. Creations and changes are common enough to be found
            # on the way down the table's order.
            models.Index(
                fields=["-history_date", "-history_id"],
                name=f"{prefix}_deleted",
                condition=Q(history_type="-"),
            ),
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
