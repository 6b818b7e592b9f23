"""The data memoryadmin keeps. Models hold data, constraints and small helpers.

Nothing outside ``ledger.actions`` saves, updates or deletes a tracked model: those
functions record who changed it and why, and write the history row in the same
transaction. Reads live on the QuerySet classes in ``ledger.querysets``.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from functools import cache
from typing import Any

from django.conf import settings
from django.db import connections, models
from django.db.models import Q
from django.db.models.expressions import RawSQL
from simple_history.models import HistoricalRecords

from ledger import choices, webhooks
from ledger.querysets import (
    AgentKeyQuerySet,
    ConflictQuerySet,
    JournalEntryQuerySet,
    LedgerEntryQuerySet,
    MemoryQuerySet,
    RecallItemQuerySet,
    RecallQuerySet,
    ReminderQuerySet,
    RunQuerySet,
    SourceQuerySet,
    SubjectQuerySet,
    WebhookDeliveryQuerySet,
    WebhookEndpointQuerySet,
    WriteDecisionQuerySet,
)


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


class Subject(models.Model):
    """An account or a person that memories are about. Its owner is the end user."""

    ref = models.CharField(max_length=100, unique=True)
    display_name = models.CharField(max_length=200, blank=True, default="")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="subjects",
    )
    memory_paused = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    history = tracked()
    objects = SubjectQuerySet.as_manager()

    class Meta:
        ordering = ["ref"]

    def __str__(self) -> str:
        return self.display_name or self.ref

    @property
    def name(self) -> str:
        return self.display_name or self.ref


class Agent(models.Model):
    """A program holding API keys (``AgentKey``). Revoked, every key it has stops at once.

    An admin may restrict what its writes do, each with a reason (empty: not restricted):
    pause them (refused), quarantine it (everything lands pending until a person
    confirms), or distrust its stated memories (what it says a person said lands pending).
    """

    Scope = choices.Scope

    name = models.CharField(max_length=100, unique=True)
    scopes = models.JSONField(default=list)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    writes_paused_because = models.TextField(blank=True, default="")
    quarantined_because = models.TextField(blank=True, default="")
    stated_untrusted_because = models.TextField(blank=True, default="")

    history = tracked()

    def __str__(self) -> str:
        return self.name

    def has_scope(self, scope: str) -> bool:
        return self.is_active and scope in self.scopes

    @property
    def writes_paused(self) -> bool:
        return bool(self.writes_paused_because)

    @property
    def quarantined(self) -> bool:
        return bool(self.quarantined_because)

    @property
    def stated_untrusted(self) -> bool:
        return bool(self.stated_untrusted_because)


class AgentKey(models.Model):
    """One API key of an agent. Only its hash is stored; the prefix finds the row.

    A rotation gives the agent a new key and an end (``expires_at``) to the old one, so the
    agent can switch over during the grace period; revoking the agent ends all of them.
    """

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="keys")
    prefix = models.CharField(max_length=16, unique=True)
    hash = models.CharField(max_length=64)
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField(null=True, blank=True)
    # Usage, not a change: updated in place at most once a minute, and not in the history.
    last_used_at = models.DateTimeField(null=True, blank=True)

    history = tracked(untracked=("last_used_at",))
    objects = AgentKeyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.agent.name} ({self.prefix})"

    def works_at(self, now: datetime) -> bool:
        return self.agent.is_active and (self.expires_at is None or now < self.expires_at)


class Run(models.Model):
    """One agent run: the unit that reads, writes, journals and compacts."""

    ref = models.CharField(max_length=100, unique=True)
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="runs")
    subject = models.ForeignKey(
        Subject, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    started_at = models.DateTimeField(auto_now_add=True)

    history = tracked()
    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-started_at"]
        # The subject page lists a person's latest runs.
        indexes = [models.Index(fields=["subject", "-started_at"], name="run_subject_recent")]

    def __str__(self) -> str:
        return self.ref


class Source(models.Model):
    """Where a claim came from: a message, a tool result, an operator, an import."""

    Kind = choices.SourceKind

    kind = models.CharField(max_length=20, choices=Kind.choices)
    ref = models.CharField(max_length=200)
    run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="sources"
    )
    turn = models.PositiveIntegerField(null=True, blank=True)
    excerpt = models.TextField(blank=True, default="")
    received_at = models.DateTimeField()
    # Evidence for a memory; a ledger entry points at its source instead.
    memory = models.ForeignKey(
        "Memory", null=True, blank=True, on_delete=models.CASCADE, related_name="sources"
    )

    history = tracked()
    objects = SourceQuerySet.as_manager()

    class Meta:
        ordering = ["received_at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=["user_message", "tool_result", "operator", "import"]),
                name="source_kind_valid",
            ),
            models.CheckConstraint(condition=~Q(ref=""), name="source_ref_not_empty"),
        ]
        # Support finds everything one message or tool result wrote by its reference.
        indexes = [models.Index(fields=["ref"], name="source_ref")]

    def __str__(self) -> str:
        return f"{self.kind}:{self.ref}"


class Memory(models.Model):
    """One claim somebody chose to keep about a subject."""

    Kind = choices.MemoryKind
    Basis = choices.Basis
    Status = choices.MemoryStatus

    STATEMENT_MAX = 200

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="memories")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    key = models.CharField(max_length=100, blank=True, default="")
    statement = models.CharField(max_length=STATEMENT_MAX)
    # Lower-cased, white space folded: what duplicate detection compares.
    normalized = models.CharField(max_length=STATEMENT_MAX)
    basis = models.CharField(max_length=10, choices=Basis.choices)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.ACTIVE)
    # How it became stated (``choices.StatedBy``): "" when the person said it,
    # "confirmation" when they confirmed a guess, "correction" when they rewrote it, and
    # "support_confirmation" / "support_correction" when support did.
    stated_by = models.CharField(max_length=20, blank=True, default="")
    written_at = models.DateTimeField()
    confirmed_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    review_at = models.DateTimeField(null=True, blank=True)
    status_changed_at = models.DateTimeField(null=True, blank=True)
    # The person's "true, but don't use it": kept and shown to them, and still live for the
    # gate (duplicates, conflicts, the cap, expiry), but never given to an agent.
    # A database default too: rows inserted in bulk outside the ORM are usable, not withheld.
    withheld = models.BooleanField(default=False, db_default=False)
    supersedes = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="superseded_by"
    )
    # A revert: this memory puts back the words of the one named here (the memory a
    # correction replaced, or the replacement a revert undid).
    restores = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="restored_by"
    )
    # The policy version (``Policy.version``) in force when the write gate accepted it.
    policy_version = models.PositiveIntegerField(null=True, blank=True)
    agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="memories"
    )
    run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="memories"
    )
    version = models.PositiveIntegerField(default=1)

    history = tracked()
    objects = MemoryQuerySet.as_manager()

    class Meta:
        ordering = ["-written_at"]
        verbose_name_plural = "memories"
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=["preference", "account_fact", "episode"]),
                name="memory_kind_valid",
            ),
            models.CheckConstraint(
                condition=Q(basis__in=["stated", "inferred"]), name="memory_basis_valid"
            ),
            models.CheckConstraint(
                condition=Q(
                    status__in=["active", "pending", "superseded", "retracted", "expired", "erased"]
                ),
                name="memory_status_valid",
            ),
            # Erasure blanks the statement; every other row must say something.
            models.CheckConstraint(
                condition=Q(status="erased") | ~Q(statement=""), name="memory_statement_not_empty"
            ),
            # A guess always has an end.
            models.CheckConstraint(
                condition=~Q(basis="inferred", expires_at__isnull=True),
                name="memory_inferred_expires",
            ),
        ]
        indexes = [
            # Support's search lists memories across subjects newest first, a page at a time.
            models.Index(fields=["-written_at", "-id"], name="memory_newest_first"),
            # Support's queue of guesses waiting for confirmation, oldest first.
            models.Index(
                fields=["written_at", "id"],
                name="memory_pending_queue",
                condition=Q(status="pending"),
            ),
            # Recall and the subject page: a subject's live memories by expiry.
            models.Index(fields=["subject", "status", "expires_at"], name="memory_subject_live"),
            models.Index(fields=["subject", "key"], name="memory_subject_key"),
            # The Django admin finds a slot's memories across subjects.
            models.Index(fields=["key"], name="memory_key", condition=~Q(key="")),
            models.Index(fields=["subject", "normalized"], name="memory_subject_normalized"),
            # The expiry sweep and review reminders.
            models.Index(
                fields=["expires_at"],
                name="memory_expiring",
                condition=Q(status__in=["active", "pending"]),
            ),
            models.Index(
                fields=["review_at"],
                name="memory_reviewable",
                condition=Q(status__in=["active", "pending", "expired"]),
            ),
        ]

    def __str__(self) -> str:
        return self.statement

    @property
    def etag(self) -> str:
        return f'"{self.version}"'


class Conflict(models.Model):
    """Two or more active memories in one subject + key slot that disagree; or, marked
    ``possible``, a new memory whose words likely contradict a live memory or a commitment
    in force (``ledger.contradictions``), with or without a key."""

    Status = choices.ConflictStatus
    Resolution = choices.ConflictResolution

    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="conflicts")
    key = models.CharField(max_length=100, blank=True, default="")
    memories = models.ManyToManyField(Memory, related_name="conflicts")
    possible = models.BooleanField(default=False)
    # The ledger commitment a possible conflict's memory contradicts, when it is one.
    commitment = models.ForeignKey(
        "LedgerEntry", null=True, blank=True, on_delete=models.CASCADE, related_name="conflicts"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    opened_at = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolution = models.CharField(
        max_length=10, choices=choices.ConflictResolution.choices, blank=True, default=""
    )
    # The memory left standing when a person settled it: the one kept, or their rewrite.
    kept = models.ForeignKey(
        Memory, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    history = tracked()
    objects = ConflictQuerySet.as_manager()

    class Meta:
        ordering = ["-opened_at"]
        # Support's queue of conflicts to resolve, oldest first.
        indexes = [
            models.Index(
                fields=["opened_at", "id"], name="conflict_open_queue", condition=Q(status="open")
            )
        ]
        constraints = [
            # At most one open conflict per slot: new contenders join it. Possible conflicts
            # are pairs, not slots, so a slot may also have those.
            models.UniqueConstraint(
                fields=["subject", "key"],
                condition=Q(status="open", possible=False),
                name="conflict_one_open_per_slot",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.subject.ref}:{self.key}"


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


class WriteDecision(models.Model):
    """What the write gate decided for one request, and why. Append-only."""

    Outcome = choices.Outcome

    agent = models.ForeignKey(Agent, null=True, on_delete=models.SET_NULL, related_name="+")
    subject = models.ForeignKey(
        Subject, null=True, on_delete=models.CASCADE, related_name="write_decisions"
    )
    memory = models.ForeignKey(
        Memory, null=True, on_delete=models.SET_NULL, related_name="write_decisions"
    )
    source = models.ForeignKey(Source, null=True, on_delete=models.SET_NULL, related_name="+")
    # The run the write named, when it existed: a refused write stores no source, and the
    # run page lists what the gate refused during the run by this.
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    outcome = models.CharField(max_length=10, choices=Outcome.choices)
    code = models.CharField(max_length=40, blank=True, default="")
    reason = models.TextField()
    decided_at = models.DateTimeField()

    objects = WriteDecisionQuerySet.as_manager()

    class Meta:
        ordering = ["-decided_at", "-id"]
        # The Django admin lists every decision newest first, or those of one code.
        indexes = [
            models.Index(fields=["-decided_at", "-id"], name="write_decision_newest"),
            models.Index(fields=["code", "-decided_at", "-id"], name="write_decision_code"),
        ]

    def __str__(self) -> str:
        return f"{self.outcome}: {self.reason}"


class IdempotencyRecord(models.Model):
    """The first response to a write sent with an ``Idempotency-Key``, per agent."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=200)
    fingerprint = models.CharField(max_length=64)
    response_status = models.PositiveSmallIntegerField()
    response_body = models.JSONField()
    subject = models.ForeignKey(Subject, null=True, on_delete=models.CASCADE, related_name="+")
    # The run the request was filed under: a run may learn its subject after the answer was
    # stored, and an erasure of that subject must still find the answer.
    run = models.ForeignKey(Run, null=True, on_delete=models.CASCADE, related_name="+")
    # An answer about several subjects (a batch retraction) names each of them here, so an
    # erasure of any one of them deletes it.
    subjects = models.ManyToManyField(Subject, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["agent", "key"], name="idempotency_key_per_agent")
        ]

    def __str__(self) -> str:
        return f"{self.key} ({self.response_status})"


class Recall(models.Model):
    """One read an agent made: what it asked for and exactly what it was given."""

    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="recalls")
    run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="recalls"
    )
    turn = models.PositiveIntegerField(null=True, blank=True)
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="recalls")
    goal = models.TextField(blank=True, default="")
    k = models.PositiveSmallIntegerField()
    block = models.TextField()
    # The partition key of the recall log on PostgreSQL (ledger.recall_log): the database's
    # primary key is (id, recalled_at); ids still come from one sequence, unique.
    recalled_at = models.DateTimeField()

    objects = RecallQuerySet.as_manager()

    class Meta:
        ordering = ["-recalled_at", "-id"]
        indexes = [models.Index(fields=["subject", "-recalled_at"], name="recall_subject_recent")]

    def __str__(self) -> str:
        return f"recall of {self.subject_id} at {self.recalled_at:%Y-%m-%d %H:%M}"


class RecallItem(models.Model):
    # On PostgreSQL the recall log is partitioned by month (ledger.recall_log), and the
    # database links an item to its recall by (recall_id, recalled_at), cascading; Django
    # manages no constraint of its own here. ``recall_item_once`` (recall first) finds a
    # recall's items and ``recall_item_memory_recent`` a memory's, so neither key needs an
    # index of its own.
    recall = models.ForeignKey(
        Recall, on_delete=models.CASCADE, related_name="items", db_constraint=False, db_index=False
    )
    memory = models.ForeignKey(
        Memory, on_delete=models.CASCADE, related_name="recall_items", db_index=False
    )
    position = models.PositiveSmallIntegerField()
    rank = models.FloatField()
    # Copied from the recall: a memory's reads are listed newest first from an index of
    # its own, and the recall log is partitioned (and sharded) by these two columns.
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="+")
    recalled_at = models.DateTimeField()

    objects = RecallItemQuerySet.as_manager()

    class Meta:
        ordering = ["position"]
        constraints = [
            # The partition key is in it, as PostgreSQL requires; an item's time is its recall's.
            models.UniqueConstraint(
                fields=["recall", "memory", "recalled_at"], name="recall_item_once"
            )
        ]
        indexes = [
            # A memory's reads, newest first (its history page), and its reads' counts.
            models.Index(fields=["memory", "-recalled_at"], name="recall_item_memory_recent")
        ]

    def __str__(self) -> str:
        return f"#{self.position} (rank {self.rank:.3f})"


class Reminder(models.Model):
    """A memory due for review, or about to expire, for one audience."""

    Kind = choices.ReminderKind
    Audience = choices.Audience

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="reminders")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    audience = models.CharField(max_length=10, choices=Audience.choices)
    recipient = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="reminders",
    )
    due_on = models.DateField()
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    read_at = models.DateTimeField(null=True, blank=True)
    cleared_at = models.DateTimeField(null=True, blank=True)

    objects = ReminderQuerySet.as_manager()

    class Meta:
        ordering = ["due_on", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["memory", "kind", "audience", "due_on"], name="reminder_once_per_due_date"
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} reminder for {self.audience}, due {self.due_on}"


class LedgerEntry(models.Model):
    """A durable fact or commitment that must survive every compaction."""

    Kind = choices.LedgerKind
    Status = choices.LedgerStatus

    FACT_MAX = 2000

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="ledger_entries")
    run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="ledger_entries"
    )
    agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="ledger_entries"
    )
    key = models.CharField(max_length=100, blank=True, default="")
    fact = models.TextField()
    kind = models.CharField(max_length=20, choices=Kind.choices)
    source = models.ForeignKey(Source, on_delete=models.PROTECT, related_name="ledger_entries")
    promotion_source = models.ForeignKey(
        Source, null=True, blank=True, on_delete=models.PROTECT, related_name="promotions"
    )
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.ACTIVE)
    immutable = models.BooleanField(default=False)
    expires_at = models.DateTimeField(null=True, blank=True)
    supersedes = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="superseded_by"
    )
    recorded_at = models.DateTimeField()
    version = models.PositiveIntegerField(default=1)

    history = tracked()
    objects = LedgerEntryQuerySet.as_manager()

    class Meta:
        ordering = ["-recorded_at"]
        verbose_name_plural = "ledger entries"
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=["established", "interpretation", "proposal", "commitment"]),
                name="ledger_kind_valid",
            ),
            models.CheckConstraint(
                condition=Q(status="erased") | ~Q(fact=""), name="ledger_fact_not_empty"
            ),
        ]
        indexes = [
            models.Index(fields=["subject", "status", "expires_at"], name="ledger_subject_live"),
            # The Django admin lists every entry, newest first.
            models.Index(fields=["-recorded_at", "-id"], name="ledger_newest"),
            models.Index(
                fields=["expires_at"], name="ledger_expiring", condition=Q(status="active")
            ),
        ]

    def __str__(self) -> str:
        return self.fact

    def status_at(self, now: datetime) -> str:
        """An active entry past its expiry is expired now, whether or not the sweep has run."""
        if self.status == self.Status.ACTIVE and self.expires_at and self.expires_at <= now:
            return self.Status.EXPIRED
        return self.status


class JournalEntry(models.Model):
    """An agent's side effect, written before it acts: intent → effect → verification."""

    State = choices.JournalState

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="journal_entries")
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="journal_entries")
    idempotency_key = models.CharField(max_length=200)
    action = models.CharField(max_length=200)
    intent = models.JSONField()
    effect = models.JSONField(null=True, blank=True)
    verification = models.JSONField(null=True, blank=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.INTENDED)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    history = tracked()
    objects = JournalEntryQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "journal entries"
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "idempotency_key"], name="journal_key_per_agent"
            ),
            models.CheckConstraint(
                condition=Q(state__in=["intended", "done", "not_done", "unknown"]),
                name="journal_state_valid",
            ),
        ]
        indexes = [
            models.Index(fields=["state", "created_at"], name="journal_state_age"),
            # The Django admin lists every entry, newest first.
            models.Index(fields=["-created_at", "-id"], name="journal_newest"),
        ]

    def __str__(self) -> str:
        return f"{self.action} ({self.state})"

    def is_stale_intent(self, cutoff: datetime) -> bool:
        """Journaled before ``cutoff`` and never reported back: it may have happened."""
        return self.state == self.State.INTENDED and self.created_at <= cutoff

    def needs_resolution(self, cutoff: datetime) -> bool:
        """The row-level twin of ``JournalEntryQuerySet.unresolved``."""
        return self.state == self.State.UNKNOWN or self.is_stale_intent(cutoff)


class RunNote(models.Model):
    """A small keyed note an agent keeps during a run, outside its context window."""

    KEY_MAX = 40
    VALUE_MAX = 500

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="notes")
    key = models.CharField(max_length=KEY_MAX)
    value = models.CharField(max_length=VALUE_MAX)
    updated_at = models.DateTimeField()

    history = tracked()

    class Meta:
        ordering = ["key"]
        constraints = [models.UniqueConstraint(fields=["run", "key"], name="run_note_key_once")]

    def __str__(self) -> str:
        return f"{self.key}={self.value}"


class Snapshot(models.Model):
    """One compaction of a run: the state document, checked by shape."""

    Status = choices.SnapshotStatus

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="snapshots")
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="snapshots")
    generation = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices)
    document = models.JSONField()
    pinned = models.JSONField(default=list)
    tokens_before = models.PositiveIntegerField(null=True, blank=True)
    tokens_after = models.PositiveIntegerField(null=True, blank=True)
    budget = models.JSONField(null=True, blank=True)
    narrative = models.TextField(blank=True, default="")
    problems = models.JSONField(default=list)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["run", "generation"]
        constraints = [
            models.UniqueConstraint(fields=["run", "generation"], name="snapshot_generation_once")
        ]

    def __str__(self) -> str:
        return f"{self.run.ref}#{self.generation} ({self.status})"


class Erasure(models.Model):
    """The skeleton an erasure leaves: that it happened, when, who asked, who carried it
    out, and how many rows of each kind lost their content. Never any of the content."""

    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="erasures")
    erased_by = models.CharField(max_length=200)
    # The role of whoever carried it out, at the time (``choices.ActorRole``).
    erased_by_role = models.CharField(
        max_length=10, choices=choices.ActorRole.choices, blank=True, default=""
    )
    # Who asked: the person's own label when they erased on the dashboard; otherwise who
    # asked and how, as the staff member who carried it out wrote it ("" before it was kept).
    requested_by = models.CharField(max_length=200, blank=True, default="")
    erased_at = models.DateTimeField()
    memories = models.PositiveIntegerField(default=0)
    ledger_entries = models.PositiveIntegerField(default=0)
    sources = models.PositiveIntegerField(default=0)
    journal_entries = models.PositiveIntegerField(default=0)
    run_notes = models.PositiveIntegerField(default=0)
    recalls = models.PositiveIntegerField(default=0)
    snapshots = models.PositiveIntegerField(default=0)
    # Earlier versions blanked in the history tables, and stored API responses deleted.
    history_rows = models.PositiveIntegerField(default=0)
    stored_responses = models.PositiveIntegerField(default=0)
    conflicts = models.PositiveIntegerField(default=0)
    # The write gate's decisions, whose reasons quote what was written.
    write_decisions = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-erased_at"]

    def __str__(self) -> str:
        return f"erasure by {self.erased_by} at {self.erased_at:%Y-%m-%d %H:%M}"


class PersonChange(models.Model):
    """One change to a person (their role, e-mail, subjects, access, password link). Append-only.

    People are Django's users, which keep no history of their own; this is theirs, written
    by ``ledger.actions.people`` in the same transaction as the change.
    """

    person = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="changes",
    )
    # Kept in words: the audit must still say who, should the person be deleted.
    username = models.CharField(max_length=150)
    field = models.CharField(max_length=40)
    before = models.TextField(blank=True, default="")
    after = models.TextField(blank=True, default="")
    reason = models.TextField(blank=True, default="")
    actor = models.CharField(max_length=200)
    actor_role = models.CharField(max_length=10, choices=choices.ActorRole.choices)
    changed_at = models.DateTimeField()

    class Meta:
        ordering = ["-changed_at", "-id"]

    def __str__(self) -> str:
        return f"{self.username}: {self.field} {self.before} → {self.after}"


class AuditSeal(models.Model):
    """The hash chain over the audit: one seal per history row, in a chain per table.

    Append-only. A seal holds a digest of the row's content and a hash over the previous
    seal's hash, the row's skeleton (ids, actor, time, kind of change) and that digest;
    ``ledger.audit_chain`` makes and checks them. Erasure blanks content but never a seal.
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


class RetractionBatch(models.Model):
    """Memories deleted together in one action, such as everything a poisoned message wrote.

    Listed and undone as one: the undo puts back each memory still as the batch left it,
    and reports the ones that changed since.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # What chose the memories: any of source_ref, run, agent, written_after, written_before.
    selection = models.JSONField()
    reason = models.TextField()
    retracted_by = models.CharField(max_length=200)
    retracted_at = models.DateTimeField()
    undone_by = models.CharField(max_length=200, blank=True, default="")
    undone_at = models.DateTimeField(null=True, blank=True)

    history = tracked()

    class Meta:
        ordering = ["-retracted_at"]
        verbose_name_plural = "retraction batches"

    def __str__(self) -> str:
        return f"retraction by {self.retracted_by} at {self.retracted_at:%Y-%m-%d %H:%M}"


class RetractionItem(models.Model):
    """One memory of a batch: the status it had before, and its version right after, so
    that an undo can tell whether anyone changed it since."""

    batch = models.ForeignKey(RetractionBatch, on_delete=models.CASCADE, related_name="items")
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="retraction_items")
    status_before = models.CharField(max_length=12, choices=choices.MemoryStatus.choices)
    version_after = models.PositiveIntegerField()

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["batch", "memory"], name="retraction_item_once")
        ]

    def __str__(self) -> str:
        return f"{self.memory_id} in {self.batch_id}"


class RateCounter(models.Model):
    """How many requests of one kind (reads or writes) one agent made in one fixed window,
    when no Redis is configured. ``ledger.api.throttling`` counts in one atomic statement, so
    every web process sees the same number; a window's row is deleted once it has passed."""

    bucket = models.CharField(max_length=100)
    # Seconds since the epoch: the same arithmetic on PostgreSQL and SQLite.
    window_start = models.BigIntegerField()
    expires_at = models.BigIntegerField()
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["bucket", "window_start"], name="rate_counter_one_per_window"
            )
        ]
        indexes = [models.Index(fields=["expires_at"], name="rate_counter_expires")]

    def __str__(self) -> str:
        return f"{self.bucket} from {self.window_start}: {self.count}"


class LockoutLift(models.Model):
    """A sign-in lockout an admin lifted before it ended: of a username or of an address,
    what it was, who lifted it, when and why. Append-only; django-axes' records of the
    failures are gone once lifted, so this is what the audit keeps of it."""

    # One of the two: the lockout was of a username, or of an address.
    username = models.CharField(max_length=255, blank=True, default="")
    ip_address = models.GenericIPAddressField(null=True, blank=True)
    failures = models.PositiveIntegerField()
    locked_until = models.DateTimeField()
    reason = models.TextField()
    actor = models.CharField(max_length=200)
    actor_role = models.CharField(max_length=10, choices=choices.ActorRole.choices)
    lifted_at = models.DateTimeField()

    class Meta:
        ordering = ["-lifted_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(username="") & Q(ip_address__isnull=False))
                | (~Q(username="") & Q(ip_address__isnull=True)),
                name="lockout_lift_of_one",
            )
        ]

    def __str__(self) -> str:
        return f"lockout of {self.username or self.ip_address} lifted by {self.actor}"


class WebhookEndpoint(models.Model):
    """An address an admin registered to receive signed events, and which events.

    The secret signs every delivery (``ledger.client.signatures``); it is shown once, when
    made or rotated, and never kept in the history.
    """

    url = models.CharField(max_length=webhooks.URL_MAX)
    secret = models.CharField(max_length=100)
    events = models.JSONField(default=list)
    active = models.BooleanField(default=True)
    description = models.CharField(max_length=webhooks.DESCRIPTION_MAX, blank=True, default="")
    created_at = models.DateTimeField()
    created_by = models.CharField(max_length=200)
    # Moves with every change an admin makes (a retry asked for included), so each has a row.
    changed_at = models.DateTimeField()

    history = tracked(untracked=("secret",))
    objects = WebhookEndpointQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.url


class WebhookDelivery(models.Model):
    """One event for one endpoint: the transactional outbox row, then its attempts.

    Written in the transaction of the change it tells of, so a change rolled back sends
    nothing and a broker that is down loses nothing. An event sent to several endpoints is
    one row each, sharing ``event_id``: what a receiver de-duplicates on.
    """

    Status = webhooks.DeliveryStatus

    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    event_id = models.UUIDField()
    event = models.CharField(max_length=40)
    payload = models.JSONField()
    # What an erasure scrubs the payloads of: the subject's, and its runs' (journal, snapshots).
    subject = models.ForeignKey(
        Subject, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=webhooks.ERROR_MAX, blank=True, default="")
    delivered_at = models.DateTimeField(null=True, blank=True)
    # Each attempt: {"at", "status_code", "duration_ms", "error"}, oldest first.
    attempt_log = models.JSONField(default=list)

    objects = WebhookDeliveryQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "webhook deliveries"
        constraints = [
            models.UniqueConstraint(fields=["endpoint", "event_id"], name="webhook_event_once"),
            models.CheckConstraint(
                condition=Q(status__in=["pending", "delivered", "failed"]),
                name="webhook_delivery_status_valid",
            ),
        ]
        indexes = [
            # The beat's pass: pending deliveries by when they are due.
            models.Index(
                fields=["next_attempt_at"],
                name="webhook_due",
                condition=Q(status="pending"),
            ),
            # The admin page: one endpoint's deliveries, newest first, a page at a time.
            models.Index(fields=["endpoint", "-created_at", "-id"], name="webhook_endpoint_recent"),
            # Beat's pass forgets settled deliveries past the retention, oldest first.
            models.Index(
                fields=["created_at"], name="webhook_settled", condition=~Q(status="pending")
            ),
            models.Index(fields=["event_id"], name="webhook_event"),
            models.Index(fields=["subject"], name="webhook_subject"),
            models.Index(fields=["run"], name="webhook_run"),
        ]

    def __str__(self) -> str:
        return f"{self.event} {self.event_id} → {self.endpoint_id} ({self.status})"
