"""dialogue_gym: Gymnasium / PettingZoo environments for multi-turn service-dialogue RL.

``import dialogue_gym`` registers every environment ID (see ``envs_registry``).
"""

from dialogue_gym.errors import (
    BackendError,
    ConfigError,
    DependencyNotInstalled,
    DialogueGymError,
    EpisodeStateError,
    InvalidAction,
    ScenarioError,
)
from dialogue_gym.types import Message, Outcome, Trajectory, Turn
from envs_registry import register_all as _register_all

__version__ = "0.2.0"

_register_all()

__all__ = [
    "BackendError",
    "ConfigError",
    "DependencyNotInstalled",
    "DialogueGymError",
    "EpisodeStateError",
    "InvalidAction",
    "Message",
    "Outcome",
    "ScenarioError",
    "Trajectory",
    "Turn",
]
