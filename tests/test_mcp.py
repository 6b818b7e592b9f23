"""``manage.py mcp`` driven by the official MCP client, over stdio and streamable HTTP.

The server runs as its own process on the test database, so the tests are transactional:
what a test writes is committed and the server sees it, and what the server writes the
test reads back. Each call must leave the marks an HTTP API call leaves: the gate's
decision, the source, the recall record.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import sysconfig
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from django.conf import settings
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, TextContent
from rest_framework.test import APIClient

from ledger.actions.agents import create_agent
from ledger.actors import Actor
from ledger.models import Memory, Recall, WriteDecision
from tests.conftest import SUBJECT, body
from tests.test_packaging import NOT_COPIED
from tests.test_worker import database_url, wait_for

# The server is another process: what a test writes must be committed for it to see.
committed = pytest.mark.django_db(transaction=True)
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "curl", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


def server_env(**extra: str) -> dict[str, str]:
    inherited = {k: v for k, v in os.environ.items() if k != "MEMORYADMIN_KEY"}
    return {
        **inherited,
        "DATABASE_URL": database_url(),
        "DATABASE_POOL": "0",
        "DEBUG": "1",
        "PYTHONUNBUFFERED": "1",
        **extra,
    }


def manage(*args: str) -> list[str]:
    return [sys.executable, str(settings.BASE_DIR / "manage.py"), *args]


@pytest.fixture
def key(transactional_db: None) -> str:
    return create_agent(name="mcp-agent", scopes=["read", "write"], actor=Actor.system("test"))[1]


@pytest.fixture
def api_tools(key: str) -> dict[str, Any]:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    listing: dict[str, Any] = api.get("/api/v1/tools").json()
    return listing


@pytest.fixture(scope="module")
def http_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp") / "http.log"


@pytest.fixture(scope="module")
def http_url(django_db_setup: None, http_log: Path) -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = http_log
    process = subprocess.Popen(
        manage("mcp", "--http", "--host", "127.0.0.1", "--port", str(port)),
        cwd=settings.BASE_DIR,
        env=server_env(),
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )

    def listening() -> bool:
        assert process.poll() is None, log.read_text()
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    wait_for(listening, f"the MCP HTTP server on port {port} (log: {log})", timeout=60)
    yield f"http://127.0.0.1:{port}/mcp"
    process.terminate()
    process.wait(timeout=15)


def text(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


async def agent_session(client: Client) -> dict[str, Any]:
    """What an agent does through MCP: list, write, recall, and three refused calls."""
    seen: dict[str, Any] = {"tools": (await client.list_tools()).tools}
    seen["remember"] = await client.call_tool("remember", body())
    goal = {"subject": SUBJECT, "goal": "how to contact about invoices", "run": "run_mcp"}
    seen["recall"] = await client.call_tool("recall", {**goal, "turn": 3})
    seen["owned"] = await client.call_tool(
        "remember", body(key="billing.address", statement="Lives at 4 Elm Street.")
    )
    seen["too_long"] = await client.call_tool("remember", body(statement="s" * 201))
    with pytest.raises(MCPError) as unknown:
        await client.call_tool("forget_everything", {"subject": SUBJECT})
    seen["unknown"] = unknown.value
    return seen


def assert_the_api_was_used(seen: dict[str, Any], api_tools: dict[str, Any]) -> None:
    served = {d["name"]: d for d in api_tools["tools"]}
    listed = {t.name: t for t in seen["tools"]}
    assert list(listed) == list(served)
    for name, tool in listed.items():
        assert tool.input_schema == served[name]["parameters"]
        assert tool.description == served[name]["description"]

    written = seen["remember"]
    assert not written.is_error, text(written)
    assert written.structured_content["decision"]["outcome"] == "accepted"
    memory = Memory.objects.get()
    assert memory.statement == body()["statement"]
    assert memory.status == "active"
    source = memory.sources.get()
    assert (source.kind, source.ref, source.excerpt) == (
        "user_message",
        "msg_0192",
        "please email me about invoices",
    )
    decision = WriteDecision.objects.get(memory=memory)
    assert (decision.outcome, decision.agent.name) == ("accepted", "mcp-agent")

    recalled = seen["recall"]
    assert not recalled.is_error, text(recalled)
    assert body()["statement"] in recalled.content[0].text
    record = Recall.objects.get()
    assert (record.run.ref, record.turn, record.agent.name) == ("run_mcp", 3, "mcp-agent")
    assert list(record.items.values_list("memory_id", flat=True)) == [memory.pk]

    owned = seen["owned"]
    assert owned.is_error
    assert "system_of_record" in text(owned)
    assert owned.structured_content["status"] == 422
    too_long = seen["too_long"]
    assert too_long.is_error
    assert "statement" in text(too_long)
    assert "statement" in too_long.structured_content["errors"]
    assert Memory.objects.count() == 1

    assert "forget_everything" in str(seen["unknown"])


@committed
def test_over_stdio_an_agent_lists_writes_and_recalls_through_the_api(
    key: str, api_tools: dict[str, Any]
) -> None:
    server = StdioServerParameters(
        command=sys.executable,
        args=[str(settings.BASE_DIR / "manage.py"), "mcp"],
        env=server_env(MEMORYADMIN_KEY=key),
        cwd=settings.BASE_DIR,
    )

    async def run() -> dict[str, Any]:
        async with Client(server, mode="legacy") as client:
            return await agent_session(client)

    assert_the_api_was_used(anyio.run(run), api_tools)


@committed
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_over_http_an_agent_lists_writes_and_recalls_through_the_api(
    http_url: str, http_log: Path, key: str, api_tools: dict[str, Any], mode: str
) -> None:
    async def run() -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {key}"}
        async with (
            httpx2.AsyncClient(headers=headers) as http,
            Client(streamable_http_client(http_url, http_client=http), mode=mode) as client,
        ):
            return await agent_session(client)

    assert_the_api_was_used(anyio.run(run), api_tools)
    served = http_log.read_text()
    assert '"POST /mcp HTTP/1.1" 200' in served
    assert key not in served


# memoryadmin's own files in site-packages (its metadata, its editable install's hook),
# and not memoryadmin_client's.
OWN_INSTALL = re.compile(r"^(__editable__[._]+)?memoryadmin[-_]\d")


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A fresh checkout that nobody ran pip install in (no egg-info beside the code), and a
    virtualenv's Python with every package this one has but memoryadmin itself."""
    scratch = tmp_path_factory.mktemp("uninstalled")
    source = scratch / "checkout"
    shutil.copytree(settings.BASE_DIR, source, ignore=NOT_COPIED, symlinks=True)
    venv = scratch / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    ask = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    target = Path(subprocess.check_output([python, "-c", ask], text=True).strip())
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not OWN_INSTALL.match(entry.name):
            (target / entry.name).symlink_to(entry)
    return source, python


@committed
def test_over_stdio_the_server_starts_from_a_checkout_that_is_not_installed(
    key: str, checkout: tuple[Path, Path]
) -> None:
    source, python = checkout
    look_up = "import importlib.metadata as m; m.version('memoryadmin')"
    missing = subprocess.run(
        [python, "-c", look_up], cwd=source, capture_output=True, text=True, timeout=60
    )
    assert "PackageNotFoundError" in missing.stderr
    server = StdioServerParameters(
        command=str(python),
        args=[str(source / "manage.py"), "mcp"],
        env=server_env(MEMORYADMIN_KEY=key),
        cwd=source,
    )

    async def run() -> tuple[Any, list[str]]:
        async with Client(server, mode="legacy") as client:
            return client.server_info, [t.name for t in (await client.list_tools()).tools]

    info, tools = anyio.run(run)
    project = tomllib.loads((source / "pyproject.toml").read_text())["project"]
    assert (info.name, info.version) == ("memoryadmin", project["version"])
    assert "remember" in tools


@pytest.mark.parametrize(
    ("key_env", "message"),
    [
        ("", "Set MEMORYADMIN_KEY to the agent's API key"),
        ("ma_0000_not-a-key", "MEMORYADMIN_KEY was refused: This API key is not valid."),
    ],
)
@pytest.mark.django_db
def test_stdio_refuses_to_start_without_a_valid_key(key_env: str, message: str) -> None:
    done = subprocess.run(
        manage("mcp"),
        cwd=settings.BASE_DIR,
        env=server_env(MEMORYADMIN_KEY=key_env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert message in lines[0]


@pytest.mark.django_db
def test_over_http_a_missing_or_bad_key_is_refused_with_the_apis_reason(http_url: str) -> None:
    for authorization, detail in [
        (None, "Send the agent's API key: 'Authorization: Bearer <API key>'."),
        ("Bearer ma_0000_not-a-key", "This API key is not valid."),
        ("Basic dXNlcjpwYXNz", "Use 'Authorization: Bearer <API key>'."),
    ]:
        headers = {"Authorization": authorization} if authorization else {}
        refused = httpx2.post(http_url, json=INITIALIZE, headers={**headers, **ACCEPT})
        assert refused.status_code == 401
        assert refused.headers["WWW-Authenticate"].startswith("Bearer")
        assert refused.json()["error"]["data"]["detail"] == detail

        async def connect(headers: dict[str, str] = headers) -> None:
            async with (
                httpx2.AsyncClient(headers=headers) as http,
                Client(streamable_http_client(http_url, http_client=http), mode="legacy"),
            ):
                pass

        # The SDK's client raises the server's JSON-RPC error out of its task groups.
        with pytest.raises(ExceptionGroup) as error:
            anyio.run(connect)
        assert error.group_contains(MCPError, match=re.escape(detail))


@committed
def test_over_http_a_session_is_refused_to_any_key_but_the_one_that_opened_it(
    http_url: str, key: str
) -> None:
    other = create_agent(name="other-agent", scopes=["read", "write"], actor=Actor.system("t"))[1]
    as_a = {**ACCEPT, "Authorization": f"Bearer {key}"}
    as_b = {**ACCEPT, "Authorization": f"Bearer {other}"}
    opened = httpx2.post(http_url, json=INITIALIZE, headers=as_a)
    assert opened.status_code == 200, opened.text
    session = {"Mcp-Session-Id": opened.headers["Mcp-Session-Id"]}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert httpx2.post(http_url, json=initialized, headers={**as_a, **session}).status_code == 202
    list_tools = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}

    # Another agent's valid key, given the session id, is told the session does not exist:
    # it cannot send on it, read its event stream, or close it.
    sent = httpx2.post(http_url, json=list_tools, headers={**as_b, **session})
    assert sent.status_code == 404, sent.text
    assert httpx2.get(http_url, headers={**as_b, **session}).status_code == 404
    assert httpx2.delete(http_url, headers={**as_b, **session}).status_code == 404

    # The key that opened it still works, and it alone can close it.
    listed = httpx2.post(http_url, json=list_tools, headers={**as_a, **session})
    assert listed.status_code == 200, listed.text
    assert '"remember"' in listed.text
    assert httpx2.delete(http_url, headers={**as_a, **session}).status_code == 200
    gone = httpx2.post(http_url, json=list_tools, headers={**as_a, **session})
    assert gone.status_code == 404
