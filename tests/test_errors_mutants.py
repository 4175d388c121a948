"""The error types: each is also the built-in exception callers already catch, and a missing optional
dependency names the extra that installs it."""

import pytest

from dialogue_gym.errors import (
    AgentError,
    BackendError,
    ConfigError,
    DependencyNotInstalled,
    DialogueGymError,
    EpisodeStateError,
    InvalidAction,
    ScenarioError,
)


@pytest.mark.parametrize(
    "error, builtin",
    [(ConfigError, ValueError), (InvalidAction, TypeError), (ScenarioError, ValueError), (EpisodeStateError, RuntimeError),
     (DependencyNotInstalled, ImportError), (BackendError, RuntimeError), (AgentError, RuntimeError)],
)
def test_each_error_is_a_dialogue_gym_error_and_its_builtin(error, builtin):
    assert issubclass(error, DialogueGymError) and issubclass(error, builtin)


def test_a_missing_dependency_names_the_package_and_the_extra_to_install():
    error = DependencyNotInstalled("vllm", "serving", "VLLMBackend")
    assert (error.package, error.extra) == ("vllm", "serving")
    assert str(error) == (
        "VLLMBackend needs the optional package 'vllm', which is not installed. "
        "Install it with: pip install 'dialogue_gym[serving]'"
    )
