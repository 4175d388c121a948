"""Every registered id as a SkyRL-gym text environment (``pip install 'dialogue_gym[skyrl]'``).

SkyRL-gym's ``BaseTextEnv`` is text in, chat messages out: the trainer's generator calls
``init(prompt)`` for the chat to prompt the model with, then ``step(text)`` with each of the model's
replies, which answers the messages to append (what the learner hears next), a reward and ``done``.
:class:`DialogueTextEnv` is one such env per episode: the model's replies are the learner role's
moves, the env's own policies (scripted by default, LLM-played through the env kwargs' backends)
play every other role, and the rules end the dialogue.

- :func:`register_environments` registers every id under its own name (``skyrl_gym.make("SEAD-Outbound-v0",
  extras=...)``, the ``env_class`` of a SkyRL dataset row); importing this module registers them.
- :func:`dataset_rows` builds the rows of a SkyRL training dataset: the learner's opening chat as the
  ``prompt``, ``env_class``, and the start (``env_episode``, ``env_seed``, ``learner``, ``env_kwargs``)
  in the row's extras, which SkyRL hands to the env. Episode ``i`` starts like evaluation episode ``i``
  (:mod:`dialogue_gym.integrations.common`), so train on another seed than you evaluate with.
- Rewards: each step's reward is what the learner's return grew by with that move, so the rewards of a
  dialogue sum to the env's reward. ``metadata`` of the last step holds the outcome and reward terms;
  ``get_metrics()`` the episode's ``episode/turns``, ``reward/return`` and ``reward/<term>`` values.

A dialogue the generator leaves unfinished (its ``max_turns`` or context length) is finished by
:meth:`DialogueTextEnv.close` with the learner silent and scored by the rules
(:class:`~dialogue_gym.integrations.common.LearnerEpisodes`); set SkyRL's ``generator.max_turns`` to at
least the scenario's turn limit so the rewards it trains on are the whole dialogue's.
"""

from __future__ import annotations

import json
from typing import Any

from dialogue_gym.errors import ConfigError, DependencyNotInstalled, EpisodeStateError

try:
    import skyrl_gym
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
except ImportError as exc:
    raise DependencyNotInstalled("skyrl-gym", "skyrl", "Using dialogue_gym environments from SkyRL") from exc

from dialogue_gym.integrations.common import (
    LearnerEpisodes,
    check_episode,
    json_kwargs,
    learner_of,
)
from envs_registry import REGISTRY

ENTRY_POINT = "dialogue_gym.integrations.skyrl:DialogueTextEnv"
EXTRA_KEYS = ("env_episode", "env_seed", "learner", "env_kwargs")
"""The keys of a row's extras (top level, or in ``extra_info``) that choose the episode."""


def _start_of(extras: dict[str, Any], env_config: Any) -> dict[str, Any]:
    """The episode's start from the row's extras, falling back on ``extra_info`` and then on ``env_config``."""
    if not isinstance(extras, dict):
        raise ConfigError(f"SkyRL extras must be a dict (the dataset row's extra columns), got {type(extras).__name__}: {extras!r:.80}.")
    nested = extras.get("extra_info") if isinstance(extras.get("extra_info"), dict) else {}
    config = dict(env_config) if env_config is not None and hasattr(env_config, "keys") else {}
    start = {}
    for key in EXTRA_KEYS:
        for source in (extras, nested, config):
            if source.get(key) is not None:
                start[key] = source[key]
                break
    return start


def _kwargs_of(value: Any) -> Any:
    """Env kwargs as a dict: rows carry them as a JSON string (a Parquet column holds no free-form dicts)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError as exc:
            raise ConfigError(f"env_kwargs must be a JSON object, got the string {value!r:.120}: {exc}.") from exc
    return value


class DialogueTextEnv(BaseTextEnv):
    """One episode of ``env_id`` with the model in the learner role (see the module docstring).

    Args:
        env_config: SkyRL's per-env config (``environment.skyrl_gym.<env_class>``); may set ``learner``
            and ``env_kwargs`` for every episode.
        extras: the dataset row's extras: ``env_episode`` (default 0), ``env_seed`` (default 0),
            ``learner`` and ``env_kwargs`` (JSON data, or its JSON text: counterparts by name, backends by spec), at the
            top level or in ``extra_info``.
        env_id: the dialogue_gym id (set by the registration).
    """

    def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None, *, env_id: str):
        super().__init__()
        start = _start_of({} if extras is None else extras, env_config)
        self.env_id = env_id
        self.learner = learner_of(env_id, start.get("learner"))
        self.env_kwargs = json_kwargs(_kwargs_of(start.get("env_kwargs")), "env_kwargs (SkyRL extras)")
        self.episode, self.seed = check_episode(start.get("env_episode", 0), start.get("env_seed", 0))
        self._episodes = LearnerEpisodes(env_id, learner=self.learner, env_kwargs=self.env_kwargs)
        self._started = False
        self._credited = 0.0
        self.max_turns = 0

    def init(self, prompt: Any = None) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """Start the episode; returns the learner's opening chat (the row's ``prompt`` must be it, or empty)."""
        opening = self._episodes.start(0, self.episode, self.seed)
        if prompt and [dict(m) for m in prompt] != opening:
            raise ConfigError(
                f"the SkyRL prompt is not the opening chat of {self.env_id} episode {self.episode} (seed {self.seed}, "
                f"learner {self.learner!r}); build the dataset with dataset_rows({self.env_id!r}, ...) and the same env kwargs."
            )
        self._started = True
        self._credited = self._episodes.reward(0)
        self.turns = 0
        return opening, {"env_id": self.env_id, "learner": self.learner, "episode": self.episode, "seed": self.seed}

    def _reward_step(self) -> float:
        total = self._episodes.reward(0)
        step, self._credited = total - self._credited, total
        return step

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """The learner says ``action``; returns what it hears next, the reward of the move and whether the dialogue is over."""
        if not self._started:
            raise EpisodeStateError(f"step() before init() on the {self.env_id} SkyRL env; call init(prompt) first.")
        if self._episodes.done(0):
            raise EpisodeStateError(f"step() after the {self.env_id} dialogue ended (done=True); make a new env for a new episode.")
        if not isinstance(action, str):
            raise ConfigError(f"a SkyRL action must be the model's text (str), got {type(action).__name__}: {action!r:.80}.")
        self.turns += 1
        (heard,) = self._episodes.move([0], [action])
        done = self._episodes.done(0)
        return BaseTextEnvStepOutput(
            observations=[] if done else heard,
            reward=self._reward_step(),
            done=done,
            metadata=self._summary() if done else {},
        )

    def _summary(self) -> dict[str, Any]:
        trajectory = self._episodes.trajectory(0)
        return {
            "outcome": trajectory.outcome.value if trajectory.outcome is not None else None,
            "reward": self._episodes.reward(0),
            "reward_terms": dict(trajectory.reward_terms),
            "trajectory": trajectory,
        }

    def get_metrics(self) -> dict[str, Any]:
        if not self._started:
            return {}
        trajectory = self._episodes.trajectory(0)
        prefix = f"{self.learner}/"
        metrics = {"episode/turns": len(trajectory.turns), "reward/return": self._episodes.reward(0)}
        metrics.update({f"reward/{name[len(prefix):]}": value for name, value in trajectory.reward_terms.items() if name.startswith(prefix)})
        return metrics

    def close(self) -> None:
        """Finish an unfinished dialogue with the learner silent (scored by the rules)."""
        if self._started and not self._episodes.done(0):
            self._episodes.finish_silently([0])

    def trajectory(self):
        """The episode's trajectory so far (the whole dialogue once ``done`` or closed)."""
        return self._episodes.trajectory(0)


def register_environments() -> list[str]:
    """Register every dialogue_gym id with SkyRL-gym (idempotent); returns the ids."""
    registry = skyrl_gym.envs.registration.registry
    for entry in REGISTRY:
        spec = registry.get(entry.id)
        if spec is None:
            skyrl_gym.register(id=entry.id, entry_point=ENTRY_POINT, kwargs={"env_id": entry.id})
        elif spec.entry_point != ENTRY_POINT:
            raise ConfigError(f"SkyRL-gym already has another env registered as {entry.id!r} ({spec.entry_point}); deregister it first.")
    return [entry.id for entry in REGISTRY]


def dataset_rows(
    env_id: str,
    episodes: int,
    *,
    seed: int = 0,
    learner: str | None = None,
    env_kwargs: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Rows of a SkyRL dataset (write them with ``datasets.Dataset.from_list(rows).to_parquet(...)``):
    ``prompt`` (the learner's opening chat), ``env_class`` (the id) and ``extra_info`` with the start."""
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ConfigError(f"episodes must be a positive int, got {type(episodes).__name__}: {episodes!r:.80}.")
    kwargs = json_kwargs(env_kwargs)
    opening = LearnerEpisodes(env_id, learner=learner, env_kwargs=kwargs)
    rows = []
    for episode in range(episodes):
        prompt = opening.start(0, episode, seed)
        info = {"env_episode": episode, "env_seed": seed, "learner": opening.learner, "env_kwargs": json.dumps(kwargs, sort_keys=True)}
        rows.append({"data_source": f"dialogue_gym/{env_id}", "prompt": prompt, "env_class": env_id, "extra_info": info})
    return rows


register_environments()
