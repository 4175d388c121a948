"""The agent boundary: an agent under evaluation is untrusted code, played in a process of its own.

One room owns it. :mod:`~dialogue_gym.agents.protocol` is the wire format (JSON lines: hello, start,
act, end, close); :mod:`~dialogue_gym.agents.process` starts the agent's process at an isolation level
(``sandbox`` under bubblewrap, ``process`` a plain one) and turns whatever breaks the protocol into
invalid moves; :mod:`~dialogue_gym.agents.runner` is what runs in that process;
:mod:`~dialogue_gym.agents.launch` sets its limits and ties its life to the evaluator's.
``evaluate(..., isolate=...)``, ``dialogue-gym eval --isolate`` and ``audit --isolate`` use it.
"""

from dialogue_gym.agents.process import LEVELS, AgentProcess, Limits, check_level

__all__ = ["LEVELS", "AgentProcess", "Limits", "check_level"]
