"""Verify now through a real Celery worker and the Redis test broker: the click queues the
task, a second click while it waits starts nothing, and the worker (a process of its own, on
the test database) runs it once, reports its progress and records who asked."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from celery import Celery, current_app
from django.contrib.auth.models import User
from django.urls import reverse

from ledger.models import Memory
from ledger.reads.audit_verified import last_verification, progress, progress_path
from tests import test_worker
from tests.conftest import TEST_REDIS_URL, signed_in
from tests.test_probes import celery_broker
from tests.test_worker import Worker, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

# tests/test_worker.py's broker client and worker starter, as this module's own fixtures.
sender = test_worker.sender
mail_dir = test_worker.mail_dir
start_worker = test_worker.start_worker

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture(scope="module", autouse=True)
def the_projects_app_stays_current() -> Iterator[None]:
    """``sender`` becomes Celery's current app when it is made: the tests that run after
    this module queue on the project's app again (or run eagerly when they ask to)."""
    previous = current_app._get_current_object()
    yield
    previous.set_current()


RAN = re.compile(r"ledger\.tasks\.verify_audit\[[^\]]+\] succeeded in [\d.]+s: (.*)")


def test_verify_now_runs_once_in_a_worker_and_records_who_asked(
    sender: Celery,
    start_worker: Callable[..., Worker],
    make_person: Callable[..., User],
    remember: Callable[..., Memory],
    settings: Any,
) -> None:
    # The worker records beside the checkpoint file its environment names.
    settings.MEMORYADMIN_AUDIT_CHECKPOINTS = os.environ["MEMORYADMIN_AUDIT_CHECKPOINTS"]
    progress_path().unlink(missing_ok=True)
    make_person("ada", role="admin")
    remember("Prefers email over telephone.")
    ada = signed_in("ada")

    with celery_broker(TEST_REDIS_URL):
        first = ada.post(reverse("audit-verify"), **HTMX)
        second = ada.post(reverse("audit-verify"), **HTMX)
    assert first.status_code == 200
    assert "queued, waiting for a worker" in first.content.decode()
    assert 'hx-trigger="every 2s"' in first.content.decode()
    assert second.status_code == 409, "no worker has taken the first yet: one is queued"
    assert "already running" in second.content.decode()

    worker = start_worker("verify")
    recorded = wait_for(
        lambda: (found := last_verification()) and found.by == "user:ada" and found,
        "the worker to record the verification",
        timeout=60,
    )
    assert recorded.ok and recorded.checked > 0
    wait_for(lambda: progress() is None, "the worker to give its claim up", timeout=30)
    runs = wait_for(lambda: RAN.findall(worker.text()), "the worker to log the run")
    assert len(runs) == 1 and "'ok': True" in runs[0]
    page = ada.get(reverse("audit")).content.decode()
    assert "by ada:" in page and "every check held" in page
