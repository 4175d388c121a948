"""Every environment ID, in one table: Gymnasium entry points, vector entry points, PettingZoo modules.

``import dialogue_gym`` calls :func:`register_all`; ``gym.make("dialogue_gym:ID")`` works in a
fresh interpreter because Gymnasium imports ``dialogue_gym`` first.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym


@dataclass(frozen=True)
class Entry:
    id: str
    entry_point: str
    vector_entry_point: str
    pettingzoo_module: str
    roles: tuple[str, ...]
    default_learner: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    agents: tuple[str, ...] = ()
    """Named baseline policies of the default learner role (``dialogue-gym eval --agent``); the first is the default."""
    summary: str | None = None
    """``"module:function"``: trajectories (+ metric kwargs) -> dict of metrics, one table row per agent."""
    columns: str | None = None
    """``"module:attribute"``: the ``(key, label)`` pairs of ``summary`` that ``dialogue-gym eval`` prints."""
    report: str | None = None
    """``"module:function"``: ``{agent: trajectories}`` -> extra text printed after the table (or None)."""
    audits: str | None = None
    """``"module:function"``: ``() -> list[ScenarioAudit]``, the exploit audits ``dialogue-gym audit`` runs."""
    episode_scores: str | None = None
    """``"module:function"``: trajectory -> ``{key: (numerator, denominator)}``, the per-episode parts of the
    headline metrics (see :mod:`dialogue_gym.metrics.episodes`), which bootstrap CIs and ``compare`` resample."""
    pass_metric: str | None = None
    """The ``episode_scores`` key that is 1 when the learner's episode succeeded: what pass^k counts."""


REGISTRY: tuple[Entry, ...] = (
    Entry(
        id="SEAD-Outbound-v0",
        entry_point="dialogue_gym.envs.sead_outbound_v0:SeadOutboundEnv",
        vector_entry_point="dialogue_gym.envs.sead_outbound_v0:SeadOutboundVectorEnv",
        pettingzoo_module="dialogue_gym.envs.sead_outbound_v0",
        roles=("agent", "user"),
        default_learner="agent",
        agents=("sop", "random", "adaptive", "oracle"),
        summary="dialogue_gym.metrics.sead:summary",
        columns="dialogue_gym.metrics.sead:COLUMNS",
        report="dialogue_gym.metrics.sead:report",
        audits="dialogue_gym.scenarios.sead.audit:audits",
        episode_scores="dialogue_gym.metrics.episodes:sead",
        pass_metric="cr",
    ),
    Entry(
        id="TRACER-UserSim-v0",
        entry_point="dialogue_gym.envs.tracer_usersim_v0:TracerUserSimEnv",
        vector_entry_point="dialogue_gym.envs.tracer_usersim_v0:TracerUserSimVectorEnv",
        pettingzoo_module="dialogue_gym.envs.tracer_usersim_v0",
        roles=("assistant", "user"),
        default_learner="user",
        agents=("scripted", "random", "flat", "eager", "reluctant"),
        summary="dialogue_gym.metrics.tracer:summary",
        columns="dialogue_gym.metrics.tracer:COLUMNS",
        report="dialogue_gym.metrics.tracer:report",
        audits="dialogue_gym.scenarios.tracer.audit:tracer_audits",
        episode_scores="dialogue_gym.metrics.episodes:tracer",
        pass_metric="acc",
    ),
    Entry(
        id="DMBench-Assistant-v0",
        entry_point="dialogue_gym.envs.dmbench_assistant_v0:DMBenchAssistantEnv",
        vector_entry_point="dialogue_gym.envs.dmbench_assistant_v0:DMBenchAssistantVectorEnv",
        pettingzoo_module="dialogue_gym.envs.dmbench_assistant_v0",
        roles=("assistant", "user"),
        default_learner="assistant",
        agents=("sop", "consultative", "empathetic", "pushy", "random"),
        summary="dialogue_gym.metrics.dmbench:summary",
        columns="dialogue_gym.metrics.dmbench:COLUMNS",
        report="dialogue_gym.metrics.dmbench:report",
        audits="dialogue_gym.scenarios.tracer.audit:audits",
        episode_scores="dialogue_gym.metrics.episodes:dmbench",
        pass_metric="cr",
    ),
    Entry(
        id="RLADA-Banking-v0",
        entry_point="dialogue_gym.envs.rlada_banking_v0:RladaBankingEnv",
        vector_entry_point="dialogue_gym.envs.rlada_banking_v0:RladaBankingVectorEnv",
        pettingzoo_module="dialogue_gym.envs.rlada_banking_v0",
        roles=("agent", "customer"),
        default_learner="agent",
        agents=("keyword", "always_escalate", "random", "oracle"),
        summary="dialogue_gym.metrics.rlada:summary",
        columns="dialogue_gym.metrics.rlada:COLUMNS",
        report="dialogue_gym.metrics.rlada:report",
        audits="dialogue_gym.scenarios.rlada.audit:audits",
        episode_scores="dialogue_gym.metrics.episodes:rlada_agent",
        pass_metric="strict_pass",
    ),
    Entry(
        id="RLADA-Banking-v1",
        entry_point="dialogue_gym.envs.rlada_banking_v1:RladaBankingV1Env",
        vector_entry_point="dialogue_gym.envs.rlada_banking_v1:RladaBankingV1VectorEnv",
        pettingzoo_module="dialogue_gym.envs.rlada_banking_v1",
        roles=("agent", "customer"),
        default_learner="agent",
        agents=("keyword", "always_escalate", "random", "oracle"),
        summary="dialogue_gym.metrics.rlada:summary",
        columns="dialogue_gym.metrics.rlada:COLUMNS",
        report="dialogue_gym.metrics.rlada:report",
        audits="dialogue_gym.scenarios.rlada.audit:audits_v1",
        episode_scores="dialogue_gym.metrics.episodes:rlada_agent",
        pass_metric="strict_pass",
    ),
    Entry(
        id="RLADA-Customer-v0",
        entry_point="dialogue_gym.envs.rlada_customer_v0:RladaCustomerEnv",
        vector_entry_point="dialogue_gym.envs.rlada_customer_v0:RladaCustomerVectorEnv",
        pettingzoo_module="dialogue_gym.envs.rlada_customer_v0",
        roles=("customer", "agent"),
        default_learner="customer",
        agents=("direct", "vague", "camouflage", "contextual", "scripted"),
        summary="dialogue_gym.metrics.rlada:summary",
        columns="dialogue_gym.metrics.rlada:COLUMNS",
        report="dialogue_gym.metrics.rlada:report",
        audits="dialogue_gym.scenarios.rlada.audit:customer_audits",
        episode_scores="dialogue_gym.metrics.episodes:rlada_customer",
        pass_metric="customer_win",
    ),
)


def register_all() -> None:
    for entry in REGISTRY:
        if entry.id not in gym.registry:
            gym.register(
                id=entry.id,
                entry_point=entry.entry_point,
                vector_entry_point=entry.vector_entry_point,
                kwargs=dict(entry.kwargs),
                disable_env_checker=False,
            )


def get(env_id: str) -> Entry:
    for entry in REGISTRY:
        if entry.id == env_id:
            return entry
    from dialogue_gym.errors import ConfigError

    import difflib

    close = difflib.get_close_matches(str(env_id), [e.id for e in REGISTRY], n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise ConfigError(f"Unknown environment id {env_id!r}.{hint} Registered ids: {[e.id for e in REGISTRY]}.")


def resolve(target: str) -> Any:
    """The object a ``"module:attribute"`` string of an :class:`Entry` names (imported on use)."""
    module_name, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def make(env_id: str, view: str = "aec", **kwargs: Any):
    """PettingZoo-style constructor: ``view="aec"`` (``env()``) or ``"parallel"`` (``parallel_env()``)."""
    module = importlib.import_module(get(env_id).pettingzoo_module)
    if view == "aec":
        return module.env(**kwargs)
    if view == "parallel":
        return module.parallel_env(**kwargs)
    from dialogue_gym.errors import ConfigError

    raise ConfigError(f"view={view!r} is not supported; use 'aec' or 'parallel'.")
