"""The trainers' lockstep play (:func:`trainers.common.play.play_games`, issue 43 item 6): every role an
agent process plays keeps its own refused moves in the trajectory, and each episode's ``on_done`` gets
that game's memories."""

from __future__ import annotations

import pytest
from attackers import Saboteur

from dialogue_gym.agents import AgentProcess
from dialogue_gym.envs.driver import CounterpartDriver
from dialogue_gym.evaluation import make_learner_env
from trainers.common.play import play_games

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # RLADA-Banking-v0 is out of date (v1 exists)
STARTS = [(11, {}), (12, {}), (13, {})]


def _play(policies: dict, starts: list) -> dict[int, tuple]:
    environment = make_learner_env("RLADA-Banking-v0", "agent", {})
    games = [environment.game.spawn() for _ in starts]
    done: dict[int, tuple] = {}
    play_games(games, CounterpartDriver(policies, learner=None), starts, lambda index, trajectory, memories: done.setdefault(index, (trajectory, memories)))
    return done


def test_two_isolated_roles_each_keep_their_refused_moves_in_the_trajectory():
    agent = AgentProcess("RLADA-Banking-v0", "agent", {}, Saboteur("non_strings"), level="process")
    customer = AgentProcess("RLADA-Banking-v0", "customer", {}, Saboteur("non_strings"), level="process")
    try:
        played = _play({"agent": agent, "customer": customer}, STARTS[:2])
    finally:
        agent.close()
        customer.close()
    refused = "a move that is a JSON array, not a string"
    expected = [{"role": "agent", "turn": 0, "problem": refused}, {"role": "customer", "turn": 0, "problem": refused}]
    assert [played[index][0].meta["agent_problems"] for index in range(2)] == [expected, expected]


def test_each_finished_episode_is_handed_its_own_games_memories():
    environment = make_learner_env("RLADA-Banking-v0", "agent", {})

    def policies() -> dict:
        return {"agent": environment.make_role_policy("agent", "keyword"), "customer": environment.make_role_policy("customer", "scripted")}

    together = _play(policies(), STARTS)
    for index, start in enumerate(STARTS):
        trajectory, memories = together[index]
        alone_trajectory, alone_memories = _play(policies(), [start])[0]
        assert trajectory.seed == start[0] and trajectory.to_json() == alone_trajectory.to_json()
        # the agent's memory of game i (what it looked up for that customer) is the one it has playing game i alone
        assert memories["agent"]["lookup"] == alone_memories["agent"]["lookup"]
        assert memories["agent"]["seed"] == alone_memories["agent"]["seed"]
    assert len({together[index][1]["agent"]["seed"] for index in range(len(STARTS))}) == len(STARTS)
