"""The SEAD ablation's released row and hard-weighted held-out evaluation (trainers/sead/ablate.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainers.common import RunFolderError
from trainers.common.sweep import resumes
from trainers.sead import ablate


def test_weighted_cr_weights_every_episode_by_its_state():
    # (0.5 * 1 + 1.0 * 0 + 0.0 * 2) / (0.5 * 2 + 1.0 * 2 + 0.0 * 2) = 0.5 / 3
    assert ablate.weighted_cr([1, 0, 2], [2, 2, 2], [0.5, 1.0, 0.0]) == pytest.approx(1 / 6)
    assert ablate.weighted_cr([1, 1], [1, 1], [0.0, 0.0]) != ablate.weighted_cr([1, 1], [1, 1], [0.0, 0.0])  # NaN: nothing weighs


def test_welch_interval_and_the_ordering_verdicts_by_hand():
    # a = [1, 2, 3], b = [0, 0, 0]: var(a)/3 = 1/3, dof 2, half = t(0.975, 2) * sqrt(1/3) = 4.302653 * 0.577350
    low, high = ablate.welch_interval([1.0, 2.0, 3.0], [0.0, 0.0, 0.0])
    assert (low, high) == pytest.approx((2 - 2.484138, 2 + 2.484138), abs=1e-5)
    assert ablate.ordering_verdict([1.0, 2.0, 3.0], [0.0, 0.0, 0.0]) == "holds in the mean only"
    # equal variances 0.01/3 each: dof 4, half = t(0.975, 4) * sqrt(0.02/3) = 2.776445 * 0.081650
    assert ablate.welch_interval([2.0, 2.1, 1.9], [1.0, 1.1, 0.9]) == pytest.approx((1 - 0.226694, 1 + 0.226694), abs=1e-5)
    assert ablate.ordering_verdict([2.0, 2.1, 1.9], [1.0, 1.1, 0.9]) == "holds"
    assert ablate.ordering_verdict([1.0, 1.1, 0.9], [2.0, 2.1, 1.9]) == "does not hold"


@pytest.mark.parametrize("iterations, n_max", [(0, 200), (80, 200), (81, 300), (150, 400)])
def test_the_released_row_raises_n_max_only_when_its_24_states_cannot_hold_the_run(iterations, n_max):
    assert ablate.released_n_max(iterations) == n_max  # 24 states x 200 = 4,800 dialogues = 80 iterations of 60


def test_an_unknown_mode_is_one_line_and_exit_2(tmp_path, capsys):
    assert ablate.main(["--modes", "released", "bogus", "--out", str(tmp_path / "out")]) == 2
    assert "--modes bogus: not an ablation curriculum; use some of full, released, uniform, unstructured" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_released_row_reports_both_held_out_evaluations(tmp_path, capsys):
    argv = ["--modes", "released", "--seeds", "2", "--iterations", "2", "--eval-episodes", "120", "--out", str(tmp_path), "--workers", "1"]
    assert ablate.main(argv) == 0
    printed = capsys.readouterr().out
    assert "no separate number" in printed and not any(line.startswith(("full", "uniform ")) for line in printed.splitlines())
    summary = json.loads((tmp_path / "ablation.json").read_text())
    row = summary["released"]
    assert len(row["per_seed"]) == 2 and len(row["hard"]["per_seed"]) == 2 and row["n_max"] == 200 and row["paper"] is None
    by_state = json.loads((tmp_path / "released-seed0" / "state" / "eval_states.json").read_text())
    assert by_state["episodes"] == [1] * 120, "120 stratified held-out starts: one per initial state"
    assert sum(by_state["successes"]) / 120 == row["per_seed"][0]
    weights = json.loads((tmp_path / "hard_weights.json").read_text())
    assert weights["agent"] == "adaptive" and weights["episodes"] == 3600 and weights["seed"] == 110_000
    assert [1 - rate for rate in weights["cr_adaptive"]] == weights["weights"] and len(weights["weights"]) == 120
    expected = ablate.weighted_cr(by_state["successes"], by_state["episodes"], weights["weights"])
    assert row["hard"]["per_seed"][0] == pytest.approx(expected)
    assert ablate.main(argv) == 0, "a finished ablation is reused, not retrained"


def test_the_joint_row_is_the_papers_config_1_the_unstructured_curriculum_with_the_owner_trained(tmp_path):
    # Paper 000, Table 3: Config 1 is "w/o MA + w/o PS + Train URM", Config 2 the same with the owner fixed.
    joint, unstructured = (ablate._config(mode, 3, 150, 1200, str(tmp_path)) for mode in ("joint", "unstructured"))
    assert (joint.curriculum, joint.user_training, joint.run_dir) == ("unstructured", "joint", str(tmp_path / "joint-seed3"))
    changed = {k: v for k, v in joint.to_dict().items() if v != unstructured.to_dict()[k]}
    assert changed == {"user_training": "joint", "run_dir": str(tmp_path / "joint-seed3")}
    assert unstructured.user_training == "fixed"


def test_a_run_saved_before_a_config_field_existed_counts_at_its_default(tmp_path):
    full, joint = (ablate._config(mode, 0, 150, 1200, str(tmp_path)) for mode in ("full", "joint"))

    def saved_as(config, **changed):
        folder = tmp_path / Path(config.run_dir).name
        folder.mkdir(exist_ok=True)
        values = {k: v for k, v in config.to_dict().items() if k != "user_training"}  # as before the field existed
        (folder / "config.json").write_text(json.dumps({**values, **changed}))

    saved_as(full)
    assert resumes(full)
    saved_as(full, iterations=149)
    with pytest.raises(RunFolderError, match=r"\(iterations 149 there, 150 now\)"):
        resumes(full)
    saved_as(joint)  # the absent field reads as its default, fixed: not this joint run
    with pytest.raises(RunFolderError, match=r"\(user_training 'fixed' there, 'joint' now\)"):
        resumes(joint)


def test_training_summary_by_hand():
    rows = [{"episode/cr": 0.1 * i, **({"user/hang_up_share": 1.0 if i >= 15 else 0.0} if i % 2 else {})} for i in range(20)]
    summary = ablate.training_summary(rows)
    # first 10: cr 0.0 .. 0.9, mean 0.45; last 10: 1.0 .. 1.9, mean 1.45; hang-up share recorded on the odd
    # iterations 11, 13, 15, 17, 19 of the last 10: 0, 0, 1, 1, 1
    assert summary == pytest.approx({"train_cr_first": 0.45, "train_cr_last": 1.45, "user/hang_up_share": 0.6})
    assert "user/accept_share" not in summary


def test_the_joint_row_reports_the_owners_collapse(tmp_path, capsys):
    argv = ["--modes", "joint", "full", "--seeds", "2", "--iterations", "2", "--eval-episodes", "24", "--out", str(tmp_path), "--workers", "1"]
    assert ablate.main(argv) == 0
    printed = capsys.readouterr().out
    assert "trained owner, calls it ended itself in the last 10 iterations: hang-up" in printed
    assert "paper order full > joint (uniform)" in printed
    summary = json.loads((tmp_path / "ablation.json").read_text())
    assert summary["joint"]["paper"] == 35.2 and len(summary["joint"]["per_seed"]) == 2
    assert set(summary["joint"]["training"]) == {"train_cr_first", "train_cr_last", *ablate.COLLAPSE_METRICS}
    assert set(summary["full"]["training"]) == {"train_cr_first", "train_cr_last"}
    metrics = [json.loads(line) for line in (tmp_path / "joint-seed1" / "metrics.jsonl").read_text().splitlines()]
    assert summary["joint"]["training"]["user/hang_up_share"]["per_seed"][1] == pytest.approx(sum(r["user/hang_up_share"] for r in metrics) / 2)
