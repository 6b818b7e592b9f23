"""What the tests that start servers in other processes (gunicorn, make run, a replica)
share: a free port to give them, and the test database's URL for them to read."""

from __future__ import annotations

import socket

from django.db import connection


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def database_url() -> str:
    """This test process's database, for a server in another process to use."""
    db = connection.settings_dict
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
