"""The same seed gives the same transcript in the single, AEC, parallel and vector views."""

import gymnasium as gym
import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.envs import sead_outbound_v0
from dialogue_gym.envs.driver import role_seed
from dialogue_gym.evaluation import evaluate
from dialogue_gym.scenarios.sead.agents import AdaptiveAgent
from dialogue_gym.scenarios.sead.data import load_behaviors
from dialogue_gym.scenarios.sead.scripted_user import ScriptedUser

ROLES = ("agent", "user")
SEEDS = [0, 1, 2, 3]


def policies():
    return {"agent": AdaptiveAgent(), "user": ScriptedUser(load_behaviors())}


def transcript(trajectory):
    return [(turn.role, turn.raw, turn.state) for turn in trajectory.turns], trajectory.outcome


def play_single(seed):
    env = gym.make("SEAD-Outbound-v0", user="scripted")
    agent = policies()["agent"]
    observation, info = env.reset(seed=seed)
    memory = agent.start(env.unwrapped.game.episode_profile(), role_seed(seed, "agent", ROLES))
    done = False
    while not done:
        observation, _, terminated, truncated, info = env.step(agent.act(observation, info, memory))
        done = terminated or truncated
    return transcript(env.unwrapped.trajectory())


def play_aec(seed):
    env = sead_outbound_v0.env()
    env.reset(seed=seed)
    players = policies()
    profile = env.unwrapped.game.episode_profile()
    memories = {role: players[role].start(profile, role_seed(seed, role, ROLES)) for role in ROLES}
    for role in env.agent_iter():
        observation, _, terminated, truncated, info = env.last()
        action = None if terminated or truncated else players[role].act(observation, info, memories[role])
        env.step(action)
    return transcript(env.unwrapped.trajectory())


def play_parallel(seed):
    env = sead_outbound_v0.parallel_env()
    observations, infos = env.reset(seed=seed)
    players = policies()
    profile = env.game.episode_profile()
    memories = {role: players[role].start(profile, role_seed(seed, role, ROLES)) for role in ROLES}
    while env.agents:
        acting = next(role for role in env.agents if infos[role]["to_act"])
        actions = {role: "" for role in env.agents}
        actions[acting] = players[acting].act(observations[acting], infos[acting], memories[acting])
        observations, _, _, _, infos = env.step(actions)
    return transcript(env.trajectory())


def play_vector(seeds):
    envs = gym.make_vec("SEAD-Outbound-v0", num_envs=len(seeds), user="scripted")
    observations, infos = envs.reset(seed=list(seeds))
    agent = policies()["agent"]
    games = envs.unwrapped.games
    memories = [agent.start(g.episode_profile(), role_seed(s, "agent", ROLES)) for g, s in zip(games, seeds)]
    finished = {}
    while len(finished) < len(seeds):
        actions = []
        for index in range(len(seeds)):
            observation = {"messages": observations["messages"][index], "turn": observations["turn"][index]}
            info = {"user_state": infos["user_state"][index]}
            actions.append(agent.act(observation, info, memories[index]) if seeds[index] not in finished else "")
        observations, _, terminations, _, infos = envs.step(actions)
        for trajectory in envs.unwrapped.pop_trajectories():
            if trajectory.seed in seeds:
                finished.setdefault(trajectory.seed, transcript(trajectory))
    return [finished[s] for s in seeds]


@pytest.mark.parametrize("seed", SEEDS)
def test_single_aec_parallel_agree(seed):
    single = play_single(seed)
    assert len(single[0]) >= 2
    assert play_aec(seed) == single
    assert play_parallel(seed) == single


def test_vector_agrees_with_single():
    assert play_vector(SEEDS) == [play_single(seed) for seed in SEEDS]


def test_evaluate_agrees_with_single_view():
    trajectory = evaluate("SEAD-Outbound-v0", "adaptive", 1, seed=5)[0]
    env = gym.make("SEAD-Outbound-v0")
    agent = AdaptiveAgent()
    options = env.unwrapped.game.evaluation_options(0, 5)
    observation, info = env.reset(seed=5, options=options)
    memory = agent.start(options["profile"], role_seed(5, "agent", ROLES))
    done = False
    while not done:
        observation, _, done, _, info = env.step(agent.act(observation, info, memory))
    assert transcript(env.unwrapped.trajectory()) == transcript(trajectory)
