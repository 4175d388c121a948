"""SEAD's trainer config checked field by field (issue 43 item 6, trainers/sead/config.py): every
bounded field accepts its bound and refuses one step past it with its name and value, every choice
field refuses an unknown value, and the pairs of fields that only make sense together are refused
apart. build_config only: no training."""

from __future__ import annotations

import pytest

from dialogue_gym.errors import ConfigError
from trainers.sead.config import PRESETS, build_config

AT_LEAST_ONE = ("batch_size", "n_max", "max_agent_turns", "max_new_tokens", "sft_episodes", "sft_batch_size", "sft_accumulation", "group_size",
                "dagger_episodes", "dagger_steps", "scratch_layers")
AT_LEAST_ZERO = ("iterations", "eval_episodes", "lora_rank", "kl_coef", "entropy_coef", "sft_steps", "dagger_rounds", "threads",
                 "dagger_learning_rate")
# lm-only fields are checked on the lm preset (the strategy presets refuse sft_steps > 0)
LM = "cpu-lm-scratch"


@pytest.mark.parametrize("name", AT_LEAST_ONE)
def test_counts_of_at_least_one_accept_one_and_refuse_zero(name):
    assert getattr(build_config(LM, **{name: 1}), name) == 1
    with pytest.raises(ConfigError, match=rf"^{name} must be >= 1, got 0\.$"):
        build_config(LM, **{name: 0})


@pytest.mark.parametrize("name", AT_LEAST_ZERO)
def test_non_negative_fields_accept_zero_and_refuse_a_negative_value(name):
    bad = -1 if name in {"iterations", "eval_episodes", "lora_rank", "sft_steps", "dagger_rounds", "threads"} else -0.5
    if name != "sft_steps":  # the scratch model needs SFT steps (its own check, below)
        assert getattr(build_config(LM, **{name: 0}), name) == 0
    with pytest.raises(ConfigError, match=rf"^{name} must be >= 0, got {bad}\.$"):
        build_config(LM, **{name: bad})


def test_clip_and_dagger_share_ranges_and_positive_rates():
    assert build_config(clip_eps=0.0).clip_eps == 0.0 and build_config(clip_eps=1.0).clip_eps == 1.0
    for bad in (-0.1, 1.1):
        with pytest.raises(ConfigError, match=rf"^clip_eps must be in \[0, 1\], got {bad}\.$"):
            build_config(clip_eps=bad)
    assert build_config(dagger_share=0.0).dagger_share == 0.0 and build_config(dagger_share=0.99).dagger_share == 0.99
    for bad in (1.0, -0.25):
        with pytest.raises(ConfigError, match=rf"dagger_share={bad} is not a share .* pass a value in \[0, 1\)"):
            build_config(dagger_share=bad)
    for name in ("learning_rate", "temperature", "sft_learning_rate"):
        assert getattr(build_config(**{name: 1e-9}), name) == 1e-9
        with pytest.raises(ConfigError, match=rf"^{name} must be > 0, got 0\.0\.$"):
            build_config(**{name: 0.0})


@pytest.mark.parametrize(
    "name, bad, words",
    [
        ("policy", "plus", "use strategy, strategy-plus or lm"),
        ("advantage", "mean", "use batch_mean or group_standardized"),
        ("user_training", "adversarial", "use fixed or joint"),
        ("smoothing", "gamma", "use None or 'beta'"),
        ("rl_mode", "grpo", "use one of 'dialogue', 'decision_point'"),
        ("sft_expert", "oracle", "use one of 'adaptive', 'sop'"),
        ("continuation", "oracle", "use one of 'adaptive', 'sop', 'lm'"),
        ("prefix", "oracle", "use one of 'expert', 'lm'"),
    ],
)
def test_a_choice_field_refuses_a_value_outside_its_choices(name, bad, words):
    with pytest.raises(ConfigError, match=rf"^{name}={bad!r}; {words}"):
        build_config(LM, **{name: bad})


def test_every_accepted_choice_builds():
    for name, values in {"curriculum": ("full", "uniform", "unstructured", "released"), "smoothing": (None, "beta"),
                         "advantage": ("batch_mean", "group_standardized"), "user_training": ("fixed", "joint")}.items():
        assert [getattr(build_config(**{name: value}), name) for value in values] == list(values)
    for name, values in {"rl_mode": ("dialogue", "decision_point"), "sft_expert": ("adaptive", "sop"),
                         "continuation": ("adaptive", "sop", "lm"), "prefix": ("expert", "lm")}.items():
        assert [getattr(build_config(LM, **{name: value}), name) for value in values] == list(values)


def test_fields_that_only_make_sense_together():
    with pytest.raises(ConfigError, match=r"^policy='lm' needs model=\.\.\."):
        build_config(policy="lm")
    assert build_config(policy="lm", model="tiny").model == "tiny"  # a pretrained-shaped model needs no SFT
    with pytest.raises(ConfigError, match=r"^sft_steps=3 and rl_mode='dialogue' train a language model; pass policy=lm"):
        build_config("cpu-strategy-plus", sft_steps=3)
    with pytest.raises(ConfigError, match=r"^sft_steps=0 and rl_mode='decision_point' train a language model"):
        build_config(rl_mode="decision_point")
    with pytest.raises(ConfigError, match=r"^model='scratch' is a random model; pass sft_steps > 0"):
        build_config(LM, sft_steps=0)
    with pytest.raises(ConfigError, match=r"^user_training='joint' trains the scripted owner, got user='llm'"):
        build_config(user_training="joint", user="llm", user_backend={"name": "echo"})
    assert build_config(LM, greedy_copy=True, group_size=2).greedy_copy is True  # the smallest group with a sampled copy


def test_presets_set_what_they_name_and_overrides_win():
    plus = build_config("cpu-strategy-plus")
    assert (plus.policy, plus.iterations, plus.n_max, plus.entropy_coef, plus.preset) == ("strategy-plus", 450, 400, 0.03, "cpu-strategy-plus")
    assert build_config("cpu-strategy-plus", iterations=3).iterations == 3
    assert build_config().preset == "cpu-strategy" and PRESETS["cpu-strategy"] == {}
