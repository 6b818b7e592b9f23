"""The agents' client is a package of its own: `pip install ./clients/python` into a fresh
virtualenv brings httpx and nothing of the server (no Django, Celery or psycopg).

The package is installed from a copy of clients/python, so the build leaves nothing in the
tree. The virtualenv is made without pip of its own (this interpreter's pip installs into it),
and the install reaches the package index for httpx and the build's setuptools."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLIENT = ROOT / "clients" / "python"
# The server's own dependencies, none of which an agent's process should carry.
SERVER_ONLY = {"django", "djangorestframework", "celery", "psycopg", "redis", "mcp", "langgraph"}
NOT_COPIED = shutil.ignore_patterns("build", "*.egg-info", "__pycache__", ".mypy_cache")
PROBE = """
import importlib.metadata, importlib.resources, json, sys
import memoryadmin_client
from memoryadmin_client import MemoryClient
print(json.dumps({
    "installed": sorted(d.metadata["Name"].lower() for d in importlib.metadata.distributions()),
    "file": memoryadmin_client.__file__,
    "typed": importlib.resources.files("memoryadmin_client").joinpath("py.typed").is_file(),
    "django_imported": "django" in sys.modules,
    "client": MemoryClient.__name__,
}))
"""


def test_the_client_installs_alone_with_httpx_and_without_django(tmp_path: Path) -> None:
    source = tmp_path / "source"
    shutil.copytree(CLIENT, source, ignore=NOT_COPIED)
    venv = tmp_path / "agent"
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60
    )
    python = venv / "bin" / "python"
    installed = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet"),
            str(source),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr

    probed = subprocess.run(
        [str(python), "-c", PROBE],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert probed.returncode == 0, probed.stderr
    found = json.loads(probed.stdout)
    assert {"memoryadmin-client", "httpx"} <= set(found["installed"])
    assert SERVER_ONLY & set(found["installed"]) == set()
    assert Path(found["file"]).is_relative_to(venv)
    assert found["typed"] is True
    assert found["django_imported"] is False
    assert found["client"] == "MemoryClient"
