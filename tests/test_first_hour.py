"""A newcomer's first hour: `make run`, then every shell block and Python snippet of the
README and of docs/ as written.

`make run` starts for real (web server, Celery worker and beat on the embedded SQLite
database and folder broker, in a scratch folder). Then each page is read as a reader would
read it, the README first, then docs/*.md in alphabetical order: its shell blocks and Python
snippets run in the order they come, in one bash shell per page (a page's blocks share its
shell variables, never another page's), each Python snippet pasted into the project's
Python. A failure names the page, the block's number and its line. Ctrl-C must then stop
everything quietly.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.servers import free_port

# Minutes long: started first (tests/conftest.py), so it never ends the run alone.
pytestmark = pytest.mark.long

ROOT = Path(__file__).resolve().parent.parent
# The README first, then every page of docs/ in a fixed order: alphabetical.
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL = {"sh", "bash", "shell"}
PYTHON = {"python", "py", "python3"}
# Fences for a terminal transcript: commands in them would go untested, so none are used.
TRANSCRIPTS = {"console", "shell-session", "sh-session", "terminal", "pycon", "zsh"}
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
# A failed HTTP call fails the block, as a reader would notice from the error it prints.
CURL_FAILS_ON_ERRORS = 'curl() { command curl --fail-with-body --show-error "$@"; }\n'
SNIPPET_END = "MEMORYADMIN_SNIPPET_END"


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository, e.g. "docs/ledger.md"
    line: int  # the line of its opening fence
    language: str
    text: str

    @property
    def runs(self) -> bool:
        return self.language in SHELL | PYTHON

    def script(self) -> str:
        if self.language in PYTHON:
            assert SNIPPET_END not in self.text
            return f".venv/bin/python - <<'{SNIPPET_END}'\n{self.text}{SNIPPET_END}\n"
        return self.text


def fenced_blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown page, indented ones (in a list) included."""
    blocks: list[Block] = []
    lines = path.read_text().splitlines()
    number = 0
    while number < len(lines):
        opening = FENCE.match(lines[number])
        number += 1
        if not opening:
            continue
        indent, fence = len(opening["indent"]), opening["fence"]
        start, body = number, []
        while number < len(lines):
            closing = FENCE.match(lines[number])
            number += 1
            if closing and closing["fence"].startswith(fence) and not closing["info"].strip():
                break
            line = lines[number - 1]
            # A block in a list item is indented with it: the reader copies it without.
            body.append(line[indent:] if line[:indent].strip() == "" else line.lstrip())
        language = (opening["info"].split() or [""])[0].lower()
        text = "".join(f"{line}\n" for line in body)
        blocks.append(Block(str(path.relative_to(ROOT)), start, language, text))
    return blocks


BLOCKS = {str(page.relative_to(ROOT)): fenced_blocks(page) for page in PAGES}
# The two commands themselves: `make test` is what runs this, and `make run` is started below.
TWO_COMMANDS = [
    block
    for block in BLOCKS["README.md"]
    if block.language in SHELL and block.text.startswith("make run")
]
TO_RUN = {
    page: [block for block in blocks if block.runs and block not in TWO_COMMANDS]
    for page, blocks in BLOCKS.items()
}


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


def marker(page: str, number: int, block: Block) -> str:
    kind = "Python snippet" if block.language in PYTHON else "shell block"
    return f"--- {page} block {number} ({kind}, line {block.line})"


def run_page(page: str, port: int, env: dict[str, str]) -> tuple[str, str | None]:
    """Run a page's blocks in order in one bash shell, as a reader types them. Returns
    what it printed, and what failed (the page, block number and line), or None."""
    blocks = TO_RUN[page]
    script = CURL_FAILS_ON_ERRORS + "".join(
        f"echo '{marker(page, number, block)}'\n{block.script()}"
        for number, block in enumerate(blocks, 1)
    )
    try:
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
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=300,
        )
        said, failed = ran.stdout.decode(errors="replace"), ran.returncode != 0
    except subprocess.TimeoutExpired as timeout:
        said, failed = (timeout.stdout or b"").decode(errors="replace") + "\n(timed out)", True
    started = [
        number for number, block in enumerate(blocks, 1) if marker(page, number, block) in said
    ]
    if not failed:
        assert len(started) == len(blocks), said
        return said, None
    number = started[-1] if started else 1
    block = blocks[number - 1]
    tail = said[said.find(marker(page, number, block)) :][-4000:]
    return said, f"{marker(page, number, block)[4:]} failed:\n{block.text}\n{tail}"


def test_the_readme_has_its_two_commands_and_more_to_run() -> None:
    assert len(TWO_COMMANDS) == 1 and "make test" in TWO_COMMANDS[0].text
    # Besides them the README runs the example agent; the rest is in docs/, every page run.
    assert len(TO_RUN["README.md"]) >= 1
    everything = [block for blocks in TO_RUN.values() for block in blocks]
    assert sum(block.language in SHELL for block in everything) >= 30
    assert sum(block.language in PYTHON for block in everything) >= 8
    assert {"docs/api.md", "docs/ledger.md", "docs/client.md"} <= {
        page for page, blocks in TO_RUN.items() if blocks
    }


def test_every_command_on_the_pages_is_in_a_block_that_runs() -> None:
    for page, blocks in BLOCKS.items():
        for block in blocks:
            where = f"{page}, line {block.line}"
            assert block.language not in TRANSCRIPTS, (
                f"{where}: a ```{block.language} block is never run: make it ```sh (output in a "
                "```text block after it), or ```text if it is not a command to run here"
            )
            # The project's Python is .venv/bin/python: a bare `python` has no Django.
            assert not re.search(r"(?<![\w/.])python3? manage\.py", block.text), where


def test_make_run_then_every_command_of_the_pages_then_ctrl_c(tmp_path: Path) -> None:
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

        said, failures = "", []
        for page, blocks in TO_RUN.items():
            if blocks:
                printed, failure = run_page(page, port, env)
                said += printed
                failures += [failure] if failure else []
        assert not failures, "\n\n".join(failures)
        # The commands ran without DEBUG or SECRET_KEY: the install made its own key.
        assert (tmp_path / ".secret_key").stat().st_mode & 0o777 == 0o600
        assert '"outcome": "accepted"' in said or '"outcome":"accepted"' in said
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
