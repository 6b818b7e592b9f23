"""gunicorn's settings, read when it starts from the repository's folder: its access log
(``--access-logfile``) keeps paths, never query strings, and its error log is in JSON lines
when the application's are (``memoryadmin.logs``). Started from elsewhere, pass
``--logger-class memoryadmin.logs.GunicornLogger``."""

import gc
import os
from pathlib import Path
from typing import Any

from prometheus_client import multiprocess

logger_class = "memoryadmin.logs.GunicornLogger"


def on_starting(server: Any) -> None:
    """PROMETHEUS_MULTIPROC_DIR must exist and be empty when the workers start: the counts a
    previous run left there would be summed into this run's (docs/observability.md). The
    folder is made if missing, and the ``*.db`` files of a previous run removed."""
    folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not folder:
        return
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    for stale in path.glob("*.db"):
        stale.unlink(missing_ok=True)


def post_worker_init(worker: Any) -> None:
    """Each worker, once it has loaded the application: its URLs, and with them every view,
    imported now rather than in its first request, then every object made so far put out of
    the garbage collector's reach (``gc.freeze``). They live as long as the worker, and a
    full collection otherwise walks all ~180,000 of them: 100-400 ms of one request in a few
    hundred, most of the write's p99 (docs/benchmarks.md)."""
    # Imported here: gunicorn reads this file before the application sets Django up.
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018  (imports the URLconf)
    gc.freeze()


def child_exit(server: Any, worker: Any) -> None:
    """A worker that exits leaves its counts in PROMETHEUS_MULTIPROC_DIR, where /metrics
    still sums them; prometheus-client is told it is gone (docs/observability.md)."""
    if "PROMETHEUS_MULTIPROC_DIR" in os.environ:
        multiprocess.mark_process_dead(worker.pid)  # type: ignore[no-untyped-call]


def when_ready(server: Any) -> None:
    if server.cfg.workers > 1 and "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
        server.log.warning(
            "PROMETHEUS_MULTIPROC_DIR is not set: each scrape of /metrics shows only the "
            "worker that answers it (docs/observability.md)."
        )
