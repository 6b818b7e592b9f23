"""Webhook endpoints and the outbox of their deliveries."""

from __future__ import annotations

from datetime import datetime

from django.db import models
from django.db.models import Count, Q
from django.db.models.functions import Cast

from ledger.models.history import tracked
from ledger.models.memories import Subject
from ledger.models.runs import Run
from ledger.rules import webhooks
from ledger.rules.webhooks import DeliveryStatus, quoted_event


class WebhookEndpointQuerySet(models.QuerySet["WebhookEndpoint"]):
    def subscribed_to(self, event: str) -> WebhookEndpointQuerySet:
        """The active endpoints that asked for ``event``. Their events are read as JSON text,
        which holds each name in quotes: the same on PostgreSQL and SQLite (whose JSON has
        no containment lookup), and the table is a handful of rows."""
        return self.annotate(events_text=Cast("events", models.TextField())).filter(
            active=True, events_text__contains=quoted_event(event)
        )

    def with_counts(self) -> WebhookEndpointQuerySet:
        """Each endpoint with how many of its deliveries wait, and how many failed."""
        return self.annotate(
            pending=Count("deliveries", filter=Q(deliveries__status=DeliveryStatus.PENDING)),
            failed=Count("deliveries", filter=Q(deliveries__status=DeliveryStatus.FAILED)),
        )


class WebhookDeliveryQuerySet(models.QuerySet["WebhookDelivery"]):
    def due(self, now: datetime) -> WebhookDeliveryQuerySet:
        """Waiting, and due to be tried by ``now``."""
        return self.filter(status=DeliveryStatus.PENDING, next_attempt_at__lte=now)

    def settled_before(self, cutoff: datetime) -> WebhookDeliveryQuerySet:
        """Delivered or failed, and filed before ``cutoff``: nothing left to send."""
        return self.exclude(status=DeliveryStatus.PENDING).filter(created_at__lt=cutoff)

    def about_subject(self, subject_id: int) -> WebhookDeliveryQuerySet:
        """Every event about the subject: filed under it, or under one of its runs."""
        return self.filter(Q(subject_id=subject_id) | Q(run__subject_id=subject_id))


class WebhookEndpoint(models.Model):
    """An address an admin registered to receive signed events, and which events.

    The secret signs every delivery (``memoryadmin_client.signatures``); it is shown once, when
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
