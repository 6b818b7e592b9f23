"""The MCP server: the tools of ``GET /api/v1/tools``, each call made through the API.

The tool list is the API's own answer, fetched with the caller's key, so its schemas are
the ones ``/api/v1/tools`` serves. A call is the HTTP request that tool stands for, sent
in-process to the WSGI application: authentication, scopes, rate limits, the write gate
and the recall record are the API's, not a copy of them. Django's code is synchronous, so
it runs in a worker thread, never on the event loop.
"""

from __future__ import annotations

import importlib.metadata
import json
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

import anyio.to_thread
import httpx
from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    CallToolRequestParams,
    CallToolResult,
    ContentBlock,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)
from memoryadmin_client import BadRequest, MemoryAdminError, MemoryClient

KEY_ENV = "MEMORYADMIN_KEY"
DISTRIBUTION = "memoryadmin"
INSTRUCTIONS = (
    "memoryadmin is the system of record for what you remember about people and accounts. "
    "Every write goes through a write gate that decides and says why; every memory needs "
    "its source. Recalled memories are earlier records: a live tool result wins. Journal a "
    "side effect before you act, and never retry one whose outcome is unknown without "
    "checking the world first."
)

Context = ServerRequestContext[Any, Any]
KeyOf = Callable[[Context], str]


def server_version() -> str:
    """memoryadmin's version, whose one place is pyproject.toml: read there when the server
    runs from a checkout, installed or not (an editable install's metadata keeps the version
    of its last install), and from the metadata a build copied from it otherwise."""
    try:
        with (settings.BASE_DIR / "pyproject.toml").open("rb") as file:
            project = tomllib.load(file).get("project", {})
    except FileNotFoundError:
        project = {}
    if project.get("name") == DISTRIBUTION:
        return str(project["version"])
    return importlib.metadata.version(DISTRIBUTION)


@cache
def wsgi_application() -> WSGIHandler:
    # Not get_wsgi_application(): Django is set up already, and setting it up again would
    # reconfigure logging under the command's feet.
    return WSGIHandler()


def internal_base_url() -> str:
    """A base URL the in-process API accepts: a host ALLOWED_HOSTS lets in (``.example.com``
    allows ``example.com``), and https so that a production SSL redirect never answers
    instead of the API."""
    host = next((h.lstrip(".") for h in settings.ALLOWED_HOSTS if h.strip(".*")), "localhost")
    return f"https://{host}"


@dataclass
class Caller:
    """One agent key's way into the API, and the tool names the API last listed for it."""

    client: MemoryClient
    names: frozenset[str] = field(default_factory=frozenset)

    def tools(self) -> dict[str, Any]:
        table = self.client.tools()
        self.names = frozenset(table["endpoints"])
        return table

    def known(self, name: str) -> bool:
        if not self.names:
            self.tools()
        return name in self.names


@lru_cache(maxsize=256)
def caller(key: str) -> Caller:
    # No retries here: a rate limit or a failure is told to the model at once, with the
    # API's wait, rather than holding the MCP request for up to half a minute.
    transport = httpx.WSGITransport(app=wsgi_application())
    return Caller(MemoryClient(internal_base_url(), key, retries=0, transport=transport))


def bearer_key(ctx: Context) -> str:
    """The key of an HTTP request (the HTTP gate has refused requests without one)."""
    request = ctx.request
    header: str = request.headers.get("authorization", "") if request is not None else ""
    return header.partition(" ")[2].strip()


def as_tool(definition: dict[str, Any]) -> Tool:
    return Tool(
        name=definition["name"],
        description=definition["description"],
        input_schema=definition["parameters"],
    )


def answer_result(answer: Any) -> CallToolResult:
    """The API's JSON answer; one that carries a recall block leads with the block, the
    text a model pastes into its context, and the rest follows as JSON."""
    content: list[ContentBlock] = []
    rest = answer
    if isinstance(answer, dict) and isinstance(answer.get("block"), str):
        content.append(TextContent(text=answer["block"]))
        rest = {k: v for k, v in answer.items() if k != "block"}
    content.append(TextContent(text=json.dumps(rest, ensure_ascii=False, indent=1)))
    return CallToolResult(
        content=content, structured_content=answer if isinstance(answer, dict) else None
    )


def refusal_result(error: MemoryAdminError) -> CallToolResult:
    """A refusal, in words a model can act on: the API's status, code and detail. Fields a
    400 names come along; a 5xx body (a server's page) does not."""
    refused: dict[str, Any] = {"status": error.status, "code": error.code, "detail": error.detail}
    if isinstance(error, BadRequest) and error.errors:
        refused["errors"] = error.errors
    text = f"memoryadmin refused this call (HTTP {error.status}, {error.code}): {error.detail}"
    return CallToolResult(
        content=[TextContent(text=text)], structured_content=refused, is_error=True
    )


def build_server(key_of: KeyOf) -> Server[Any]:
    """The MCP server; ``key_of`` says which agent key a request is made with."""

    async def list_tools(ctx: Context, params: PaginatedRequestParams | None) -> ListToolsResult:
        try:
            table = await anyio.to_thread.run_sync(caller(key_of(ctx)).tools)
        except MemoryAdminError as error:
            raise MCPError(INVALID_REQUEST, f"memoryadmin refused: {error.detail}") from None
        return ListToolsResult(tools=[as_tool(d) for d in table["tools"]])

    async def call_tool(ctx: Context, params: CallToolRequestParams) -> CallToolResult:
        door = caller(key_of(ctx))
        try:
            known = await anyio.to_thread.run_sync(door.known, params.name)
            if not known:
                listed = ", ".join(sorted(door.names))
                raise MCPError(INVALID_PARAMS, f"Unknown tool {params.name!r}; tools: {listed}.")
            answer = await anyio.to_thread.run_sync(
                door.client.call_tool, params.name, params.arguments or {}
            )
        except MemoryAdminError as error:
            return refusal_result(error)
        except ValueError as error:
            # An argument the call cannot be made without (a path argument, say).
            return CallToolResult(content=[TextContent(text=str(error))], is_error=True)
        return answer_result(answer)

    return Server(
        "memoryadmin",
        version=server_version(),
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        # The schemas declare no Mcp-Param headers, so there is nothing to check there;
        # without this, the SDK would list the tools (an API read) before every call.
        get_tool_input_schema=lambda name: None,
    )


async def serve_stdio(key: str) -> None:
    server = build_server(lambda ctx: key)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
