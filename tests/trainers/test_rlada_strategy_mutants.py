"""RL-ADA's linear softmax strategy core worked by hand (issue 43 item 6, trainers/rlada/strategy.py):
probabilities with and without a mask, greedy and sampled choices, one policy-gradient step (its
scale, entropy and gradient norm) and the per-episode advantages of ``update``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dialogue_gym.errors import ConfigError
from trainers.rlada.strategy import LinearSoftmax, StrategyAgent

LN2 = math.log(2.0)


def _core(learning_rate=1.0):
    # f0 adds ln 2 to move a, f1 adds ln 2 to move b: both active -> logits (ln 2, ln 2, 0) -> exp (2, 2, 1) / 5
    return LinearSoftmax(("f0", "f1"), ("a", "b", "c"), learning_rate, [[LN2, 0.0, 0.0], [0.0, LN2, 0.0]])


class FixedDraw:
    def __init__(self, value):
        self.value = value

    def random(self):
        return self.value


def test_probabilities_sum_the_active_rows_and_a_mask_removes_moves():
    core = _core()
    assert core.probabilities([0, 1]) == pytest.approx([0.4, 0.4, 0.2])
    assert core.probabilities([0]) == pytest.approx([0.5, 0.25, 0.25])  # (2, 1, 1) / 4
    assert core.probabilities([0, 1], mask=[True, False, True]) == pytest.approx([2 / 3, 0.0, 1 / 3])


def test_choose_takes_the_first_argmax_greedily_and_inverts_the_cdf_otherwise():
    core = _core()
    assert core.choose([0, 1], FixedDraw(0.99), greedy=True) == 0  # a tie of a and b: the first
    # cumulative (0.4, 0.8, 1.0): a draw of 0.39 is a, 0.41 is b, 0.81 is c, and 1.0 stays in range
    assert [core.choose([0, 1], FixedDraw(r), greedy=False) for r in (0.0, 0.39, 0.41, 0.81, 1.0)] == [0, 0, 1, 2, 2]
    assert core.choose([0, 1], FixedDraw(0.5), greedy=False, mask=[True, False, True]) == 0  # (2/3, 0, 1/3)


def test_one_gradient_step_by_hand():
    core = _core(learning_rate=1.0)
    # choice c from (0.4, 0.4, 0.2) with advantage 1: d log pi / d logits = (-0.4, -0.4, 0.8) on rows f0 and f1, halved by scale 2
    stats = core.gradient_step([([0, 1], 2, None, 1.0)], scale=2)
    assert core.weights == pytest.approx(np.array([[LN2 - 0.2, -0.2, 0.4], [-0.2, LN2 - 0.2, 0.4]]))
    assert stats["loss/policy_gradient_norm"] == pytest.approx(math.sqrt(2 * (0.16 + 0.16 + 0.64)) / 2)  # 0.692820
    assert stats["policy/entropy"] == pytest.approx(-(2 * 0.4 * math.log(0.4) + 0.2 * math.log(0.2)))  # 1.054920


def test_a_scale_below_one_does_not_enlarge_the_step_and_no_sample_changes_nothing():
    core = _core(learning_rate=0.5)
    core.gradient_step([([0], 1, [True, True, False], -2.0)], scale=0.25)
    # (2/3, 1/3, 0) masked; choice b with advantage -2: delta (-2/3, 2/3, 0) * -2 * 0.5 / max(1, 0.25)
    assert core.weights[0] == pytest.approx([LN2 + 2 / 3, -2 / 3, 0.0]) and core.weights[1] == pytest.approx([0.0, LN2, 0.0])
    before = core.weights.copy()
    assert core.gradient_step([], scale=3) == {"loss/policy_gradient_norm": 0.0, "policy/entropy": 0.0}
    assert (core.weights == before).all()


def test_update_gives_every_decision_its_episodes_advantage_scaled_by_the_episode_count():
    agent = StrategyAgent.__new__(StrategyAgent)
    agent.core = _core(learning_rate=1.0)
    records = [{"steps": [([0, 1], 2, None)]}, {"steps": [([0, 1], 2, None), ([0, 1], 2, None)]}]
    agent.update(records, [1.0, 0.0])  # only the first episode's decision moves the weights, by 1 / 2 episodes
    assert agent.core.weights == pytest.approx(np.array([[LN2 - 0.2, -0.2, 0.4], [-0.2, LN2 - 0.2, 0.4]]))


def test_describe_and_the_checks_on_construction():
    core = _core()
    assert core.describe(top=1) == {"f0": ["a"], "f1": ["b"]}
    assert core.to_dict() == {"features": ["f0", "f1"], "moves": ["a", "b", "c"], "learning_rate": 1.0, "weights": [[LN2, 0.0, 0.0], [0.0, LN2, 0.0]]}
    with pytest.raises(ConfigError, match=r"learning_rate must be > 0, got 0"):
        LinearSoftmax(("f0",), ("a",), 0)
    with pytest.raises(ConfigError, match=r"weights must have shape \(2, 3\), got \(3, 2\)"):
        LinearSoftmax(("f0", "f1"), ("a", "b", "c"), 1.0, np.zeros((3, 2)))


def _agent(**kwargs):
    from dialogue_gym.scenarios.rlada.data import load_domain

    return StrategyAgent(load_domain(), **kwargs)


def _said(*lines):
    return {"messages": [{"role": "user", "content": line} for line in lines]}


def _names(agent, indices):
    return [agent.core.features[i] for i in indices]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_agents_features_of_what_the_customer_said():
    agent = _agent()
    # one cue of one tool: it has 1 hit and is the unique leader; the lexicon cue itself is a feature too
    assert _names(agent, agent.active(_said("Please check my balance"), {})) == [
        "bias", "asked_0", "lookup_account:1", "lookup_account:top", r"cue:lookup_account:\bcheck my balance\b"]
    # one cue each of two tools: no leader
    assert _names(agent, agent.active(_said("I want to check my balance", "and see what is pending"), {"asked": 1})) == [
        "bias", "asked_1", "lookup_account:1", "get_transactions:1", r"cue:lookup_account:\bcheck my balance\b", r"cue:get_transactions:\bpending\b"]
    # two cues of one tool, and what the words say about the customer's own accounts
    assert _names(agent, agent.active(_said("Please check my balance, what's in checking"), {"asked": 2})) == [
        "bias", "asked_2+", "lookup_account:2+", "context:own_accounts", "context:what_is_left", "lookup_account:top",
        "cue:lookup_account:what('s| is) in (checking|my)", r"cue:lookup_account:\bcheck my balance\b"]
    assert _names(agent, agent.active(_said("hello there"), {})) == ["bias", "asked_0", "no_cue"]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_agent_asks_until_its_questions_run_out_then_routes():
    agent = _agent(greedy=True, max_questions=1)  # zero weights: a uniform choice, greedy takes the first allowed move
    memory = agent.start({}, seed=0)
    agent.act(_said("hello there"), memory)
    assert "route" not in memory and memory["steps"][0][1:] == [0, [True] * 7]  # asked (move 0), every move allowed
    memory["asked"] = 1
    agent.act(_said("hello there"), memory)
    assert memory["route"] == "lookup_account" and memory["steps"][1][1:] == [1, [False] + [True] * 6]  # ask masked out
    assert len(memory["steps"]) == 2
    agent.act(_said("hello there"), memory)  # routed: the protocol goes on, no new decision
    assert len(memory["steps"]) == 2


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_loaded_strategy_samples_unless_asked_to_be_greedy(tmp_path):
    from dialogue_gym.scenarios.rlada.data import load_domain
    from trainers.rlada.strategy import StrategyCustomer

    domain = load_domain()
    for side in (StrategyAgent, StrategyCustomer):
        side(domain).save(tmp_path)
        assert side.load(domain, tmp_path).greedy is False  # training resumes sampling
        assert side.load(domain, tmp_path, greedy=True).greedy is True
