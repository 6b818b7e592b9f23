"""``AsyncMemoryClient`` against a live server: the same calls as ``MemoryClient``, awaited."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest
from memoryadmin_client import (
    AsyncMemoryClient,
    BadRequest,
    MemoryClient,
    Recall,
    ServerError,
    StaleVersion,
    SystemOfRecord,
)

from ledger.models import Memory
from ledger.models import Recall as RecallRecord
from tests.test_client import SOURCE, SUBJECT, Proxy, key, proxy

pytestmark = pytest.mark.usefixtures("transactional_db")
__all__ = ["key", "proxy"]  # fixtures, shared with the sync client's tests

PDF = {
    "subject": SUBJECT,
    "kind": "preference",
    "key": "invoice.format",
    "statement": "Wants invoices as PDF attachments, not links.",
    "basis": "stated",
    "source": SOURCE,
}


def test_the_async_client_has_every_method_of_the_sync_one_with_the_same_signature() -> None:
    def public(cls: type) -> dict[str, inspect.Signature]:
        return {
            name: inspect.signature(member)
            for name, member in vars(cls).items()
            if callable(member) and not name.startswith("_")
        }

    sync, awaited = public(MemoryClient), public(AsyncMemoryClient)
    assert sorted(sync) == sorted(awaited)
    for name, signature in sync.items():
        if name == "__init__":
            continue
        assert list(signature.parameters) == list(awaited[name].parameters), name
        if name != "memories":
            assert inspect.iscoroutinefunction(getattr(AsyncMemoryClient, name)), name


def test_remember_recall_and_errors(live_server: Any, key: str) -> None:
    async def agent() -> tuple[dict[str, Any], Recall, list[dict[str, Any]]]:
        async with AsyncMemoryClient(live_server.url, key, retries=0) as client:
            written = await client.remember(**PDF)
            recall = await client.recall(SUBJECT, goal="invoice", run="run_9", turn=1)
            listed = [m async for m in client.memories(subject=SUBJECT)]
            with pytest.raises(BadRequest) as bad:
                await client.remember(**{**PDF, "kind": "rumour"})
            assert list(bad.value.errors) == ["kind"]
            with pytest.raises(SystemOfRecord):
                await client.remember(**{**PDF, "key": "billing.address"})
            with pytest.raises(StaleVersion) as stale:
                await client.retract(written["memory"]["id"], reason="Wrong.", if_match=5)
            assert stale.value.version == 1
            return written, recall, listed

    written, recall, listed = asyncio.run(agent())
    assert written["decision"]["outcome"] == "accepted"
    assert [m["id"] for m in recall.memories] == [written["memory"]["id"]]
    assert "Wants invoices as PDF attachments, not links." in recall.block
    assert RecallRecord.objects.get(pk=recall.id).block == recall.block
    assert [m["id"] for m in listed] == [written["memory"]["id"]]
    assert Memory.objects.count() == 1


def test_a_503_is_retried_with_the_same_key(proxy: Proxy, key: str) -> None:
    proxy.failures = 2

    async def agent() -> dict[str, Any]:
        async with AsyncMemoryClient(proxy.url, key, retries=3, backoff=0.05) as client:
            return await client.remember(**PDF)

    assert asyncio.run(agent())["decision"]["outcome"] == "accepted"
    assert len(proxy.seen) == 3
    assert len({seen_key for _, _, seen_key in proxy.seen}) == 1
    assert Memory.objects.count() == 1


def test_retries_run_out_and_a_400_is_not_retried(proxy: Proxy, key: str) -> None:
    async def agent() -> None:
        async with AsyncMemoryClient(proxy.url, key, retries=1, backoff=0.05) as client:
            with pytest.raises(BadRequest):
                await client.remember(**{**PDF, "statement": ""})
            assert len(proxy.seen) == 1
            proxy.failures = 10
            with pytest.raises(ServerError):
                await client.tools()
            assert len(proxy.seen) == 3

    asyncio.run(agent())
    assert not Memory.objects.exists()
