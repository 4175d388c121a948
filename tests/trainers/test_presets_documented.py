"""Every value of every trainer preset, pinned, and stated with its reason in docs/presets.md (issue 43 item 6:
trainers/*/config.py).

``PINNED`` writes out what each preset sets, and ``DEFAULTS`` every field's default (what a preset leaves alone),
as ``tests/test_spec_constants.py`` writes out the SPEC's constants: a changed preset value fails here until its
pin, and the page's reason for it, change with it.
The page's tables are generated from ``PRESETS`` by ``tools/docs_tables.py``; this file checks that they are
current (so the page states the values the code has) and that every value a preset sets has a reason below its
table."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "presets.md"
sys.path.insert(0, str(ROOT / "tools"))
import docs_tables  # noqa: E402  (tools/ is not a package)

PINNED = {
    "sead": {
        "cpu-strategy": {},
        "cpu-strategy-plus": {"policy": "strategy-plus", "iterations": 450, "n_max": 400, "entropy_coef": 0.03},
        "cpu-strategy-plus-long": {"policy": "strategy-plus", "iterations": 900, "n_max": 800, "entropy_coef": 0.03, "learning_rate": 1.0},
        "cpu-tiny-lm": {
            "policy": "lm", "model": "tiny", "iterations": 2, "batch_size": 4, "max_agent_turns": 3, "max_new_tokens": 16,
            "learning_rate": 1e-4, "eval_episodes": 8, "temperature": 1.0,
        },
        "cpu-lm-scratch": {
            "policy": "lm", "model": "scratch", "scratch_layers": 4, "sft_steps": 800, "sft_learning_rate": 5e-3, "rl_mode": "decision_point",
            "prefix": "lm", "iterations": 30, "batch_size": 32, "group_size": 8, "learning_rate": 3e-4, "temperature": 2.0, "max_new_tokens": 24,
            "eval_episodes": 240, "kl_coef": 0.0,
        },
        "cpu-smollm2": {
            "policy": "lm", "model": "smollm2", "lora_rank": 16, "lora_layers": 10, "sft_steps": 96, "sft_batch_size": 1, "sft_accumulation": 4,
            "sft_episodes": 384, "sft_learning_rate": 1e-3,
            "rl_mode": "decision_point", "prefix": "lm", "iterations": 4, "batch_size": 4, "group_size": 4, "learning_rate": 1e-4, "temperature": 1.0,
            "max_new_tokens": 96, "eval_episodes": 40, "kl_coef": 0.0,
        },
        "gpu-lm": {
            "policy": "lm", "model": "smollm2", "device": "cuda", "sft_steps": 300, "sft_batch_size": 32, "sft_learning_rate": 5e-5,
            "rl_mode": "decision_point", "iterations": 20, "batch_size": 60, "group_size": 8, "learning_rate": 1e-6, "temperature": 1.0,
            "max_new_tokens": 96, "eval_episodes": 240,
        },
    },
    "tracer": {
        "cpu-strategy": {},
        "cpu-tiny-lm": {
            "policy": "lm", "model": "tiny", "sft_epochs": 1, "sft_learning_rate": 1e-3, "sft_sessions": 8, "iterations": 2,
            "sessions_per_iteration": 2, "group_size": 2, "learning_rate": 1e-4, "max_user_turns": 3, "max_new_tokens": 24,
            "eval_every": 1, "eval_sessions": 4, "eval_rollouts": 1, "rollout_batch": 8,
        },
        "cpu-smollm2": {
            "policy": "lm", "model": "smollm2", "sft_epochs": 1, "sft_learning_rate": 2e-4, "sft_sessions": 40, "heldout_per_group": 1,
            "iterations": 0, "eval_before": True, "eval_sessions": 20, "eval_rollouts": 1, "eval_batch": 10, "max_new_tokens": 64,
            "temperature": 1.0,
        },
        "cpu-lm-scratch": {
            "policy": "lm", "model": "scratch", "sft_epochs": 1, "sft_steps": 300, "sft_batch_size": 16, "sft_learning_rate": 5e-3,
            "heldout_per_group": 1, "eval_before": True, "eval_rollouts": 2, "eval_batch": 40, "iterations": 10, "sessions_per_iteration": 4,
            "group_size": 4, "learning_rate": 3e-4, "max_new_tokens": 48, "temperature": 1.0, "eval_every": 5, "rollout_batch": 16,
        },
        "gpu-lm": {
            "policy": "lm", "model": "/path/to/Qwen2.5-7B-Instruct", "device": "cuda", "sft_epochs": 2, "sft_learning_rate": 1e-5,
            "iterations": 300, "sessions_per_iteration": 4, "group_size": 8, "learning_rate": 1e-6, "max_new_tokens": 256,
            "eval_every": 25, "eval_rollouts": 1, "rollout_batch": 32,
        },
    },
    "rlada": {
        "cpu-strategy": {},
        "cpu-tiny-lm": {
            "agent_policy": "lm", "agent_model": "tiny", "agent_learning_rate": 1e-4, "agent_max_new_tokens": 24, "sft_learning_rate": 1e-4,
            "episodes_per_scenario": 1, "min_matches": 2, "max_matches": 2, "gym_iterations": 1, "gym_starts": 2, "group_size": 2,
            "sft_episodes": 4, "sft_epochs": 1, "warmup_agent_iterations": 1, "warmup_customer_iterations": 1, "warmup_batch": 4,
            "max_agent_turns": 3, "heldout_repeats": 1, "temperature": 1.0,
        },
        "cpu-lm-scratch": {
            "agent_policy": "lm", "agent_model": "scratch", "agent_learning_rate": 1e-3, "agent_kl_coef": 0.0, "agent_max_new_tokens": 32,
            "copy_steps": 2000, "sft_episodes": 1000, "sft_epochs": 300, "warmup_agent_iterations": 3, "warmup_customer_iterations": 2,
            "warmup_batch": 16, "group_size": 4, "episodes_per_scenario": 2, "min_matches": 2, "max_matches": 2, "gym_iterations": 2, "gym_starts": 4,
            "heldout_repeats": 2, "temperature": 1.0,
        },
        "gpu-lm": {
            "agent_policy": "lm", "agent_model": "/models/Qwen2.5-3B-Instruct", "customer_policy": "lm",
            "customer_model": "/models/Qwen2.5-7B-Instruct", "device": "cuda", "lora_rank": 16, "agent_learning_rate": 5e-6,
            "sft_learning_rate": 5e-6, "customer_learning_rate": 2e-6, "gym_iterations": 20, "gym_starts": 16, "group_size": 4, "sft_episodes": 600,
            "sft_epochs": 60, "warmup_agent_iterations": 10, "warmup_customer_iterations": 10, "warmup_batch": 32, "heldout_repeats": 1,
        },
    },
}

# Every field's default: what `cpu-strategy` (which sets nothing) and every field a preset leaves alone run
# with; each trainer's --help states them.
DEFAULTS = {
    "sead": {
        "run_dir": "", "seed": 0, "iterations": 150, "batch_size": 60, "curriculum": "full", "n_max": 200, "smoothing": None,
        "advantage": "batch_mean", "policy": "strategy", "learning_rate": 2.0, "entropy_coef": 0.0, "model": "", "device": "cpu",
        "threads": 0, "lora_rank": 0, "lora_layers": 0, "kl_coef": 0.001, "clip_eps": 0.2, "temperature": 1.2, "max_new_tokens": 96, "sft_steps": 0,
        "sft_episodes": 2000, "sft_expert": "adaptive", "sft_learning_rate": 0.003, "sft_batch_size": 16, "sft_accumulation": 1, "dagger_rounds": 0,
        "dagger_episodes": 200, "dagger_steps": 200, "dagger_learning_rate": 0.0, "dagger_share": 0.0, "scratch_layers": 2,
        "rl_mode": "dialogue", "group_size": 8, "prefix": "expert", "continuation": "adaptive", "pool_same_turn": False,
        "greedy_copy": False, "over_greedy": False, "user": "scripted", "user_training": "fixed", "user_backend": None,
        "user_sampling": {"temperature": 0.9, "top_p": 0.95}, "max_agent_turns": 15, "eval_episodes": 1200, "eval_seed": 10000,
        "before_and_baselines": True, "plots": True,
    },
    "tracer": {
        "run_dir": "", "seed": 0, "policy": "strategy", "sessions_file": None, "sft_epochs": 0, "sft_learning_rate": 0.05,
        "sft_sessions": 0, "sft_steps": 0, "sft_batch_size": 0, "heldout_per_group": 0, "eval_before": False, "iterations": 60,
        "sessions_per_iteration": 16, "group_size": 8, "learning_rate": 0.05, "l_adv": 0.2, "gamma": 0.5, "rho": 0.4,
        "reward_weights": (0.2, 0.5, 0.3), "alpha": 1.0, "beta": 1.0, "eta_flat": 0.2, "max_user_turns": 15, "rollout_batch": 64,
        "assistant": "sop", "assistant_backend": None, "model": "", "device": "cpu", "threads": 0, "lora_rank": 0, "kl_coef": 0.001,
        "clip_eps": 0.2, "temperature": 1.0, "max_new_tokens": 128, "eval_every": 5, "eval_sessions": 0, "eval_rollouts": 2,
        "eval_batch": 32, "eval_seed": 10000, "plots": True,
    },
    "rlada": {
        "run_dir": "", "seed": 0, "episodes_per_scenario": 18, "min_matches": 3, "max_matches": 8, "win_threshold": 0.6, "patience": 2,
        "stability_epsilon": 0.05, "weaker_threshold": 0.5, "gym_iterations": 12, "gym_starts": 16, "group_size": 4,
        "failure_fraction": 0.7, "recent_matches": 1, "advantage": "batch_mean", "copy_steps": 0, "sft_episodes": 400, "sft_epochs": 3,
        "sft_learning_rate": 5e-3, "sft_batch_size": 16, "warmup_agent_iterations": 10, "warmup_customer_iterations": 6, "warmup_batch": 64, "agent_policy": "strategy",
        "customer_policy": "strategy", "agent_learning_rate": 3.0, "customer_learning_rate": 3.0, "agent_model": "", "customer_model": "",
        "device": "cpu", "threads": 0, "lora_rank": 0, "agent_kl_coef": 0.01, "customer_kl_coef": 0.05, "clip_eps": 0.2, "temperature": 1.0,
        "agent_max_new_tokens": 160, "customer_max_new_tokens": 64, "max_agent_turns": 12, "heldout_repeats": 4, "eval_seed": 10000,
        "plots": True,
    },
}
SEAD_SCRATCH_MODEL = {"vocab_size": 2048, "hidden_size": 128, "num_attention_heads": 4, "whole_sentences": True}
"""The shape of every preset's ``model="scratch"`` (SEAD's, which TRACER's and RL-ADA's scratch models reuse): docs/training.md's
measured clones are of this shape, with a whole-sentence tokenizer."""

TRAINERS = tuple(PINNED)


def typed(values: dict) -> dict:
    """Each value with its type's name: ``1`` and ``True``, or ``1`` and ``1.0``, compare equal in Python but
    build different configs (a bool where a count belongs, an int where a rate belongs)."""
    return {name: (type(value).__name__, value) for name, value in values.items()}


def presets_of(trainer: str) -> dict:
    return importlib.import_module(f"trainers.{trainer}.config").PRESETS


@pytest.mark.parametrize("trainer", TRAINERS)
def test_every_preset_sets_exactly_its_pinned_values(trainer):
    presets = presets_of(trainer)
    assert list(presets) == list(PINNED[trainer])
    for name, values in presets.items():
        pinned = PINNED[trainer][name]
        changed = {field: (values.get(field), pinned.get(field)) for field in values.keys() | pinned.keys() if typed(values).get(field) != typed(pinned).get(field)}
        assert not changed, (
            f"trainers/{trainer}/config.py preset {name!r}: (now, pinned) {changed}; a changed preset needs its pin here and its reason "
            "in docs/presets.md changed with it (then `python tools/docs_tables.py`)"
        )


@pytest.mark.parametrize("trainer", TRAINERS)
def test_every_preset_builds_its_config_with_the_pinned_values(trainer):
    build_config = importlib.import_module(f"trainers.{trainer}.config").build_config
    for name, values in PINNED[trainer].items():
        config = build_config(name)
        assert config.preset == name
        assert typed({field: getattr(config, field) for field in values}) == typed(values), name


@pytest.mark.parametrize("trainer", TRAINERS)
def test_every_default_is_pinned(trainer):
    config = importlib.import_module(f"trainers.{trainer}.config").build_config()
    values = config.to_dict()
    assert values.pop("preset") == "cpu-strategy"
    changed = {name: (values.get(name), DEFAULTS[trainer].get(name)) for name in values.keys() | DEFAULTS[trainer].keys() if typed(values).get(name) != typed(DEFAULTS[trainer]).get(name)}
    assert not changed, f"trainers/{trainer}/config.py defaults (now, pinned): {changed}; change the pin with the default, and the docs that report runs of it"


def test_the_scratch_models_shape_is_pinned():
    from trainers.sead.config import SCRATCH_MODEL

    assert typed(SCRATCH_MODEL) == typed(SEAD_SCRATCH_MODEL)


def generated(trainer: str) -> str:
    found = re.findall(rf"<!-- generated: presets {trainer} -->\n(.*?)<!-- end generated -->", PAGE.read_text(encoding="utf-8"), re.S)
    assert len(found) == 1, f"docs/presets.md has {len(found)} presets blocks for {trainer}"
    return found[0]


@pytest.mark.parametrize("trainer", TRAINERS)
def test_the_page_states_the_values_the_presets_have(trainer):
    assert generated(trainer) == docs_tables.presets(trainer), "run `python tools/docs_tables.py` and commit docs/presets.md"


@pytest.mark.parametrize("trainer", TRAINERS)
def test_the_pages_table_shows_each_set_value_in_its_presets_column(trainer):
    # Read back from the page: each cell under a preset's column is its value as --help shows it, or blank.
    header, _, *rows = generated(trainer).strip().splitlines()
    columns = [cell.strip().strip("`") for cell in header.strip("|").split("|")][2:]
    assert columns == list(PINNED[trainer])
    stated = {name: {} for name in columns}
    for row in rows:
        field, _, *cells = (cell.strip() for cell in row.strip("|").split("|"))
        for name, cell in zip(columns, cells):
            if cell:
                stated[name][field.strip("`")] = cell
    from trainers.common.cli import _shown

    assert stated == {name: {field: _shown(value) for field, value in values.items()} for name, values in PINNED[trainer].items()}


def reasons(trainer: str) -> dict[str, set[str]]:
    """For each preset heading (``### `name` ``) in the trainer's section of the page, the fields its bullets
    give a reason for (a bullet opens with the fields it is about, ``- `field`, `field`: why``, the list
    wrapping lines where it is long)."""
    section = next(part for part in PAGE.read_text(encoding="utf-8").split("\n## ") if f"<!-- generated: presets {trainer} -->" in part)
    found = {}
    for heading in re.split(r"\n### ", section)[1:]:
        name = re.match(r"`([\w.-]+)`\n", heading).group(1)
        found[name] = {field for fields in re.findall(r"^- ((?:`\w+`(?:,\s+)?)+):", heading, re.M) for field in re.findall(r"`(\w+)`", fields)}
    return found


@pytest.mark.parametrize("trainer", TRAINERS)
def test_every_value_a_preset_sets_has_its_reason_on_the_page_and_no_reason_is_left_over(trainer):
    presets = presets_of(trainer)
    found = reasons(trainer)
    assert list(found) == list(presets), "docs/presets.md: one `### `preset`` heading per preset, in PRESETS order"
    for name, values in presets.items():
        missing, stale = sorted(set(values) - found[name]), sorted(found[name] - set(values))
        assert not missing and not stale, f"docs/presets.md, {trainer} {name}: no reason for {missing}; reasons for fields it does not set {stale}"


def test_a_presets_block_names_a_known_trainer_and_the_command_that_rewrites_it():
    with pytest.raises(SystemExit, match=r"a presets block names a trainer, one of sead, tracer, rlada; got 'grpo'"):
        docs_tables.render("<!-- generated: presets grpo -->\n<!-- end generated -->")
    assert docs_tables.regenerate("presets", "tracer") == "python tools/docs_tables.py (from trainers/tracer/config.py's PRESETS)"
