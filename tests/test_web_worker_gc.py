"""A web worker's garbage collections leave the application alone: the write's p99."""

from __future__ import annotations

import gc
import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_a_web_worker_puts_the_application_it_loaded_out_of_the_collectors_reach() -> None:
    """A full collection in a worker walked every object the application is made of, about
    180,000 (100-400 ms of one request in a few hundred: most of the write's p99); once the
    worker has loaded the application, its URLs included, gunicorn.conf.py freezes them."""
    hooks = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    gc.unfreeze()
    try:
        tracked = len(gc.get_objects())
        hooks["post_worker_init"](None)
        assert gc.get_freeze_count() >= tracked > 100_000
        # What a full collection walks now is what requests make after this point.
        assert len(gc.get_objects()) < 1_000
    finally:
        gc.unfreeze()
