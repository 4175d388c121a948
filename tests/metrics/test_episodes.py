"""Per-episode parts of the headline metrics (dialogue_gym.metrics.episodes): summed over any set of
episodes they give exactly the summary's value, and a backend failure is left out as the summary leaves it."""

import dataclasses
import math

import pytest

from dialogue_gym.evaluation import evaluate
from dialogue_gym.metrics.core import ratio_of_sums
from dialogue_gym.metrics.episodes import sead
from dialogue_gym.types import Outcome
from envs_registry import REGISTRY, resolve


def _aggregate(scores, key):
    return ratio_of_sums([s[key][0] for s in scores], [s[key][1] for s in scores])


def _same(a, b):
    return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=1e-12)


@pytest.mark.parametrize("entry", REGISTRY, ids=lambda entry: entry.id)
def test_the_parts_add_up_to_the_summary_on_every_id(entry):
    summary, episode_scores = resolve(entry.summary), resolve(entry.episode_scores)
    kwargs = {"embedder": None} if "embedder" in summary.__code__.co_varnames else {}
    for agent in entry.agents[:2]:
        trajectories = evaluate(entry.id, agent, 24, seed=1, learner=entry.default_learner)
        failed = dataclasses.replace(trajectories[0], outcome=Outcome.BACKEND_FAILURE)
        for sample in (trajectories, trajectories[5:9], [failed, *trajectories[1:]]):
            scores = [episode_scores(t) for t in sample]
            expected = summary(sample, **kwargs)
            assert entry.pass_metric in scores[0]
            for key in scores[0]:
                if key == "customer_win":
                    assert _same(_aggregate(scores, key), 1.0 - expected["strict_pass"])
                else:
                    assert _same(_aggregate(scores, key), expected[key]), (entry.id, agent, key)


def test_sead_parts_of_one_call_by_hand():
    trajectory = evaluate("SEAD-Outbound-v0", "sop", 1, seed=0)[0]
    turns = len(trajectory.turns_of("agent"))
    scores = sead(trajectory)
    success = float(trajectory.outcome is Outcome.SUCCESS)
    assert scores["cr"] == (success, 1.0) and scores["att_all"] == (turns, 1.0)
    assert scores["att_success"] == (turns * success, success)
    assert scores["upa"][1] == turns  # every agent turn is scored, an estimate or not
    final_trust = [turn.state for turn in trajectory.turns if turn.role == "user"][-1][2]
    assert scores["ti"] == (final_trust - trajectory.profile["state"][2], 1.0)
    failed = dataclasses.replace(trajectory, outcome=Outcome.BACKEND_FAILURE)
    assert set(sead(failed).values()) == {(0.0, 0.0)}
