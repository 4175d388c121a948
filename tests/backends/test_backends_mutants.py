"""Backend plumbing the other backend tests leave open: requests and sampling settings are frozen
values, a request's stop strings are checked, LatencyBackend's bounds and defaults, cache-layer growth,
the prefix store's bounds, the record cache's overwrites and corrupt pages, and the tiny model's padding,
seed and corpus."""

import dataclasses
import math

import pytest

from dialogue_gym.backends import GenerationRequest, LatencyBackend, SamplingParams
from dialogue_gym.backends.sampling import SamplingDefaults
from dialogue_gym.errors import ConfigError


def test_sampling_params_and_requests_are_frozen_hashable_values():
    params = SamplingParams(seed=3, stop=("</a>",))
    request = GenerationRequest(({"role": "user", "content": "hi"},), params)
    with pytest.raises(dataclasses.FrozenInstanceError):
        params.seed = 4
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.sampling = SamplingParams()
    assert hash(params) == hash(SamplingParams(seed=3, stop=("</a>",)))


@pytest.mark.parametrize("stop", [("",), ("</a>", 3)])
def test_a_requests_stop_strings_must_be_non_empty_strings(stop):
    defaults = SamplingDefaults(16, 0.7, 1.0, "Remote")
    request = GenerationRequest(({"role": "user", "content": "hi"},), SamplingParams(stop=stop))
    with pytest.raises(ConfigError, match=r"Remote.generate: request 0: stop must be a tuple of non-empty strings"):
        defaults.resolve(request, 0)


def test_latency_backend_defaults_to_batches_of_64_and_takes_batches_of_one():
    assert LatencyBackend(["a"]).max_batch == 64
    assert LatencyBackend(["a"], latency=0.0, max_batch=1).max_batch == 1


@pytest.mark.parametrize("latency", [True, math.inf, -0.5, "1"])
def test_latency_must_be_a_finite_non_negative_number(latency):
    with pytest.raises(ConfigError, match="LatencyBackend: latency must be a finite number of seconds >= 0"):
        LatencyBackend(["a"], latency=latency)


def test_a_layer_grows_to_hold_a_prompt_or_a_step_wider_than_its_buffer():
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from dialogue_gym.backends.kv_buffers import PreallocatedLayer

    generator = torch.Generator().manual_seed(0)
    prompt, step = torch.randn(1, 2, 5, 4, generator=generator), torch.randn(1, 2, 7, 4, generator=generator)
    layer = PreallocatedLayer(capacity=2)
    keys, values = layer.update(prompt, -prompt)  # 5 columns into a buffer of 2
    assert torch.equal(keys, prompt) and torch.equal(values, -prompt) and layer.capacity == 5
    keys, values = layer.update(step, -step)  # 5 + 7 = 12 columns: more than twice the 5 held
    assert torch.equal(keys, torch.cat([prompt, step], dim=-2)) and torch.equal(values, -torch.cat([prompt, step], dim=-2))
    assert layer.capacity == 12


def _open_descriptors_of(path):
    import os

    found = []
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}") == str(path):
                found.append(name)
        except OSError:
            pass  # closed while listing
    return found


def test_a_cache_file_found_unusable_on_first_use_is_not_left_open(tmp_path):
    import os
    import sqlite3

    from dialogue_gym.backends import CannedBackend
    from dialogue_gym.backends.cache import CachedBackend

    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc to list open files")
    path = tmp_path / "cache.sqlite"
    cache = CachedBackend(CannedBackend(["a"]), path, mode="record")  # no file yet: checked on first use
    other = sqlite3.connect(path)
    other.execute("CREATE TABLE notes (body TEXT)")
    other.commit()
    other.close()
    request = GenerationRequest(({"role": "user", "content": "hi"},), SamplingParams(seed=0))
    with pytest.raises(ConfigError, match="is not a usable dialogue_gym cache"):
        cache.generate([request])
    assert _open_descriptors_of(path) == []


def _chat(text):
    return GenerationRequest(({"role": "user", "content": text},), SamplingParams(seed=0))


def test_record_mode_asks_again_and_overwrites_a_recording_of_the_same_key(tmp_path):
    from dialogue_gym.backends import CannedBackend
    from dialogue_gym.backends.cache import CachedBackend

    path, identity = tmp_path / "c.sqlite", {"backend": "same-model"}
    assert CachedBackend(CannedBackend(["old"]), path, mode="record", identity=identity).generate([_chat("x")])[0].text == "old"
    recorder = CachedBackend(CannedBackend(["new"]), path, mode="record", identity=identity)
    assert recorder.generate([_chat("x")])[0].text == "new" and recorder.stats["misses"] == 1
    replayed = CachedBackend(CannedBackend(["unused"]), path, mode="replay", identity=identity)
    assert replayed.generate([_chat("x")])[0].text == "new"


def test_a_cache_file_whose_pages_are_corrupt_is_named_unusable_when_read(tmp_path):
    from dialogue_gym.backends import CannedBackend
    from dialogue_gym.backends.cache import CachedBackend

    path = tmp_path / "c.sqlite"
    writer = CachedBackend(CannedBackend(["a"]), path)
    writer.generate([_chat("x")])
    writer.close()
    reader = CachedBackend(CannedBackend(["a"]), path, mode="replay")  # the schema page is sound when it is built
    with open(path, "r+b") as handle:  # then every page after the schema's is overwritten
        page = int.from_bytes(handle.read(18)[16:18], "big")  # the header's page size
        handle.seek(page)
        handle.write(b"\xff" * (path.stat().st_size - page))
    with pytest.raises(ConfigError, match=r"is not a usable dialogue_gym cache \(sqlite3: database disk image is malformed\)"):
        reader.generate([_chat("x")])


def _entry(tokens):
    import numpy as np

    from dialogue_gym.backends.prefix_cache import PrefixEntry

    return PrefixEntry(np.asarray(tokens, dtype=np.int64), [], len(tokens))


def test_a_prefix_store_holds_exactly_max_tokens_before_it_evicts():
    from dialogue_gym.backends.prefix_cache import PrefixKVStore

    store = PrefixKVStore(8)
    first, second = _entry([1, 2, 3, 4]), _entry([5, 6, 7, 8])
    assert store.put(first) and store.put(second)
    assert (len(store), store.tokens) == (2, 8)  # full, not over: nothing evicted
    assert store.put(_entry([9])) and (len(store), store.tokens) == (2, 5)  # one over: the oldest goes
    assert store.match([1, 2, 3, 4]) == (None, 0)


def test_an_entry_of_exactly_max_tokens_is_stored_and_a_store_of_one_token_is_allowed():
    from dialogue_gym.backends.prefix_cache import PrefixKVStore

    store = PrefixKVStore(3)
    assert store.put(_entry([1, 2, 3])) is True and store.tokens == 3
    assert store.put(_entry([1, 2, 3, 4])) is False and store.tokens == 3
    assert PrefixKVStore(1).put(_entry([7])) is True


def test_a_cleared_store_holds_nothing_and_entries_are_not_shared_by_default():
    from dialogue_gym.backends.prefix_cache import PrefixKVStore

    store = PrefixKVStore(10)
    entry = _entry([1, 2])
    assert entry.shared is False
    store.put(entry)
    store.clear()
    assert (len(store), store.tokens) == (0, 0)
    assert store.put(_entry(list(range(10)))) and len(store) == 1  # a cleared store takes a full-size entry


def test_latency_backend_defaults_to_50_ms_and_refuses_a_bool_or_non_int_batch():
    assert LatencyBackend(["a"]).latency == 0.05
    for bad in (True, 2.0, 0):
        with pytest.raises(ConfigError, match="LatencyBackend: max_batch must be a positive int"):
            LatencyBackend(["a"], max_batch=bad)


def test_the_tiny_model_pads_on_the_left_and_its_weights_follow_the_seed(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from dialogue_gym.backends.tiny import build_tiny_chat_model

    shape = {"vocab_size": 300, "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2}
    folders = [build_tiny_chat_model(tmp_path / name, seed=seed, **shape) for name, seed in (("a", 0), ("b", 0), ("c", 1))]
    assert transformers.AutoTokenizer.from_pretrained(folders[0]).padding_side == "left"  # batched prompts end where generation starts
    weights = [transformers.AutoModelForCausalLM.from_pretrained(folder).state_dict() for folder in folders]
    name = "model.embed_tokens.weight"
    assert torch.equal(weights[0][name], weights[1][name]) and not torch.equal(weights[0][name], weights[2][name])


def test_the_tiny_tokenizer_learns_the_extra_corpus(tmp_path):
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("torch")
    from dialogue_gym.backends.tiny import build_tiny_chat_model

    def tokens(folder):
        return transformers.AutoTokenizer.from_pretrained(folder)("zqxv", add_special_tokens=False)["input_ids"]

    shape = {"vocab_size": 300, "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2}
    plain = build_tiny_chat_model(tmp_path / "plain", seed=0, **shape)
    taught = build_tiny_chat_model(tmp_path / "taught", seed=0, corpus=["zqxv"] * 50, **shape)
    assert len(tokens(plain)) == 4 and len(tokens(taught)) == 1  # byte by byte, then one merged token


@pytest.mark.parametrize("whole_sentences", [False, True])
def test_with_digits_a_number_is_the_same_single_digit_tokens_wherever_it_appears(tmp_path, whole_sentences):
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("torch")
    from dialogue_gym.backends.tiny import build_tiny_chat_model

    corpus = ["caller ID matched account ACC-823320.", '{"account_id": "ACC-823320"}'] * 20
    shape = {"vocab_size": 400, "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "corpus": corpus, "whole_sentences": whole_sentences}

    def pieces(folder, text):
        tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        assert tokenizer.decode(ids) == text
        return [tokenizer.decode([i]) for i in ids]

    merged = build_tiny_chat_model(tmp_path / "merged", seed=0, **shape)
    digits = build_tiny_chat_model(tmp_path / "digits", seed=0, digits=True, **shape)
    def single_digits(folder, text):
        return [piece for piece in pieces(folder, text) if len(piece) == 1 and piece.isdigit()]

    assert any(single_digits(merged, text) != list("823320") for text in corpus[:2])  # without: merged into other pieces
    for text in corpus[:2]:
        assert single_digits(digits, text) == list("823320")  # one digit a token, in a reply and in the prompt alike

    def before_digits(folder, text):
        said = pieces(folder, text)
        return said[next(i for i, piece in enumerate(said) if piece[0].isdigit()) - 1]

    # The piece before the digits is the same in both, so a copying head finds the prompt's id from the reply's:
    # the id's prefix of its own where whole sentences would merge it (ByteLevel's own split cuts "ACC" "-").
    assert [before_digits(digits, text) for text in corpus[:2]] == (["ACC-"] * 2 if whole_sentences else ["-"] * 2)
    if whole_sentences:
        assert "ACC-" not in pieces(merged, corpus[0])  # without: merged into the sentence
        cut = transformers.AutoTokenizer.from_pretrained(tmp_path / "digits").backend_tokenizer.pre_tokenizer.pre_tokenize_str
        # Only a whole word of 2 to 5 capitals directly before a digit: not "COUNT-" of "ACCOUNT-1", not "ACC-[".
        assert [piece for piece, _ in cut("ACCOUNT-1 ACC-[0-9] (ACC-12, X-3)")] == [
            "ACCOUNT-", "1", "ĠACC-[", "0", "-", "9", "]Ġ(", "ACC-", "1", "2", ",ĠX-", "3", ")"  # Ġ: ByteLevel's space
        ]
