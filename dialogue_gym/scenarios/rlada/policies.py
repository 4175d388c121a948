"""Named role policies of RL-ADA, so envs take them by JSON-serializable kwargs."""

from __future__ import annotations

from typing import Any, Callable

from dialogue_gym.scenarios.rlada.agents import (
    AlwaysEscalateAgent,
    KeywordRouterAgent,
    OracleAgent,
    PhraseMatchAgent,
    RandomAgent,
)
from dialogue_gym.scenarios.rlada.customers import ScriptedCustomer, WithholdingCustomer
from dialogue_gym.scenarios.rlada.data import Domain
from dialogue_gym.scenarios.rlada.planner import PlannerCustomer
from dialogue_gym.simulators.base import RolePolicy
from dialogue_gym.simulators.named import named_policy

SCRIPTED: dict[str, dict[str, Callable[[Domain], RolePolicy]]] = {
    "agent": {
        "keyword": KeywordRouterAgent,
        "always_escalate": lambda domain: AlwaysEscalateAgent(),
        "random": RandomAgent,
        "oracle": lambda domain: OracleAgent(),
        "phrase_match": PhraseMatchAgent,
    },
    "customer": {
        "scripted": ScriptedCustomer,
        "direct": lambda domain: ScriptedCustomer(domain, "direct"),
        "vague": lambda domain: ScriptedCustomer(domain, "vague"),
        "camouflage": lambda domain: ScriptedCustomer(domain, "camouflage"),
        "contextual": lambda domain: ScriptedCustomer(domain, "camouflage", side_worry_first=True),
        "withholding": WithholdingCustomer,
        "planner": PlannerCustomer,
    },
}
"""``scripted`` plays the episode profile's concealment level; ``direct`` / ``vague`` / ``camouflage`` fix it;
``contextual`` is camouflage that always opens with a side worry beside a hint of its own problem;
``withholding`` (RLADA-Banking-v1's default) never states a problem that a story shared with another tool fits,
at the vague and camouflage levels; ``planner`` (the customer audit's fair ceiling) rehearses each truthful style
against the agent it faces on a call it builds from what it knows, then plays the best."""



LLM_STOPS = {"customer": ("\n\n",), "agent": ()}
"""Stop strings of an LLM-played role: the customer speaks one short paragraph (the agent's JSON has no safe stop)."""


def make_policy(role: str, spec: Any, domain: Domain, backend: Any = None, sampling: dict[str, Any] | None = None) -> RolePolicy:
    """Build the policy that plays ``role`` from its kwarg: a name, ``"llm"`` (+ backend spec), or a policy
    object. An LLM gets the role's stop strings unless ``sampling`` sets ``stop``."""
    scripted = {name: (lambda factory=factory: factory(domain)) for name, factory in SCRIPTED[role].items()}
    if spec == "llm":
        sampling = {"stop": list(LLM_STOPS[role]), **(sampling or {})}
    return named_policy(role, spec, scripted, backend, sampling)
