"""Role-playing policies: scripted ones (``ScriptedPolicy``) and LLM-backed ones (``simulators.llm.LLMPolicy``)."""

from dialogue_gym.simulators.base import RolePolicy, ScriptedPolicy

__all__ = ["RolePolicy", "ScriptedPolicy"]
