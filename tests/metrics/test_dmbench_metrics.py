import math

import pytest

from dialogue_gym.backends import CannedBackend
from dialogue_gym.metrics import dmbench
from dialogue_gym.scenarios.tracer.judges import LLMJudge
from dialogue_gym.types import Outcome, Trajectory, Turn


def dialogue(user_turns, outcome, rq=None):
    turns = []
    for index in range(user_turns):
        turns.append(Turn("user", "u?", "u?", {"intent_level": 3}, (3,)))
        if index < user_turns - 1:
            turns.append(Turn("assistant", "one two three", "one two three"))
    meta = {}
    if rq is not None:
        meta["response_quality"] = {"accuracy": rq, "helpfulness": rq, "informativeness": rq, "empathy": rq, "rq": rq}
    return Trajectory("DMBench-Assistant-v0", 0, {"merchant": {"name": "Shop", "facts": []}}, turns, outcome, meta=meta)


def test_conversion_turns_and_response_quality():
    trajectories = [dialogue(3, Outcome.SUCCESS, 4.0), dialogue(5, Outcome.SUCCESS, 2.0), dialogue(2, Outcome.HANGUP, math.nan)]
    assert dmbench.conversion_turns(trajectories) == 4.0
    assert dmbench.response_quality(trajectories)["rq"] == 3.0, "NaN scores (assistant never spoke) are skipped"
    summary = dmbench.summary(trajectories)
    assert summary["cr"] == pytest.approx(2 / 3) and summary["user_turns"] == pytest.approx(10 / 3)
    assert summary["tokens_per_dialogue"] == pytest.approx(3 * (2 + 4 + 1) / 3), "assistant words only"
    assert {key for key, _ in dmbench.COLUMNS} <= set(summary)
    assert math.isnan(dmbench.conversion_turns([dialogue(2, Outcome.TIMEOUT)]))


def test_spearman_across_agents_and_report():
    summaries = {name: {"cr": cr, "rq": rq} for name, cr, rq in [("a", 0.1, 1.0), ("b", 0.2, 3.0), ("c", 0.3, 2.0), ("d", 0.4, 4.0)]}
    rho, p, n = dmbench.spearman(summaries)
    assert n == 4 and rho == pytest.approx(0.8) and 0 < p < 1
    assert math.isnan(dmbench.spearman({"a": {"cr": 0.1, "rq": 1.0}})[0])
    results = {
        "good": [dialogue(2, Outcome.SUCCESS, 5.0)],
        "mid": [dialogue(2, Outcome.SUCCESS, 3.0), dialogue(2, Outcome.HANGUP, 3.0)],
        "bad": [dialogue(2, Outcome.HANGUP, 1.0)],
    }
    assert dmbench.report(results) == "Spearman rho(CR, RQ) across 3 agents: 1.000 (p = 0.000)"
    assert "needs at least 3 agents" in dmbench.report({"good": results["good"]})


def test_rescore_with_an_llm_judge_in_one_batch():
    backend = CannedBackend(['{"accuracy": 5, "helpfulness": 4, "informativeness": 3, "empathy": 2}'], cycle=False)
    trajectories = [dialogue(2, Outcome.SUCCESS)]
    scored = dmbench.rescore(trajectories, LLMJudge(backend))
    assert scored[0].meta["response_quality"] == {
        "accuracy": 5.0, "helpfulness": 4.0, "informativeness": 3.0, "empathy": 2.0, "rq": 3.5, "judge": "llm",
        "health": {"judge": {"format_ok": True, "repaired": [], "role_reversal": [], "rule_violations": []}},
    }
    assert "response_quality" not in trajectories[0].meta, "the input is not modified"


def test_spearman_leaves_out_agents_missing_either_score():
    summaries = {
        "a": {"cr": 0.1, "rq": 1.0}, "b": {"cr": 0.2, "rq": 3.0}, "c": {"cr": 0.3, "rq": 2.0},
        "unjudged": {"cr": 0.9, "rq": math.nan}, "unplayed": {"cr": math.nan, "rq": 0.5},
    }
    # ranks (1, 2, 3) vs (1, 3, 2): rho = 1 - 6 * (0 + 1 + 1) / (3 * (9 - 1)) = 0.5
    rho, _, n = dmbench.spearman(summaries)
    assert n == 3 and rho == pytest.approx(0.5)
