"""The server's wheel: the ledger and memoryadmin packages, and none of the tooling in tools/
(the benchmark, the screenshots, `make run`'s runner) nor anything that imports it.

The wheel is built offline (no index, no build isolation, no dependencies) from a copy of
the working tree, so the build leaves nothing in the tree and sees every file in it."""

from __future__ import annotations

import ast
import importlib.util
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# What a build never reads, and caches other processes may be writing as it is copied.
NOT_COPIED = shutil.ignore_patterns(
    ".git",
    ".venv",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".celery",
    "staticfiles",
    "test-artifacts",
    "*.sqlite3*",
)
# A name of the tooling's, not a word that merely ends in it ("workbench").
TOOLING_PATH = re.compile(r"^tools/|(?<![a-z])bench|screenshot|devserver", re.IGNORECASE)
# tools/ itself, and what only the tooling uses: Playwright (screenshots), aiohttp (bench).
TOOLING_IMPORTS = {"tools", "playwright", "aiohttp"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    assert importlib.util.find_spec("setuptools"), "setuptools (in the dev extras) is missing"
    scratch = tmp_path_factory.mktemp("wheel")
    source = scratch / "source"
    shutil.copytree(ROOT, source, ignore=NOT_COPIED, symlinks=True)
    built = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"),
            *("--no-index", "--quiet", "--wheel-dir", str(scratch / "dist"), str(source)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (found,) = (scratch / "dist").glob("memoryadmin-*.whl")
    return zipfile.ZipFile(found)


def imported_roots(text: str) -> set[str]:
    """The top-level names a module imports, anywhere in it (a function's body too)."""
    roots = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_wheel_holds_the_ledger_and_memoryadmin_packages(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    for module in ("ledger/__init__.py", "ledger/apps.py", "memoryadmin/settings.py"):
        assert module in names
    assert {"ledger", "memoryadmin"} <= {name.split("/")[0] for name in names}


def test_wheel_holds_no_file_of_the_tooling(wheel: zipfile.ZipFile) -> None:
    tooling = [name for name in wheel.namelist() if TOOLING_PATH.search(name)]
    assert tooling == []


def test_nothing_in_the_wheel_imports_the_tooling(wheel: zipfile.ZipFile) -> None:
    importers = {
        name: sorted(roots & TOOLING_IMPORTS)
        for name in wheel.namelist()
        if name.endswith(".py")
        and (roots := imported_roots(wheel.read(name).decode()))
        and roots & TOOLING_IMPORTS
    }
    assert importers == {}
