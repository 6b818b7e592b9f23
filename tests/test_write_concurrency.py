"""Concurrent writes about one subject are decided one at a time."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from ledger.models import Memory, Source, Subject
from tests.conftest import agent_client, body

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_same_write_sent_at_once_makes_one_memory() -> None:
    client, _ = agent_client("racer", ["read", "write"])

    def send(n: int) -> int:
        data = body(subject="acct_race")
        data["source"] = dict(data["source"], ref=f"msg_{n}")
        try:
            return client.post("/api/v1/memories", data, format="json").status_code
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=6) as pool:
        statuses = sorted(pool.map(send, range(6)))

    assert statuses == [200, 200, 200, 200, 200, 201]
    assert Subject.objects.filter(ref="acct_race").count() == 1
    assert Memory.objects.count() == 1
    assert Source.objects.count() == 6
