"""The MCP server over streamable HTTP, behind a gate that checks each request's key.

Every HTTP request (the session's opening, each message, the event stream, its closing)
must carry ``Authorization: Bearer <agent key>``; the key is checked by the API's own
authentication. A request without one, or with a key the API refuses, is answered ``401``
with ``WWW-Authenticate: Bearer`` (what HTTP clients and MCP's authorization expect) and a
JSON-RPC error whose message is the API's own, which MCP clients show as the reason.
"""

from __future__ import annotations

import anyio.to_thread
import uvicorn
from django.db import close_old_connections
from django.http import HttpRequest
from mcp.server.lowlevel import Server
from rest_framework import exceptions
from rest_framework.request import Request
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ledger.api.auth import AgentKeyAuthentication
from ledger.mcp.server import bearer_key, build_server

PATH = "/mcp"
# JSON-RPC leaves -32000 to -32099 to the server; this one means "who are you?".
NOT_AUTHENTICATED = -32001


def key_refusal(header: str) -> exceptions.APIException | None:
    """Why the API would refuse this Authorization header, or None when it accepts it."""
    if not header:
        return exceptions.NotAuthenticated(
            "Send the agent's API key: 'Authorization: Bearer <API key>'."
        )
    request = Request(HttpRequest())
    request.META["HTTP_AUTHORIZATION"] = header
    # Outside Django's request cycle: open and close the connection as a request would.
    close_old_connections()
    try:
        AgentKeyAuthentication().authenticate(request)
    except exceptions.AuthenticationFailed as refusal:
        return refusal
    finally:
        close_old_connections()
    return None


class BearerGate:
    """Lets through only HTTP requests with a key the API accepts."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            header = Headers(scope=scope).get("authorization", "")
            refusal = await anyio.to_thread.run_sync(key_refusal, header)
            if refusal is not None:
                response = JSONResponse(
                    {
                        "jsonrpc": "2.0",
                        "id": None,
                        "error": {
                            "code": NOT_AUTHENTICATED,
                            "message": f"memoryadmin refused the key: {refusal.detail}",
                            "data": {"code": refusal.get_codes(), "detail": str(refusal.detail)},
                        },
                    },
                    status_code=401,
                    headers={"WWW-Authenticate": 'Bearer realm="memoryadmin"'},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def http_app(server: Server, *, host: str) -> ASGIApp:
    # On a loopback host the SDK also refuses other Host and Origin headers (DNS rebinding).
    return BearerGate(server.streamable_http_app(streamable_http_path=PATH, host=host))


async def serve_http(host: str, port: int) -> None:
    app = http_app(build_server(bearer_key), host=host)
    await uvicorn.Server(uvicorn.Config(app, host=host, port=port, lifespan="on")).serve()
