"""RL-ADA: the same seed gives the same transcript in the single, AEC, parallel and vector views and in evaluate()."""

import gymnasium as gym
import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.envs import rlada_banking_v0
from dialogue_gym.envs.driver import role_seed
from dialogue_gym.evaluation import evaluate
from dialogue_gym.scenarios.rlada.agents import KeywordRouterAgent
from dialogue_gym.scenarios.rlada.customers import ScriptedCustomer
from dialogue_gym.scenarios.rlada.data import load_domain

ROLES = ("agent", "customer")
SEEDS = [0, 1, 2, 3, 4]
DOMAIN = load_domain()


def players():
    return {"agent": KeywordRouterAgent(DOMAIN), "customer": ScriptedCustomer(DOMAIN)}


def transcript(trajectory):
    return [(turn.role, turn.raw) for turn in trajectory.turns], trajectory.outcome, trajectory.rewards


def play_single(seed):
    env = gym.make("RLADA-Banking-v0")
    agent = players()["agent"]
    observation, info = env.reset(seed=seed)
    memory = agent.start(env.unwrapped.game.episode_profile(), role_seed(seed, "agent", ROLES))
    done = False
    while not done:
        observation, _, done, _, info = env.step(agent.act(observation, info, memory))
    return transcript(env.unwrapped.trajectory())


def play_aec(seed):
    env = rlada_banking_v0.env()
    env.reset(seed=seed)
    policies = players()
    profile = env.unwrapped.game.episode_profile()
    memories = {role: policies[role].start(profile, role_seed(seed, role, ROLES)) for role in ROLES}
    for role in env.agent_iter():
        observation, _, terminated, truncated, info = env.last()
        env.step(None if terminated or truncated else policies[role].act(observation, info, memories[role]))
    return transcript(env.unwrapped.trajectory())


def play_parallel(seed):
    env = rlada_banking_v0.parallel_env()
    observations, infos = env.reset(seed=seed)
    policies = players()
    profile = env.game.episode_profile()
    memories = {role: policies[role].start(profile, role_seed(seed, role, ROLES)) for role in ROLES}
    while env.agents:
        acting = next(role for role in env.agents if infos[role]["to_act"])
        actions = {role: "" for role in env.agents}
        actions[acting] = policies[acting].act(observations[acting], infos[acting], memories[acting])
        observations, _, _, _, infos = env.step(actions)
    return transcript(env.trajectory())


def play_vector(seeds):
    envs = gym.make_vec("RLADA-Banking-v0", num_envs=len(seeds))
    observations, infos = envs.reset(seed=list(seeds))
    agent = players()["agent"]
    games = envs.unwrapped.games
    memories = [agent.start(g.episode_profile(), role_seed(s, "agent", ROLES)) for g, s in zip(games, seeds)]
    finished = {}
    while len(finished) < len(seeds):
        actions = []
        for index, seed in enumerate(seeds):
            observation = {"messages": observations["messages"][index], "turn": observations["turn"][index]}
            actions.append("" if seed in finished else agent.act(observation, {}, memories[index]))
        observations, _, _, _, infos = envs.step(actions)
        for trajectory in envs.unwrapped.pop_trajectories():
            finished.setdefault(trajectory.seed, transcript(trajectory))
    return [finished[s] for s in seeds]


@pytest.mark.parametrize("seed", SEEDS)
def test_single_aec_and_parallel_agree(seed):
    reference = play_single(seed)
    assert len(reference[0]) >= 4
    assert play_aec(seed) == reference
    assert play_parallel(seed) == reference


def test_vector_and_evaluate_agree_with_single():
    singles = [play_single(seed) for seed in SEEDS]
    assert play_vector(SEEDS) == singles
    assert len({str(s) for s in singles}) == len(SEEDS)
    evaluated = evaluate("RLADA-Banking-v0", "keyword", 6, seed=7)
    again = evaluate("RLADA-Banking-v0", "keyword", 6, seed=7, batch_size=2)
    assert [transcript(t) for t in evaluated] == [transcript(t) for t in again]
