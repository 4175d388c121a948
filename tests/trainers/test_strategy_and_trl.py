import os

import numpy as np
import pytest

from dialogue_gym.errors import ConfigError
from dialogue_gym.scenarios.sead.parsing import parse_agent_output
from trainers.grpo.strategy import FEATURES, MOVES, StrategyPolicy, features


def test_strategy_policy_acts_in_sead_format_and_learns_from_advantages(tmp_path):
    policy = StrategyPolicy(learning_rate=1.0)
    memory = policy.start({}, seed=0)
    observation = {"turn": 0, "messages": [{"role": "user", "content": "(call)"}]}
    move = parse_agent_output(policy.act(observation, memory))
    assert move.problem is None and move.estimate is not None
    active, choice = memory["steps"][0]
    before = policy.probabilities(active)[choice]
    policy.update([policy.record(memory)], [1.0])
    assert policy.probabilities(active)[choice] > before
    policy.save(tmp_path)
    assert np.array_equal(StrategyPolicy.load(tmp_path).weights, policy.weights)


def test_strategy_features_read_only_what_the_agent_sees():
    observation = {"turn": 3, "messages": [{"role": "user", "content": "Ugh. Are there any hidden fees?"}]}
    names = {FEATURES[i] for i in features(observation, {})}
    assert {"bias", "middle", "signal:irritated", "cue:cost", "guided_0"} <= names
    with pytest.raises(ConfigError, match="weights must have shape"):
        StrategyPolicy(weights=np.zeros((2, len(MOVES))))


def test_trl_grpo_trainer_runs_two_steps_with_the_sead_rollout(tiny_model_dir, tmp_path):
    pytest.importorskip("trl")
    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from dialogue_gym.rewards.sead import outcome_reward
    from trainers.sead.trl_rollout import call_prompt, make_rollout_func

    rollout = make_rollout_func(max_agent_turns=2, max_new_tokens=8)
    seen = []

    def spy(prompts, trainer):
        output = rollout(prompts, trainer)
        seen.append(output)
        return output

    args = GRPOConfig(
        output_dir=str(tmp_path), per_device_train_batch_size=4, num_generations=2, max_steps=2, max_completion_length=64,
        report_to=[], use_cpu=True, learning_rate=1e-4, save_strategy="no", logging_steps=1,
    )
    trainer = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(str(tiny_model_dir)), reward_funcs=[outcome_reward], args=args,
        train_dataset=Dataset.from_list([{"prompt": call_prompt(i)} for i in range(8)]),
        processing_class=AutoTokenizer.from_pretrained(str(tiny_model_dir)), rollout_func=spy,
    )
    trainer.train()
    assert trainer.state.global_step == 2
    output = seen[0]
    assert len(output["completion_ids"]) == 4 and set(output["outcome"]) <= {"success", "hangup", "timeout", "invalid", "truncated"}
    for ids, mask, logprobs in zip(output["completion_ids"], output["env_mask"], output["logprobs"]):
        assert len(ids) == len(mask) == len(logprobs) and mask[0] == 1
        assert all(lp == 0.0 for lp, m in zip(logprobs, mask) if m == 0)
    assert any(0 in mask for mask in output["env_mask"])  # user tokens are in the sequence, masked out
