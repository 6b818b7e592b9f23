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

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
    django.setup()
    for folder in ("queue", "control"):
        (settings.CELERY_BROKER_DIR / folder).mkdir(parents=True, exist_ok=True)
    host, port = os.environ.get("HOST", "127.0.0.1"), os.environ.get("PORT", "8000")
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
    processes = {name: subprocess.Popen(cmd) for name, cmd in commands.items()}
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
    # Ctrl-C reaches every process of the group at once; a child that stops because of it
    # is a clean shutdown, not a crash.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda number, frame: stop_requested.append(number))
    try:
        while not stop_requested and all(p.poll() is None for p in processes.values()):
            time.sleep(0.2)
        if stop_requested:
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
