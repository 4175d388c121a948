"""Rollouts on Ray actors (local ``ray.init(num_cpus=2)``) equal the in-process evaluation, chunk by chunk;
a worker plays the chunks it takes as one stream of refilled slots."""

import json
import sys

import pytest

from dialogue_gym.distributed import collect_rollouts
from dialogue_gym.distributed.ray_rollouts import ChunkDealer, RolloutWorker
from dialogue_gym.errors import ConfigError, DependencyNotInstalled
from dialogue_gym.evaluation import evaluate, load_trajectories
from dialogue_gym.scenarios.sead.parsing import render_user_output

GO_ON = render_user_output("Go on.", (2, 2, 2), 0)


def dicts(trajectories):
    return json.dumps([t.to_dict() for t in trajectories])


def test_missing_ray_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(DependencyNotInstalled, match=r"Ray rollouts .* 'ray', which is not installed.*pip install 'dialogue_gym\[ray\]'"):
        collect_rollouts("SEAD-Outbound-v0", "sop", 4)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"env_id": "Nope-v0"}, r"'Nope-v0' is not a registered id"),
        ({"agent": object()}, r"agent must be a policy name .*got object"),
        ({"env_kwargs": {"user_backend": object()}}, r"env_kwargs must be JSON data .*live objects cannot be rebuilt on Ray workers"),
        ({"num_workers": 0}, r"num_workers must be an int >= 1, got 0"),
        ({"chunk_size": 0}, r"chunk_size must be an int >= 1, got 0"),
        ({"isolate": "vm"}, r"isolate must be one of 'none', 'process', 'sandbox' .*got str: 'vm'"),
        ({"isolate": "process", "agent_limits": {"calls": 1}}, r"unknown agent limits \['calls'\]"),
    ],
)
def test_config_errors_before_ray_starts(monkeypatch, kwargs, message):
    monkeypatch.setitem(sys.modules, "ray", None)  # raised before Ray is needed
    args = {"env_id": "SEAD-Outbound-v0", "agent": "sop", "episodes": 4, **kwargs}
    with pytest.raises(ConfigError, match=message):
        collect_rollouts(**args)


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    if started:
        ray.shutdown()


def test_two_workers_reproduce_evaluate_exactly(local_ray, tmp_path):
    out = tmp_path / "ray.jsonl"
    usage = []
    collected = collect_rollouts("SEAD-Outbound-v0", "adaptive", 45, seed=7, num_workers=2, chunk_size=4, out=out, usage=usage)
    assert [t.seed for t in collected] == [7 + t.meta["start"] for t in collected] and len({t.seed for t in collected}) == 45
    # each worker's CPU: its start-up and its play apart, and the episodes it played (all 45 between them)
    assert len(usage) == 2 and sum(u["episodes"] for u in usage) == 45
    assert all(0 < u["play"] < u["total"] for u in usage if u["episodes"])
    assert dicts(collected) == dicts(evaluate("SEAD-Outbound-v0", "adaptive", 45, seed=7))
    assert dicts(load_trajectories(out)) == dicts(collected)


def test_any_policy_spec_and_role(local_ray):
    backend = {"name": "canned", "replies": [GO_ON]}
    kwargs = {"user": "llm", "user_backend": backend, "max_agent_turns": 2}
    collected = collect_rollouts("SEAD-Outbound-v0", "oracle", 10, env_kwargs=kwargs, num_workers=2, chunk_size=3)
    assert dicts(collected) == dicts(evaluate("SEAD-Outbound-v0", "oracle", 10, env_kwargs=kwargs))
    assert all(turn.raw == GO_ON for t in collected for turn in t.turns_of("user"))
    # the user as learner, played by the scripted simulator, against a scripted agent
    as_user = collect_rollouts("SEAD-Outbound-v0", "scripted", 6, learner="user", env_kwargs={"agent": "sop"}, num_workers=2)
    assert dicts(as_user) == dicts(evaluate("SEAD-Outbound-v0", "scripted", 6, learner="user", env_kwargs={"agent": "sop"}))


def test_rollouts_that_opt_in_play_the_agent_in_a_process_of_its_own_with_the_in_process_transcripts(local_ray):
    """Training rollouts through the agent boundary (issue 42, item 2): each worker's agent plays over JSON lines."""
    collected = collect_rollouts(
        "RLADA-Banking-v0", "keyword", 8, seed=3, num_workers=2, chunk_size=3, isolate="process", agent_limits={"call_seconds": 120}
    )
    assert all(t.meta.pop("isolation") == "process" and "agent_problems" not in t.meta for t in collected)
    assert dicts(collected) == dicts(evaluate("RLADA-Banking-v0", "keyword", 8, seed=3))


def test_a_worker_plays_its_chunks_as_one_stream_of_refilled_slots(local_ray, monkeypatch):
    """10 episodes in chunks of 3, 3, 3, 1 with batch_size 4, every episode L user replies long: chunk
    by chunk the user's calls would be 3L of 3 and L of 1; streamed, 2L of 4 and L of the last 2."""
    kwargs = {"user": "llm", "user_backend": {"name": "canned", "replies": [GO_ON]}, "max_agent_turns": 2}
    worker = RolloutWorker("SEAD-Outbound-v0", "sop", "agent", json.dumps(kwargs), "null", 4)
    backend = worker.evaluator.driver.policies["user"].backend
    sizes = []
    generate = backend.generate
    monkeypatch.setattr(backend, "generate", lambda requests: sizes.append(len(requests)) or generate(requests))
    dealer = local_ray.remote(num_cpus=0)(ChunkDealer).remote([(0, 3), (3, 3), (6, 3), (9, 1)])
    taken = worker.play(dealer, 5)
    assert [index for index, _ in taken] == [0, 1, 2, 3] and [len(chunk) for _, chunk in taken] == [3, 3, 3, 1]
    reference = evaluate("SEAD-Outbound-v0", "sop", 10, seed=5, env_kwargs=kwargs)
    assert json.dumps([data for _, chunk in taken for data in chunk]) == dicts(reference)
    (replies,) = {len(t.turns_of("user")) for t in reference}
    assert sizes == [4] * 2 * replies + [2] * replies
    assert worker.play(dealer, 5) == []


def test_a_bad_policy_name_raises_the_typed_error_from_the_worker(local_ray):
    with pytest.raises(ConfigError, match=r"agent='nope' is not a known agent policy"):
        collect_rollouts("SEAD-Outbound-v0", "nope", 4)


@pytest.mark.slow
def test_tiny_llm_user_on_ray_workers(local_ray, tiny_model_dir):
    kwargs = {"user": "llm", "user_backend": {"name": "transformers", "model": str(tiny_model_dir), "max_new_tokens": 8},
              "max_agent_turns": 2}
    # A real model's output depends on its batch mates (padding), so the workers keep evaluate's batch_size:
    # every episode lasts 2 agent turns, so evaluate and the workers alike batch episodes 0-3 together, then 4-7.
    collected = collect_rollouts("SEAD-Outbound-v0", "sop", 8, env_kwargs=kwargs, num_workers=2, chunk_size=4, batch_size=4)
    assert dicts(collected) == dicts(evaluate("SEAD-Outbound-v0", "sop", 8, env_kwargs=kwargs, batch_size=4))
