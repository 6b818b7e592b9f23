"""Any OpenAI-compatible ``/v1/embeddings`` endpoint: OpenAI, Ollama, vLLM,
text-embeddings-inference. Every failure (unreachable, slow, an error status, an answer of
the wrong shape) is ``EmbeddingUnavailable`` with the reason; nothing is retried here: a
recall cannot wait, and a backfill tries again on its next pass."""

from __future__ import annotations

import httpx
import numpy as np

from ledger.embeddings.base import EmbeddingUnavailable, Vectors, unit_rows


class Endpoint:
    def __init__(self, *, url: str, model: str, api_key: str, timeout_seconds: float) -> None:
        self.model = model
        self._url = f"{url}/embeddings"
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # One pooled client per process: httpx's client is safe across threads.
        self._client = httpx.Client(headers=headers, timeout=timeout_seconds)

    def embed(self, texts: list[str]) -> Vectors:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        try:
            answer = self._client.post(self._url, json={"model": self.model, "input": texts})
        except httpx.TimeoutException:
            raise EmbeddingUnavailable("the embeddings endpoint did not answer in time") from None
        except httpx.HTTPError as error:
            raise EmbeddingUnavailable(f"the embeddings endpoint is unreachable: {error}") from None
        if answer.status_code != 200:
            raise EmbeddingUnavailable(f"the embeddings endpoint answered {answer.status_code}")
        try:
            rows = sorted(answer.json()["data"], key=lambda row: row["index"])
            vectors = np.array([row["embedding"] for row in rows], dtype=np.float32)
        except (ValueError, KeyError, TypeError):
            raise EmbeddingUnavailable(
                "the embeddings endpoint's answer is not a list of vectors"
            ) from None
        if vectors.ndim != 2 or len(vectors) != len(texts):
            raise EmbeddingUnavailable(
                f"the embeddings endpoint gave {len(vectors)} vectors for {len(texts)} texts"
            )
        # A zero vector has no direction: every cosine with it would be 0, and every memory
        # would fall under the floor.
        if not np.all(np.isfinite(vectors)) or not np.all(np.linalg.norm(vectors, axis=1) > 0):
            raise EmbeddingUnavailable("the embeddings endpoint gave an empty or broken vector")
        return unit_rows(vectors)
