"""A CPU strategy policy for the SEAD agent: a softmax over dialogue moves, conditioned on what the
agent can observe, rendering utterances from the baseline templates.

It makes the whole four-phase SEAD loop (curriculum -> dialogues -> GRPO -> Mistake Analysis) run
on a laptop in minutes, so curriculum research needs no GPU. The policy never sees the hidden
state: its features are cues in the user's last words and the call's progress.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from dialogue_gym.errors import ConfigError
from dialogue_gym.scenarios.sead.agents import (
    CUES,
    PHRASES,
    READY,
    fresh_phrase,
    next_guide_step,
    track_estimate,
)
from dialogue_gym.scenarios.sead.parsing import render_agent_output

MOVES: tuple[str, ...] = (
    "opening", "value", "evidence", "cost", "rules", "confirm", "empathy", "respect_time", "simplify",
    "ai_disclosure", "ask_readiness", "guide", "empathy+value", "empathy+evidence", "closing",
)

_SIGNALS: tuple[tuple[str, str], ...] = (
    ("irritated", r"ugh|look,|annoying|push|already said"),
    ("doubtful", r"believe|scam|catch|proof"),
    ("uninterested", r"not (really )?interested|why would i need"),
    ("satisfied", r"answers it|fair enough|i see"),
    ("lapse", r"missed that|what did you say"),
    ("not_agreed", r"haven't agreed"),
)

FEATURES: tuple[str, ...] = (
    "bias", "first_turn", "early", "middle", "late", "guided_0", "guided_1", "guided_2+",
    "ready", *(f"cue:{act}" for act, _ in CUES), *(f"signal:{name}" for name, _ in _SIGNALS),
)
_INDEX = {name: i for i, name in enumerate(FEATURES)}

_SIGNAL_PATTERNS = tuple((name, re.compile(pattern, re.IGNORECASE)) for name, pattern in _SIGNALS)


def features(observation: dict[str, Any], memory: dict[str, Any]) -> list[int]:
    """Indices of the active binary features for the agent's next move."""
    turn = int(observation["turn"])
    active = ["bias"]
    if turn == 0:
        active.append("first_turn")
    else:
        active.append("early" if turn <= 2 else "middle" if turn <= 5 else "late")
        said = observation["messages"][-1]["content"]
        active += [f"cue:{act}" for act, pattern in CUES if pattern.search(said)]
        active += [f"signal:{name}" for name, pattern in _SIGNAL_PATTERNS if pattern.search(said)]
        if READY.search(said):
            active.append("ready")
    guided = memory.get("guide_turns", 0)
    active.append("guided_0" if guided == 0 else "guided_1" if guided == 1 else "guided_2+")
    return [_INDEX[name] for name in active]


def render(move: str, memory: dict[str, Any]) -> str:
    parts = []
    for act in move.split("+"):
        if act == "opening":
            parts.append(PHRASES["opening"][0])
        elif act == "guide":
            parts.append(next_guide_step(memory))
        else:
            parts.append(fresh_phrase(act, memory))
    return " ".join(parts)


class StrategyPolicy:
    """Linear softmax over :data:`MOVES` from binary :data:`FEATURES`, trained by policy gradient.

    Args:
        learning_rate: step size of the gradient ascent on the advantage-weighted log-probabilities.
        greedy: pick the most likely move instead of sampling (evaluation).
        weights: initial weights (default zeros: the untrained policy is uniform over moves).
    """

    def __init__(self, learning_rate: float = 0.5, greedy: bool = False, weights: np.ndarray | None = None):
        if not learning_rate > 0:
            raise ConfigError(f"learning_rate must be > 0, got {learning_rate!r}.")
        self.learning_rate = float(learning_rate)
        self.greedy = greedy
        self.weights = np.zeros((len(FEATURES), len(MOVES))) if weights is None else np.array(weights, dtype=float)
        if self.weights.shape != (len(FEATURES), len(MOVES)):
            raise ConfigError(f"weights must have shape {(len(FEATURES), len(MOVES))}, got {self.weights.shape}.")

    # -- acting -------------------------------------------------------------------------
    def start(self, profile: dict[str, Any], seed: int) -> dict[str, Any]:
        return {"rng": random.Random(seed), "steps": [], "estimate": [2, 2, 2]}

    def probabilities(self, active: Sequence[int]) -> np.ndarray:
        logits = self.weights[list(active)].sum(axis=0)
        logits -= logits.max()
        exp = np.exp(logits)
        return exp / exp.sum()

    def act(self, observation: dict[str, Any], memory: dict[str, Any]) -> str:
        active = features(observation, memory)
        probabilities = self.probabilities(active)
        if self.greedy:
            choice = int(probabilities.argmax())
        else:
            choice = int(np.searchsorted(np.cumsum(probabilities), memory["rng"].random() * probabilities.sum()))
            choice = min(choice, len(MOVES) - 1)
        memory["steps"].append([active, choice])
        said = observation["messages"][-1]["content"] if observation["turn"] else ""
        estimate = track_estimate(memory["estimate"], said)
        return render_agent_output(render(MOVES[choice], memory), estimate)

    def act_batch(self, observations, infos, memories) -> list[str]:
        return [self.act(o, m) for o, m in zip(observations, memories)]

    # -- learning -----------------------------------------------------------------------
    def record(self, memory: dict[str, Any]) -> dict[str, Any]:
        return {"steps": memory["steps"]}

    def update(self, records: Sequence[dict[str, Any]], advantages: Sequence[float]) -> dict[str, float]:
        """One policy-gradient step: every move of episode i gets A_i (SEAD's GRPO without clipping,
        exact for this on-policy single step)."""
        gradient = np.zeros_like(self.weights)
        moves = 0
        entropy = 0.0
        for record, advantage in zip(records, advantages):
            for active, choice in record["steps"]:
                probabilities = self.probabilities(active)
                entropy -= float((probabilities * np.log(probabilities + 1e-12)).sum())
                delta = -probabilities
                delta[choice] += 1.0
                gradient[active] += advantage * delta
                moves += 1
        if moves:
            self.weights += self.learning_rate * gradient / max(1, len(records))
        return {"loss/policy_gradient_norm": float(np.linalg.norm(gradient) / max(1, len(records))), "policy/entropy": entropy / max(1, moves)}

    # -- persistence ----------------------------------------------------------------------
    def save(self, directory: str | Path) -> None:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "strategy.json").write_text(
            json.dumps({"features": FEATURES, "moves": MOVES, "learning_rate": self.learning_rate, "weights": self.weights.tolist()})
        )

    @classmethod
    def load(cls, directory: str | Path, greedy: bool = False) -> StrategyPolicy:
        data = json.loads((Path(directory) / "strategy.json").read_text())
        if tuple(data["features"]) != FEATURES or tuple(data["moves"]) != MOVES:
            raise ConfigError(f"{directory}: saved strategy policy has other features/moves than this version; retrain it.")
        return cls(data["learning_rate"], greedy, np.asarray(data["weights"]))

    def describe(self, top: int = 3) -> dict[str, list[str]]:
        """The most likely moves per single feature (for reading what was learned)."""
        return {name: [MOVES[i] for i in np.argsort(-self.weights[index])[:top]] for name, index in _INDEX.items()}


