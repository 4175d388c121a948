"""RL-ADA's trainer schedule and held-out record checked against their definitions (issue 43 item 6,
trainers/rlada/train.py): the steps a run plans, the order of its phases, which side a gym trains and
whose version it bumps, the per-scenario rates of a held-out result, the paired change's resamples and the saved
matches a resumed run accepts. No training."""

from __future__ import annotations

import pytest

from trainers.common import RunDir, RunFolderError
from trainers.rlada import train as train_module
from trainers.rlada.config import build_config
from trainers.rlada.train import CoEvolution


class Schedule(CoEvolution):
    """The run's schedule alone: its config, its state and a stopping rule, no policies or run folder."""

    def __init__(self, config, state=None, rule=None):
        self.config, self.state, self.rule = config, state, rule


def test_a_run_plans_sft_warmups_held_out_twice_and_matches_with_a_gym_between_each_two():
    config = build_config(sft_episodes=4, warmup_agent_iterations=2, warmup_customer_iterations=1, max_matches=3, min_matches=3, gym_iterations=2)
    # sft 1 + agent warm-up 2 + held-out before 1 + customer warm-up 1 + 3 matches + 2 gyms x 2 iterations + held-out after 1
    assert Schedule(config).planned_steps() == 1 + 2 + 1 + 1 + 3 + 4 + 1
    bare = build_config(sft_episodes=0, warmup_agent_iterations=0, warmup_customer_iterations=0, max_matches=2, min_matches=2, gym_iterations=0)
    assert Schedule(bare).planned_steps() == 0 + 0 + 1 + 0 + 2 + 0 + 1
    # an LM agent's clone is also evaluated right after SFT (one step more); without SFT there is no clone
    lm = build_config(
        "cpu-lm-scratch", copy_steps=0, sft_episodes=4, warmup_agent_iterations=2, warmup_customer_iterations=1, max_matches=3, min_matches=3, gym_iterations=2,
    )
    assert Schedule(lm).planned_steps() == 1 + 1 + 2 + 1 + 1 + 3 + 4 + 1
    no_sft = build_config("cpu-lm-scratch", copy_steps=0, sft_episodes=0, warmup_agent_iterations=2, warmup_customer_iterations=1, max_matches=3, min_matches=3, gym_iterations=2)
    assert Schedule(no_sft).planned_steps() == Schedule(lm).planned_steps() - 2
    # the copy warm-up is one step of its own, however many optimizer steps it takes (the preset's 2,000)
    copying = build_config(
        "cpu-lm-scratch", sft_episodes=4, warmup_agent_iterations=2, warmup_customer_iterations=1, max_matches=3, min_matches=3, gym_iterations=2,
    )
    assert copying.copy_steps == 2000 and Schedule(copying).planned_steps() == Schedule(lm).planned_steps() + 1


class Rule:
    """Stops after the match whose win rate is 1.0."""

    def decide(self, win_rates):
        return (win_rates[-1] == 1.0, "stable" if win_rates[-1] == 1.0 else "")


def _walk(config, win_rates):
    """Every phase from the first, the state's matches filled in as each match ends."""
    state = {"matches": [], "versions": {"agent": 0, "customer": 0}, "stop_reason": None}
    evolution = Schedule(config, state, Rule())
    phases = [evolution.first_phase()]
    while phases[-1]["phase"] != "done" and len(phases) < 40:  # a schedule that never ends fails, not hangs
        if phases[-1]["phase"] == "match":
            state["matches"].append({"match": phases[-1]["match"], "win_rate": win_rates[len(state["matches"])]})
        phases.append(evolution.after(phases[-1]))
    return phases, state


def test_the_phases_follow_in_order_and_each_gym_trains_the_weaker_side_and_bumps_its_version():
    config = build_config(sft_episodes=4, warmup_agent_iterations=2, warmup_customer_iterations=1, gym_iterations=2, weaker_threshold=0.5)
    # match 1: the agent wins 0.25 (< 0.5: the agent is weaker), match 2: 0.75 (the customer is), match 3: 1.0 stops
    phases, state = _walk(config, [0.25, 0.75, 1.0])
    assert phases == [
        {"phase": "sft"}, {"phase": "warmup_agent", "index": 0}, {"phase": "warmup_agent", "index": 1}, {"phase": "heldout_before"},
        {"phase": "warmup_customer", "index": 0}, {"phase": "match", "match": 1},
        {"phase": "gym", "side": "agent", "index": 0, "match": 1}, {"phase": "gym", "side": "agent", "index": 1, "match": 1},
        {"phase": "match", "match": 2},
        {"phase": "gym", "side": "customer", "index": 0, "match": 2}, {"phase": "gym", "side": "customer", "index": 1, "match": 2},
        {"phase": "match", "match": 3}, {"phase": "heldout_after"}, {"phase": "done"},
    ]
    assert state["versions"] == {"agent": 1, "customer": 1} and state["stop_reason"] == "stable"
    # no SFT, no warm-ups, no gyms: held out, then match after match
    bare = build_config(sft_episodes=0, warmup_agent_iterations=0, warmup_customer_iterations=0, gym_iterations=0)
    phases, state = _walk(bare, [0.25, 1.0])
    assert phases == [{"phase": "heldout_before"}, {"phase": "match", "match": 1}, {"phase": "match", "match": 2}, {"phase": "heldout_after"}, {"phase": "done"}]
    assert state["versions"] == {"agent": 0, "customer": 0}


def test_an_lm_agents_clone_is_held_out_between_sft_and_the_warm_up_and_only_when_there_is_one():
    lm = build_config("cpu-lm-scratch", copy_steps=0, sft_episodes=4, warmup_agent_iterations=1, warmup_customer_iterations=0, gym_iterations=0)
    phases, _ = _walk(lm, [1.0])
    assert phases[:4] == [{"phase": "sft"}, {"phase": "heldout_sft"}, {"phase": "warmup_agent", "index": 0}, {"phase": "heldout_before"}]
    no_warmup = build_config("cpu-lm-scratch", copy_steps=0, sft_episodes=4, warmup_agent_iterations=0, warmup_customer_iterations=0, gym_iterations=0)
    assert _walk(no_warmup, [1.0])[0][:3] == [{"phase": "sft"}, {"phase": "heldout_sft"}, {"phase": "heldout_before"}]
    no_sft = build_config("cpu-lm-scratch", copy_steps=0, sft_episodes=0, warmup_agent_iterations=1, warmup_customer_iterations=0, gym_iterations=0)
    assert _walk(no_sft, [1.0])[0][:2] == [{"phase": "warmup_agent", "index": 0}, {"phase": "heldout_before"}]
    strategy = build_config(sft_episodes=4, warmup_agent_iterations=1, warmup_customer_iterations=0, gym_iterations=0)
    assert _walk(strategy, [1.0])[0][:2] == [{"phase": "sft"}, {"phase": "warmup_agent", "index": 0}]


def test_the_copy_warm_up_comes_first_and_hands_over_to_sft_or_else_to_what_follows_sft():
    sizes = {"warmup_agent_iterations": 1, "warmup_customer_iterations": 0, "gym_iterations": 0}
    copying = build_config("cpu-lm-scratch", copy_steps=5, sft_episodes=4, **sizes)
    assert _walk(copying, [1.0])[0][:4] == [{"phase": "copy"}, {"phase": "sft"}, {"phase": "heldout_sft"}, {"phase": "warmup_agent", "index": 0}]
    no_sft = build_config("cpu-lm-scratch", copy_steps=5, sft_episodes=0, **sizes)
    assert _walk(no_sft, [1.0])[0][:3] == [{"phase": "copy"}, {"phase": "warmup_agent", "index": 0}, {"phase": "heldout_before"}]
    none = build_config("cpu-lm-scratch", copy_steps=0, sft_episodes=4, **sizes)
    assert _walk(none, [1.0])[0][0] == {"phase": "sft"}


def test_a_held_out_result_keeps_each_scenarios_strict_pass_and_routing_apart(monkeypatch):
    groups = {"card_lost": {"strict_pass_rate": 0.25, "routing_accuracy": 0.75}, "balance": {"strict_pass_rate": 1.0, "routing_accuracy": 1.0}}
    monkeypatch.setattr(train_module.rlada_metrics, "by_group", lambda trajectories, key: groups)
    result = train_module.heldout_result([])
    assert result["per_scenario"] == {"card_lost": 0.25, "balance": 1.0}
    assert result["per_scenario_routing"] == {"card_lost": 0.75, "balance": 1.0}


def test_a_held_out_result_counts_the_calls_whose_account_was_verified_before_any_domain_tool(monkeypatch):
    components = {"lookup_first": 0.625, "procedure": 0.25, "routing": 0.5}
    monkeypatch.setattr(train_module.rlada_metrics, "by_group", lambda trajectories, key: {})
    monkeypatch.setattr(train_module.rlada_metrics, "component_rate", lambda trajectories, name: components[name])
    for metric in ("routing_accuracy", "strict_pass_rate", "mean_reward"):
        monkeypatch.setattr(train_module.rlada_metrics, metric, lambda *args: 0.0)
    assert train_module.heldout_result([])["lookup_first"] == 0.625


def test_the_paired_strict_pass_change_draws_1000_resamples_by_default(monkeypatch):
    from dialogue_gym.metrics import core

    drawn = []
    real = core.bootstrap_resamples
    monkeypatch.setattr(core, "bootstrap_resamples", lambda units, resamples, seed: drawn.append((units, resamples, seed)) or real(units, resamples, seed))
    result = {"passed": [1, 0, 0, 1], "scenarios": ["a", "a", "b", "b"]}
    train_module.paired_strict_pass(result, result)
    assert drawn == [(2, 1000, 0)]  # two scenarios resampled 1000 times from seed 0


@pytest.mark.parametrize("match", [
    {"match": "one", "step": 3, "win_rate": 0.5},  # a number word, not an int
    {"match": 1, "win_rate": 0.5},  # no step
    {"match": 1, "step": 3, "win_rate": "high"},
])
def test_a_saved_match_without_int_match_and_step_and_a_number_win_rate_is_refused(tmp_path, match):
    run = RunDir.create(tmp_path / "run", {})
    state = {**train_module.new_state(), "next": {"phase": "match", "match": 2}, "matches": [match]}
    run.save_state("progress", state)
    with pytest.raises(RunFolderError, match=r"field 'matches\[0\]' must be an object with int 'match' and 'step' and a number 'win_rate'"):
        train_module.load_progress(run, checkpoints=False)
    run.save_state("progress", {**state, "matches": [{"match": 1, "step": 3, "win_rate": 0.5}]})
    assert train_module.load_progress(run, checkpoints=False)["matches"] == [{"match": 1, "step": 3, "win_rate": 0.5}]
    run.close()


def test_the_changes_to_the_end_start_from_their_own_held_out_results(tmp_path):
    run = RunDir.create(str(tmp_path / "run"), {})
    scenarios = ["a", "a", "b", "b"]
    run.save_state("heldout_sft", {"routing_accuracy": 0.0, "strict_pass": 0.0, "passed": [0, 0, 0, 0], "scenarios": scenarios})
    run.save_state("heldout_before", {"routing_accuracy": 0.5, "strict_pass": 0.25, "passed": [1, 0, 0, 0], "scenarios": scenarios})
    run.save_state("heldout_after", {"routing_accuracy": 1.0, "strict_pass": 0.75, "passed": [1, 1, 1, 0], "scenarios": scenarios})
    train_module.save_heldout_changes(run, seed=0)
    sft, warm = run.load_state("heldout_change_sft"), run.load_state("heldout_change")
    assert (sft["before"], sft["after"], sft["change"]) == (0.0, 0.75, 0.75)
    assert (warm["before"], warm["after"], warm["change"]) == (0.25, 0.75, 0.5)
    run.save_state("heldout_after", {"routing_accuracy": 0.0, "strict_pass": 0.0, "passed": [0, 0, 0, 0], "scenarios": scenarios})
    train_module.save_heldout_changes(run, seed=0)  # saved once: a resumed run keeps what it reported
    assert run.load_state("heldout_change_sft")["after"] == 0.75
    run.close()
