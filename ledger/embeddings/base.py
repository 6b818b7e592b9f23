"""What every embedding backend promises, and how a vector is kept in the database."""

from __future__ import annotations

from typing import Protocol

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


class EmbeddingUnavailable(Exception):
    """The backend could not embed now (not installed, unreachable, too slow, a bad
    answer). Retrieval then ranks by words alone and says so; a write never fails for it."""


class Embedder(Protocol):
    """Turns texts into unit vectors: the cosine of two is their dot product."""

    @property
    def model(self) -> str:
        """The name stored beside each vector: vectors of two models are never compared."""
        ...

    def embed(self, texts: list[str]) -> Vectors:
        """One row per text, each of length 1, float32; raises ``EmbeddingUnavailable``."""
        ...


def unit_rows(vectors: npt.NDArray[np.floating]) -> Vectors:
    """Rows scaled to length 1 (a zero row stays zero), as float32."""
    rows = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    scaled: Vectors = np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)
    return scaled


def to_bytes(vector: Vectors) -> bytes:
    """A vector as stored: little-endian float32, dimensions implied by the length."""
    return np.asarray(vector, dtype="<f4").tobytes()


def from_bytes(data: bytes | memoryview) -> Vectors:
    vector: Vectors = np.frombuffer(bytes(data), dtype="<f4").astype(np.float32)
    return vector
