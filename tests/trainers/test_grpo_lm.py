"""Token accounting of the causal-LM GRPO core on a tiny model: the loss sees learner tokens only."""

import pytest

torch = pytest.importorskip("torch")

from trainers.grpo.lm import (  # noqa: E402
    CausalLMPolicy,
    GRPOConfig,
    TurnSample,
    build_batch,
    grpo_loss,
    token_logprobs,
)


def test_build_batch_marks_exactly_the_completion_tokens():
    samples = [TurnSample([5, 6, 7], [8, 9], [-1.0, -2.0], [0.5, 0.5]), TurnSample([5], [4, 3, 2], [-1, -1, -1], [1, 1, 1])]
    input_ids, attention, mask, old, advantages = build_batch(samples, pad_id=0)
    assert input_ids.tolist() == [[5, 6, 7, 8, 9], [5, 4, 3, 2, 0]]
    assert attention.tolist() == [[1, 1, 1, 1, 1], [1, 1, 1, 1, 0]]
    # position i predicts token i + 1: the completion tokens 8, 9 are predicted at positions 2, 3
    assert mask.tolist() == [[0, 0, 1, 1, 0], [1, 1, 1, 0, 0]]
    assert old[0].tolist() == [0, 0, -1, -2, 0] and advantages[1].tolist() == [1, 1, 1, 0, 0]


def test_mismatched_sample_lengths_are_named():
    from dialogue_gym.errors import ConfigError

    with pytest.raises(ConfigError, match=r"completion_ids \(2\), old_logprobs \(1\)"):
        build_batch([TurnSample([1], [2, 3], [-1.0], [1.0, 1.0])], 0)


def test_loss_depends_on_learner_tokens_only(tiny_model_dir):
    policy = CausalLMPolicy(str(tiny_model_dir), GRPOConfig(kl_coef=0.01, learning_rate=1e-3, temperature=1.0))
    sample = TurnSample([3, 4, 5, 6], [7, 8, 9], [-5.0, -5.0, -5.0], [1.0, 1.0, 1.0])
    input_ids, attention, mask, old, advantages = build_batch([sample], policy._pad)
    new = token_logprobs(policy.model, input_ids, attention, 1.0)
    reference = token_logprobs(policy.reference, input_ids, attention, 1.0)
    base, _ = grpo_loss(new, old, reference, advantages, mask, 0.2, 0.01)
    prompt_only = old.clone()
    prompt_only[0, 0] = 3.0  # a prompt position: outside the mask
    assert grpo_loss(new, prompt_only, reference, advantages, mask, 0.2, 0.01)[0] == base
    learner = old.clone()
    learner[0, 3] = -0.1  # a completion position
    assert grpo_loss(new, learner, reference, advantages, mask, 0.2, 0.01)[0] != base
    new.sum().backward()  # gradients flow into the policy, not the frozen reference
    assert all(p.grad is None for p in policy.reference.parameters())


def test_update_moves_the_policy_towards_advantaged_tokens(tiny_model_dir):
    policy = CausalLMPolicy(str(tiny_model_dir), GRPOConfig(kl_coef=0.0, learning_rate=5e-3, temperature=1.0))
    prompt, completion = [3, 4, 5], [7, 8]
    input_ids = torch.tensor([prompt + completion])
    attention = torch.ones_like(input_ids)
    before = token_logprobs(policy.model, input_ids, attention, 1.0)[0, 2:4].detach()
    sample = TurnSample(prompt, completion, before.tolist(), [1.0, 1.0])
    metrics = policy.step([sample])
    after = token_logprobs(policy.model, input_ids, attention, 1.0)[0, 2:4].detach()
    assert (after > before).all() and metrics["loss/learner_tokens"] == 2
    assert abs(metrics["loss/ratio_mean"] - 1.0) < 1e-4  # old logprobs were exact: ratio starts at 1


def test_generation_records_exact_tokens_for_training(tiny_model_dir):
    policy = CausalLMPolicy(str(tiny_model_dir), GRPOConfig(max_new_tokens=6, temperature=1.0))
    memory = policy.start({}, seed=3)
    [text] = policy.act_batch([{"messages": [{"role": "user", "content": "hello"}], "turn": 0}], [{}], [memory])
    turn = policy.record(memory)["turns"][0]
    assert len(turn["completion_ids"]) == len(turn["logprobs"]) <= 6 and turn["prompt_ids"]
    assert policy.tokenizer.decode(turn["completion_ids"], skip_special_tokens=True) == text
