"""Keys and values of earlier turns, kept between ``generate`` calls: a prefix cache keyed by token ids.

A multi-turn prompt grows by appending: turn t+1's prompt begins with turn t's prompt and (the
re-tokenised) reply. :class:`PrefixKVStore` keeps, for each token sequence a backend has run, the
attention keys and values of every layer, so that
:class:`~dialogue_gym.backends.transformers_backend.TransformersBackend` encodes only what follows a
prompt's longest cached prefix. The store needs no dialogue id: a prompt matches whichever stored
sequence shares the most leading tokens with it (any length, so a reply that re-tokenises
differently still reuses everything before the first differing token).

Memory is bounded by ``max_tokens`` (the stored sequences' lengths summed) with least-recently-used
eviction. A dialogue keeps about one entry: the entry a turn continues is dropped once the next
turn's entry (prompt plus reply) is stored, and the entries of finished dialogues, never matched
again, are the first to go. Prefixes that several prompts of one batch share (a common system
prompt) are stored once, marked ``shared``, and left to the LRU order.

Nothing here imports torch: entries hold whatever tensors the backend gives them.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..errors import ConfigError


@dataclass(eq=False)
class PrefixEntry:
    """One cached token sequence and its keys/values.

    ``layers[l]`` is ``(keys, values)`` of layer ``l``, each of shape ``(kv_heads, len(tokens), head_dim)``.
    ``prompt_length`` tokens of ``tokens`` were a prompt and the rest was generated after it; a
    ``shared`` entry is a prefix common to several prompts rather than one dialogue's turn."""

    tokens: np.ndarray
    layers: list[tuple[Any, Any]]
    prompt_length: int
    shared: bool = False

    @property
    def nbytes(self) -> int:
        return sum(int(t.element_size() * t.nelement()) for pair in self.layers for t in pair)


def common_prefix_length(first: np.ndarray, second: np.ndarray) -> int:
    """How many leading tokens ``first`` and ``second`` share."""
    n = min(len(first), len(second))
    same = first[:n] == second[:n]
    return n if bool(same.all()) else int(same.argmin())


class PrefixKVStore:
    """Cached keys/values keyed by token ids, at most ``max_tokens`` tokens in all, evicted LRU-first.

    Args:
        max_tokens: the most tokens (summed over entries) kept; an entry longer than that is not
            stored at all. Memory is ``max_tokens`` times the model's bytes per token
            (``2 * layers * kv_heads * head_dim * dtype size``; e.g. 46 KB for SmolLM2-135M in float32).
    """

    def __init__(self, max_tokens: int):
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ConfigError(
                f"PrefixKVStore: max_tokens must be an int >= 1 (the most cached tokens kept), got {max_tokens!r}; "
                "pass e.g. max_tokens=32768."
            )
        self.max_tokens = max_tokens
        self._entries: OrderedDict[bytes, PrefixEntry] = OrderedDict()
        self.tokens = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        """Bytes held by the cached keys and values."""
        return sum(entry.nbytes for entry in self._entries.values())

    def match(self, ids: Sequence[int] | np.ndarray, limit: int | None = None) -> tuple[PrefixEntry | None, int]:
        """The entry sharing the most leading tokens with ``ids`` (at most ``limit``) and that count;
        ``(None, 0)`` when none shares any. A match counts as a use in the LRU order; of equally long
        matches the most recently used wins."""
        ids = np.asarray(ids, dtype=np.int64)
        limit = len(ids) if limit is None else min(limit, len(ids))
        best: PrefixEntry | None = None
        best_length = 0
        for entry in reversed(self._entries.values()):
            length = min(common_prefix_length(entry.tokens, ids), limit)
            if length > best_length:
                best, best_length = entry, length
        if best is not None:
            self._entries.move_to_end(best.tokens.tobytes())
        return best, best_length

    def put(self, entry: PrefixEntry) -> bool:
        """Store ``entry`` as the most recently used (replacing one with the same tokens), then evict
        least-recently-used entries until at most ``max_tokens`` remain. ``False`` (nothing stored)
        when the entry alone is longer than ``max_tokens``."""
        if len(entry.tokens) > self.max_tokens:
            return False
        key = entry.tokens.tobytes()
        previous = self._entries.pop(key, None)
        if previous is not None:
            self.tokens -= len(previous.tokens)
        self._entries[key] = entry
        self.tokens += len(entry.tokens)
        while self.tokens > self.max_tokens:
            _, evicted = self._entries.popitem(last=False)
            self.tokens -= len(evicted.tokens)
        return True

    def discard(self, entry: PrefixEntry) -> None:
        """Drop ``entry`` if it is still stored (not an entry that has since replaced it)."""
        key = entry.tokens.tobytes()
        if self._entries.get(key) is entry:
            del self._entries[key]
            self.tokens -= len(entry.tokens)

    def clear(self) -> None:
        self._entries.clear()
        self.tokens = 0
