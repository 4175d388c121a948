"""The ``trained`` docs block: a training run saved by ``tools/docs_tables.py --train`` is shown as the
trainer printed it (its own ``summary``), with how the run was made."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import docs_tables  # noqa: E402  (tools/ is not a package)

BLOCK = "<!-- generated: trained training/{name} -->\n<!-- end generated -->"
MADE = {"arguments": ["--preset", "cpu-lm-scratch", "--sft-steps", "20"], "revision": "0123456789abcdef", "finished": "2026-12-06T09:00:00+00:00", "seconds": 1860.0, "cpus": 2, "load": 1.26}


def save(folder: Path, trainer: str, states: dict[str, object]) -> None:
    (folder / "state").mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"trainer": trainer, **MADE}))
    (folder / "metrics.jsonl").write_text("")
    for name, data in states.items():
        (folder / "state" / f"{name}.json").write_text(json.dumps(data))


def test_a_tracer_run_shows_its_paired_changes_in_the_trainers_words_and_how_it_was_made(tmp_path, monkeypatch):
    monkeypatch.setattr(docs_tables, "RESULTS", tmp_path)
    save(tmp_path / "training" / "tracer-small", "tracer", {
        "eval_change_sft": {"intent_dtw": {"before": 12.2, "after": 11.7, "change": -0.5, "change_low": -3.4, "change_high": 1.8}},
        "eval_change_rl": {"intent_dtw": {"before": 11.7, "after": 11.0, "change": -0.7, "change_low": -2.5, "change_high": 0.25}},
    })
    folder = tmp_path / "training" / "tracer-small"
    rows = [{"iteration": 0, "eval/intent_dtw": 12.2, "eval/pcr": 0.5}, {"iteration": 1, "eval/intent_dtw": 11.4, "reward": 0.1}]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    final = {"intent_dtw": 11.0, "pcr": 0.7, "group_dpcr": 0.3}
    (folder / "state" / "eval.json").write_text(json.dumps({**final, "real_pcr": 0.6}))
    baselines = {
        "scripted": {"intent_dtw": 9.5, "pcr": 0.9, "group_dpcr": 0.2}, "terse": {"intent_dtw": 10.5, "pcr": 0.45, "group_dpcr": 0.1},
        "quiet": {"intent_dtw": 13.0, "pcr": 0.1, "group_dpcr": 0.4},
    }
    (folder / "state" / "eval_baselines.json").write_text(json.dumps(baselines))
    block = docs_tables.render(BLOCK.format(name="tracer-small"))
    # Group-dPCR was evaluated at the end only (no start); lower DTW and Group-dPCR are better; PCR is best
    # closest to the real sessions' 0.6 (terse, 0.15 away; scripted is highest, quiet lowest)
    assert block.split("```text\n")[1].split("\n")[:3] == [
        "Group-dPCR: 0.300 (after training); best scripted baseline terse 0.100",
        "intent DTW cost: 12.200 (iteration 0) -> 11.000 (after training); best scripted baseline scripted 9.500",
        "PCR: 0.500 (iteration 0) -> 0.700 (after training); best scripted baseline terse 0.450 (real 0.600)",
    ]
    (folder / "state" / "eval.json").write_text(json.dumps(final))  # no real sessions' PCR: the highest is best
    assert "PCR: 0.500 (iteration 0) -> 0.700 (after training); best scripted baseline scripted 0.900\n" in docs_tables.render(BLOCK.format(name="tracer-small"))
    assert "\nintent_dtw untuned -> SFT: 12.200 -> 11.700, change -0.500 [-3.400, +1.800] (paired over groups)\n" in block
    assert "intent_dtw SFT -> RL: 11.700 -> 11.000, change -0.700 [-2.500, +0.250] (paired over groups)\n```" in block
    assert (
        "Made by `python -m trainers.tracer --preset cpu-lm-scratch --sft-steps 20` (revision 0123456, a clean tree, 2026-12-06, 2 CPUs, "
        "load average 1.3 at the end, 31 min; files in `docs/results/training/tracer-small/`)." in block
    )
    assert docs_tables.regenerate("trained", "training/tracer-small") == (
        "python tools/docs_tables.py --train tracer-small -- tracer --preset cpu-lm-scratch --sft-steps 20"
    )


def test_an_rlada_run_shows_its_matches_and_held_out_change(tmp_path, monkeypatch):
    """Saved without its checkpoints (progress.json still names them)."""
    monkeypatch.setattr(docs_tables, "RESULTS", tmp_path)
    progress = {"step": 7, "next": {"phase": "done"}, "matches": [{"match": 1, "step": 4, "win_rate": 0.25, "safety_pass_rate": 0.5}], "checkpoints": {"agent": "checkpoints/agent_step_0005"}, "versions": {"agent": 2, "customer": 1}, "stop_reason": "max_matches"}
    save(tmp_path / "training" / "rlada-small", "rlada", {
        "progress": progress,
        "heldout_before": {"routing_accuracy": 0.25, "strict_pass": 0.125},
        "heldout_after": {"routing_accuracy": 0.5, "strict_pass": 0.375},
        "heldout_baseline": {"agent": "keyword", "routing_accuracy": 0.75, "strict_pass": 0.625, "strict_pass_per_agent": {"keyword": 0.625, "menu": 0.5}},
        "heldout_change": {"before": 0.125, "after": 0.375, "change": 0.25, "change_low": 0.0, "change_high": 0.5, "episodes": 8},
        "heldout_change_sft": {"before": 0.25, "after": 0.375, "change": 0.125, "change_low": -0.125, "change_high": 0.375, "episodes": 8},
    })
    lines = docs_tables.render(BLOCK.format(name="rlada-small")).split("\n")
    assert lines[2:8] == [
        "match 1: agent win rate 0.250 (safety 0.500)",
        "stopped: max_matches",
        "held-out routing 0.250 -> 0.500, strict PASS 0.125 -> 0.375; best scripted baseline keyword: routing 0.750, strict PASS 0.625",
        "held-out strict PASS after SFT 0.250 -> at the end 0.375: change +0.125 [-0.125, +0.375] (paired over the same 8 episodes, resampling scenarios)",
        "held-out strict PASS after the warm-up 0.125 -> at the end 0.375: change +0.250 [+0.000, +0.500] (paired over the same 8 episodes, resampling scenarios)",
        "```",
    ]
    (tmp_path / "training" / "rlada-small" / "state" / "heldout_after.json").unlink()  # the run stopped before its last held-out evaluation
    assert "held-out routing" not in docs_tables.render(BLOCK.format(name="rlada-small"))


def test_an_rlada_lm_run_shows_its_copy_warm_up_and_its_clone_first(tmp_path, monkeypatch):
    monkeypatch.setattr(docs_tables, "RESULTS", tmp_path)
    progress = {"step": 3, "next": {"phase": "done"}, "matches": [], "checkpoints": {}, "versions": {"agent": 0, "customer": 0}, "stop_reason": None}
    save(tmp_path / "training" / "rlada-lm", "rlada", {
        "progress": progress,
        "copy": {"copy/loss": 0.4, "copy/steps": 2000.0, "copy/heldout_tokens": 0.96875, "copy/heldout_replies": 0.725, "copy/curve": [[1, 9.0]]},
        "heldout_sft": {"routing_accuracy": 0.375, "strict_pass": 0.125},
    })
    lines = docs_tables.render(BLOCK.format(name="rlada-lm")).split("\n")
    assert lines[2:5] == [
        "copy warm-up: 2000 steps; held-out copy lines: reply tokens right 0.969, whole replies right 0.725",
        "held-out after SFT: routing 0.375, strict PASS 0.125",
        "stopped: None",
    ]
    state = tmp_path / "training" / "rlada-lm" / "state"
    (state / "heldout_sft.json").write_text(json.dumps({"routing_accuracy": 0.375, "strict_pass": 0.125, "lookup_first": 0.625}))
    for name, verified in (("heldout_before", 0.5), ("heldout_after", 0.875)):
        (state / f"{name}.json").write_text(json.dumps({"routing_accuracy": 0.25, "strict_pass": 0.0, "lookup_first": verified}))
    lines = docs_tables.render(BLOCK.format(name="rlada-lm")).split("\n")
    assert lines[3] == "held-out after SFT: routing 0.375, strict PASS 0.125, account verified first 0.625"
    assert lines[5] == "held-out routing 0.250 -> 0.250, strict PASS 0.000 -> 0.000, account verified first 0.500 -> 0.875"
    (state / "heldout_before.json").write_text(json.dumps({"routing_accuracy": 0.25, "strict_pass": 0.0}))  # resumed from a run made before it was recorded
    assert docs_tables.render(BLOCK.format(name="rlada-lm")).split("\n")[5] == "held-out routing 0.250 -> 0.250, strict PASS 0.000 -> 0.000"


def test_a_block_without_a_saved_run_and_a_train_call_without_its_trainer_name_the_fix(tmp_path, monkeypatch):
    monkeypatch.setattr(docs_tables, "RESULTS", tmp_path)
    with pytest.raises(SystemExit, match=r"no saved training run docs/results/training/gone/run.json; run `python tools/docs_tables.py --train gone -- TRAINER ARGS`"):
        docs_tables.render(BLOCK.format(name="gone"))
    with pytest.raises(SystemExit, match=r"--train x needs the trainer after --, one of sead, tracer, rlada, then its arguments; got \['--preset'\]"):
        docs_tables.run_training("x", ["--preset", "cpu-lm-scratch"])
    with pytest.raises(SystemExit, match="leave out --run-dir and --resume"):
        docs_tables.run_training("x", ["tracer", "--run-dir", "/tmp/elsewhere"])


def test_a_clean_worktree_is_head_runs_its_own_code_and_is_removed_afterwards():
    import subprocess

    def git(*arguments: str, cwd: Path = ROOT) -> str:
        return subprocess.run(["git", *arguments], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()

    with docs_tables.clean_worktree(("dialogue_gym",)) as (scratch, tree, environment):
        assert git("rev-parse", "HEAD", cwd=tree) == git("rev-parse", "HEAD") and git("status", "--porcelain", cwd=tree) == ""
        assert tree.parent == scratch and environment["PYTHONPATH"] == str(tree)
        assert environment["PYTHONDONTWRITEBYTECODE"] == "1" and Path(environment["NUMBA_CACHE_DIR"]).parent == scratch
    assert not scratch.exists() and str(tree) not in git("worktree", "list")
