"""The ``cpu-strategy`` user policy: the intent-dynamics model with learnable weights, trained with Adam.

It plays the user exactly as the scripted simulator does (same features, same reply templates, so
its outputs always match TRACER's format) but draws levels from its own softmax weights, initially
zero (uniform over the six levels). Each act records the decision (sparse features, chosen level) in
the episode memory; :meth:`record` returns that for the run folder, so a resumed run learns from
episodes played before a crash.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from dialogue_gym.errors import ConfigError
from dialogue_gym.scenarios.tracer.data import LEVELS
from dialogue_gym.scenarios.tracer.dynamics import IntentDynamics, draw_level, softmax
from dialogue_gym.scenarios.tracer.users import IntentDynamicsUser
from trainers.common.atomic import write_json
from trainers.common.rundir import read_checkpoint_json


class Adam:
    """Adam ascent on one weight matrix (state is JSON-serialisable)."""

    def __init__(self, shape: tuple[int, ...], learning_rate: float, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8):
        if not learning_rate > 0:
            raise ConfigError(f"learning_rate must be > 0, got {learning_rate!r}.")
        self.learning_rate, self.beta1, self.beta2, self.eps = float(learning_rate), beta1, beta2, eps
        self.m, self.v, self.t = np.zeros(shape), np.zeros(shape), 0

    def step(self, weights: np.ndarray, gradient: np.ndarray) -> None:
        self.t += 1
        self.m = self.beta1 * self.m + (1 - self.beta1) * gradient
        self.v = self.beta2 * self.v + (1 - self.beta2) * gradient * gradient
        m_hat = self.m / (1 - self.beta1**self.t)
        v_hat = self.v / (1 - self.beta2**self.t)
        weights += self.learning_rate * m_hat / (np.sqrt(v_hat) + self.eps)

    def state_dict(self) -> dict[str, Any]:
        return {"learning_rate": self.learning_rate, "m": self.m.tolist(), "v": self.v.tolist(), "t": self.t}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.learning_rate, self.m, self.v, self.t = state["learning_rate"], np.array(state["m"]), np.array(state["v"]), state["t"]


def _dense(steps: Sequence[Sequence[Any]], size: int) -> tuple[np.ndarray, np.ndarray]:
    """Recorded ``[indices, values, level]`` steps as a feature matrix and the chosen levels."""
    x = np.zeros((len(steps), size))
    for row, (indices, values, _) in enumerate(steps):
        x[row, indices] = values
    return x, np.array([level for _, _, level in steps], dtype=np.int64)


class IntentPolicy(IntentDynamicsUser):
    """A trainable softmax intent-dynamics user (starts uniform)."""

    def __init__(self, learning_rate: float = 0.05, dynamics: IntentDynamics | None = None):
        super().__init__(dynamics if dynamics is not None else IntentDynamics.zeros())
        self.optimizer = Adam(self.dynamics.weights.shape, learning_rate)

    @property
    def weights(self) -> np.ndarray:
        return self.dynamics.weights

    # -- acting --------------------------------------------------------------------------
    def start(self, profile: dict[str, Any], seed: int) -> dict[str, Any]:
        return {**super().start(profile, seed), "steps": []}

    def level(self, observation: dict[str, Any], info: dict[str, Any], memory: dict[str, Any]) -> int:
        x = self.context(observation, info, memory)
        level = draw_level(x @ self.weights, self.rng(memory))
        active = np.flatnonzero(x)
        memory["steps"].append([active.tolist(), x[active].tolist(), level])
        return level

    def record(self, memory: dict[str, Any]) -> dict[str, Any]:
        return {"steps": memory["steps"]}

    # -- learning ------------------------------------------------------------------------
    def log_likelihood_gradient(self, x: np.ndarray, levels: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """sum_n weights_n * d log p(levels_n | x_n) / dW = x^T ((onehot - p) * weights)."""
        delta = -softmax(x @ self.weights)
        delta[np.arange(len(levels)), levels] += 1.0
        return x.T @ (delta * weights[:, None])

    def update(self, records: Sequence[dict[str, Any]], advantages: Sequence[Sequence[float]]) -> dict[str, float]:
        """One policy-gradient step: decision t of episode i is weighted by its (modulated) advantage
        A~_{i,t}; the gradient is averaged over episodes (on-policy, so the surrogate needs no ratio)."""
        steps = [step for record in records for step in record["steps"]]
        weights = np.concatenate([np.asarray(a, dtype=np.float64) for a in advantages]) if steps else np.zeros(0)
        if len(weights) != len(steps):
            raise ConfigError(f"got {len(weights)} turn advantages for {len(steps)} recorded decisions; give one per user turn.")
        if not steps:
            return {"loss/policy_gradient_norm": 0.0, "policy/entropy": float("nan")}
        x, levels = _dense(steps, self.dynamics.feature_map.size)
        gradient = self.log_likelihood_gradient(x, levels, weights) / max(1, len(records))
        probabilities = softmax(x @ self.weights)
        entropy = float(-(probabilities * np.log(probabilities + 1e-12)).sum(axis=1).mean())
        self.optimizer.step(self.weights, gradient)
        return {"loss/policy_gradient_norm": float(np.linalg.norm(gradient)), "policy/entropy": entropy}

    def fit(self, x: np.ndarray, levels: np.ndarray, epochs: int, learning_rate: float, batch_size: int = 256, seed: int = 0) -> dict[str, float]:
        """Stage 1 (SFT): maximise the log-likelihood of reference levels given their contexts (Adam, mini-batches)."""
        optimizer = Adam(self.weights.shape, learning_rate)
        rng = np.random.default_rng(seed)
        for _ in range(epochs):
            order = rng.permutation(len(levels))
            for start in range(0, len(order), batch_size):
                chunk = order[start : start + batch_size]
                gradient = self.log_likelihood_gradient(x[chunk], levels[chunk], np.ones(len(chunk))) / len(chunk)
                optimizer.step(self.weights, gradient)
        probabilities = softmax(x @ self.weights)[np.arange(len(levels)), levels]
        return {"sft/nll": float(-np.log(probabilities + 1e-12).mean()), "sft/samples": float(len(levels))}

    # -- persistence -----------------------------------------------------------------------
    def save(self, directory: str | Path) -> None:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        data = {"features": list(self.dynamics.feature_map.names), "levels": LEVELS, "weights": self.weights.tolist(), "optimizer": self.optimizer.state_dict()}
        write_json(directory / "intent_policy.json", data)

    @classmethod
    def load(cls, directory: str | Path) -> IntentPolicy:
        data = read_checkpoint_json(Path(directory) / "intent_policy.json", {"features": list, "weights": list, "optimizer": dict})
        policy = cls(data["optimizer"]["learning_rate"])
        if tuple(data["features"]) != policy.dynamics.feature_map.names:
            raise ConfigError(f"{directory}: the saved policy has other features than this version's; retrain it.")
        policy.dynamics.weights[:] = np.array(data["weights"])
        policy.optimizer.load_state_dict(data["optimizer"])
        return policy
