"""The RL-ADA customer's fair ceiling: a planner against the agent it faces.

:class:`PlannerCustomer` knows what a caller knows (its own problem, facts and suggested style: the
customer's ``start`` profile, which holds no ``bank_seed``) and what anyone can read: the library's
public code, so the code of the support agent it faces (``keyword`` by default, RLADA-Customer-v0's
opponent). Before its first line it plays each of its scripted styles against a copy of that agent in a
call it builds itself: its own profile, a bank generated from a seed of its own (:data:`GUESSED_BANK_SEED`,
not the episode's, which it never sees) and its own role seed. It then plays, for real, the style that
earned the most there. The keyword router routes on the caller's words only, so the copy's routing is
the real one; what the guessed bank changes (balances, ids, the agent's explanation) moves the planned
reward a little, never the route.

It is a fair policy (it reads no hidden state: the episode's bank, the agent's seed and the privileged
channel stay unknown to it) and the strongest customer written for this role; the audit reports it as
the fair ceiling beside the scripted styles.
"""

from __future__ import annotations

from typing import Any

from dialogue_gym.errors import ConfigError
from dialogue_gym.scenarios.rlada.data import Domain
from dialogue_gym.simulators.base import ScriptedPolicy

GUESSED_BANK_SEED = 0
"""The bank seed of the planner's own rehearsal calls (any seed: the real one is hidden from the caller)."""
STYLES = ("direct", "vague", "camouflage", "contextual")
"""The truthful scripted styles the planner rehearses (RLADA-Customer-v0's fair baselines)."""
OPPONENTS = ("keyword", "always_escalate", "phrase_match")
"""Agents whose play depends on the caller's words alone, so a rehearsal with a guessed bank routes as the real call."""


class PlannerCustomer(ScriptedPolicy):
    """Rehearses every style of :data:`STYLES` against ``opponent`` on its own copy of the call and plays
    the best one (ties: the earlier style). Reads only its ``start`` profile and its observations."""

    def __init__(self, domain: Domain, opponent: str = "keyword"):
        if opponent not in OPPONENTS:
            raise ConfigError(
                f"opponent={opponent!r} cannot be rehearsed: the planner copies an agent whose play depends on the "
                f"caller's words alone, one of {list(OPPONENTS)}."
            )
        self.domain = domain
        self.opponent = opponent
        self._rehearsal: Any = None

    def style(self, name: str) -> ScriptedPolicy:
        from dialogue_gym.scenarios.rlada.policies import SCRIPTED

        return SCRIPTED["customer"][name](self.domain)

    def rehearse(self, profile: dict[str, Any], seed: int) -> dict[str, float]:
        """Each style's customer reward in a call the planner builds from what it knows."""
        import gymnasium as gym

        if self._rehearsal is None:
            self._rehearsal = gym.make("RLADA-Customer-v0", agent=self.opponent, disable_env_checker=True)
        environment = self._rehearsal
        rewards: dict[str, float] = {}
        for name in STYLES:
            policy = self.style(name)
            memory = policy.start(dict(profile), seed)
            observation, info = environment.reset(seed=seed, options={"profile": {**profile, "bank_seed": GUESSED_BANK_SEED}})
            total, done = 0.0, False
            while not done:
                observation, reward, terminated, truncated, info = environment.step(policy.act(observation, {}, memory))
                total += float(reward)
                done = terminated or truncated
            rewards[name] = total
        return rewards

    def start(self, profile: dict[str, Any], seed: int) -> dict[str, Any]:
        if "bank_seed" in profile:
            raise ConfigError("the planner was handed the episode's bank_seed; a caller does not know it (role_profile drops it).")
        rewards = self.rehearse(profile, seed)
        chosen = max(STYLES, key=lambda name: (rewards[name], -STYLES.index(name)))
        policy = self.style(chosen)
        return {"style": chosen, "policy": policy, "memory": policy.start(dict(profile), seed), "rehearsed": rewards}

    def act(self, observation: dict[str, Any], info: dict[str, Any], memory: dict[str, Any]) -> str:
        return memory["policy"].act(observation, {}, memory["memory"])
