"""The Python client for agents: ``MemoryClient`` and ``AsyncMemoryClient``, over httpx.

It imports nothing of Django, so an agent's process needs no settings: only httpx."""

from memoryadmin_client.async_client import AsyncMemoryClient
from memoryadmin_client.calls import Recall
from memoryadmin_client.errors import (
    AgentPaused,
    AuthenticationFailed,
    BadRequest,
    Conflict,
    ConnectionFailed,
    IdempotencyKeyReused,
    MemoryAdminError,
    MemoryPaused,
    NotFound,
    NotYourWrite,
    Paused,
    PermissionDenied,
    RateLimited,
    ServerError,
    SnapshotRejected,
    StaleVersion,
    SubjectCapReached,
    SystemOfRecord,
    Unprocessable,
)
from memoryadmin_client.sync_client import MemoryClient

__all__ = [
    "AgentPaused",
    "AsyncMemoryClient",
    "AuthenticationFailed",
    "BadRequest",
    "Conflict",
    "ConnectionFailed",
    "IdempotencyKeyReused",
    "MemoryAdminError",
    "MemoryClient",
    "MemoryPaused",
    "NotFound",
    "Paused",
    "NotYourWrite",
    "PermissionDenied",
    "RateLimited",
    "Recall",
    "ServerError",
    "SnapshotRejected",
    "StaleVersion",
    "SubjectCapReached",
    "SystemOfRecord",
    "Unprocessable",
]
