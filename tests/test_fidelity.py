"""dialogue_gym.fidelity: who plays what, the side-by-side numbers (by hand), and the command."""

import json

import numpy as np
import pytest

from dialogue_gym.cli import main
from dialogue_gym.errors import ConfigError
from dialogue_gym.fidelity import outcome_rates, paired, per_initial_state, setup, trajectory_dtw
from dialogue_gym.scenarios.sead.parsing import render_user_output
from dialogue_gym.types import Outcome, Trajectory, Turn


def sead(seed, states, outcome, start=(2, 2, 3)):
    turns = []
    for state in states:
        turns += [Turn("agent", "hi", "hi", {}, None), Turn("user", "ok", "ok", {}, tuple(state))]
    return Trajectory("SEAD-Outbound-v0", seed, {"state": list(start), "behaviors": ["IV1"]}, turns, outcome, learner="agent")


def test_state_trajectory_dtw_by_hand():
    # scripted [s0, (3,2,3)] vs LLM [s0, s0, s0] with s0 = (2,2,3): the best path (0,0) (0,1) (1,2) costs
    # 0 + 0 + |3-2| = 1 over 3 steps.
    scripted = sead(7, [(3, 2, 3)], Outcome.HANGUP)
    llm = sead(7, [(2, 2, 3), (2, 2, 3)], Outcome.TIMEOUT)
    assert trajectory_dtw(paired([scripted], [llm])) == {"mean": 1.0, "per_step": pytest.approx(1 / 3), "pairs": 1}


def test_pairs_are_matched_by_seed_and_rates_are_per_initial_state():
    scripted = [sead(0, [], Outcome.SUCCESS), sead(1, [], Outcome.HANGUP, start=(0, 0, 0)), sead(2, [], Outcome.SUCCESS)]
    llm = [sead(2, [], Outcome.HANGUP), sead(0, [], Outcome.SUCCESS), sead(1, [], Outcome.TIMEOUT, start=(0, 0, 0))]
    pairs = paired(scripted, llm)
    assert [(a.seed, b.seed) for a, b in pairs] == [(0, 0), (1, 1), (2, 2)]
    assert per_initial_state(pairs) == [
        {"name": "c0/e0/tr0", "episodes": 1, "scripted": 0.0, "llm": 0.0},
        {"name": "c2/e2/tr3", "episodes": 2, "scripted": 1.0, "llm": 0.5},
    ]
    rates = outcome_rates(llm)
    assert rates["success"] == pytest.approx(1 / 3) and rates["timeout"] == pytest.approx(1 / 3) and sum(rates.values()) == pytest.approx(1)


def test_setup_picks_the_learner_and_the_two_sides():
    plan = setup("TRACER-UserSim-v0", "user", "BACKEND")
    assert (plan.learner, plan.default_agent) == ("assistant", "sop")
    assert plan.sides == {"scripted": {"user": "scripted"}, "llm": {"user": "llm", "user_backend": "BACKEND"}}
    plan = setup("RLADA-Banking-v0", "judge", "BACKEND", {"temperature": 0}, {"max_agent_turns": 4})
    assert plan.learner == "agent" and plan.sides["scripted"] == {"max_agent_turns": 4, "judge": "rule"}
    assert plan.sides["llm"] == {"max_agent_turns": 4, "judge": "llm", "judge_backend": "BACKEND", "judge_sampling": {"temperature": 0}}
    assert setup("TRACER-UserSim-v0", "judge", "B").sides["scripted"] == {"judge": "heuristic"}
    with pytest.raises(ConfigError, match=r"--role 'owner' is not a role of SEAD-Outbound-v0; check one of \['agent', 'user'\]"):
        setup("SEAD-Outbound-v0", "owner", "B")
    with pytest.raises(ConfigError, match=r"--env-kwargs set \['user_backend'\], which the fidelity check sets itself"):
        setup("SEAD-Outbound-v0", "user", "B", env_kwargs={"user_backend": {}})


def test_the_command_prints_the_side_by_side_report_warns_and_plots(tmp_path, capsys):
    frozen = render_user_output("Okay, go on.", (2, 2, 2), 0)
    backend = json.dumps({"name": "canned", "replies": [frozen, "I'm Alex, how can I help you?"]})
    out, picture = tmp_path / "numbers.json", tmp_path / "fidelity.png"
    code = main(["fidelity", "SEAD-Outbound-v0", "--role", "user", "--backend", backend, "--agent", "adaptive", "--episodes", "4",
                 "--env-kwargs", '{"max_agent_turns": 3}', "--plot", str(picture), "--json", str(out), "--quiet"])
    printed = capsys.readouterr().out
    assert code == 0 and "the user role, scripted vs LLM, 4 episodes per agent and side" in printed
    assert "success rate per initial state" in printed and "state trajectories, scripted vs LLM on the same start: DTW" in printed
    assert "WARNING: adaptive: the user role failed its health checks" in printed
    numbers = json.loads(out.read_text())["agents"]["adaptive"]
    assert numbers["health"]["scripted"]["user"]["failure_rate"] == 0.0 and numbers["health"]["llm"]["user"]["role_reversal_rate"] == 0.5
    assert numbers["turns"]["llm"]["learner"] == 3.0 and len(numbers["per_initial_state"]) == 4
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_tracer_users_get_the_papers_fidelity_metrics(capsys):
    backend = json.dumps({"name": "canned", "replies": ["<think>hm</think><intent_level>2</intent_level><reply>how much is it</reply>"]})
    main(["fidelity", "DMBench-Assistant-v0", "--role", "user", "--backend", backend, "--episodes", "3", "--quiet",
          "--env-kwargs", '{"max_user_turns": 3}'])
    printed = capsys.readouterr().out
    assert "TRACER fidelity against the reference sessions" in printed and "| llm      |" in printed


def test_a_judge_model_is_compared_with_the_rule_judge_on_the_same_calls(tmp_path):
    backend = json.dumps({"name": "canned", "replies": ['{"score": 3, "resolved": true, "hallucination": false, "reason": "ok"}']})
    out = tmp_path / "judge.json"
    main(["fidelity", "RLADA-Banking-v0", "--role", "judge", "--backend", backend, "--episodes", "4", "--json", str(out), "--quiet"])
    numbers = json.loads(out.read_text())["agents"]["keyword"]
    judge = numbers["judge"]
    assert judge["pairs"] == 4 and judge["llm"] == 3.0
    assert judge["mean_abs_gap"] == pytest.approx(3.0 - judge["scripted"]), "every rule score is at most the maximum 3"
    assert numbers["health"]["llm"]["judge"]["format_rate"] == 1.0 and "judge" not in numbers["health"]["scripted"]
    assert np.isfinite(judge["scripted"])


def test_a_wrong_role_fails_before_any_model_loads(capsys):
    code = main(["fidelity", "SEAD-Outbound-v0", "--role", "owner", "--backend", '{"name": "transformers", "model": "/nowhere"}'])
    assert code == 2 and "--role 'owner' is not a role of SEAD-Outbound-v0" in capsys.readouterr().err
