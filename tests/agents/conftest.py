"""Fixtures of the agent-boundary tests: your own agent class in a fresh working folder."""

from __future__ import annotations

import sys

import pytest

EXAMPLE = '''
from dialogue_gym.simulators.base import ScriptedPolicy


class Greeter(ScriptedPolicy):
    """Says its greeting, then asks about the owner's busiest hours."""

    def __init__(self, greeting: str = "Hello"):
        self.greeting = greeting

    def act(self, observation, info, memory):
        return f"<response>{self.greeting}! When are your busiest hours?</response>"
'''


@pytest.fixture
def example(tmp_path, monkeypatch):
    (tmp_path / "greeter.py").write_text(EXAMPLE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "greeter", raising=False)
    return tmp_path
