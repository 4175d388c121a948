"""Greedy play of :class:`CausalLMPolicy` runs on a prefix-cached backend (what nothing trains on), and
plays the same dialogues as the uncached backend: before training, and after a step changed the weights."""

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from dialogue_gym.evaluation import evaluate  # noqa: E402
from trainers.grpo.lm import CausalLMPolicy, GRPOConfig  # noqa: E402

ENV_ID, EPISODES, SEED = "SEAD-Outbound-v0", 4, 3


def transcripts(policy) -> list[list[str]]:
    policy.greedy = True
    try:
        played = evaluate(ENV_ID, policy, EPISODES, seed=SEED, env_kwargs={"max_agent_turns": 3})
    finally:
        policy.greedy = False
    return [[turn.text for turn in trajectory.turns] for trajectory in played]


def uncached(policy) -> list[list[str]]:
    """The same play with the greedy backend swapped for the training one (no prefix cache)."""
    cached = policy._greedy_backend
    policy._greedy_backend = policy.backend
    try:
        return transcripts(policy)
    finally:
        policy._greedy_backend = cached


def test_greedy_play_uses_the_prefix_cache_and_sampling_does_not(tiny_model_dir, monkeypatch):
    policy = CausalLMPolicy(str(tiny_model_dir), GRPOConfig(max_new_tokens=8, temperature=1.0, kl_coef=0.0))
    calls = []
    for name, backend in (("greedy", policy.greedy_backend()), ("training", policy.backend)):
        monkeypatch.setattr(backend, "generate", lambda requests, name=name, real=backend.generate: calls.append(name) or real(requests))
    transcripts(policy)
    assert set(calls) == {"greedy"}
    assert policy.greedy_backend().prefix_cache and not policy.backend.prefix_cache
    assert policy.greedy_backend().model is policy.model
    assert policy.greedy_backend().prefix_cache_stats()["cached_tokens"] > 0
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
