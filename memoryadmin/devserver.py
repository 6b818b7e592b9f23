"""`make run`: the web server, a Celery worker and Celery beat, stopped together by Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from django.conf import settings


def main() -> int:
    import django

    host, port = os.environ.get("HOST", "127.0.0.1"), os.environ.get("PORT", "8000")
    # Set before the children start, so the worker's reminder e-mails link to this server.
    os.environ.setdefault("MEMORYADMIN_SITE_URL", f"http://{host}:{port}")
    os.environ.setdefault("MEMORYADMIN_SUPPORT_EMAIL", "support@example.com")
    # Expected here, and alarming on a clean start: runserver's "this is a development
    # server", and Celery's warning about running as root, as in a developer's container.
    os.environ.setdefault("DJANGO_RUNSERVER_HIDE_WARNING", "true")
    os.environ.setdefault(
        "PYTHONWARNINGS", "ignore:You're running the worker with superuser privileges"
    )
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
    django.setup()
    for folder in ("queue", "control"):
        (settings.CELERY_BROKER_DIR / folder).mkdir(parents=True, exist_ok=True)
    python = sys.executable
    commands = {
        "web": [python, "manage.py", "runserver", f"{host}:{port}", "--noreload"],
        "worker": [
            python,
            "-m",
            "celery",
            "-A",
            "memoryadmin",
            "worker",
            "--loglevel=INFO",
            "--concurrency=1",
        ],
        "beat": [python, "-m", "celery", "-A", "memoryadmin", "beat", "--loglevel=INFO"],
    }
    # Each child in its own session: Ctrl-C reaches only this runner, which stops each
    # child once, so the worker shuts its pool down cleanly instead of every pool process
    # being signalled too.
    processes = {
        name: subprocess.Popen(cmd, start_new_session=True) for name, cmd in commands.items()
    }
    # Beat first runs each task one period after it starts (an hour for reminders): queue
    # one run of each now, so the demo's due memory is reminded while you watch.
    from memoryadmin.celery import app

    for task in settings.CELERY_BEAT_SCHEDULE.values():
        app.send_task(str(task["task"]))
    print(
        f"\nmemoryadmin is running at http://{host}:{port}/  "
        f"(API docs: http://{host}:{port}/api/docs/)\n"
        "Sign in as dana (end user), sam (support) or alex (admin), "
        "password 'demo-password-1'. Ctrl-C stops the web server, worker and beat.\n",
        flush=True,
    )
    stop_requested: list[int] = []
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, lambda number, frame: stop_requested.append(number))
    try:
        while not stop_requested and all(p.poll() is None for p in processes.values()):
            time.sleep(0.2)
        if stop_requested:
            print("\nStopping the web server, worker and beat.", flush=True)
            return 0
        stopped = [name for name, p in processes.items() if p.poll() is not None]
        print(f"{', '.join(stopped)} stopped; shutting down the rest.", file=sys.stderr)
        return 1
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in processes.values():
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


if __name__ == "__main__":
    sys.exit(main())
