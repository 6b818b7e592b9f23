"""The seals of the tamper-evident audit chain."""

from __future__ import annotations

from django.db import models


class AuditSeal(models.Model):
    """The hash chain over the audit: one seal per history row, in a chain per table.

    Append-only. A seal holds a digest of the row's content and a hash over the previous
    seal's hash, the row's skeleton (ids, actor, time, kind of change) and that digest;
    ``ledger.reads.audit_chain`` makes and checks them. Erasure blanks content but never a seal.
    """

    table = models.CharField(max_length=100)
    row_id = models.BigIntegerField()
    seq = models.BigIntegerField()
    digest = models.CharField(max_length=64)
    hash = models.CharField(max_length=64)
    sealed_at = models.DateTimeField()

    class Meta:
        ordering = ["table", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["table", "seq"], name="audit_seal_seq_once"),
            models.UniqueConstraint(fields=["table", "row_id"], name="audit_seal_row_once"),
        ]

    def __str__(self) -> str:
        return f"{self.table}#{self.row_id} (seal {self.seq})"
