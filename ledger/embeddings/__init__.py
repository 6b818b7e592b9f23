"""Sentence embeddings, the meaning half of retrieval (``ledger.reads.retrieval``).

``embedder()`` is the configured backend (``MEMORYADMIN_EMBEDDINGS``), made once per
process on first use, under a lock: loading the local model takes a fraction of a second
and 90 MB, and two threads must not both pay it. None when embeddings are off. A backend
that cannot be made (its model missing, its library not installed) raises
``EmbeddingUnavailable`` each time it is asked for, and retrieval goes on by words.
"""

from __future__ import annotations

import threading
from pathlib import Path

from django.conf import settings

from ledger.embeddings.base import (
    Embedder,
    EmbeddingUnavailable,
    Vectors,
    from_bytes,
    to_bytes,
    unit_rows,
)
from ledger.embeddings.measured import Measured
from ledger.metrics import EMBEDDING_FAILURES

__all__ = [
    "Embedder",
    "EmbeddingUnavailable",
    "Vectors",
    "configured_model",
    "embedder",
    "from_bytes",
    "to_bytes",
    "unit_rows",
]

_lock = threading.Lock()
# The settings a backend was made from → the backend: a test that changes them gets a new one.
_made: dict[tuple[str, ...], Embedder] = {}


def _configuration() -> tuple[str, ...]:
    return (
        settings.MEMORYADMIN_EMBEDDINGS,
        settings.MEMORYADMIN_EMBEDDINGS_MODEL,
        settings.MEMORYADMIN_EMBEDDINGS_URL,
        settings.MEMORYADMIN_EMBEDDINGS_API_KEY,
        settings.MEMORYADMIN_EMBEDDINGS_MODEL_DIR,
        str(settings.MEMORYADMIN_EMBEDDINGS_TIMEOUT_MS),
    )


def configured_model() -> str | None:
    """The model name vectors are stored under now, without loading it; None when off."""
    kind = settings.MEMORYADMIN_EMBEDDINGS
    if kind == "off":
        return None
    if kind == "local":
        from ledger.embeddings.minilm import MODEL

        return MODEL
    return str(settings.MEMORYADMIN_EMBEDDINGS_MODEL)


def embedder() -> Embedder | None:
    configuration = _configuration()
    made = _made.get(configuration)
    if made is not None or settings.MEMORYADMIN_EMBEDDINGS == "off":
        return made
    with _lock:
        if configuration not in _made:
            try:
                made = _make()
            except EmbeddingUnavailable:
                EMBEDDING_FAILURES.labels(backend=settings.MEMORYADMIN_EMBEDDINGS).inc()
                raise
            _made[configuration] = Measured(made, settings.MEMORYADMIN_EMBEDDINGS)
        return _made[configuration]


def _make() -> Embedder:
    kind = settings.MEMORYADMIN_EMBEDDINGS
    if kind == "endpoint":
        from ledger.embeddings.endpoint import Endpoint

        return Endpoint(
            url=settings.MEMORYADMIN_EMBEDDINGS_URL,
            model=settings.MEMORYADMIN_EMBEDDINGS_MODEL,
            api_key=settings.MEMORYADMIN_EMBEDDINGS_API_KEY,
            timeout_seconds=settings.MEMORYADMIN_EMBEDDINGS_TIMEOUT_MS / 1000,
        )
    if kind == "sentence-transformers":
        from ledger.embeddings.library import SentenceTransformers

        return SentenceTransformers(settings.MEMORYADMIN_EMBEDDINGS_MODEL or "all-MiniLM-L6-v2")
    from ledger.embeddings.minilm import MiniLM

    folder = settings.MEMORYADMIN_EMBEDDINGS_MODEL_DIR
    return MiniLM(Path(folder) if folder else None)
