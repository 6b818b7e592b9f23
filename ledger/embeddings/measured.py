"""A backend whose every call is timed and every failure counted, for ``/metrics``."""

from __future__ import annotations

import time

from ledger.embeddings.base import Embedder, EmbeddingUnavailable, Vectors
from ledger.metrics import EMBEDDING_DURATION, EMBEDDING_FAILURES


class Measured:
    def __init__(self, backend: Embedder, kind: str) -> None:
        self.backend = backend
        self.kind = kind

    @property
    def model(self) -> str:
        return self.backend.model

    def embed(self, texts: list[str]) -> Vectors:
        started = time.perf_counter()
        try:
            vectors = self.backend.embed(texts)
        except EmbeddingUnavailable:
            EMBEDDING_FAILURES.labels(backend=self.kind).inc()
            raise
        EMBEDDING_DURATION.labels(backend=self.kind).observe(time.perf_counter() - started)
        return vectors
