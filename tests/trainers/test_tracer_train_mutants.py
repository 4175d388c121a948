"""TRACER's trainer pieces checked against their definitions (issue 43 item 6, trainers/tracer/train.py):
an iteration's episode plan, the sessions a smaller evaluation takes, and when the SFT plot is drawn."""

from __future__ import annotations

import pytest

from dialogue_gym.seeding import mix_seed
from trainers.common import RunDir
from trainers.tracer import train as tracer_train
from trainers.tracer.config import build_config


def test_an_iterations_plan_is_g_rollouts_of_each_drawn_session_each_on_its_own_seed():
    config = build_config(seed=7, sessions_per_iteration=3, group_size=2)
    ids = [f"s{i}" for i in range(10)]
    plan = tracer_train.episode_plan(config, 4, ids)
    sessions = [session for session, _ in plan]
    # G = 2 consecutive rollouts of each of 3 distinct sessions
    assert len(plan) == 6 and sessions[::2] == sessions[1::2] and len(set(sessions)) == 3 and set(sessions) <= set(ids)
    # episode k of the iteration plays seed mix_seed(seed, iteration, k): no two episodes share one
    assert [seed for _, seed in plan] == [mix_seed(7, 4, k) for k in range(6)]
    assert tracer_train.episode_plan(config, 4, ids) == plan  # the same iteration draws the same plan
    assert len(tracer_train.episode_plan(config, 4, ids[:2])) == 4  # fewer sessions than asked: each of them once


def test_a_smaller_evaluation_spreads_over_the_sessions_in_file_order(monkeypatch):
    played = {}

    def evaluate(env_id, policy, episodes, **kwargs):
        played.update(episodes=episodes, sessions=kwargs["env_kwargs"]["sessions"])
        return []

    monkeypatch.setattr(tracer_train, "evaluate", evaluate)
    ids = [f"s{i:02d}" for i in range(40)]
    tracer_train.evaluation_episodes(build_config(eval_sessions=4, eval_rollouts=3), None, ids)
    assert played == {"episodes": 12, "sessions": ["s00", "s10", "s20", "s30"]}  # every 10th of 40, 3 rollouts each
    tracer_train.evaluation_episodes(build_config(eval_sessions=0, eval_rollouts=1), None, ids)
    assert played == {"episodes": 40, "sessions": ids}  # 0: all


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_the_sft_plot_is_drawn_from_the_loss_curve_or_the_paired_change_alone(tmp_path):
    plt = pytest.importorskip("matplotlib.pyplot")
    change = {name: {"before": 1.0, "after": 0.5, "change": -0.5, "change_low": -0.7, "change_high": -0.2} for name in ("group_dpcr", "intent_dtw", "w1_turns")}
    for name, states, drawn in (
        ("neither", {}, False),
        ("curve", {"sft": {"sft/curve": [[1, 2.0], [2, 1.5]], "checkpoint": "checkpoints/sft"}}, True),
        ("change", {"eval_change": change}, True),
    ):
        run = RunDir.create(tmp_path / name, {})
        for state, data in states.items():
            run.save_state(state, data)
        tracer_train.plot_supervised(run, plt)
        assert (run.path / "plots" / "sft.png").exists() == drawn, name
        run.close()


def test_the_summary_reads_each_metric_from_first_to_last_beside_the_nearest_scripted_baseline(tmp_path):
    run = RunDir.create(tmp_path / "run", {})
    run.append_metrics({"iteration": 0, "eval/group_dpcr": 0.4, "eval/pcr": 0.3})  # intent DTW: evaluated at the end only
    run.append_metrics({"iteration": 1})
    run.save_state("eval", {"group_dpcr": 0.2, "intent_dtw": 6.0, "pcr": 0.7, "real_pcr": 0.55})
    run.save_state("eval_baselines", {
        "scripted": {"group_dpcr": 0.15, "intent_dtw": 7.4, "pcr": 0.45}, "eager": {"group_dpcr": 0.3, "intent_dtw": 7.0, "pcr": 0.58},
        "random": {"group_dpcr": 0.5, "intent_dtw": 9.0, "pcr": 0.9},
    })
    run.save_state("eval_change", {"group_dpcr": {"before": 0.4, "after": 0.2, "change": -0.2, "change_low": -0.35, "change_high": -0.05}})
    assert tracer_train.summary(run) == [
        "Group-dPCR: 0.400 (iteration 0) -> 0.200 (after training); best scripted baseline scripted 0.150",  # lowest
        "intent DTW cost: 6.000 (after training); best scripted baseline eager 7.000",
        # PCR: the baseline nearest the real sessions' 0.55 (eager, 0.03 off), not the highest (random) nor the lowest (scripted)
        "PCR: 0.300 (iteration 0) -> 0.700 (after training); best scripted baseline eager 0.580 (real 0.550)",
        "group_dpcr untuned -> trained: 0.400 -> 0.200, change -0.200 [-0.350, -0.050] (paired over groups)",
    ]
    # without the real sessions' PCR to be near, the highest PCR is the best
    run.save_state("eval", {"group_dpcr": 0.2, "intent_dtw": 6.0, "pcr": 0.7})
    assert tracer_train.summary(run)[2] == "PCR: 0.300 (iteration 0) -> 0.700 (after training); best scripted baseline random 0.900"
    run.close()


def test_a_run_with_both_stages_reports_each_change_between_the_right_ends(tmp_path):
    # untuned -> SFT -> RL on the strategy policy (its SFT moves it far from the untuned one): each paired change
    # starts where the stage started and ends where it ended
    config = build_config(
        run_dir=str(tmp_path / "run"), eval_before=True, sft_epochs=2, sft_sessions=40, sft_learning_rate=0.5, iterations=1, sessions_per_iteration=2,
        group_size=2, rollout_batch=4, eval_sessions=6, eval_rollouts=1, eval_batch=6, plots=False,
    )
    run = tracer_train.train(config)
    untuned, tuned, trained = (run.load_state(name) for name in ("eval_before", "eval_sft", "eval"))
    changes = {name: run.load_state(name) for name in ("eval_change_sft", "eval_change_rl", "eval_change")}
    ends = {"eval_change_sft": (untuned, tuned), "eval_change_rl": (tuned, trained), "eval_change": (untuned, trained)}
    for name, (start, end) in ends.items():
        for metric in ("group_dpcr", "intent_dtw", "w1_turns"):
            assert (changes[name][metric]["before"], changes[name][metric]["after"]) == (start[metric], end[metric]), (name, metric)
    assert untuned["intent_dtw"] != tuned["intent_dtw"]  # the two ends differ, so a swap shows
    run.close()
