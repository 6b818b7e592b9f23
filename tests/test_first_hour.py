"""A newcomer's first hour: `make run`, then every shell block of the README as written.

`make run` starts for real (web server, Celery worker and beat on the embedded SQLite
database and folder broker, in a scratch folder), the README's commands run against it in
one shell as a reader would type them, then each of its Python snippets in the project's
Python, and Ctrl-C must stop everything quietly.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
SHELL_BLOCKS = re.findall(r"^```(?:sh|bash|shell)\n(.*?)^```", README, re.S | re.M)
# The two commands themselves: `make test` is what runs this, and `make run` is started below.
TWO_COMMANDS = [block for block in SHELL_BLOCKS if block.startswith("make run")]
README_COMMANDS = [block for block in SHELL_BLOCKS if block not in TWO_COMMANDS]
PYTHON_SNIPPETS = re.findall(r"^```python\n(.*?)^```", README, re.S | re.M)
# A failed HTTP call fails the block, as a reader would notice from the error it prints.
CURL_FAILS_ON_ERRORS = 'curl() { command curl --fail-with-body --show-error "$@"; }\n'


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(condition: Callable[[], bool], seconds: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {seconds} s. make run said:\n{log.read_text()}")
        time.sleep(0.5)


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def processes_started_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_the_readme_has_its_two_commands_and_more_to_run() -> None:
    assert len(TWO_COMMANDS) == 1 and "make test" in TWO_COMMANDS[0]
    assert len(README_COMMANDS) >= 5


def test_make_run_then_every_readme_command_then_ctrl_c(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "make-run.log"
    scratch = str(tmp_path)
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DEBUG", "DATABASE_URL", "SECRET_KEY", "SECRET_KEY_FILE"}
        and not key.startswith("CELERY")
    }
    # The embedded default, moved into a scratch folder so the developer's own demo database
    # and queue are left alone; everything else is as a newcomer has it.
    env |= {
        "DATABASE_URL": f"sqlite:///{tmp_path / 'memoryadmin.sqlite3'}",
        "CELERY_BROKER_DIR": scratch,
        "SECRET_KEY_FILE": str(tmp_path / ".secret_key"),
    }
    with log.open("w") as out:
        make_run = subprocess.Popen(
            ["make", "run", f"PORT={port}"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for(lambda: answers(f"{base}/accounts/login/"), 180, "The server answered", log)

        # The demo's memory due for review is e-mailed at start, linking to this server.
        wait_for(lambda: f"{base}/reminders/" in log.read_text(), 90, "A reminder e-mail went", log)
        assert "Reminder digest sent to person #" in log.read_text()

        script = CURL_FAILS_ON_ERRORS + "".join(
            f"echo '--- README block {number}'\n{block}"
            for number, block in enumerate(README_COMMANDS, 1)
        )
        ran = subprocess.run(
            [
                "bash",
                "-euo",
                "pipefail",
                "-c",
                script.replace("127.0.0.1:8000", f"127.0.0.1:{port}"),
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert ran.returncode == 0, f"A README command failed:\n{ran.stdout}\n{ran.stderr}"
        assert ran.stdout.count("--- README block") == len(README_COMMANDS)
        # The commands ran without DEBUG or SECRET_KEY: the install made its own key.
        assert (tmp_path / ".secret_key").stat().st_mode & 0o777 == 0o600
        assert '"outcome": "accepted"' in ran.stdout or '"outcome":"accepted"' in ran.stdout

        # A reader pastes each Python snippet into the project's Python, in order.
        for number, snippet in enumerate(PYTHON_SNIPPETS, 1):
            pasted = subprocess.run(
                [str(ROOT / ".venv" / "bin" / "python"), "-"],
                input=snippet.replace("127.0.0.1:8000", f"127.0.0.1:{port}"),
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert pasted.returncode == 0, (
                f"README Python snippet {number} failed:\n{snippet}\n"
                f"{pasted.stdout}\n{pasted.stderr}"
            )
    finally:
        # Ctrl-C in the terminal: the signal reaches make and the runner it started.
        os.killpg(make_run.pid, signal.SIGINT)
        make_run.wait(timeout=60)

    wait_for(lambda: not processes_started_with(scratch), 30, "Everything stopped", log)
    said = log.read_text()
    for noise in (
        "Traceback",
        "exited with signal",
        "superuser privileges",
        "No hostname was supplied",
        "WARNING",
    ):
        assert noise not in said, f"make run printed {noise!r}:\n{said}"


def test_make_test_says_how_to_get_chromium_when_it_cannot_install_it(tmp_path: Path) -> None:
    # A machine without Chromium and without Debian's apt-get: nothing to install it with.
    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in ("make", "bash", "sh", "id"):
        found = shutil.which(tool)
        assert found is not None
        (tools / tool).symlink_to(found)
    ran = subprocess.run(
        ["make", "--no-print-directory", "chromium", "CHROMIUM=/nonexistent/chromium"],
        cwd=ROOT,
        env={"PATH": str(tools)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode != 0
    assert ran.stderr.splitlines()[0] == (
        "The browser tests need Chromium: install it, then run "
        "'make test CHROMIUM=/path/to/chromium'."
    )
