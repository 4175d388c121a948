"""Greedy play and sampled held-out evaluation of :class:`CausalLMPolicy` run on a prefix-cached backend
(what nothing trains on), and play the same dialogues as the uncached backend: before training, and after a
step changed the weights. Sampled rollouts, whose logprobs train, stay uncached."""

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from dialogue_gym.evaluation import evaluate  # noqa: E402
from trainers.grpo.lm import CausalLMPolicy, GRPOConfig  # noqa: E402

ENV_ID, EPISODES, SEED = "SEAD-Outbound-v0", 4, 3


def transcripts(policy, greedy=True) -> list[list[str]]:
    policy.greedy, policy.evaluating = greedy, True
    try:
        played = evaluate(ENV_ID, policy, EPISODES, seed=SEED, env_kwargs={"max_agent_turns": 3})
    finally:
        policy.greedy, policy.evaluating = False, False
    return [[turn.text for turn in trajectory.turns] for trajectory in played]


def uncached(policy, greedy=True) -> list[list[str]]:
    """The same play with the cached backend swapped for the training one (no prefix cache)."""
    cached = policy._cached_backend
    policy._cached_backend = policy.backend
    try:
        return transcripts(policy, greedy)
    finally:
        policy._cached_backend = cached


def test_greedy_play_uses_the_prefix_cache_and_sampling_does_not(tiny_model_dir, monkeypatch):
    policy = CausalLMPolicy(str(tiny_model_dir), GRPOConfig(max_new_tokens=8, temperature=1.0, kl_coef=0.0))
    calls = []
    for name, backend in (("greedy", policy.cached_backend()), ("training", policy.backend)):
        monkeypatch.setattr(backend, "generate", lambda requests, name=name, real=backend.generate: calls.append(name) or real(requests))
    transcripts(policy)
    transcripts(policy, greedy=False)  # sampled held-out evaluation
    assert set(calls) == {"greedy"}
    assert policy.cached_backend().prefix_cache and not policy.backend.prefix_cache
    assert policy.cached_backend().model is policy.model
    assert policy.cached_backend().prefix_cache_stats()["cached_tokens"] > 0
    calls.clear()
    observation = {"messages": [{"role": "user", "content": "hello there"}], "turn": 0}
    policy.act_batch([observation], [{}], [policy.start({}, 0)])  # sampled, as in rollouts: recorded logprobs train
    assert calls == ["training"]


def test_cached_greedy_play_equals_uncached_before_and_after_a_training_step(tiny_model_dir):
    import torch

    policy = CausalLMPolicy(str(tiny_model_dir), GRPOConfig(max_new_tokens=8, temperature=1.0, kl_coef=0.0))
    first = transcripts(policy)
    assert first == uncached(policy)
    assert len({tuple(dialogue) for dialogue in first}) > 1  # the starts differ, so the comparison can fail
    with torch.no_grad():
        for parameter in policy.model.parameters():
            parameter.mul_(1.5)  # an in-place update, as an optimizer step makes
    second = transcripts(policy)
    assert second == uncached(policy)
    assert second != first  # the cache was emptied: the old weights' keys and values would replay `first`


def test_cached_sampled_evaluation_equals_uncached_and_rollouts_sample_alike(tiny_model_dir):
    """Every request states its temperature: the cached backend's own default is greedy, and a sampled
    evaluation that fell back on it would play the greedy dialogues."""
    policy = CausalLMPolicy(str(tiny_model_dir), GRPOConfig(max_new_tokens=8, temperature=1.0, kl_coef=0.0))
    sampled = transcripts(policy, greedy=False)
    assert sampled == uncached(policy, greedy=False)
    assert sampled != transcripts(policy)  # sampling at T = 1 differs from greedy play on these starts
    policy.evaluating = False
    assert [[t.text for t in trajectory.turns] for trajectory in evaluate(ENV_ID, policy, EPISODES, seed=SEED, env_kwargs={"max_agent_turns": 3})] == sampled


def test_held_out_evaluation_marks_the_policy_evaluated_and_restores_it(monkeypatch):
    import trainers.sead.train as sead_train
    from trainers.sead.config import build_config

    class Flags:
        greedy, evaluating = False, False

    seen = []
    monkeypatch.setattr(sead_train, "evaluate", lambda *args, **kwargs: seen.append((policy.greedy, policy.evaluating)) or [])
    policy = Flags()
    config = build_config("cpu-smollm2", eval_episodes=2)
    sead_train.held_out_trajectories(config, policy, "sampled", greedy=False)
    sead_train.held_out_trajectories(config, policy, "greedy")
    assert seen == [(False, True), (True, True)] and (policy.greedy, policy.evaluating) == (False, False)
