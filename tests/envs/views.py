"""Play one episode of a scenario with scripted policies in each view; the determinism tests of every
scenario compare what these return. ``players()`` builds fresh policies for every role."""

from __future__ import annotations

from typing import Any, Callable

import gymnasium as gym

from dialogue_gym.envs.driver import role_seed

Players = Callable[[], dict[str, Any]]


def _pick(value: Any, index: int) -> Any:
    """Sub-env ``index``'s part of a batched observation or info (nested dicts included)."""
    if isinstance(value, dict):
        return {key: _pick(item, index) for key, item in value.items() if not key.startswith("_")}
    return value[index]


def _start(players: dict[str, Any], roles: tuple[str, ...], profile: dict, seed: int) -> dict[str, Any]:
    return {role: players[role].start(profile, role_seed(seed, role, roles)) for role in roles}


def play_single(env_id: str, players: Players, learner: str, seed: int, options: dict | None = None, **kwargs: Any):
    env = gym.make(env_id, **kwargs)
    player = players()[learner]
    observation, info = env.reset(seed=seed, options=options)
    memory = player.start(env.unwrapped.game.episode_profile(), role_seed(seed, learner, env.unwrapped.game.roles))
    done = False
    while not done:
        observation, _, terminated, truncated, info = env.step(player.act(observation, info, memory))
        done = terminated or truncated
    return env.unwrapped.trajectory()


def play_aec(module: Any, players: Players, seed: int):
    env = module.env()
    env.reset(seed=seed)
    game = env.unwrapped.game
    policies = players()
    memories = _start(policies, game.roles, game.episode_profile(), seed)
    for role in env.agent_iter():
        observation, _, terminated, truncated, info = env.last()
        env.step(None if terminated or truncated else policies[role].act(observation, info, memories[role]))
    return env.unwrapped.trajectory()


def play_parallel(module: Any, players: Players, seed: int):
    env = module.parallel_env()
    observations, infos = env.reset(seed=seed)
    policies = players()
    memories = _start(policies, env.game.roles, env.game.episode_profile(), seed)
    while env.agents:
        acting = next(role for role in env.agents if infos[role]["to_act"])
        actions = {role: "" for role in env.agents}
        actions[acting] = policies[acting].act(observations[acting], infos[acting], memories[acting])
        observations, _, _, _, infos = env.step(actions)
    return env.trajectory()


def play_vector(env_id: str, players: Players, learner: str, seeds: list[int], **kwargs: Any):
    """The first episode of each sub-env (seeded ``seeds``), in order."""
    envs = gym.make_vec(env_id, num_envs=len(seeds), **kwargs)
    observations, infos = envs.reset(seed=list(seeds))
    player = players()[learner]
    games = envs.unwrapped.games
    memories = [player.start(g.episode_profile(), role_seed(s, learner, g.roles)) for g, s in zip(games, seeds)]
    finished: dict[int, Any] = {}
    while len(finished) < len(seeds):
        actions = []
        for index, seed in enumerate(seeds):
            observation, info = _pick(observations, index), _pick(infos, index)
            actions.append("" if seed in finished else player.act(observation, info, memories[index]))
        observations, _, _, _, infos = envs.step(actions)
        for trajectory in envs.unwrapped.pop_trajectories():
            # an episode that ended before the learner's first move was set aside and re-drawn
            if trajectory.seed in seeds and trajectory.turns_of(learner):
                finished.setdefault(trajectory.seed, trajectory)
    return [finished[s] for s in seeds]


def play_vector_autoreset(env_id: str, players: Players, learner: str, seed: int, num_envs: int, episodes: int, **kwargs: Any):
    """Every episode the vector view plays through autoresets until each sub-env finished ``episodes``:
    ``[(trajectory, learner's summed step rewards)]`` in finishing order (sub-env order within a step).

    With ``NEXT_STEP`` autoreset the step after an episode's last one resets that sub-env (its action is
    ignored), and the learner's memory restarts from the new episode's profile and seed; the episodes
    after the first are seeded by the vector env itself, so a test replays them by ``trajectory.seed``."""
    envs = gym.make_vec(env_id, num_envs=num_envs, learner=learner, **kwargs)
    observations, infos = envs.reset(seed=seed)
    player = players()[learner]
    games = envs.unwrapped.games

    def start(game: Any) -> Any:
        return player.start(game.episode_profile(), role_seed(game.seed, learner, game.roles))

    memories = [start(game) for game in games]
    returns = [0.0] * num_envs
    resetting = [False] * num_envs
    finished_per_env = [0] * num_envs
    played: list[tuple[Any, float]] = []
    while min(finished_per_env) < episodes:
        actions = [
            "" if resetting[i] else player.act(_pick(observations, i), _pick(infos, i), memories[i]) for i in range(num_envs)
        ]
        observations, rewards, terminations, truncations, infos = envs.step(actions)
        for i, game in enumerate(games):
            if resetting[i]:
                assert rewards[i] == 0.0, "an autoreset step pays nothing"
                memories[i], returns[i], resetting[i] = start(game), 0.0, False
                continue
            returns[i] += float(rewards[i])
            if terminations[i] or truncations[i]:
                played.append((game.trajectory(), returns[i]))
                finished_per_env[i] += 1
                resetting[i] = True
    return played
