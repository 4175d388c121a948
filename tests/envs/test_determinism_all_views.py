"""Every registered ID, every learner role: the same seed gives the same episode (turns, hidden states,
outcome, rewards and reward terms) in the single, AEC, parallel and vector views, including the
vector view's episodes after autoreset; different seeds give different episodes, also with the
starting profile held fixed (so the counterpart's seed follows the episode seed).

Players are each scenario's default named policies (``default_players``) for every role, built the
way the env builds its counterparts, so the views differ only in how they drive the game.
"""

from __future__ import annotations

import importlib

import gymnasium as gym
import pytest
from views import play_aec, play_parallel, play_vector_autoreset

import envs_registry
from dialogue_gym.envs.driver import role_seed

CASES = [(entry.id, role) for entry in envs_registry.REGISTRY for role in entry.roles]
SEEDS = [0, 1, 2]
FIXED_START = {
    "SEAD-Outbound-v0": {"profile": {"state": [2, 2, 2], "behaviors": ["CC1"]}},
    "TRACER-UserSim-v0": {"session_id": "syn-g00-s00"},
    "DMBench-Assistant-v0": {"session_id": "syn-g00-s00"},
    "RLADA-Banking-v0": {"scenario": "dispute_duplicate", "profile": {"bank_seed": 5}},
    "RLADA-Customer-v0": {"scenario": "dispute_duplicate", "profile": {"bank_seed": 5}},
    "RLADA-Banking-v1": {"scenario": "dispute_duplicate", "profile": {"bank_seed": 5}},
}


def players_of(env_id):
    """Fresh default policies for every role of ``env_id``."""
    env = gym.make(env_id).unwrapped
    return lambda: {role: env.make_role_policy(role, env.default_players[role]) for role in env.game.roles}


def module_of(env_id):
    return importlib.import_module(envs_registry.get(env_id).pettingzoo_module)


def episode(trajectory):
    """Everything an episode is: who said what (raw and heard), hidden states, outcome, rewards."""
    turns = [(t.role, t.raw, t.text, None if t.state is None else tuple(t.state), t.invalid) for t in trajectory.turns]
    return turns, trajectory.outcome, trajectory.rewards, trajectory.reward_terms, trajectory.profile


def play_single(env_id, learner, seed, options=None):
    """The single-agent view: ``(trajectory, learner's summed step rewards)``."""
    env = gym.make(env_id, learner=learner)
    player = players_of(env_id)()[learner]
    observation, info = env.reset(seed=seed, options=options)
    game = env.unwrapped.game
    memory = player.start(game.episode_profile(), role_seed(seed, learner, game.roles))
    total, done = 0.0, False
    while not done:
        observation, reward, terminated, truncated, info = env.step(player.act(observation, info, memory))
        total += float(reward)
        done = terminated or truncated
    return env.unwrapped.trajectory(), total


def test_every_registered_id_and_role_is_covered():
    assert {entry.id for entry in envs_registry.REGISTRY} == set(FIXED_START)
    assert len(CASES) == 12, "six IDs, two roles each"


@pytest.mark.parametrize("env_id, learner", CASES)
def test_single_aec_and_parallel_agree(env_id, learner):
    module = module_of(env_id)
    for seed in SEEDS:
        single, _ = play_single(env_id, learner, seed)
        assert single.turns_of(learner), f"{env_id} seed {seed}: the learner {learner!r} moved"
        assert episode(play_aec(module, players_of(env_id), seed)) == episode(single), f"{env_id} seed {seed}: AEC"
        assert episode(play_parallel(module, players_of(env_id), seed)) == episode(single), f"{env_id} seed {seed}: parallel"


@pytest.mark.parametrize("env_id, learner", CASES)
def test_vector_episodes_after_autoreset_agree_with_single(env_id, learner):
    played = play_vector_autoreset(env_id, players_of(env_id), learner, seed=11, num_envs=2, episodes=3)
    assert len(played) >= 6
    for trajectory, vector_return in played:
        single, single_return = play_single(env_id, learner, trajectory.seed)
        assert episode(trajectory) == episode(single), f"{env_id} learner {learner}: vector episode seed {trajectory.seed}"
        assert vector_return == pytest.approx(single_return, abs=1e-12), f"{env_id}: the learner's step rewards"
    assert len({t.seed for t, _ in played}) == len(played), "autoreset draws a new seed for every episode"


@pytest.mark.parametrize("env_id, learner", CASES)
def test_different_seeds_give_different_episodes(env_id, learner):
    episodes = [str(episode(play_single(env_id, learner, seed)[0])) for seed in range(4)]
    assert len(set(episodes)) == 4, f"{env_id}: seeds 0-3 gave {len(set(episodes))} distinct episodes"


@pytest.mark.parametrize("env_id", sorted(FIXED_START))
def test_different_seeds_draw_different_starts(env_id):
    """Without options the starting profile (SEAD's initial state and behaviors, TRACER's session,
    RL-ADA's intent and bank) is drawn from the episode seed: a reset that ignored it would start every
    episode alike even when the counterparts' own randomness still varied the dialogue."""
    env = gym.make(env_id)
    starts = set()
    for seed in range(6):
        env.reset(seed=seed)
        starts.add(repr(env.unwrapped.game.episode_profile()))
    assert len(starts) > 1, f"{env_id}: seeds 0-5 drew one starting profile"


@pytest.mark.parametrize("env_id, learner", CASES)
def test_with_a_fixed_start_the_seed_still_matters(env_id, learner):
    """Same profile / session / scenario, different seeds: the counterparts' randomness follows the
    episode seed (a role seed that ignored it would replay one episode)."""
    options = FIXED_START[env_id]
    episodes = [episode(play_single(env_id, learner, seed, options)[0]) for seed in range(6)]
    assert len({str(turns) for turns, *_ in episodes}) > 1, f"{env_id}: one fixed start replayed the same dialogue for 6 seeds"
    again = episode(play_single(env_id, learner, 3, options)[0])
    assert again == episodes[3]
