"""`make run`: the web server, a Celery worker and Celery beat, stopped together by Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from django.conf import settings


def site_url(host: str, port: str) -> str:
    """Where a person on this machine opens the server: a server listening on every address
    is opened on the loopback one, and an IPv6 address is written in brackets."""
    if host in ("0.0.0.0", ""):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}"


def main() -> int:
    import django

    host, port = os.environ.get("HOST", "127.0.0.1"), os.environ.get("PORT", "8000")
    site = site_url(host, port)
    # Set before the children start, so the worker's reminder e-mails link to this server.
    os.environ.setdefault("MEMORYADMIN_SITE_URL", site)
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
    stop_requested: list[int] = []
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, lambda number, frame: stop_requested.append(number))
    # Each child in its own session: Ctrl-C reaches only this runner, which stops each
    # child once, so the worker shuts its pool down cleanly instead of every pool process
    # being signalled too. Out of the terminal's reach, they must be stopped here whatever
    # happens, hence the try around everything after the first start.
    processes: dict[str, subprocess.Popen[bytes]] = {}
    try:
        for name, command in commands.items():
            processes[name] = subprocess.Popen(command, start_new_session=True)
        # Beat first runs each task one period after it starts (an hour for reminders):
        # queue one run of each now, so the demo's due memory is reminded while you watch.
        from memoryadmin.celery import app

        for task in settings.CELERY_BEAT_SCHEDULE.values():
            app.send_task(str(task["task"]))
        print(
            f"\nmemoryadmin is running at {site}/  (API docs: {site}/api/docs/)\n"
            "Sign in as dana (end user), sam (support) or alex (admin), "
            "password 'demo-password-1'. Ctrl-C stops the web server, worker and beat.\n",
            flush=True,
        )
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
