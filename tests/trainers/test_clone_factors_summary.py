"""benchmarks/sead_clone_factors.py summary: the row of each eval, counted by hand on a made-up folder."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from sead_clone_factors import summary_table  # noqa: E402


def fit_file(folder: Path, name: str, checkpoint: str, cr: float) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    per_turn, counts = [0.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.25, 1.0], [0, 10, 10, 10, 10, 10, 10, 10, 10, 4, 1]
    fit = {
        "checkpoint": checkpoint, "agreement": 0.625, "utterance_agreement": 0.75, "agreement_per_turn": per_turn, "turns_per_turn": counts,
        "train_agreement": 0.875, "audit": {"turn:near_repeat": 0.0625},
    }
    (folder / f"{name}_fit.json").write_text(json.dumps(fit))
    (folder / f"{name}.json").write_text(json.dumps({"headline": {name: {"cr": {"value": cr, "low": cr - 0.125, "high": cr + 0.25}}}}))
    return folder / f"{name}_fit.json"


def test_summary_pools_late_turns_by_count_and_shows_the_on_policy_agreement_of_a_dagger_checkpoint_only(tmp_path):
    run = tmp_path / "run"
    clone = fit_file(run, "clone", "/x/cont/model", 0.5)
    dagger = fit_file(run, "after_dagger", "/x/dag/checkpoints/sft_dagger_0", 0.375)
    stages = [{"stage": "sft"}, {"stage": "dagger_0", "on_policy_agreement": 0.4375, "on_policy_turns": 16}]
    (run / "agreement.json").write_text(json.dumps({"stages": stages}))
    rows = summary_table([clone, dagger]).splitlines()[2:]
    # turns 8+: (0.5 * 10 + 0.25 * 4 + 1.0 * 1) / 15 = 7 / 15
    assert rows[0] == "| run/clone | 0.625 | 0.750 | 0.467 | 0.875 |  | 0.062 | 0.500 [0.375, 0.750] |"
    assert rows[1] == "| run/after_dagger | 0.625 | 0.750 | 0.467 | 0.875 | 0.438 (16 turns) | 0.062 | 0.375 [0.250, 0.625] |"


def test_summary_shows_a_models_own_on_policy_agreement_and_leaves_near_repeats_blank_for_a_fit_without_dialogues(tmp_path):
    run = tmp_path / "arm" / "eval1200"  # an eval on 1,200 starts: the run folder above names the row
    played = fit_file(run, "more", "/x/more/checkpoints/sft", 0.5)
    fit = json.loads(played.read_text())
    played.write_text(json.dumps({**fit, "on_policy_agreement": 0.6875, "on_policy_turns": 32, "on_policy_starts": "held-out"}))
    clone = fit_file(run, "clone", "/x/cont/model", 0.5)
    fit = json.loads(clone.read_text())
    del fit["audit"]
    clone.write_text(json.dumps({**fit, "on_policy_agreement": 0.4375, "on_policy_turns": 16, "on_policy_starts": "round's training starts"}))
    rows = summary_table([played, clone]).splitlines()[2:]
    assert rows[0] == "| arm/more | 0.625 | 0.750 | 0.467 | 0.875 | 0.688 (32 turns, held-out) | 0.062 | 0.500 [0.375, 0.750] |"
    assert rows[1] == "| arm/clone | 0.625 | 0.750 | 0.467 | 0.875 | 0.438 (16 turns, round's training starts) |  | 0.500 [0.375, 0.750] |"
