"""The scripted simulator must separate baselines, spread over states, and resist surface tricks."""

import numpy as np
import pytest

from dialogue_gym.evaluation import evaluate
from dialogue_gym.metrics import sead as metrics
from dialogue_gym.scenarios.sead.parsing import render_agent_output
from dialogue_gym.simulators.base import ScriptedPolicy

EPISODES = 1200


@pytest.fixture(scope="module")
def baseline_runs():
    return {name: evaluate("SEAD-Outbound-v0", name, EPISODES, seed=0) for name in ("random", "sop", "adaptive", "oracle")}


def test_baselines_are_separated(baseline_runs):
    rates = {name: metrics.cr(runs) for name, runs in baseline_runs.items()}
    assert rates["random"] <= 0.15
    assert 0.25 <= rates["sop"] <= 0.5
    assert rates["oracle"] >= 0.7
    intervals = {name: metrics.cr_interval(runs) for name, runs in baseline_runs.items()}
    order = ["random", "sop", "adaptive", "oracle"]
    for weaker, stronger in zip(order, order[1:]):
        assert intervals[weaker][1] < intervals[stronger][0], (weaker, stronger, rates)


def test_sop_spreads_over_initial_states(baseline_runs):
    per_state = metrics.per_state_cr(baseline_runs["sop"])
    assert not np.isnan(per_state).any()
    assert per_state.min() <= 0.05 and per_state.max() >= 0.95
    assert per_state[4].mean() > per_state[0].mean() + 0.3


class Stuffer(ScriptedPolicy):
    """Every cue word the analyzer knows, every turn."""

    LINE = (
        "Hello, this is Alex calling from FoodMap, sorry, I understand, I'm an AI assistant. Are you the owner? "
        "Free ad credit, more customers, 500,000 users, rating 4.6, no hidden fees, pay-per-click, switch it off anytime, "
        "valid until the end of the year, 700 units, in short, I'll be quick, open your back-office app, tap get more "
        "exposure, claim it, you should see an SMS."
    )

    def act(self, observation, info, memory):
        return render_agent_output(self.LINE)


class PoliteStuffer(Stuffer):
    LINE = "Hello, sorry, I understand. Free credit, 500,000 users, no hidden fees, switch it off anytime, open your app, tap, claim it."


@pytest.mark.parametrize("stuffer", [Stuffer(), PoliteStuffer()], ids=["every-cue", "short-stuffed"])
def test_cue_stuffing_does_worse_than_sop(baseline_runs, stuffer):
    stuffed = metrics.cr(evaluate("SEAD-Outbound-v0", stuffer, EPISODES, seed=0))
    assert stuffed < metrics.cr(baseline_runs["sop"])


class EmpathyFirstScript(ScriptedPolicy):
    """A different fixed script: soothe first, pitch later."""

    LINES = (
        "Hello, this is Alex calling from FoodMap, sorry to bother you. Am I speaking with the owner of the restaurant?",
        "I understand you're busy, I appreciate your patience.",
        "Totally fair if you have questions, no worries.",
        "We'd like to give your restaurant 700 units of free ad credit to bring you more customers.",
        "Our app has more than 500,000 users; it's pay-per-click with no hidden fees, and you can switch it off anytime.",
        "Please open your merchant back-office app.",
        "Now tap the 'get more exposure' entry.",
        "Then claim the credit; you should see an SMS and a pop-up.",
    )

    def act(self, observation, info, memory):
        turn = int(observation["turn"])
        return render_agent_output(self.LINES[min(turn, len(self.LINES) - 1)])


def test_no_fixed_script_is_best_for_everyone(baseline_runs):
    """Which script wins depends on the user's state: good play must read the user."""
    empathy = evaluate("SEAD-Outbound-v0", EmpathyFirstScript(), EPISODES, seed=0)
    sop_rates = metrics.per_state_cr(baseline_runs["sop"])
    empathy_rates = metrics.per_state_cr(empathy)
    upset = (slice(None), 0)
    calm = (slice(None), slice(2, 4))
    assert empathy_rates[upset].mean() > sop_rates[upset].mean() + 0.05
    assert sop_rates[calm].mean() > empathy_rates[calm].mean() + 0.05


def test_outcomes_follow_the_agents_choices(baseline_runs):
    """Same seeds and profiles, different agent: outcomes differ episode by episode, not only on average."""
    sop = [t.outcome for t in baseline_runs["sop"]]
    adaptive = [t.outcome for t in baseline_runs["adaptive"]]
    assert [t.profile for t in baseline_runs["sop"]] == [t.profile for t in baseline_runs["adaptive"]]
    assert sum(a != b for a, b in zip(sop, adaptive)) > EPISODES // 5


def test_scripted_user_is_seeded():
    first = evaluate("SEAD-Outbound-v0", "adaptive", 30, seed=7)
    again = evaluate("SEAD-Outbound-v0", "adaptive", 30, seed=7)
    other = evaluate("SEAD-Outbound-v0", "adaptive", 30, seed=8)
    assert [t.to_dict() for t in first] == [t.to_dict() for t in again]
    assert [t.to_dict() for t in first] != [t.to_dict() for t in other]
