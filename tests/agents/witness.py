"""An agent that says in its move what its process inherited from the evaluator (issue 43, item 6).

Used by ``test_agent_spawned.py``: a process forked from the evaluator would hold the evaluator's
modules, its attributes set at run time, its environment and its inheritable files; a fresh
interpreter started for the agent holds none of them.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Sequence

MARKER = "_evaluator_only_marker"
"""An attribute the evaluator sets on the ``dialogue_gym`` module at run time (a fork would inherit it)."""


def _target(handle: int) -> str | None:
    try:
        return os.readlink(f"/proc/self/fd/{handle}")
    except OSError:
        return None


class Memory:
    """One episode's memory in the agent's process: what its ``start`` was handed."""

    def __init__(self, profile: dict[str, Any], seed: int):
        self.profile, self.seed = profile, seed


class Witness:
    def start(self, profile: dict[str, Any], seed: int) -> Any:
        if profile.get("fail"):
            raise ValueError("this start is refused")
        return Memory(profile, seed)

    def act_batch(self, observations: Sequence[dict], infos: Sequence[dict], memories: Sequence[Any]) -> list[str]:
        import gc

        import dialogue_gym

        files = []
        for name in os.listdir("/proc/self/fd"):
            try:
                files.append(os.readlink(f"/proc/self/fd/{name}"))
            except OSError:
                continue
        seen = {
            "marker": getattr(dialogue_gym, MARKER, None),
            "pytest_loaded": "pytest" in sys.modules or "_pytest" in sys.modules,
            "isolated": sys.flags.isolated,
            "environment": sorted(os.environ),
            "files": files,
            "executable": os.path.realpath("/proc/self/exe"),
            "live_memories": sum(isinstance(item, Memory) for item in gc.get_objects()),
            # what the policy's own stdin, stdout and stderr are (the protocol's pipes are private copies)
            "standard": [_target(handle) for handle in (0, 1, 2)],
        }
        return [json.dumps({**seen, "profile": memory.profile, "seed": memory.seed}) for memory in memories]
