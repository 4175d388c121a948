"""PrefixKVStore: longest-prefix matching, LRU eviction by tokens, replacement and discard."""

import numpy as np
import pytest

from dialogue_gym.backends.prefix_cache import PrefixEntry, PrefixKVStore, common_prefix_length
from dialogue_gym.errors import ConfigError

torch = pytest.importorskip("torch")


def entry(tokens, prompt_length=None, shared=False, layers=2, heads=3, head_dim=4):
    kv = [(torch.zeros(heads, len(tokens), head_dim), torch.zeros(heads, len(tokens), head_dim)) for _ in range(layers)]
    tokens = np.asarray(tokens, dtype=np.int64)
    return PrefixEntry(tokens, kv, len(tokens) if prompt_length is None else prompt_length, shared)


@pytest.mark.parametrize("first, second, expected", [
    ([1, 2, 3], [1, 2, 3], 3), ([1, 2, 3], [1, 2], 2), ([1, 2, 3], [1, 9, 3], 1), ([4], [1, 2], 0), ([], [1], 0),
])
def test_common_prefix_length(first, second, expected):
    assert common_prefix_length(np.array(first, dtype=np.int64), np.array(second, dtype=np.int64)) == expected


def test_match_returns_the_longest_shared_prefix_within_the_limit():
    store = PrefixKVStore(100)
    short, long = entry([1, 2, 9]), entry([1, 2, 3, 4, 5])
    store.put(short)
    store.put(long)
    assert store.match([1, 2, 3, 4, 7]) == (long, 4)
    assert store.match([1, 2, 9, 9]) == (short, 3)
    assert store.match([1, 2, 3, 4, 5, 6], limit=2)[1] == 2  # a prompt keeps its last token(s) to encode
    assert store.match([7, 1, 2]) == (None, 0)


def test_lru_eviction_by_tokens_keeps_the_recently_used():
    store = PrefixKVStore(10)
    a, b, c = entry([1, 1, 1, 1]), entry([2, 2, 2, 2]), entry([3, 3, 3, 3])
    store.put(a)
    store.put(b)
    store.match([1, 1])  # a is now more recently used than b
    store.put(c)  # 12 tokens > 10: b, the least recently used, goes
    assert store.tokens == 8 and len(store) == 2
    assert store.match([2, 2]) == (None, 0)
    assert store.match([1, 1, 1, 1])[0] is a and store.match([3, 3, 3, 3])[0] is c


def test_an_entry_longer_than_the_cap_is_not_stored():
    store = PrefixKVStore(3)
    assert store.put(entry([1, 2, 3, 4])) is False
    assert store.tokens == 0 and len(store) == 0


def test_same_tokens_replace_and_discard_only_drops_the_stored_object():
    store = PrefixKVStore(100)
    old, new = entry([5, 6, 7]), entry([5, 6, 7])
    store.put(old)
    store.put(new)
    assert store.tokens == 3 and len(store) == 1
    store.discard(old)  # replaced already: nothing happens
    assert store.match([5, 6, 7])[0] is new
    store.discard(new)
    assert store.tokens == 0 and len(store) == 0


def test_bytes_count_keys_and_values_of_every_layer():
    store = PrefixKVStore(100)
    store.put(entry([1, 2, 3, 4, 5], layers=2, heads=3, head_dim=4))
    assert store.nbytes == 2 * 2 * 3 * 5 * 4 * 4  # layers x (keys, values) x heads x tokens x head_dim x float32


@pytest.mark.parametrize("bad", [0, -5, 2.5, True, "100"])
def test_bad_cap_names_the_value(bad):
    with pytest.raises(ConfigError) as info:
        PrefixKVStore(bad)
    assert repr(bad) in str(info.value) and "max_tokens" in str(info.value)
