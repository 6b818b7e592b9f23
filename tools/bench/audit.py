"""How long ``verify_audit`` takes over a large history (docs/audit-chain.md).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/ma_auditbench DEBUG=1 \\
        .venv/bin/python -m tools.bench.audit --rows 100000

Run it against a scratch database (it is migrated, and rows are added to it). The history
is written through the application's own bulk path (``create_tracked``: each row gets its
MAC and queues its sealer, as a product write does), so the check has real rows to verify.
Then it times ``verify_audit`` twice: once sealing every row first (a database whose sealer
never ran), once over rows already sealed (the nightly cron's run).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from io import StringIO


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000, help="history rows to add")
    parser.add_argument("--batch", type=int, default=5_000, help="rows per insert")
    options = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
    # The commit-time sealer would run eagerly here, one commit at a time: the first timed
    # run seals them all instead, as verify_audit does on a database whose sealer was down.
    os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "0")
    # The queue the commits fill and the checkpoints the runs record are scratch too.
    scratch = tempfile.mkdtemp(prefix="memoryadmin-auditbench-")
    for folder in ("queue", "control"):
        os.makedirs(f"{scratch}/{folder}")
    os.environ.setdefault("CELERY_BROKER_DIR", scratch)
    os.environ.setdefault("MEMORYADMIN_AUDIT_CHECKPOINTS", f"{scratch}/audit-checkpoints.jsonl")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import transaction

    from ledger.actions._tracking import create_tracked
    from ledger.actors import Actor
    from ledger.models import Subject
    from ledger.reads import audit_chain

    call_command("migrate", verbosity=0)
    start = time.perf_counter()
    stamp = time.time_ns()
    actor = Actor.system("bench")
    for first in range(0, options.rows, options.batch):
        count = min(options.batch, options.rows - first)
        subjects = [Subject(ref=f"acct_bench_{stamp}_{first + n}") for n in range(count)]
        with transaction.atomic():
            create_tracked(subjects, actor=actor, reasons=["Benchmark."] * count)
    print(f"wrote {options.rows} history rows in {time.perf_counter() - start:.1f} s")
    total = sum(chain.rows().count() for chain in audit_chain.chains())
    for label, args in (("sealing first", []), ("already sealed", ["--no-seal"])):
        out = StringIO()
        start = time.perf_counter()
        call_command("verify_audit", *args, stdout=out, stderr=out)
        took = time.perf_counter() - start
        print(f"verify_audit ({label}) over {total} history rows: {took:.1f} s")


if __name__ == "__main__":
    main()
