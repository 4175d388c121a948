"""The four views of one scenario, configured by class attributes: each env module subclasses these.

Keyword arguments are data: ``learner``, and per role ``<role>`` (a policy name, ``"llm"`` or a
policy object), ``<role>_backend`` (backend spec) and ``<role>_sampling``; every other keyword is a
field of the game's config dataclass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from pettingzoo.utils import wrappers

from dialogue_gym.envs.multiagent import DialogueAECEnv, DialogueParallelEnv
from dialogue_gym.envs.single import DialogueEnv
from dialogue_gym.envs.vector import DialogueVectorEnv
from dialogue_gym.game import Game, build_config
from dialogue_gym.simulators.base import RolePolicy

_ROLE_SUFFIXES = ("", "_backend", "_sampling")


def role_keywords(roles: tuple[str, ...]) -> list[str]:
    """The keywords the single-agent and vector views take for the roles (the rest are game config)."""
    return ["learner", *(role + suffix for role in roles for suffix in _ROLE_SUFFIXES)]


@dataclass(frozen=True)
class RolePlayers:
    """Who plays which role: ``specs[role] = (policy spec, backend spec, sampling)``."""

    learner: str
    specs: dict[str, tuple[Any, Any, dict | None]]

    @classmethod
    def split(cls, kwargs: dict[str, Any], roles: tuple[str, ...], defaults: dict[str, Any], learner: str) -> tuple[RolePlayers, dict[str, Any]]:
        """Separate role keywords from game-config keywords."""
        names = set(role_keywords(roles))
        specs = {role: (kwargs.get(role, defaults.get(role)), kwargs.get(f"{role}_backend"), kwargs.get(f"{role}_sampling")) for role in roles}
        config = {key: value for key, value in kwargs.items() if key not in names}
        return cls(kwargs.get("learner", learner), specs), config

    def policies(self, make: Callable[[str, Any, Any, dict | None], RolePolicy]) -> dict[str, RolePolicy]:
        return {role: make(role, *spec) for role, spec in self.specs.items() if role != self.learner}


class ScenarioViews:
    """What a scenario's env module declares once (plus ``make_role_policy``: its named policies)."""

    game_class: type[Game]
    default_learner: str
    default_players: dict[str, Any] = {}
    view_id: str | None = None
    """The registered id of a view whose id is not its game's (see :attr:`Game.view_id`)."""

    @classmethod
    def split(cls, kwargs: dict[str, Any]) -> tuple[RolePlayers, Game]:
        roles = cls.game_class.roles
        players, config = RolePlayers.split(kwargs, roles, cls.default_players, cls.default_learner)
        game = cls.game_class(build_config(cls.game_class.config_class, config, role_keywords(roles)))
        game.view_id = cls.view_id
        return players, game


class ScenarioEnv(ScenarioViews, DialogueEnv):
    """Gymnasium single-agent view of a scenario."""

    def __init__(self, render_mode: str | None = None, **kwargs: Any):
        players, self.game = self.split(kwargs)
        super().__init__(self.game, players.learner, players.policies(self.make_role_policy), render_mode)


class ScenarioVectorEnv(ScenarioViews, DialogueVectorEnv):
    """Gymnasium vector view of a scenario (one policy per role shared by every sub-env)."""

    def _spawn(self) -> Game:
        game = self.game.spawn()
        game.view_id = self.view_id
        return game

    def __init__(self, num_envs: int = 1, keep_trajectories: int | str | None = "auto", **kwargs: Any):
        players, self.game = self.split(kwargs)
        super().__init__(
            self._spawn, num_envs, players.learner, players.policies(self.make_role_policy), keep_trajectories
        )


class ScenarioAECEnv(DialogueAECEnv):
    """PettingZoo AEC view: every role is an agent; keywords are the game's config."""

    game_class: type[Game]

    def __init__(self, render_mode: str | None = None, **config: Any):
        super().__init__(self.game_class(build_config(self.game_class.config_class, config)), render_mode)


def aec_env(raw_env: type[ScenarioAECEnv], render_mode: str | None, config: dict[str, Any]) -> DialogueAECEnv:
    """The AEC env wrapped like PettingZoo's own (order enforcing)."""
    return wrappers.OrderEnforcingWrapper(raw_env(render_mode=render_mode, **config))


def parallel_view(game_class: type[Game], name: str, render_mode: str | None, config: dict[str, Any]) -> DialogueParallelEnv:
    environment = DialogueParallelEnv(game_class(build_config(game_class.config_class, config)), render_mode)
    environment.metadata = {**environment.metadata, "name": name}
    return environment
