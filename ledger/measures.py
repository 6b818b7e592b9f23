"""What is counted outside a request (docs/observability.md): each Celery task's run time and
failure, by Celery's signals, and each sign-in the lockout refuses, by django-axes' signal.

A worker's counts reach Prometheus either through the web's ``/metrics`` (worker and web on
one host, sharing ``PROMETHEUS_MULTIPROC_DIR``), or from the worker's own port
(``MEMORYADMIN_WORKER_METRICS``, "host:port"), served by its main process and summing its
pool's children through the same folder.
"""

from __future__ import annotations

import time
from typing import Any

from axes.signals import user_locked_out
from celery.signals import task_failure, task_postrun, task_prerun, worker_init
from django.conf import settings
from django.dispatch import receiver
from prometheus_client import start_http_server

from ledger.metrics import RATE_LIMIT_REFUSALS, TASK_DURATION, TASK_FAILURES, counted

# Task id → when it started, in the process that runs it.
_started: dict[str, float] = {}


def task_started(task_id: str, **kwargs: Any) -> None:
    _started[task_id] = time.perf_counter()


def task_finished(task_id: str, task: Any, **kwargs: Any) -> None:
    started = _started.pop(task_id, None)
    if started is not None:
        TASK_DURATION.labels(task=task.name).observe(time.perf_counter() - started)


def task_failed(sender: Any, **kwargs: Any) -> None:
    TASK_FAILURES.labels(task=sender.name).inc()


def serve_worker_metrics(**kwargs: Any) -> None:
    address = settings.MEMORYADMIN_WORKER_METRICS
    if address:
        host, _, port = address.rpartition(":")
        start_http_server(int(port), addr=host or "0.0.0.0", registry=counted())


@receiver(user_locked_out)
def sign_in_refused(**kwargs: Any) -> None:
    RATE_LIMIT_REFUSALS.labels(kind="signin").inc()


# Celery's ``connect`` as a decorator is untyped: connected by call.
task_prerun.connect(task_started)
task_postrun.connect(task_finished)
task_failure.connect(task_failed)
worker_init.connect(serve_worker_metrics)
