"""Named role policies of TRACER / DM-Bench, so envs take them by JSON-serializable kwargs, and the
players dataclass both env modules share."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Callable

from dialogue_gym.errors import ConfigError
from dialogue_gym.game import build_config
from dialogue_gym.scenarios.tracer.assistants import (
    ConsultativeAssistant,
    EmpatheticAssistant,
    PushyAssistant,
    RandomAssistant,
    SopAssistant,
)
from dialogue_gym.scenarios.tracer.game import TracerGame
from dialogue_gym.scenarios.tracer.users import FlatUser, IntentDynamicsUser, RandomUser, eager_user, reluctant_user
from dialogue_gym.simulators.base import RolePolicy

SCRIPTED: dict[str, dict[str, Callable[[], RolePolicy]]] = {
    "assistant": {
        "sop": SopAssistant,
        "consultative": ConsultativeAssistant,
        "empathetic": EmpatheticAssistant,
        "pushy": PushyAssistant,
        "random": RandomAssistant,
    },
    "user": {
        "scripted": IntentDynamicsUser,
        "random": RandomUser,
        "flat": FlatUser,
        "eager": eager_user,
        "reluctant": reluctant_user,
    },
}


def policy_names(role: str) -> list[str]:
    return [*SCRIPTED[role], "llm"]


def make_policy(role: str, spec: Any, backend: Any = None, sampling: dict[str, Any] | None = None) -> RolePolicy:
    """The policy that plays ``role`` from its kwarg: a name, ``"llm"`` (+ backend spec), or a policy object."""
    if callable(getattr(spec, "act_batch", None)) and callable(getattr(spec, "start", None)):
        return spec
    if spec == "llm":
        if backend is None:
            raise ConfigError(
                f"{role}='llm' needs {role}_backend=..., e.g. {role}_backend={{'name': 'transformers', 'model': 'smollm2'}}."
            )
        from dialogue_gym.simulators.llm import LLMPolicy

        return LLMPolicy(backend, sampling)
    if isinstance(spec, str) and spec in SCRIPTED[role]:
        return SCRIPTED[role][spec]()
    raise ConfigError(
        f"{role}={spec!r} is not a known {role} policy; use one of {policy_names(role)} "
        "or pass an object with start() and act_batch()."
    )


@dataclass(frozen=True)
class RolePlayers:
    """Who plays which role (JSON-serializable kwargs shared by the single-agent and vector envs)."""

    learner: str
    assistant: Any = "sop"
    user: Any = "scripted"
    assistant_backend: Any = None
    user_backend: Any = None
    assistant_sampling: dict | None = None
    user_sampling: dict | None = None

    @classmethod
    def split(cls, kwargs: dict[str, Any], game_class: type[TracerGame], learner: str) -> tuple[RolePlayers, TracerGame]:
        """Separate role kwargs from game-config kwargs; build the players and a template game."""
        names = {f.name for f in fields(cls)}
        players = cls(**{"learner": learner, **{k: v for k, v in kwargs.items() if k in names}})
        game = game_class(build_config(game_class.config_class, {k: v for k, v in kwargs.items() if k not in names}))
        return players, game

    def policies(self) -> dict[str, RolePolicy]:
        return {
            role: make_policy(role, getattr(self, role), getattr(self, f"{role}_backend"), getattr(self, f"{role}_sampling"))
            for role in TracerGame.roles
            if role != self.learner
        }
