"""TRACER's reward terms and deviation-aware advantage modulation (SPEC section 2; paper 002, section 4).

For one simulated session with intent levels ``zhat_1..zhat_T*`` against its paired reference
``z_1..z_T``:

* ``R_fmt   = mean_t 1[turn t matches the output schema]``
* ``R_final = 1[z_T == zhat_T*]``
* ``R_traj  = exp(-alpha * (D + beta * |T* - T|) / T) * eta``, D the DTW cost with local cost
  ``|zhat_t - z_s|``; ``eta = eta_flat`` when the reference has >= 2 distinct levels and the simulated
  sequence only one (SPEC's decision), else 1
* ``R = l1 R_fmt + l2 R_final + l3 R_traj`` (paper: l = (0.2, 0.5, 0.3), alpha = beta = 1, eta_flat = 0.2)

Advantages: ``A_i`` = group-standardised R (GRPO; :func:`~dialogue_gym.rewards.advantages.group_standardized_advantages`),
then per simulated turn ``A~_{i,t} = A_i * (1 - l_adv * sign(A_i) * tanh(gamma * c_t))`` with c_t the
discounted deviation suffix (:func:`dialogue_gym.metrics.dtw.discounted_suffix`). ``l_adv = 0`` gives
``A_i`` back; for ``l_adv`` in [0, 1] the sign never flips.

Everything is a pure function; :func:`trl_format_reward` and :func:`trl_intent_reward` have TRL's
``reward_funcs`` signature (``completions`` plus dataset columns as keyword arguments).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from dialogue_gym.errors import ConfigError
from dialogue_gym.metrics.dtw import dtw
from dialogue_gym.rewards.advantages import group_standardized_advantages

DEFAULT_WEIGHTS = (0.2, 0.5, 0.3)


def _levels(value: Any, name: str) -> np.ndarray:
    array = np.asarray(value, dtype=np.float64)
    if array.ndim != 1 or array.size == 0 or not np.all(np.isfinite(array)):
        raise ConfigError(f"{name} must be a non-empty 1-D sequence of intent levels, got {value!r:.80}.")
    return array


def format_reward(format_ok: Sequence[bool]) -> float:
    """R_fmt: the fraction of turns whose output matched the schema."""
    flags = np.asarray(format_ok, dtype=bool)
    if flags.ndim != 1 or flags.size == 0:
        raise ConfigError(f"format_ok must be a non-empty sequence of bools (one per simulated turn), got {format_ok!r:.80}.")
    return float(flags.mean())


def final_reward(simulated: Sequence[float], reference: Sequence[float]) -> float:
    """R_final: 1 when the last simulated level equals the reference's last level."""
    return float(_levels(simulated, "simulated")[-1] == _levels(reference, "reference")[-1])


def flatness(simulated: Sequence[float], reference: Sequence[float], eta_flat: float = 0.2) -> float:
    """eta: ``eta_flat`` when the reference varies (>= 2 distinct levels) but the simulation is constant, else 1."""
    _check_eta_flat(eta_flat)
    reference_levels = _levels(reference, "reference")
    return _flatness(_levels(simulated, "simulated"), reference_levels, eta_flat)


def _check_eta_flat(eta_flat: Any) -> None:
    if isinstance(eta_flat, bool) or not isinstance(eta_flat, (int, float)) or not 0.0 < eta_flat <= 1.0:
        raise ConfigError(f"eta_flat must be in (0, 1], got {eta_flat!r}.")


def _flatness(simulated_levels: np.ndarray, reference_levels: np.ndarray, eta_flat: float) -> float:
    # distinct levels counted as a set: an episode's few levels cost np.unique's sort and call more than the count
    varies = len(set(reference_levels.tolist())) >= 2
    flat = len(set(simulated_levels.tolist())) == 1
    return float(eta_flat) if varies and flat else 1.0


def trajectory_reward(
    simulated: Sequence[float],
    reference: Sequence[float],
    alpha: float = 1.0,
    beta: float = 1.0,
    eta_flat: float = 0.2,
    cost: float | None = None,
) -> float:
    """R_traj = exp(-alpha (D + beta |T* - T|) / T) * eta; pass ``cost`` (D) when it is already known.
    Every argument is checked before the DTW runs."""
    simulated_levels, reference_levels = _levels(simulated, "simulated"), _levels(reference, "reference")
    _check_trajectory_settings(alpha, beta, eta_flat)
    distance = dtw(simulated_levels, reference_levels) if cost is None else float(cost)
    return _trajectory_reward(simulated_levels, reference_levels, alpha, beta, eta_flat, distance)[0]


def _check_trajectory_settings(alpha: float, beta: float, eta_flat: float) -> None:
    if alpha < 0 or beta < 0:
        raise ConfigError(f"alpha and beta must be >= 0, got alpha={alpha!r}, beta={beta!r}.")
    _check_eta_flat(eta_flat)


def _trajectory_reward(
    simulated_levels: np.ndarray, reference_levels: np.ndarray, alpha: float, beta: float, eta_flat: float, distance: float
) -> tuple[float, float]:
    """``(R_traj, eta)`` of levels and settings already checked."""
    eta = _flatness(simulated_levels, reference_levels, eta_flat)
    length_gap = abs(simulated_levels.size - reference_levels.size)
    return math.exp(-alpha * (distance + beta * length_gap) / reference_levels.size) * eta, eta


@dataclass(frozen=True)
class TracerReward:
    """The three terms of one session, the weights, and what they were computed from."""

    r_fmt: float
    r_final: float
    r_traj: float
    dtw_cost: float
    eta: float
    weights: tuple[float, float, float] = DEFAULT_WEIGHTS

    def weighted(self) -> dict[str, float]:
        """Each term times its weight, keyed ``format`` / ``final`` / ``trajectory`` (they sum to :attr:`total`)."""
        l1, l2, l3 = self.weights
        return {"format": l1 * self.r_fmt, "final": l2 * self.r_final, "trajectory": l3 * self.r_traj}

    @property
    def total(self) -> float:
        return sum(self.weighted().values())

    def to_dict(self) -> dict[str, float]:
        return {
            "r_fmt": self.r_fmt, "r_final": self.r_final, "r_traj": self.r_traj,
            "dtw_cost": self.dtw_cost, "eta": self.eta, "total": self.total,
        }


def tracer_reward(
    simulated: Sequence[float],
    reference: Sequence[float],
    format_ok: Sequence[bool],
    weights: tuple[float, float, float] = DEFAULT_WEIGHTS,
    alpha: float = 1.0,
    beta: float = 1.0,
    eta_flat: float = 0.2,
    cost: float | None = None,
) -> TracerReward:
    """R = l1 R_fmt + l2 R_final + l3 R_traj of one simulated session against its reference. Every
    argument is checked before the DTW runs."""
    if len(format_ok) != len(simulated):
        raise ConfigError(f"format_ok has {len(format_ok)} flags for {len(simulated)} simulated turns; give one per turn.")
    if len(weights) != 3:
        raise ConfigError(f"weights must be (l1, l2, l3), got {weights!r}.")
    r_fmt = format_reward(format_ok)
    simulated_levels, reference_levels = _levels(simulated, "simulated"), _levels(reference, "reference")
    _check_trajectory_settings(alpha, beta, eta_flat)
    distance = dtw(simulated_levels, reference_levels) if cost is None else float(cost)
    r_traj, eta = _trajectory_reward(simulated_levels, reference_levels, alpha, beta, eta_flat, distance)
    return TracerReward(
        r_fmt=r_fmt,
        r_final=float(simulated_levels[-1] == reference_levels[-1]),
        r_traj=r_traj,
        dtw_cost=distance,
        eta=eta,
        weights=tuple(float(w) for w in weights),
    )


def modulate_advantage(advantage: float, suffix: Sequence[float], l_adv: float = 0.2, gamma: float = 0.5) -> np.ndarray:
    """A~_t = A (1 - l_adv sign(A) tanh(gamma c_t)) for each turn's deviation suffix c_t >= 0.

    Equivalently ``A - l_adv |A| tanh(gamma c_t)``: larger downstream deviation weakens reinforcement
    (A > 0) and strengthens suppression (A < 0)."""
    if isinstance(l_adv, bool) or not isinstance(l_adv, (int, float)) or not 0.0 <= l_adv <= 1.0:
        raise ConfigError(f"l_adv must be in [0, 1] (larger values could flip the advantage's sign), got {l_adv!r}.")
    if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or gamma <= 0:
        raise ConfigError(f"gamma must be a positive number, got {gamma!r}.")
    c = np.asarray(suffix, dtype=np.float64)
    if c.ndim != 1 or np.any(c < 0) or not np.all(np.isfinite(c)):
        raise ConfigError(f"suffix must be a 1-D sequence of finite deviations >= 0, got {suffix!r:.80}.")
    return float(advantage) * (1.0 - l_adv * np.sign(advantage) * np.tanh(gamma * c))


def turn_advantages(
    rewards: Sequence[float],
    suffixes: Sequence[Sequence[float]],
    groups: Sequence[object] | None = None,
    l_adv: float = 0.2,
    gamma: float = 0.5,
    eps: float = 1e-6,
) -> list[np.ndarray]:
    """Per-turn advantages of a batch: GRPO-standardise ``rewards`` within ``groups`` (e.g. the reference
    session id of each of its G rollouts), then modulate each session's turns by its suffixes c_t."""
    if len(suffixes) != len(rewards):
        raise ConfigError(f"suffixes has {len(suffixes)} entries for {len(rewards)} rewards; give one c_t sequence per session.")
    advantages = group_standardized_advantages(rewards, groups, eps)
    return [modulate_advantage(a, c, l_adv, gamma) for a, c in zip(advantages, suffixes)]


# -- TRL reward functions -------------------------------------------------------------------------
def _completion_text(completion: Any) -> str:
    """TRL passes a string (standard format) or a list of messages (conversational format)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        return str(completion[-1].get("content", ""))
    raise ConfigError(f"a completion must be a str or a list of chat messages, got {completion!r:.80}.")


def trl_format_reward(completions: Sequence[Any], **kwargs: Any) -> list[float]:
    """TRL reward function: 1.0 for each completion in TRACER's exact output schema, else 0.0."""
    from dialogue_gym.scenarios.tracer.parsing import parse_user_output

    return [float(parse_user_output(_completion_text(c), 2).format_ok) for c in completions]


def trl_intent_reward(completions: Sequence[Any], intent_level: Sequence[int], **kwargs: Any) -> list[float]:
    """TRL reward function: 1.0 when a completion's intent level equals the dataset column ``intent_level``
    (the reference level of that turn), else 0.0; an unreadable level scores 0."""
    from dialogue_gym.scenarios.tracer.parsing import parse_user_output

    if len(intent_level) != len(completions):
        raise ConfigError(f"intent_level has {len(intent_level)} values for {len(completions)} completions.")
    scores = []
    for completion, target in zip(completions, intent_level):
        move = parse_user_output(_completion_text(completion), -1)
        scores.append(float(move.intent_level == int(target)))
    return scores
