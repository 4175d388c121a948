"""The seed sweeps of TRACER's modulation and RL-ADA's stopping rule and gym mix: a tiny setting runs,
a rerun resumes without retraining, a folder with other settings is refused with a typed error, and the
interval is the Student-t one."""

import json
import math

import pytest

from trainers.common import RunDir, RunFolderError
from trainers.common.stats import shown, summary, t_interval
from trainers.rlada import sweep as rlada_sweep
from trainers.sead import ablate
from trainers.tracer import sweep as tracer_sweep

TRACER_TINY = {"iterations": 1, "sessions_per_iteration": 2, "group_size": 2, "eval_sessions": 8, "eval_rollouts": 1}
RLADA_TINY = {
    "episodes_per_scenario": 1, "max_matches": 3, "gym_iterations": 1, "gym_starts": 2, "group_size": 2, "sft_episodes": 20,
    "warmup_agent_iterations": 1, "warmup_customer_iterations": 1, "warmup_batch": 4, "heldout_repeats": 1,
}


def test_t_interval_matches_a_hand_computed_example():
    # [1, 2, 3]: mean 2, sample sd 1, t(0.975, df 2) = 4.302653 (tables) -> half width 4.302653 / sqrt(3) = 2.484138
    low, high = t_interval([1.0, 2.0, 3.0])
    assert low == pytest.approx(2 - 2.484138, abs=1e-6) and high == pytest.approx(2 + 2.484138, abs=1e-6)
    # [0.5, 0.7]: mean 0.6, sd 0.141421, t(0.975, df 1) = 12.706205 -> half width 12.706205 * 0.141421 / sqrt(2) = 1.270620
    assert t_interval([0.5, 0.7]) == pytest.approx((0.6 - 1.270620, 0.6 + 1.270620), abs=1e-6)
    assert all(math.isnan(bound) for bound in t_interval([0.4]))
    assert ablate.stats_summary is summary  # the SEAD ablation reports the same interval


def test_summary_and_its_text():
    entry = summary([1.0, 2.0, 3.0])
    assert entry["mean"] == 2.0 and entry["per_seed"] == [1.0, 2.0, 3.0]
    assert shown(entry) == "2.000 [-0.484, 4.484]"
    assert shown(summary([0.25])) == "0.250 [n/a]"


def _run(module, out, overrides, capsys, seeds=1):
    code = module.main(["--seeds", str(seeds), "--workers", "1", "--out", str(out), "--overrides", json.dumps(overrides)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _run_folders(out):
    return sorted(path for path in out.iterdir() if path.is_dir())


def _records(folders):
    """Every episode and metrics row written in the run folders (a retrained run would add or change some)."""
    return {path: [(path / name).read_bytes() for name in ("trajectories.jsonl", "metrics.jsonl")] for path in folders}


def test_tracer_sweep_runs_resumes_and_refuses_other_settings(tmp_path, capsys):
    out = tmp_path / "sweep"
    code, printed, _ = _run(tracer_sweep, out, TRACER_TINY, capsys)
    assert code == 0
    folders = _run_folders(out)
    assert [path.name for path in folders] == ["l_adv=0.1-seed0", "l_adv=0.2-seed0", "l_adv=0.4-seed0", "off-seed0"]
    assert [RunDir(path).read_config()["l_adv"] for path in folders] == [0.1, 0.2, 0.4, 0.0]
    table = json.loads((out / "sweep.json").read_text())["results"]
    for setting in tracer_sweep.SETTINGS:
        saved = RunDir(out / f"{setting}-seed0").load_state("eval")
        assert {name: table[setting][name]["per_seed"] for name in tracer_sweep.METRICS} == {name: [saved[name]] for name in tracer_sweep.METRICS}
    off, strong = table["off"]["group_dpcr"]["mean"], table["l_adv=0.4"]["group_dpcr"]["mean"]
    assert table["l_adv=0.4"]["minus_off"]["group_dpcr"]["per_seed"] == [pytest.approx(strong - off)]
    assert "Group-dPCR" in printed and "l_adv=0.4" in printed

    written = _records(folders)
    code, again, _ = _run(tracer_sweep, out, TRACER_TINY, capsys)
    assert code == 0 and again == printed
    assert _records(folders) == written  # read back, not retrained
    (out / "off-seed0" / "state" / "eval.json").unlink()  # a run stopped before its final evaluation
    code, again, _ = _run(tracer_sweep, out, TRACER_TINY, capsys)
    assert code == 0 and again == printed and (out / "off-seed0" / "state" / "eval.json").exists()

    code, _, error = _run(tracer_sweep, out, {**TRACER_TINY, "iterations": 2}, capsys)
    assert code == 2
    assert "off-seed0 holds a run with other settings (iterations 1 there, 2 now)" in error and "another --out" in error
    with pytest.raises(RunFolderError, match="iterations 1 there, 2 now"):
        tracer_sweep.resumes(tracer_sweep.config_of("off", 0, str(out), {**TRACER_TINY, "iterations": 2}))


def test_tracer_sweep_refuses_an_override_of_what_it_sweeps(tmp_path, capsys):
    code, _, error = _run(tracer_sweep, tmp_path, {"l_adv": 0.3}, capsys)
    assert code == 2 and "--overrides sets ['l_adv']" in error and not any(tmp_path.iterdir())
    code, _, error = _run(tracer_sweep, tmp_path, {"iterations": 1}, capsys, seeds=0)
    assert code == 2 and "--seeds must be >= 1, got 0" in error


def test_rlada_settings_are_the_stopping_rule_and_the_gym_mix():
    configs = {setting: rlada_sweep.config_of(setting, 0, "out", {}) for setting in rlada_sweep.SETTINGS}
    rules = {setting: (c.min_matches, c.max_matches, c.failure_fraction) for setting, c in configs.items()}
    assert rules == {
        "stop-rule, 70:30": (3, 8, 0.7), "no-early-stop, 70:30": (8, 8, 0.7),
        "stop-rule, 50:50": (3, 8, 0.5), "no-early-stop, 50:50": (8, 8, 0.5),
    }
    assert rlada_sweep.config_of("no-early-stop, 50:50", 0, "out", {"max_matches": 5}).min_matches == 5


def test_rlada_sweep_runs_resumes_and_refuses_other_settings(tmp_path, capsys):
    out = tmp_path / "sweep"
    code, printed, _ = _run(rlada_sweep, out, RLADA_TINY, capsys)
    assert code == 0
    table = json.loads((out / "sweep.json").read_text())["results"]
    for setting in rlada_sweep.SETTINGS:
        run = RunDir(rlada_sweep.config_of(setting, 0, str(out), RLADA_TINY).run_dir)
        assert table[setting]["strict_pass"]["per_seed"] == [run.load_state("heldout_after")["strict_pass"]]
        assert table[setting]["matches"]["per_seed"] == [len(run.load_state("progress")["matches"])]
    assert table["no-early-stop, 50:50"]["matches"]["per_seed"] == [3]
    assert "minus_paper" not in table["stop-rule, 70:30"] and "strict PASS" in printed

    folders = _run_folders(out)
    written = _records(folders)
    code, again, _ = _run(rlada_sweep, out, RLADA_TINY, capsys)
    assert code == 0 and again == printed
    assert _records(folders) == written

    code, _, error = _run(rlada_sweep, out, {**RLADA_TINY, "heldout_repeats": 2}, capsys)
    assert code == 2 and "holds a run with other settings (heldout_repeats 1 there, 2 now)" in error
    code, _, error = _run(rlada_sweep, tmp_path / "other", {"failure_fraction": 0.6}, capsys)
    assert code == 2 and "--overrides sets ['failure_fraction']" in error
