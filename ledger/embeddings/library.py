"""sentence-transformers, for those who have torch (the ``[sentence-transformers]`` extra):
any model it can load from a folder or its own cache, on whatever device it picks."""

from __future__ import annotations

from typing import Any

from ledger.embeddings.base import EmbeddingUnavailable, Vectors, unit_rows


class SentenceTransformers:
    def __init__(self, model: str) -> None:
        self.model = model
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise EmbeddingUnavailable(
                "sentence-transformers is not installed "
                "(pip install 'memoryadmin[sentence-transformers]')"
            ) from None
        try:
            self._model: Any = SentenceTransformer(model)
        except (OSError, ValueError) as error:
            raise EmbeddingUnavailable(
                f"sentence-transformers cannot load {model}: {error}"
            ) from None

    def embed(self, texts: list[str]) -> Vectors:
        return unit_rows(self._model.encode(texts, convert_to_numpy=True))
