"""One exception hierarchy for the whole library.

Every message says what was wrong, the value that was seen, and how to fix the call.
"""

from __future__ import annotations


class DialogueGymError(Exception):
    """Base class of every error raised by dialogue_gym."""


class ConfigError(DialogueGymError, ValueError):
    """An argument or keyword has a wrong value or type."""


class InvalidAction(DialogueGymError, TypeError):
    """An action passed to ``step`` is not something a role can say (e.g. not a ``str``)."""


class ScenarioError(DialogueGymError, ValueError):
    """Scenario data (SOP, behavior library, profile) is malformed; the message names file and field."""


class EpisodeStateError(DialogueGymError, RuntimeError):
    """A method was called at the wrong time, e.g. ``step`` before ``reset`` or after the episode ended."""


class DependencyNotInstalled(DialogueGymError, ImportError):
    """An optional dependency is missing; the message names the extra to install."""

    def __init__(self, package: str, extra: str, purpose: str):
        self.package = package
        self.extra = extra
        super().__init__(
            f"{purpose} needs the optional package {package!r}, which is not installed. "
            f"Install it with: pip install 'dialogue_gym[{extra}]'"
        )


class BackendError(DialogueGymError, RuntimeError):
    """A text-generation backend failed to produce an output."""


class AgentError(DialogueGymError, RuntimeError):
    """An agent played in a process of its own could not be started (its process, its sandbox)."""
