"""Training rollouts through the agent boundary (issue 42, item 2): a trainer's lockstep play
(:func:`trainers.common.play.play_games`) with a role played by an :class:`AgentProcess` gives the
transcripts of the same policy played in-process, ends each episode in the agent's process, and keeps
the moves the boundary refused, with their role. (Ray rollouts opt in with ``collect_rollouts(...,
isolate=...)``: tests/distributed.)"""

from __future__ import annotations

from attackers import Saboteur

from dialogue_gym.agents import AgentProcess
from dialogue_gym.envs.driver import CounterpartDriver
from dialogue_gym.evaluation import make_learner_env
from trainers.common.play import play_games

SEEDS = [(seed, {}) for seed in (11, 12, 13, 14, 15)]


def rollouts(policies: dict) -> list[str]:
    environment = make_learner_env("RLADA-Banking-v0", "agent", {})
    games = [environment.game.spawn() for _ in SEEDS]
    done: dict[int, str] = {}
    play_games(games, CounterpartDriver(policies, learner=None), SEEDS, lambda index, trajectory, _: done.setdefault(index, trajectory))
    return [done[index] for index in range(len(SEEDS))]


def test_a_counterpart_played_in_a_process_of_its_own_gives_the_in_process_transcripts():
    environment = make_learner_env("RLADA-Banking-v0", "agent", {})
    keyword = environment.make_role_policy("agent", "keyword")
    customer = AgentProcess("RLADA-Banking-v0", "customer", {}, "scripted", level="process")
    try:
        isolated = rollouts({"agent": keyword, "customer": customer})
        assert customer._turns == {} and customer._problems == {}  # every episode ended on both sides
    finally:
        customer.close()
    in_process = rollouts({"agent": keyword, "customer": environment.make_role_policy("customer", "scripted")})
    assert [t.to_json() for t in isolated] == [t.to_json() for t in in_process]
    assert all("agent_problems" not in t.meta for t in isolated)


def test_the_moves_an_isolated_role_broke_are_invalid_moves_listed_with_their_role():
    environment = make_learner_env("RLADA-Banking-v0", "agent", {})
    saboteur = AgentProcess("RLADA-Banking-v0", "agent", {}, Saboteur("non_strings"), level="process")
    try:
        played = rollouts({"agent": saboteur, "customer": environment.make_role_policy("customer", "scripted")})
    finally:
        saboteur.close()
    problem = {"role": "agent", "turn": 0, "problem": "a move that is a JSON array, not a string"}
    assert [t.meta["agent_problems"] for t in played] == [[problem]] * len(SEEDS)  # its first call held every episode's first move
    first_moves = [t.turns_of("agent")[0] for t in played]
    assert all(move.raw == "" and move.invalid.startswith("malformed JSON") for move in first_moves)
