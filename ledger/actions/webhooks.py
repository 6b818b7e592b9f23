"""Webhooks: registering endpoints, and emitting events in the transaction of the change
they tell of (``ledger.delivery.webhooks`` delivers them).

Emission is a transactional outbox. ``emit`` writes one ``WebhookDelivery`` row per
subscribed active endpoint in one ``INSERT … SELECT`` inside the caller's transaction, and
queues the delivery task once it commits: a change rolled back sends nothing, and a broker
that is down loses nothing, since the beat's pass (``deliver_due``) sends whatever is due.
With no endpoint subscribed the statement inserts nothing and nothing is queued; a caller
that already knows nobody listens (the write gate reads it with its holdings) passes
``listening=False`` and costs no statement at all.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import connections, transaction
from django.db.models import (
    BigIntegerField,
    CharField,
    DateTimeField,
    F,
    Func,
    IntegerField,
    JSONField,
    QuerySet,
    UUIDField,
    Value,
)
from django.db.models.functions import JSONObject
from django.utils import timezone

from ledger.actions._tracking import delete_tracked, save_tracked
from ledger.actors import Actor
from ledger.delivery.webhooks import checked_destination, queue
from ledger.models import Memory, WebhookDelivery, WebhookEndpoint
from ledger.rules import webhooks

if TYPE_CHECKING:
    from django.db.backends.base.base import BaseDatabaseWrapper
    from django.db.models.sql.compiler import SQLCompiler, _AsSqlType

logger = logging.getLogger(__name__)

SECRET_BYTES = 32
Status = webhooks.DeliveryStatus


# --- endpoints --------------------------------------------------------------------------


@dataclass(frozen=True)
class NewSecret:
    """An endpoint with its secret, which is shown this once."""

    endpoint: WebhookEndpoint
    secret: str


def register_endpoint(
    *, url: str, events: Sequence[str], description: str, actor: Actor
) -> NewSecret:
    """Register an address for ``events``, with a secret made here and returned once."""
    checked = webhooks.checked_url(url)
    # A name that does not resolve yet (its DNS is set up later) is let through: every POST
    # resolves and checks it again, and sends nothing to a refused address.
    with contextlib.suppress(OSError):
        checked_destination(checked)
    chosen = webhooks.checked_events(events)
    description = " ".join(description.split())
    if len(description) > webhooks.DESCRIPTION_MAX:
        raise webhooks.BadEndpoint(
            "description", f"Keep the description to {webhooks.DESCRIPTION_MAX} characters."
        )
    now = timezone.now()
    secret = _new_secret()
    endpoint = WebhookEndpoint(
        url=checked,
        secret=secret,
        events=chosen,
        description=description,
        created_at=now,
        created_by=actor.label,
        changed_at=now,
    )
    with transaction.atomic():
        save_tracked(
            endpoint, actor=actor, reason=f"Webhook endpoint registered for {', '.join(chosen)}."
        )
    return NewSecret(endpoint, secret)


def set_endpoint_active(
    *, endpoint: WebhookEndpoint, active: bool, actor: Actor, reason: str = ""
) -> WebhookEndpoint:
    """Stop sending to an endpoint, or start again. What waits for it stays waiting, and is
    sent once it is active again; events while it is inactive are not kept for it."""
    with transaction.atomic():
        locked = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
        if locked.active == active:
            raise webhooks.BadEndpoint(
                "active", "The endpoint is already " + ("active." if active else "inactive.")
            )
        locked.active = active
        locked.changed_at = timezone.now()
        said = "Activated." if active else "Deactivated."
        save_tracked(
            locked,
            actor=actor,
            reason=_with_note(said, reason),
            update_fields=["active", "changed_at"],
        )
    if active:
        _queue_after_commit(None)
    return locked


def rotate_endpoint_secret(
    *, endpoint: WebhookEndpoint, actor: Actor, reason: str = ""
) -> NewSecret:
    """A new secret, returned once; every delivery from now on is signed with it only."""
    secret = _new_secret()
    with transaction.atomic():
        locked = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
        locked.secret = secret
        locked.changed_at = timezone.now()
        save_tracked(
            locked,
            actor=actor,
            reason=_with_note("Secret rotated.", reason),
            update_fields=["secret", "changed_at"],
        )
    return NewSecret(locked, secret)


def delete_endpoint(*, endpoint: WebhookEndpoint, actor: Actor, reason: str = "") -> None:
    """Remove the endpoint and its deliveries; its history keeps that it existed."""
    with transaction.atomic():
        locked = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
        delete_tracked(locked, actor=actor, reason=_with_note("Deleted.", reason))


def send_test_event(*, endpoint: WebhookEndpoint, actor: Actor) -> WebhookDelivery:
    """A ``webhook.test`` event for this endpoint alone, whatever it subscribes to."""
    now = timezone.now()
    with transaction.atomic():
        locked = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
        delivery = WebhookDelivery.objects.create(
            endpoint=locked,
            event_id=uuid.uuid4(),
            event=webhooks.TEST_EVENT,
            payload=webhooks.test_payload(locked.pk, actor.label),
            created_at=now,
            next_attempt_at=now,
        )
        locked.changed_at = now
        save_tracked(
            locked,
            actor=actor,
            reason=f"Test event {delivery.event_id} sent.",
            update_fields=["changed_at"],
        )
        _queue_after_commit(delivery.event_id)
    return delivery


def retry_delivery(*, delivery: WebhookDelivery, actor: Actor) -> WebhookDelivery:
    """Try a delivery again now: a failed one gets one more attempt, a waiting one goes
    now rather than at its next time. A delivered one is never sent again. One being sent
    right now (its row locked through the POST, up to the timeout) is refused at once
    rather than waited for."""
    with transaction.atomic():
        locked = (
            WebhookDelivery.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("endpoint")
            .filter(pk=delivery.pk)
            .first()
        )
        if locked is None:
            raise webhooks.BadEndpoint(
                "delivery",
                "This event is being sent right now: reload the page in a moment for how it went.",
            )
        if locked.status == Status.DELIVERED:
            raise webhooks.BadEndpoint(
                "delivery", "This event was delivered: it is not sent again."
            )
        now = timezone.now()
        locked.status = Status.PENDING
        locked.next_attempt_at = now
        locked.save(update_fields=["status", "next_attempt_at"])
        endpoint = locked.endpoint
        endpoint.changed_at = now
        save_tracked(
            endpoint,
            actor=actor,
            reason=f"Retry asked for: the {locked.event} event {locked.event_id}.",
            update_fields=["changed_at"],
        )
        _queue_after_commit(locked.event_id)
    return locked


def _new_secret() -> str:
    return f"whsec_{secrets.token_urlsafe(SECRET_BYTES)}"


def _with_note(said: str, note: str) -> str:
    note = " ".join(note.split())
    return f"{said} {note}" if note else said


# --- emitting ---------------------------------------------------------------------------


def emit(
    event: str,
    payload: dict[str, Any],
    *,
    subject_id: int | None = None,
    run_id: int | None = None,
    listening: bool | None = None,
) -> None:
    """File ``event`` for every active endpoint subscribed to it, in the caller's
    transaction: one statement, none when ``listening`` is False. ``subject_id`` and
    ``run_id`` are what an erasure finds the event by to scrub its payload."""
    if listening is False:
        return
    event_id = uuid.uuid4()
    now = timezone.now()
    rows = (
        WebhookEndpoint.objects.subscribed_to(event)
        .annotate(
            w_event_id=Value(event_id, output_field=UUIDField()),
            w_event=Value(event, output_field=CharField()),
            w_payload=Value(payload, output_field=JSONField()),
            w_subject=Value(subject_id, output_field=BigIntegerField()),
            w_run=Value(run_id, output_field=BigIntegerField()),
            w_created=Value(now, output_field=DateTimeField()),
            w_endpoint=F("pk"),
            w_status=Value(Status.PENDING.value, output_field=CharField()),
            w_attempts=Value(0, output_field=IntegerField()),
            w_log=Value([], output_field=JSONField()),
            w_error=Value("", output_field=CharField()),
            w_next=Value(now, output_field=DateTimeField()),
        )
        .order_by()
        .values_list(*(f"w_{name}" for name in _SELECTED))
    )
    sql, params = _compiled(rows)
    connection = connections[rows.db]
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {_TABLE} ({_COLUMNS}) {sql}", params)
        filed = cursor.rowcount
    if filed:
        _queue_after_commit(event_id)


# The columns every emission writes, in order, and the names its selects give them.
_COLUMN_NAMES = (
    "event_id",
    "event",
    "payload",
    "subject_id",
    "run_id",
    "created_at",
    "endpoint_id",
    "status",
    "attempts",
    "attempt_log",
    "last_error",
    "next_attempt_at",
)
_SELECTED = (
    "event_id",
    "event",
    "payload",
    "subject",
    "run",
    "created",
    "endpoint",
    "status",
    "attempts",
    "log",
    "error",
    "next",
)
_COLUMNS = ", ".join(f'"{column}"' for column in _COLUMN_NAMES)
_TABLE = WebhookDelivery._meta.db_table


def emit_memories(
    event: str,
    memory_ids: Sequence[Any],
    *,
    extra: dict[str, str] | None = None,
    listening: bool | None = None,
) -> None:
    """``event`` about each of ``memory_ids`` (rows this transaction wrote), each its own
    event id: one ``INSERT … SELECT`` however many memories and endpoints, the payload
    built by the database from the rows as they are now, so nothing is read for it first.
    ``extra`` is added to each payload beside the memory (the gate's outcome, say)."""
    if listening is False or not memory_ids:
        return
    event_ids = {pk: uuid.uuid4() for pk in memory_ids}
    said = {name: Value(value, output_field=CharField()) for name, value in (extra or {}).items()}
    memories = (
        Memory.objects.filter(pk__in=list(memory_ids))
        .annotate(
            w_id=F("pk"),
            w_payload=JSONObject(memory=_MEMORY_PAYLOAD, **said),
            w_subject=F("subject_id"),
            w_run=F("run_id"),
        )
        .order_by()
        .values_list("w_id", "w_payload", "w_subject", "w_run")
    )
    hooks = (
        WebhookEndpoint.objects.subscribed_to(event)
        .annotate(w_endpoint=F("pk"))
        .order_by()
        .values_list("w_endpoint")
    )
    connection = connections[memories.db]
    memory_sql, memory_params = _compiled(memories)
    hooks_sql, hooks_params = _compiled(hooks)
    ids_sql, ids_params = _id_table(event_ids, connection.vendor)
    created = DateTimeField().get_db_prep_value(timezone.now(), connection)
    empty_log = JSONField().get_db_prep_value([], connection)
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH ev (pk, event_id) AS ({ids_sql})"
            f" INSERT INTO {_TABLE} ({_COLUMNS})"
            " SELECT ev.event_id, %s, m.w_payload, m.w_subject, m.w_run, %s, hook.w_endpoint,"
            " %s, 0, %s, '', %s"
            f" FROM ({memory_sql}) m JOIN ev ON ev.pk = m.w_id"
            f" CROSS JOIN ({hooks_sql}) hook",
            [
                *ids_params,
                event,
                created,
                Status.PENDING.value,
                empty_log,
                created,
                *memory_params,
                *hooks_params,
            ],
        )
        filed = cursor.rowcount
    if filed:
        _queue_after_commit(next(iter(event_ids.values())) if len(event_ids) == 1 else None)


class _UuidText(Func):
    """A UUID column as text in its dashed form, as ``str(uuid)`` writes it: PostgreSQL's
    cast does so, while SQLite keeps the 32 hex digits and is given the dashes here."""

    template = "CAST(%(expressions)s AS text)"
    output_field = CharField()

    def as_sqlite(
        self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra: Any
    ) -> _AsSqlType:
        # The column is named five times: a column has no parameters to repeat.
        dashed = " || '-' || ".join(
            f"substr(%(expressions)s, {start}, {length})"
            for start, length in ((1, 8), (9, 4), (13, 4), (17, 4), (21, 12))
        )
        return self.as_sql(compiler, connection, template=f"lower({dashed})", **extra)


class _IsoTime(Func):
    """A time column as ``datetime.isoformat()`` writes it in UTC (``…T10:00:00+00:00``,
    or ``…T10:00:00.250000+00:00``), so that a payload's times read the same as the
    envelope's ``created_at`` on either database: PostgreSQL's JSON would trim the
    fraction's zeros, and SQLite stores the time as text with a space and no zone."""

    template = (
        "(to_char(%(expressions)s AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS')"
        " || CASE WHEN date_trunc('second', %(expressions)s) = %(expressions)s THEN ''"
        " ELSE to_char(%(expressions)s, '.US') END || '+00:00')"
    )
    output_field = CharField()

    def as_sqlite(
        self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra: Any
    ) -> _AsSqlType:
        # Django keeps an aware time on SQLite as ``str()`` of it in UTC: isoformat's own
        # digits, with a space for the "T" and no zone.
        template = "(replace(%(expressions)s, ' ', 'T') || '+00:00')"
        return self.as_sql(compiler, connection, template=template, **extra)


# What every memory event tells of the memory: ids, its subject's ref, its words and times,
# written the same on PostgreSQL and SQLite (dashed ids, ISO 8601 times with their offset).
_MEMORY_PAYLOAD = JSONObject(
    id=_UuidText("id"),
    subject=F("subject__ref"),
    kind=F("kind"),
    key=F("key"),
    statement=F("statement"),
    basis=F("basis"),
    status=F("status"),
    written_at=_IsoTime("written_at"),
    expires_at=_IsoTime("expires_at"),
    agent=F("agent__name"),
    run=F("run__ref"),
)


def _compiled(rows: QuerySet[Any]) -> tuple[str, Sequence[Any]]:
    sql, params = rows.query.get_compiler(using=rows.db).as_sql()
    return sql, params


def _id_table(event_ids: dict[Any, uuid.UUID], vendor: str) -> tuple[str, list[Any]]:
    """Each memory's id with its new event id, as a table: two arrays on PostgreSQL, a
    ``VALUES`` list elsewhere (SQLite, which keeps a UUID as its hex digits)."""
    if vendor == "postgresql":
        return "SELECT * FROM unnest(%s::uuid[], %s::uuid[])", [
            list(event_ids),
            list(event_ids.values()),
        ]
    pairs = ", ".join(["(%s, %s)"] * len(event_ids))
    flat = [value for pk, event in event_ids.items() for value in (_hex(pk), event.hex)]
    return f"VALUES {pairs}", flat


def _hex(pk: Any) -> str:
    return pk.hex if isinstance(pk, uuid.UUID) else uuid.UUID(str(pk)).hex


def scrub_subject(subject_id: int) -> int:
    """Blank the payload of every event about the subject (its memories' statements among
    them), sent or waiting: what is still to be sent goes without them. How many."""
    return int(
        WebhookDelivery.objects.about_subject(subject_id).update(payload=webhooks.ERASED_PAYLOAD)
    )


def _queue_after_commit(event_id: uuid.UUID | None) -> None:
    """Queue the delivery task once the transaction commits (robust: a broker that is down
    fails no write; the beat's pass sends what is due)."""
    transaction.on_commit(lambda: queue(event_id), robust=True)
