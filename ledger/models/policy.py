"""The write policy: one row, versioned by its history."""

from __future__ import annotations

from functools import cache

from django.db import connections, models
from django.db.models import Q
from django.db.models.expressions import RawSQL

from ledger.models.history import tracked


def default_system_of_record_keys() -> list[str]:
    """Slots another system owns: an agent must read them there, never remember them."""
    return ["billing.address", "billing.email", "contact.email", "contact.phone", "payment.method"]


# Where ``Policy.read_along`` puts the policy on the row of another query.
POLICY_ALONG = "policy_in_force"


@cache
def _policy_as_json(using: str) -> str:
    """The policy's row as one JSON object, in SQL for the database ``using``. Written once
    per process, not built from expressions on every request: it goes with every API
    call's key lookup.

    PostgreSQL nests a JSON column as it is; SQLite holds one as text, which ``json()``
    turns back into JSON so that it nests rather than arrives as a string.
    """
    connection = connections[using]
    quote = connection.ops.quote_name
    pairs = []
    for field in Policy._meta.concrete_fields:
        assert field.column is not None  # as every concrete field's
        column = quote(field.column)
        if connection.vendor == "sqlite" and isinstance(field, models.JSONField):
            column = f"json({column})"
        pairs.append(f"'{field.attname}', {column}")
    build = "jsonb_build_object" if connection.vendor == "postgresql" else "json_object"
    return f"SELECT {build}({', '.join(pairs)}) FROM {quote(Policy._meta.db_table)} WHERE id = 1"


class Policy(models.Model):
    """The write policy admins can change. One row (pk=1); see ``Policy.current``."""

    ttl_preference_days = models.PositiveIntegerField(default=365)
    ttl_account_fact_days = models.PositiveIntegerField(default=180)
    ttl_episode_days = models.PositiveIntegerField(default=90)
    inferred_max_days = models.PositiveIntegerField(default=30)
    inferred_sources_required = models.PositiveSmallIntegerField(default=2)
    system_of_record_keys = models.JSONField(default=default_system_of_record_keys)
    subject_active_cap = models.PositiveIntegerField(default=200)
    recall_cap = models.PositiveSmallIntegerField(default=20)
    review_preference_days = models.PositiveIntegerField(default=180)
    review_account_fact_days = models.PositiveIntegerField(default=90)
    review_episode_days = models.PositiveIntegerField(default=60)
    # Off: an agent changes only what it wrote itself (``rules.agents.refuse_others_write``).
    agents_change_others = models.BooleanField(default=False)
    # One more on every change: each memory records the version that accepted it.
    version = models.PositiveIntegerField(default=1)

    history = tracked()

    class Meta:
        verbose_name_plural = "policy"
        constraints = [
            models.CheckConstraint(condition=Q(pk=1), name="policy_singleton"),
            models.CheckConstraint(
                condition=Q(inferred_sources_required__gte=1), name="policy_sources_at_least_one"
            ),
        ]

    def __str__(self) -> str:
        return "write policy"

    @classmethod
    def current(cls) -> Policy:
        """The policy in force. A migration makes the row; without it the defaults apply,
        and the first change (``ledger.actions.policy.change_policy``) stores them."""
        return cls.objects.filter(pk=1).first() or cls(pk=1)

    @classmethod
    def read_along(cls) -> dict[str, RawSQL]:
        """An annotation that reads the policy in force inside another query, so that reading
        it costs no statement of its own (the API's key lookup carries it: see
        ``ledger.api.auth.policy_of``). Never stale: the statement reads the row as
        committed when it runs, whichever process changed it; nothing is cached.
        """
        sql = _policy_as_json(cls.objects.db)
        return {POLICY_ALONG: RawSQL(sql, (), output_field=models.JSONField())}

    @classmethod
    def read_from(cls, row: models.Model) -> Policy:
        """The policy ``read_along`` brought with ``row``; the defaults if it is not stored."""
        stored = getattr(row, POLICY_ALONG)
        if stored is None:
            return cls(pk=1)
        fields = cls._meta.concrete_fields
        values = [f.to_python(stored[f.attname]) for f in fields]
        return cls.from_db(row._state.db, [f.attname for f in fields], values)

    def ttl_days(self, kind: str) -> int:
        return int(getattr(self, f"ttl_{kind}_days"))

    def review_days(self, kind: str) -> int:
        return int(getattr(self, f"review_{kind}_days"))
