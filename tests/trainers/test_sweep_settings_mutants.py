"""What each sweep setting's run is (issue 43 item 6: trainers/rlada/sweep.py, trainers/tracer/sweep.py):
the config a (setting, seed) job trains and the folder it lives in, without training."""

from __future__ import annotations

from pathlib import Path

from trainers.rlada import sweep as rlada_sweep
from trainers.tracer import sweep as tracer_sweep


def test_rlada_no_early_stop_is_the_overridden_cap_for_the_minimum_too():
    config = rlada_sweep.config_of("no-early-stop, 50:50", 2, "out", {"max_matches": 5})
    assert (config.min_matches, config.max_matches, config.failure_fraction, config.seed, config.plots) == (5, 5, 0.5, 2, False)
    assert config.run_dir == str(Path("out") / "no-early-stop-5050-seed2")  # no ':' or ', ' in a folder name


def test_rlada_the_papers_setting_keeps_the_default_stopping_rule():
    config = rlada_sweep.config_of(rlada_sweep.PAPER_SETTING, 0, "out", {})
    assert (config.min_matches, config.max_matches, config.failure_fraction, config.seed) == (3, 8, 0.7, 0)
    assert config.run_dir == str(Path("out") / "stop-rule-7030-seed0")
    # an override of the minimum stands where the rule stops early, and is replaced by the cap where it does not
    assert rlada_sweep.config_of(rlada_sweep.PAPER_SETTING, 0, "out", {"min_matches": 4}).min_matches == 4
    assert rlada_sweep.config_of("no-early-stop, 70:30", 0, "out", {"min_matches": 4}).min_matches == 8


def test_tracer_settings_set_l_adv_and_the_seed_of_each_run():
    config = tracer_sweep.config_of("l_adv=0.2", 1, "out", {"iterations": 3})
    assert (config.l_adv, config.seed, config.iterations, config.plots) == (0.2, 1, 3, False)
    assert config.run_dir == str(Path("out") / "l_adv=0.2-seed1")
    assert tracer_sweep.config_of("off", 4, "out", {}).l_adv == 0.0 and tracer_sweep.config_of("off", 4, "out", {}).seed == 4
