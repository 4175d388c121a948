"""CachedBackend: modes, keys, failures, concurrent readers, and byte-for-byte replay of an evaluation."""

import json
import shutil
import subprocess
import sys
import textwrap
import threading

import pytest

from dialogue_gym.backends import (
    CannedBackend,
    GenerationOutput,
    GenerationRequest,
    SamplingParams,
    make_backend,
)
from dialogue_gym.backends.cache import CachedBackend
from dialogue_gym.errors import BackendError, ConfigError
from dialogue_gym.evaluation import evaluate


class Counting(CannedBackend):
    """A canned backend that records the batches it is asked for."""

    def __init__(self, replies=("a", "b", "c"), fail=()):
        super().__init__(list(replies))
        self.batches = []
        self.fail = set(fail)

    def generate(self, requests):
        self.batches.append([r.messages[-1]["content"] for r in requests])
        outputs = super().generate(requests)
        for output, request in zip(outputs, requests):
            if request.messages[-1]["content"] in self.fail:
                output.text, output.error = "", "HTTP 503: injected"
        return outputs


def req(text, seed=0, **sampling):
    return GenerationRequest(({"role": "user", "content": text},), SamplingParams(seed=seed, **sampling))


def test_read_through_asks_only_for_misses_in_one_batch(tmp_path):
    inner = Counting()
    cache = CachedBackend(inner, tmp_path / "c.sqlite")
    first = cache.generate([req("x"), req("y")])
    again = cache.generate([req("y"), req("z"), req("x")])
    assert inner.batches == [["x", "y"], ["z"]]
    assert [o.text for o in first] == ["a", "b"] and [o.text for o in again] == ["b", "c", "a"]
    assert again[0] == first[1]  # the whole output comes back, fields and meta included
    assert cache.stats == {"hits": 2, "misses": 3, "writes": 3}


def test_record_always_asks_and_overwrites(tmp_path):
    path = tmp_path / "c.sqlite"
    CachedBackend(Counting(["old"]), path, mode="record").generate([req("x")])
    inner = Counting(["new"])
    recorder = CachedBackend(inner, path, mode="record")
    assert recorder.generate([req("x")])[0].text == "new" and inner.batches == [["x"]]
    replayed = CachedBackend({"name": "canned", "replies": ["new"], "cycle": True}, path, mode="replay")
    assert replayed.generate([req("x")])[0].text == "new"


def test_keys_cover_backend_model_sampling_seed_and_messages_only(tmp_path):
    base = {"name": "transformers", "model": "smollm2", "temperature": 0.7, "device": "cpu", "batch_size": 32}
    cache = CachedBackend(base, tmp_path / "c.sqlite", mode="off")
    key = cache.key(req("hi"))[0]
    assert cache.key(req("hi"))[0] == key
    for other in (req("ho"), req("hi", seed=1), req("hi", temperature=0.2), req("hi", stop=("</r>",))):
        assert cache.key(other)[0] != key
    run_differently = {"device": "cuda", "batch_size": 4, "prefix_cache": False, "prefix_cache_tokens": 8}
    same_model_run_differently = CachedBackend({**base, **run_differently}, tmp_path / "c.sqlite", mode="off")
    assert same_model_run_differently.key(req("hi"))[0] == key
    for changed in ({"model": "other"}, {"name": "vllm"}, {"temperature": 0.9}):
        assert CachedBackend({**base, **changed}, tmp_path / "c.sqlite", mode="off").key(req("hi"))[0] != key
    assert CachedBackend(base, tmp_path / "c.sqlite", mode="off", identity="shared").key(req("hi"))[0] != key
    with_ids = GenerationRequest(req("hi").messages, req("hi").sampling, prompt_ids=(1, 2))
    assert cache.key(with_ids)[0] not in (key, cache.key(GenerationRequest(with_ids.messages, with_ids.sampling, prompt_ids=(1, 3)))[0])


def test_replay_never_builds_the_inner_backend_and_names_misses(tmp_path):
    path = tmp_path / "c.sqlite"
    spec = {"name": "transformers", "model": str(tmp_path / "no-such-model")}
    with pytest.raises(ConfigError, match="no-such-model"):
        make_backend(spec)  # the inner backend cannot be built here...
    CachedBackend(Counting(["recorded"]), path, mode="record", identity={"m": 1}).generate([req("x")])
    replay = make_backend({"name": "cached", "backend": spec, "path": str(path), "mode": "replay", "identity": {"m": 1}})
    assert replay.generate([req("x")])[0].text == "recorded"  # ...and is not needed
    with pytest.raises(BackendError, match=r"mode='replay' and 1 of 2 requests have no recording .*request 1, key [0-9a-f]{12}, last message 'new'"):
        replay.generate([req("x"), req("new")])
    with pytest.raises(ConfigError, match=r"no cache file at .*missing.sqlite.*mode='record'"):
        CachedBackend(spec, tmp_path / "missing.sqlite", mode="replay")


def test_failures_replay_as_recorded_but_read_through_asks_again(tmp_path):
    path = tmp_path / "c.sqlite"
    CachedBackend(Counting(fail={"x"}), path, mode="record", identity="t").generate([req("x")])
    replayed = CachedBackend(Counting(), path, mode="replay", identity="t").generate([req("x")])[0]
    assert replayed.error == "HTTP 503: injected"
    inner = Counting(["fixed"])
    healed = CachedBackend(inner, path, mode="read-through", identity="t").generate([req("x")])[0]
    assert healed.text == "fixed" and healed.error is None and inner.batches == [["x"]]
    assert CachedBackend(Counting(), path, mode="replay", identity="t").generate([req("x")])[0].text == "fixed"


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"mode": "replays"}, ConfigError, r"mode must be one of \['off', 'record', 'replay', 'read-through'\], got 'replays'"),
        ({"backend": "canned"}, ConfigError, r"backend must be a backend spec dict .*got str 'canned'"),
        ({"path": ""}, ConfigError, r"path must be the SQLite file's path, got ''"),
    ],
)
def test_config_errors(tmp_path, kwargs, error, message):
    args = {"backend": {"name": "canned", "replies": ["a"]}, "path": str(tmp_path / "c.sqlite"), **kwargs}
    with pytest.raises(error, match=message):
        CachedBackend(**args)


def test_backend_without_spec_needs_an_identity(tmp_path):
    class Bare:
        def generate(self, requests):
            return [GenerationOutput("z") for _ in requests]

    with pytest.raises(ConfigError, match=r"what Bare generates \(it has no JSON 'spec'\); pass identity="):
        CachedBackend(Bare(), tmp_path / "c.sqlite")
    assert CachedBackend(Bare(), tmp_path / "c.sqlite", identity="bare").generate([req("q")])[0].text == "z"


READER = textwrap.dedent(
    """
    import hashlib, sys
    from dialogue_gym.backends import GenerationRequest, SamplingParams, make_backend
    cache = make_backend({"name": "cached", "backend": {"name": "canned", "replies": ["unused"]},
                          "path": sys.argv[1], "mode": "replay", "identity": "shared"})
    requests = [GenerationRequest(({"role": "user", "content": f"q{i}"},), SamplingParams(seed=i)) for i in range(200)]
    digest = None
    for _ in range(25):
        texts = [o.text for o in cache.generate(requests)]
        current = hashlib.sha256("|".join(texts).encode()).hexdigest()
        assert digest in (None, current)
        digest = current
    print(digest)
    """
)


def test_concurrent_readers_in_processes_and_threads_while_a_writer_appends(tmp_path):
    path = tmp_path / "shared.sqlite"
    replies = [f"reply {i}" for i in range(200)]
    requests = [GenerationRequest(({"role": "user", "content": f"q{i}"},), SamplingParams(seed=i)) for i in range(200)]
    CachedBackend(CannedBackend(replies), path, mode="record", identity="shared").generate(requests)
    readers = [subprocess.Popen([sys.executable, "-c", READER, str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    writer = CachedBackend(CannedBackend(["more"]), path, mode="read-through", identity="shared")
    for round_ in range(20):  # a writer appending while the processes read
        writer.generate([GenerationRequest(({"role": "user", "content": f"w{round_}-{i}"},)) for i in range(10)])
    replay = CachedBackend({"name": "canned", "replies": ["x"]}, path, mode="replay", identity="shared")
    results, errors = [], []

    def read():
        try:
            for _ in range(10):
                results.append([o.text for o in replay.generate(requests)])
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=read) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    outs = [reader.communicate(timeout=120) for reader in readers]
    assert not errors and len(results) == 40 and all(texts == replies for texts in results)
    import hashlib

    expected = hashlib.sha256("|".join(replies).encode()).hexdigest()
    for reader, (stdout, stderr) in zip(readers, outs):
        assert reader.returncode == 0, stderr
        assert stdout.strip() == expected
    assert writer.stats["writes"] == 200
    replay.close()


def test_replayed_evaluation_reproduces_transcripts_byte_for_byte_without_the_model(tiny_model_dir, tmp_path):
    model = shutil.copytree(tiny_model_dir, tmp_path / "model")
    db = tmp_path / "rollouts.sqlite"

    def run(mode):
        cached = {"name": "cached", "backend": {"name": "transformers", "model": str(model), "max_new_tokens": 8},
                  "path": str(db), "mode": mode}
        trajectories = evaluate(
            "SEAD-Outbound-v0", "sop", 4, seed=3, batch_size=4,
            env_kwargs={"user": "llm", "user_backend": cached, "max_agent_turns": 2},
        )
        return json.dumps([t.to_dict() for t in trajectories])

    recorded = run("record")
    shutil.rmtree(model)  # the model is gone: only the recording can answer now
    with pytest.raises(ConfigError):
        make_backend({"name": "transformers", "model": str(model)})
    assert run("replay") == recorded
    transcript = json.loads(recorded)
    user_turns = [turn for t in transcript for turn in t["turns"] if turn["role"] == "user"]
    assert len(transcript) == 4 and len(user_turns) == 8
    assert len({turn["raw"] for turn in user_turns}) > 1  # real (seeded, varied) model outputs were recorded
