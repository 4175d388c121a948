"""TRACER's trainer config checked field by field (issue 43 item 6, trainers/tracer/config.py): each
bounded field accepts its bound and refuses one step past it with its name and value. build_config
only: no training."""

from __future__ import annotations

import pytest

from dialogue_gym.errors import ConfigError
from trainers.tracer.config import build_config

POSITIVE_INTS = ("sessions_per_iteration", "group_size", "rollout_batch", "eval_every", "eval_rollouts", "eval_batch")
AT_LEAST_ZERO_INT = ("iterations", "sft_epochs", "sft_sessions", "heldout_per_group", "eval_sessions", "lora_rank", "threads", "sft_steps", "sft_batch_size")
AT_LEAST_ZERO_FLOAT = ("kl_coef", "gamma")


@pytest.mark.parametrize("name", POSITIVE_INTS)
def test_counts_must_be_positive_ints(name):
    assert getattr(build_config(**{name: 1}), name) == 1
    # worded as SEAD's and RL-ADA's range errors (trainers.common.cli.require_range)
    with pytest.raises(ConfigError, match=rf"^{name} must be >= 1, got 0\.$"):
        build_config(**{name: 0})
    for wrong_kind in (True, 2.0):  # a bool or a float where a count belongs is refused before the range
        with pytest.raises(ConfigError, match=rf"^{name} must be int \(finite if a number\), got {wrong_kind!r} \({type(wrong_kind).__name__}\)\.$"):
            build_config(**{name: wrong_kind})


@pytest.mark.parametrize("name", AT_LEAST_ZERO_INT + AT_LEAST_ZERO_FLOAT)
def test_non_negative_fields_accept_zero_and_refuse_a_negative_value(name):
    zero, bad = (0, -1) if name in AT_LEAST_ZERO_INT else (0.0, -0.5)
    assert getattr(build_config(**{name: zero}), name) == zero
    with pytest.raises(ConfigError, match=rf"^{name} must be >= 0, got {bad}\.$"):
        build_config(**{name: bad})


def test_shares_rates_and_the_token_budget():
    for name in ("l_adv", "clip_eps"):
        assert getattr(build_config(**{name: 0.0}), name) == 0.0 and getattr(build_config(**{name: 1.0}), name) == 1.0
        for bad in (-0.25, 1.25):
            with pytest.raises(ConfigError, match=rf"^{name} must be in \[0(\.0)?, 1(\.0)?\], got {bad}\.$"):
                build_config(**{name: bad})
    for name in ("learning_rate", "sft_learning_rate", "temperature"):
        assert getattr(build_config(**{name: 1e-9}), name) == 1e-9
        with pytest.raises(ConfigError, match=rf"^{name} must be > 0, got 0\.0\.$"):
            build_config(**{name: 0.0})
    assert build_config(max_new_tokens=1).max_new_tokens == 1
    with pytest.raises(ConfigError, match=r"^max_new_tokens must be >= 1, got 0\.$"):
        build_config(max_new_tokens=0)


def test_policy_and_model_and_reward_weights():
    with pytest.raises(ConfigError, match=r"^policy='rules'; use strategy or lm"):
        build_config(policy="rules")
    with pytest.raises(ConfigError, match=r"^policy='lm' needs model=\.\.\."):
        build_config(policy="lm")
    assert build_config(policy="lm", model="tiny").model == "tiny"
    assert build_config(reward_weights=[0.5, 0.25, 0.25]).reward_weights == (0.5, 0.25, 0.25)  # JSON's list read back as the field's tuple


# The presets other than cpu-lm-scratch (which test_preset_reproduction_mutants rebuilds from a saved run)
# checked against the runs the notes report with them. Every preset value, these included, is also pinned
# with its reason in docs/presets.md by test_presets_documented.
SMOLLM2_DOCUMENTED = {  # docs/notes/tracer.md, "SmolLM2 as the simulator, SFT on CPU"
    "policy": "lm", "model": "smollm2",
    "sft_sessions": 40,  # "on 40 reference sessions (one per group)"
    "heldout_per_group": 1,  # "(`heldout_per_group=1`: the last session of every group is never trained on ...)"
    "eval_before": True, "eval_sessions": 20,  # "plays the untuned and the tuned model on 20 held-out sessions"
    "eval_rollouts": 1, "temperature": 1.0,  # "one rollout each, temperature 1.0"
    "max_new_tokens": 64, "eval_batch": 10,  # "64 new tokens a turn, 10 sessions in lockstep"
    "sft_learning_rate": 2e-4,  # "The SFT loss per step (4 sessions a step, cosine from 2e-4)"
    "sft_epochs": 1,  # "Three SFT epochs instead of one (... --sft-epochs 3 ...)"
    "iterations": 0,  # the heading: SFT only, no RL stage
    "max_user_turns": 15,  # "it never converts or leaves and runs all 15 turns"
    "sft_steps": 0,  # one epoch of 40 sessions at 4 a step: "The SFT loss per step ..." lists 10 steps (no step cap)
}


def test_cpu_smollm2_is_the_documented_sft_only_run():
    config = build_config("cpu-smollm2").to_dict()
    assert {name: config[name] for name in SMOLLM2_DOCUMENTED} == SMOLLM2_DOCUMENTED


def test_cpu_tiny_lm_and_gpu_lm_are_the_documented_language_model_runs():
    # docs/notes/tracer.md: "`cpu-tiny-lm` (plumbing on a random tiny model), `gpu-lm` (documented settings for a 7B model)"
    tiny = build_config("cpu-tiny-lm")
    assert (tiny.policy, tiny.model) == ("lm", "tiny")
    gpu = build_config("gpu-lm")
    assert (gpu.policy, gpu.device) == ("lm", "cuda") and "7B" in gpu.model
    # docs/notes/tracer.md: "then RL with G = 8 rollouts per reference"; the field's --help: "lm: AdamW, paper scale ~1e-6"
    assert (gpu.group_size, gpu.learning_rate) == (8, 1e-6)


def test_cpu_strategy_is_the_documented_run():
    # docs/notes/tracer.md: "over 60 iterations"; each evaluation is "the 400 reference sessions x 2 rollouts at fixed
    # evaluation seeds; with the default `heldout_per_group` 0 there is no held-out split" (G, l_adv, gamma and rho:
    # tests/test_spec_constants.py)
    config = build_config("cpu-strategy")
    assert (config.policy, config.iterations, config.eval_sessions, config.eval_rollouts, config.heldout_per_group) == ("strategy", 60, 0, 2, 0)


def test_cpu_lm_scratch_trains_the_documented_300_sft_steps():
    # docs/training.md, "TRACER's user LM and RL-ADA's agent from scratch": "The preset sizes (300 SFT steps)"
    # (the saved small run, rebuilt by test_preset_reproduction_mutants, overrides them)
    assert build_config("cpu-lm-scratch").sft_steps == 300
