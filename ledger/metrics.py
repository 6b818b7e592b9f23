"""The product's Prometheus metrics, defined once: every part that counts imports them from
here, and ``/metrics`` exposes them (docs/observability.md says what each means).

Under gunicorn's several processes prometheus-client's multiprocess mode sums them, when
``PROMETHEUS_MULTIPROC_DIR`` is set before the first import. Every metric a process keeps is
a counter or a histogram, which add up across processes as they are; what is a level (a
queue's depth, the audit's last verification) is read when ``/metrics`` is scraped
(``ledger.reads.scraped``), under the names at the end of this module.
"""

from __future__ import annotations

import os

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram
from prometheus_client.multiprocess import MultiProcessCollector

# Buckets in seconds from a millisecond to ten seconds: recall and most requests sit in
# the tens of milliseconds, a slow embedding backend in seconds.
SECONDS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

HTTP_REQUESTS = Counter(
    "memoryadmin_http_requests",
    "Requests answered, by route (the URL pattern's name), method and status.",
    ["route", "method", "status"],
)
HTTP_DURATION = Histogram(
    "memoryadmin_http_request_duration_seconds",
    "Time to answer a request, by route and method.",
    ["route", "method"],
    buckets=SECONDS,
)
RECALL_DURATION = Histogram(
    "memoryadmin_recall_duration_seconds",
    "Time to rank and record a recall, by how it ranked (semantic or words).",
    ["ranking"],
    buckets=SECONDS,
)
RECALL_ITEMS = Histogram(
    "memoryadmin_recall_items",
    "Memories a recall returned (its k after the cap).",
    buckets=(0, 1, 2, 3, 5, 8, 13, 21, 34, 55),
)
WRITE_DECISIONS = Counter(
    "memoryadmin_write_decisions",
    "Writes through the gate, by decision (accepted, pending, refused, ...) and reason code.",
    ["decision", "reason"],
)
HELD_WRITES = Counter(
    "memoryadmin_held_writes",
    "Writes held for review as possible poison (instructions, injections), by reason code.",
    ["reason"],
)
TASK_DURATION = Histogram(
    "memoryadmin_task_duration_seconds",
    "Celery task run time, by task name.",
    ["task"],
    buckets=SECONDS,
)
TASK_FAILURES = Counter(
    "memoryadmin_task_failures",
    "Celery task runs that raised, by task name.",
    ["task"],
)
EXPIRED_MEMORIES = Counter(
    "memoryadmin_expired_memories",
    "Memories the expiry sweep retired on their TTL.",
)
RATE_LIMIT_REFUSALS = Counter(
    "memoryadmin_rate_limit_refusals",
    "Requests refused by a rate limit, by kind (reads, writes, failed_keys, signin).",
    ["kind"],
)
RATE_LIMIT_STORE_ERRORS = Counter(
    "memoryadmin_rate_limit_store_errors",
    "Rate-limit checks the store (Redis) could not answer, so the request was let through.",
)
EMBEDDING_DURATION = Histogram(
    "memoryadmin_embedding_duration_seconds",
    "Time to embed one batch of texts, by backend.",
    ["backend"],
    buckets=SECONDS,
)
EMBEDDING_FAILURES = Counter(
    "memoryadmin_embedding_failures",
    "Embedding calls that failed or timed out, by backend.",
    ["backend"],
)

# Read at scrape time, not kept by any process (``ledger.reads.scraped``).
QUEUE_DEPTH = "memoryadmin_queue_depth"
AUDIT_VERIFIED = "memoryadmin_audit_verified"
AUDIT_VERIFIED_AT = "memoryadmin_audit_verified_timestamp_seconds"
SCRAPE_DATABASE_UP = "memoryadmin_scrape_database_up"


def counted() -> CollectorRegistry:
    """What a scrape reports of the counts: this process's, or every process's when they
    share ``PROMETHEUS_MULTIPROC_DIR`` (gunicorn's workers, a host's Celery children)."""
    if "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
        return REGISTRY
    registry = CollectorRegistry()
    MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    return registry
