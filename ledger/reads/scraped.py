"""What ``/metrics`` reads when it is scraped rather than counts as it goes: how much waits in
each of support's queues, and the audit's last verification, its result and its time.

A fixed cost per scrape whatever the data: one count a queue, each stopping at ``DEPTH_CAP``,
and one small file read. A database that cannot answer does not fail the scrape: the
process's own metrics still matter most then, and ``memoryadmin_scrape_database_up`` says so.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from django.db import DatabaseError
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ledger import metrics
from ledger.reads.audit_verified import last_verification
from ledger.reads.queues import QUEUE_NAMES, count_up_to, queue_rows
from ledger.reads.readiness import database_answers

logger = logging.getLogger(__name__)

# A depth is counted up to here, so a scrape stays cheap: a queue this long has paged
# someone long before its exact length matters.
DEPTH_CAP = 10_000
_UP_HELP = "1 when the database answered this scrape's counts, 0 when it did not."


class ScrapedState(Collector):
    """A prometheus-client collector: ``collect`` runs once per scrape."""

    def collect(self) -> Iterator[Metric]:
        yield from _queue_depths()
        yield from _audit_verification()


def _queue_depths() -> Iterator[Metric]:
    depth = GaugeMetricFamily(
        metrics.QUEUE_DEPTH,
        f"Rows waiting in a support queue, counted up to {DEPTH_CAP}.",
        labels=["queue"],
    )
    now = timezone.now()
    try:
        if not database_answers():
            raise DatabaseError("no connection within the readiness check's bound")
        for name in QUEUE_NAMES:
            depth.add_metric([name], count_up_to(queue_rows(name, now), DEPTH_CAP))
    except DatabaseError:
        logger.warning("The queue depths could not be counted: the database did not answer.")
        yield GaugeMetricFamily(metrics.SCRAPE_DATABASE_UP, _UP_HELP, value=0)
        return
    yield GaugeMetricFamily(metrics.SCRAPE_DATABASE_UP, _UP_HELP, value=1)
    yield depth


def _audit_verification() -> Iterator[Metric]:
    verified = last_verification()
    if verified is None:
        # No value rather than a made-up one: "absent" is what an alert should catch.
        return
    yield GaugeMetricFamily(
        metrics.AUDIT_VERIFIED,
        "1 when the last verify_audit found the audit whole, 0 when it found a problem.",
        value=1 if verified.ok else 0,
    )
    yield GaugeMetricFamily(
        metrics.AUDIT_VERIFIED_AT,
        "When verify_audit last ran to a result (Unix time).",
        value=verified.at.timestamp(),
    )
