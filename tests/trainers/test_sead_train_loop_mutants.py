"""SEAD's training loop on tiny runs (issue 43 item 6, trainers/sead/train.py): a run resumed from the
progress record of iteration 0 continues exactly, the untrained policy's held-out evaluation is saved
before the first iteration (and only when asked for), and ``time/seconds`` is each iteration's elapsed
time. Strategy policy, 2-4 dialogues an iteration: about a second each."""

from __future__ import annotations

import json
from types import SimpleNamespace

from dialogue_gym.evaluation import evaluate
from dialogue_gym.metrics import sead as sead_metrics
from trainers.grpo.strategy import StrategyPolicy
from trainers.sead import train as sead_train
from trainers.sead.config import build_config

TINY = {"batch_size": 3, "max_agent_turns": 3, "eval_episodes": 0, "plots": False}


def _records(run) -> dict[tuple[int, int], dict]:
    lines = (run.path / "trajectories.jsonl").read_text().splitlines()
    return {(r["iteration"], r["episode"]): r for r in map(json.loads, lines)}


def _without_time(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "time/seconds"} for row in rows]


def test_a_run_resumed_after_iteration_0_continues_exactly(tmp_path):
    # Iteration 0 is a committed iteration like any other: its progress record (iteration 0) is valid, and
    # the resumed run starts at iteration 1 with the controller and policy iteration 0 left.
    reference = sead_train.train(build_config(**TINY, iterations=2, run_dir=str(tmp_path / "reference")))
    first = sead_train.train(build_config(**TINY, iterations=1, run_dir=str(tmp_path / "resumed")))
    assert first.load_state("progress")["iteration"] == 0
    resumed = sead_train.train(build_config(**TINY, iterations=2, run_dir=str(tmp_path / "resumed")), resume=True)
    assert [row["iteration"] for row in resumed.read_metrics()] == [0, 1]
    assert resumed.load_state("progress")["iteration"] == 1
    assert _without_time(resumed.read_metrics()) == _without_time(reference.read_metrics())
    assert resumed.load_state("progress")["controller"] == reference.load_state("progress")["controller"]
    assert sorted(_records(resumed)) == [(i, e) for i in range(2) for e in range(3)]  # iteration 0 not played again
    assert _records(resumed) == _records(reference)


def test_the_untrained_policy_is_evaluated_before_the_first_iteration(tmp_path):
    config = build_config(**{**TINY, "eval_episodes": 4}, iterations=1, run_dir=str(tmp_path / "run"))
    run = sead_train.train(config)
    before = run.load_state("eval_before")
    # the fresh strategy policy (all weights 0) played greedily on the same 4 held-out starts
    untrained = evaluate("SEAD-Outbound-v0", StrategyPolicy(config.learning_rate, greedy=True), 4, seed=config.eval_seed,
                         env_kwargs={"max_agent_turns": 3})
    assert before["episodes"] == 4 and before["cr"] == sead_metrics.cr(untrained)
    assert (run.path / "results" / "before.json").exists()
    assert run.load_state("eval")["episodes"] == 4  # and after training, on the same starts


def test_no_before_evaluation_when_it_is_switched_off(tmp_path):
    run = sead_train.train(build_config(**{**TINY, "eval_episodes": 4}, iterations=1, before_and_baselines=False, run_dir=str(tmp_path / "run")))
    assert run.load_state("eval_before") is None and run.load_state("eval_baseline") is None
    assert run.load_state("eval")["episodes"] == 4


def test_time_seconds_is_each_iterations_elapsed_time(tmp_path, monkeypatch):
    # A clock read twice an iteration (start, end): 100 -> 102.5, then 200 -> 204.
    readings = iter([100.0, 102.5, 200.0, 204.0])
    monkeypatch.setattr(sead_train, "time", SimpleNamespace(perf_counter=lambda: next(readings)))
    run = sead_train.train(build_config(**TINY, iterations=2, run_dir=str(tmp_path / "run")))
    assert [row["time/seconds"] for row in run.read_metrics()] == [2.5, 4.0]
