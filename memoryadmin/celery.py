"""The Celery app. Tasks live in ``ledger.tasks``; the schedule is in settings.

Its processes log as the web's do (``settings.LOGGING``: JSON lines in production), each
task's lines with the id of the request that queued it, and trace when tracing is on.
"""

import logging.config
import os
from pathlib import Path
from typing import Any

from celery import Celery
from celery.beat import PersistentScheduler
from celery.signals import (
    before_task_publish,
    setup_logging,
    task_postrun,
    task_prerun,
    worker_process_init,
)
from django.conf import settings

from memoryadmin import request_id

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")

app = Celery("memoryadmin")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

before_task_publish.connect(request_id.into_task_headers)
task_prerun.connect(request_id.from_task_headers)
task_postrun.connect(request_id.after_task)


def _log_as_the_web_does(loglevel: int | str | None = None, **_: Any) -> None:
    # Connected, this replaces Celery's own logging setup with the project's; the worker's
    # and beat's --loglevel still sets how much they say.
    logging.config.dictConfig(settings.LOGGING)
    if loglevel:
        logging.getLogger().setLevel(loglevel)


def _trace_each_worker_process(**_: Any) -> None:
    # In each pool process after its fork, so the exporter's thread is its own. Imported
    # here: every process that loads Django loads this module, and OpenTelemetry's
    # instrumentations take a while to import.
    from memoryadmin import tracing

    tracing.configure(worker=True)


setup_logging.connect(_log_as_the_web_does)
worker_process_init.connect(_trace_each_worker_process)


class Schedule(PersistentScheduler):  # type: ignore[misc]  # celery ships no types
    """Celery's own scheduler, which makes its file's folder first: a fresh checkout or
    volume has none, and beat would otherwise stop at once (reporting the file corrupt)."""

    def setup_schedule(self) -> None:
        Path(self.schedule_filename).parent.mkdir(parents=True, exist_ok=True)
        super().setup_schedule()
