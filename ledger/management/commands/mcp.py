"""``manage.py mcp``: the Model Context Protocol server, over stdio or streamable HTTP."""

from __future__ import annotations

import logging
import os
from argparse import ArgumentParser
from typing import Any

import anyio
from django.core.management.base import BaseCommand, CommandError
from memoryadmin_client import MemoryAdminError

from ledger.mcp.http import PATH, serve_http
from ledger.mcp.server import KEY_ENV, caller, serve_stdio


class Command(BaseCommand):
    help = (
        "Serve the API's tools over the Model Context Protocol: over stdio (the default) with "
        f"the agent key in {KEY_ENV}, or over streamable HTTP (--http) at {PATH}, where each "
        "request brings its key as 'Authorization: Bearer <key>'."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--http", action="store_true", help="Serve streamable HTTP.")
        parser.add_argument("--host", default="127.0.0.1", help="HTTP address (127.0.0.1).")
        parser.add_argument("--port", type=int, default=8001, help="HTTP port (8001).")

    def handle(self, *args: Any, **options: Any) -> None:
        # httpx and the request log would say every in-process call at INFO, and Django every
        # refusal at WARNING: each refusal goes back to the caller in its tool result, and
        # stderr stays quiet.
        logging.getLogger("httpx").setLevel(logging.WARNING)
        logging.getLogger("memoryadmin.requests").setLevel(logging.WARNING)
        logging.getLogger("django.request").setLevel(logging.ERROR)
        if options["http"]:
            anyio.run(serve_http, options["host"], options["port"])
            return
        key = os.environ.get(KEY_ENV, "").strip()
        if not key:
            raise CommandError(
                f"Set {KEY_ENV} to the agent's API key (make one with "
                "'manage.py create_agent_key NAME --scopes read,write').",
                returncode=2,
            )
        try:
            caller(key).tools()
        except MemoryAdminError as error:
            raise CommandError(f"{KEY_ENV} was refused: {error.detail}", returncode=2) from None
        # stdout is the protocol's from here on: nothing else may write to it.
        anyio.run(serve_stdio, key)
