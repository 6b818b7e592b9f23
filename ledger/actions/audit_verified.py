"""Verifying the audit, as ``verify_audit`` and the Audit page's **Verify now** both do:
seal what waits, check every chain, MAC, live row and the checkpoints, record what was found
(``ledger.reads.audit_verified`` reads it back) and e-mail the admins when it failed.

Verify now claims a progress file before it queues the task, so a second click while one is
queued or running starts nothing; the task reports its progress there and removes it when it
is done. A claim nobody has touched for ``STALE_CLAIM`` (no worker took the task, or one died
in it) is given up, so the button is never blocked for good.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from smtplib import SMTPException
from typing import Any

from celery import current_app
from django.conf import settings
from django.core.mail import EmailMessage, mailers
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from ledger import access
from ledger.actions import seals
from ledger.delivery import broker
from ledger.reads import audit_chain, audit_checkpoints, audit_live, audit_macs
from ledger.reads.audit_checkpoints import database_name
from ledger.reads.audit_verified import (
    Failure,
    Verification,
    last_verification,
    progress_path,
    verification_path,
)

logger = logging.getLogger(__name__)

VERIFY_TASK = "ledger.tasks.verify_audit"
STALE_CLAIM = timedelta(minutes=10)
# Lines of a check's findings the record keeps (verify_audit names 20 rows a table at most).
FINDINGS = 50
# Rows the record marks, whatever the checks found: a file every admin page may read.
FAILURES = 1000
# Progress is written at most this often (seconds): a file replaced per chunk is cheap,
# but a poll every second or two needs no more.
PROGRESS_EVERY = 0.5


@dataclass
class Verified:
    """Everything one verification found."""

    checks: list[audit_chain.TableCheck]
    macs: list[audit_macs.MacCheck]
    live: list[audit_live.LiveCheck]
    file: audit_checkpoints.CheckpointFile
    # (title, lines) of each check that failed, as verify_audit prints them.
    failed: list[tuple[str, list[str]]] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failed

    @property
    def checked(self) -> int:
        return sum(check.checked for check in self.checks)


class Reporter:
    """Writes a running verification's progress to its claim, now and then."""

    def __init__(self, by: str, total: int) -> None:
        self.by, self.total = by, total
        self.started = timezone.now()
        self.step, self.checked, self.written = "", 0, 0.0

    def start(self, step: str) -> None:
        self.step, self.checked = step, 0
        self.write()

    def tick(self, rows: int) -> None:
        self.checked += rows
        if time.monotonic() - self.written >= PROGRESS_EVERY:
            self.write()

    def write(self) -> None:
        self.written = time.monotonic()
        record = _progress(self.by, self.step, self.checked, self.total, self.started)
        _write(progress_path(), record)


def _progress(by: str, step: str, checked: int, total: int, started: datetime) -> dict[str, Any]:
    return {
        "database": database_name(),
        "by": by,
        "started": started.isoformat(),
        "step": step,
        "checked": checked,
        "total": total,
    }


def verify(
    *, by: str, seal: bool = True, stale_after: timedelta = timedelta(minutes=5)
) -> Verified:
    """Check the audit as ``by`` asked (``user:ada``, or who runs it without a person),
    record the result and, if it failed, e-mail the admins."""
    return _verify(by=by, seal=seal, stale_after=stale_after, reporter=None)


def verify_reporting(*, by: str) -> Verified:
    """``verify``, reporting its progress in the claim the Audit page made, which is
    removed when it is done (whatever happened)."""
    total = sum(chain.rows().count() for chain in audit_chain.chains())
    reporter = Reporter(by, total)
    try:
        return _verify(by=by, seal=True, stale_after=timedelta(minutes=5), reporter=reporter)
    finally:
        progress_path().unlink(missing_ok=True)


def _verify(*, by: str, seal: bool, stale_after: timedelta, reporter: Reporter | None) -> Verified:
    if seal:
        if reporter:
            reporter.start("sealing the rows waiting")
        # Rows without a valid MAC are passed over: named below, never sealed.
        seals.seal_pending(full=True)
    if reporter:
        reporter.start("checking the seals")
    checks = audit_chain.verify(stale_after=stale_after, tick=reporter.tick if reporter else None)
    if reporter:
        reporter.start("checking the MACs")
    macs = audit_macs.check_macs(tick=reporter.tick if reporter else None)
    if reporter:
        reporter.start("comparing live rows with their history")
    live = audit_live.check_live_rows()
    file = audit_checkpoints.read_checkpoints()
    cut = audit_checkpoints.cut_back(file.latest) if file.latest else []
    verified = Verified(checks, macs, live, file)
    sections = [
        ("The audit chain does not follow:", [str(c.finding) for c in checks if c.finding]),
        ("History rows the application did not write:", _named(macs, "history rows")),
        ("Live rows that differ from their history:", _named(live, "rows")),
        (f"The chain was cut back since its last checkpoint ({file.path}):", cut),
        (f"The checkpoint file {file.path} was tampered with:", file.tampered),
    ]
    verified.failed = [(title, lines) for title, lines in sections if lines]
    verified.failures = _failures(verified)
    record_verification(verified, by=by)
    if not verified.ok:
        _tell_admins(verified, by)
    return verified


def _named(checks: list[Any], what: str) -> list[str]:
    """Each check's named rows, and how many more it found than it names."""
    lines: list[str] = []
    for check in checks:
        lines += check.problems
        if check.bad > len(check.problems):
            lines.append(f"… and {check.bad - len(check.problems)} more {what} like these")
    return lines


def _failures(verified: Verified) -> list[Failure]:
    """The rows to mark on the Audit page: each chain's first row that does not follow,
    each row without the application's MAC, each newest version a live row contradicts."""
    found = [
        Failure(c.chain.table, c.finding.row_id, c.finding.problem)
        for c in verified.checks
        if c.finding
    ]
    found += [Failure(m.chain.table, row, why) for m in verified.macs for row, why in m.marks]
    found += [Failure(v.table, row, why) for v in verified.live for row, why in v.marks]
    return found[:FAILURES]


def record_verification(verified: Verified, *, by: str) -> None:
    """Replace the record with this verification, whole: a scrape never reads half of one."""
    # Each check that failed, with a few of its lines: what a page or a mail can show.
    findings = [[title, lines[:FINDINGS]] for title, lines in verified.failed]
    _write(
        verification_path(),
        {
            "database": database_name(),
            "at": timezone.now().isoformat(),
            "ok": verified.ok,
            "by": by,
            "checked": verified.checked,
            "findings": findings,
            "failures": [[f.table, f.row_id, f.problem] for f in verified.failures],
        },
    )


def _write(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", dir=path.parent, prefix=f".{path.stem}-", delete=False
    ) as file:
        json.dump(record, file)
    os.replace(file.name, path)


def claim_verification(by: str) -> bool:
    """Claim the one verification the Audit page may have queued or running: False when
    one already is."""
    path = progress_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(2):
        try:
            descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if not _abandoned(path):
                return False
            path.unlink(missing_ok=True)
            continue
        os.close(descriptor)
        _write(path, _progress(by, "queued, waiting for a worker", 0, 0, timezone.now()))
        return True
    return False


def start_verification(by: str) -> str:
    """Verify now, for ``by``: queue the task (with ``CELERY_TASK_ALWAYS_EAGER``, where no
    worker runs, verify at once). "" when it was started, else why not, in words."""
    if not claim_verification(by):
        return "A verification is already running: its progress is shown below."
    if current_app.conf.task_always_eager:
        verify_reporting(by=by)
        return ""
    if not broker.send(VERIFY_TASK, (by,), instead="nothing was started"):
        progress_path().unlink(missing_ok=True)
        return (
            "The verification could not be queued: the task queue is not answering. Try "
            "again in a minute, or run manage.py verify_audit on the command line."
        )
    return ""


def _abandoned(path: Path) -> bool:
    try:
        touched = path.stat().st_mtime
    except FileNotFoundError:
        return True
    return time.time() - touched > STALE_CLAIM.total_seconds()


def _tell_admins(verified: Verified, by: str) -> None:
    """E-mail every admin with an address that the audit failed its verification (unless
    this install sends no e-mail). A mail that fails is logged: the banner on every admin
    page says it all the same."""
    admins = list(access.admin_people()) if settings.MEMORYADMIN_EMAIL else []
    if not admins:
        return
    recorded = last_verification() or Verification(timezone.now(), ok=False, by=by)
    context = {
        "verification": recorded,
        "findings": recorded.findings,
        "url": settings.MEMORYADMIN_SITE_URL + reverse("audit"),
    }
    subject = " ".join(render_to_string("ledger/email/audit_failed_subject.txt", context).split())
    body = render_to_string("ledger/email/audit_failed.txt", context)
    try:
        with mailers.default as mailer:
            mailer.send_messages(
                [EmailMessage(subject=subject, body=body, to=[admin.email]) for admin in admins]
            )
    except (SMTPException, OSError) as error:
        logger.warning(
            "The audit failed its verification: the admins could not be e-mailed (%s).", error
        )
