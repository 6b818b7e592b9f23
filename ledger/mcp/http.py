"""The MCP server over streamable HTTP, behind a gate that checks each request's key.

Every HTTP request (the session's opening, each message, the event stream, its closing)
must carry ``Authorization: Bearer <agent key>``; the key is checked by the API's own
authentication. A request without one, or with a key the API refuses, is answered ``401``
with ``WWW-Authenticate: Bearer`` (what HTTP clients and MCP's authorization expect) and a
JSON-RPC error whose message is the API's own, which MCP clients show as the reason.

A key the API accepts becomes the request's ``scope["user"]``, an MCP ``AuthenticatedUser``
naming the agent and the key (by its public prefix, never its secret). The SDK records that
principal as the owner of the session the request opens and answers every later request on
that session with another principal ``404 Session not found``: an MCP session can only be
used with the key that opened it, so no other key can read its event stream, send on it or
close it. Each tool call is still made with the key of the request that carries it.
"""

from __future__ import annotations

import anyio.to_thread
import uvicorn
from django.db import close_old_connections
from django.utils import timezone
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.lowlevel import Server
from rest_framework import exceptions
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ledger.actions.agents import KeyRefused, use_key
from ledger.keys import KEY_PREFIX, key_in_header, split_key
from ledger.mcp.server import bearer_key, build_server

PATH = "/mcp"
# JSON-RPC leaves -32000 to -32099 to the server; this one means "who are you?".
NOT_AUTHENTICATED = -32001


def key_holder(header: str) -> AuthenticatedUser:
    """Who this Authorization header speaks for, as the MCP SDK names a principal.

    Raises the API's own refusal, in its words, when the API would refuse the header.
    """
    if not header:
        raise exceptions.NotAuthenticated(
            "Send the agent's API key: 'Authorization: Bearer <API key>'."
        )
    key = key_in_header(header)
    if key is None:
        raise exceptions.AuthenticationFailed("Use 'Authorization: Bearer <API key>'.")
    # Outside Django's request cycle: open and close the connection as a request would.
    close_old_connections()
    try:
        agent = use_key(key, now=timezone.now()).agent
    except KeyRefused as refused:
        raise exceptions.AuthenticationFailed(str(refused)) from None
    finally:
        close_old_connections()
    parts = split_key(key)
    # An accepted key is well formed, so it has a prefix.
    assert parts is not None
    prefix = parts[0]
    # The SDK compares (client_id, issuer, subject) to tell a session's owner: the agent,
    # and the key by its lookup prefix, so a session is bound to the one key that opened
    # it (a second key of the same agent, after a rotation, opens its own session). The
    # token field holds the prefix too: nothing here may carry the secret, since the SDK
    # keeps its principals in memory and may log them.
    token = AccessToken(
        token=f"{KEY_PREFIX}_{prefix}",
        client_id=str(agent.pk),
        subject=f"key:{prefix}",
        scopes=[str(scope) for scope in agent.scopes],
    )
    return AuthenticatedUser(token)


class BearerGate:
    """Lets through only HTTP requests with a key the API accepts, as that key's user."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            header = Headers(scope=scope).get("authorization", "")
            try:
                user = await anyio.to_thread.run_sync(key_holder, header)
            except exceptions.APIException as refusal:
                await refused(refusal)(scope, receive, send)
                return
            # What the SDK binds a session to: without it every session is anyone's.
            scope = {**scope, "user": user}
        await self.app(scope, receive, send)


def refused(refusal: exceptions.APIException) -> JSONResponse:
    return JSONResponse(
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


def http_app(server: Server, *, host: str) -> ASGIApp:
    # On a loopback host the SDK also refuses other Host and Origin headers (DNS rebinding).
    return BearerGate(server.streamable_http_app(streamable_http_path=PATH, host=host))


async def serve_http(host: str, port: int) -> None:
    app = http_app(build_server(bearer_key), host=host)
    await uvicorn.Server(uvicorn.Config(app, host=host, port=port, lifespan="on")).serve()
