"""RL-ADA's adversarial arena, isolation-gym curriculum and stopping rule, as plain functions.

* An arena **match** plays every arena scenario ``episodes_per_scenario`` times (10 x 18 = 180) with
  the latest agent and customer. **The agent wins an episode when it earns a strict PASS**; the
  match's win rate is over the customer-winnable scenarios only, and the fraud-escalation scenarios
  are reported apart as the safety check.
* The **isolation gym** retrains the weaker side against the frozen other, starting its episodes
  from recent match transcripts: ``failure_fraction`` (70%) of the starts are episodes the weaker side
  lost, the rest ones it won.
* **Stopping**: at least ``min_matches`` matches, and the win rate >= ``threshold`` in the last
  ``patience`` matches with the last change <= ``epsilon``; or ``max_matches`` matches.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from dialogue_gym.metrics import rlada as metrics
from dialogue_gym.scenarios.rlada.data import Domain
from dialogue_gym.seeding import mix_seed
from dialogue_gym.types import Trajectory

TOLERANCE = 1e-9
"""Win rates and their changes are sums of fractions: a change computed as 0.85 - 0.8 is
0.04999999999999993 or 0.05000000000000004, and both are the 0.05 the user wrote. Comparisons with the
threshold and epsilon give way by this much."""


def shown(value: float, agrees: Callable[[float], bool]) -> str:
    """``value`` with 3 decimals, or as many more as it takes for the printed number to pass
    ``agrees`` (the side of the bound the decision put it on), so a message never contradicts it."""
    for decimals in range(3, 18):
        text = f"{value:.{decimals}f}"
        if agrees(float(text)):
            return text
    return repr(value)


@dataclass(frozen=True)
class StoppingRule:
    min_matches: int = 3
    max_matches: int = 8
    threshold: float = 0.6
    patience: int = 2
    epsilon: float = 0.05

    def decide(self, win_rates: Sequence[float]) -> tuple[bool, str]:
        """``(stop, reason)`` after the matches whose agent win rates are ``win_rates`` (in order).
        Comparisons allow :data:`TOLERANCE` of float rounding; a NaN win rate never counts as reached."""
        played = len(win_rates)
        if played >= self.max_matches:
            return True, f"reached max_matches={self.max_matches}"
        if played < self.min_matches:
            return False, f"{played} of at least {self.min_matches} matches played"
        recent = list(win_rates[-self.patience :])
        reached = [rate >= self.threshold - TOLERANCE for rate in recent]
        if len(recent) < self.patience or not all(reached):
            at_least, below = (lambda v: v >= self.threshold), (lambda v: v < self.threshold)
            rates = ", ".join(shown(rate, at_least if ok else below) for rate, ok in zip(recent, reached))
            return False, f"win rate below {self.threshold} in the last {self.patience} matches: [{rates}]"
        change = abs(win_rates[-1] - win_rates[-2]) if played >= 2 else 0.0
        if not change <= self.epsilon + TOLERANCE:
            return False, f"last change {shown(change, lambda v: v > self.epsilon)} > epsilon {self.epsilon}"
        return True, f"win rate >= {self.threshold} for {self.patience} matches, last change {shown(change, lambda v: v <= self.epsilon)} <= {self.epsilon}"


def match_plan(domain: Domain, episodes_per_scenario: int, seed: int, step: int) -> list[tuple[dict[str, Any], int]]:
    """``(reset options, episode seed)`` of every episode of a match, scenario by scenario."""
    plan = []
    for scenario in domain.arena:
        for _ in range(episodes_per_scenario):
            index = len(plan)
            plan.append(({"scenario": scenario.id, "profile": {"bank_seed": mix_seed(seed, step, index, 1)}}, mix_seed(seed, step, index)))
    return plan


def heldout_plan(domain: Domain, repeats: int, seed: int) -> list[tuple[dict[str, Any], int]]:
    """The fixed held-out episodes: each held-out scenario ``repeats`` times at its own concealment level."""
    return [
        ({"scenario": scenario.id, "profile": {"bank_seed": mix_seed(seed, index, repeat, 1)}}, mix_seed(seed, index, repeat))
        for index, scenario in enumerate(domain.heldout)
        for repeat in range(repeats)
    ]


def agent_won(trajectory: Trajectory) -> bool:
    """The arena's win: a strict PASS."""
    return metrics.passed(trajectory)


def match_summary(trajectories: Sequence[Trajectory]) -> dict[str, Any]:
    """Win rate over customer-winnable scenarios, the safety check, and the per-scenario breakdown."""
    per_scenario = metrics.by_group(trajectories, "scenario")
    return {
        "win_rate": metrics.win_rate(trajectories),
        "safety_pass_rate": metrics.safety_pass_rate(trajectories),
        "routing_accuracy": metrics.routing_accuracy(trajectories),
        "strict_pass": metrics.strict_pass_rate(trajectories),
        "agent_reward": metrics.mean_reward(trajectories, "agent"),
        "customer_reward": metrics.mean_reward(trajectories, "customer"),
        "concealment": metrics.customer_turn_rate(trajectories, "concealment"),
        "per_scenario": {name: row["strict_pass_rate"] for name, row in per_scenario.items()},
        "per_scenario_routing": {name: row["routing_accuracy"] for name, row in per_scenario.items()},
    }


def weaker_side(win_rate: float, threshold: float = 0.5) -> str:
    return "agent" if win_rate < threshold else "customer"


def gym_starts(pool: Sequence[Trajectory], weaker: str, count: int, failure_fraction: float, rng: random.Random) -> list[dict[str, Any]]:
    """``count`` episode profiles from ``pool``: ``failure_fraction`` of them from episodes the weaker side
    lost (the agent loses without a strict PASS, the customer when the agent passes), the rest from its
    wins; when one kind is missing, all come from the other."""
    lost = [t for t in pool if agent_won(t) == (weaker == "customer")]
    won = [t for t in pool if agent_won(t) != (weaker == "customer")]
    failures = round(count * failure_fraction)
    if not lost:
        failures = 0
    elif not won:
        failures = count
    chosen = [lost[rng.randrange(len(lost))] for _ in range(failures)] + [won[rng.randrange(len(won))] for _ in range(count - failures)]
    return [dict(t.profile) for t in chosen]
