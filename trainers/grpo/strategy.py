"""A CPU strategy policy for the SEAD agent: a softmax over dialogue moves, conditioned on what the
agent can observe, rendering utterances from the baseline templates.

It makes the whole four-phase SEAD loop (curriculum -> dialogues -> GRPO -> Mistake Analysis) run
on a laptop in minutes, so curriculum research needs no GPU. The policy never sees the hidden
state: its features are what a caller hears (cues and reactions in the owner's last words, the
operation steps the owner has said it did) and what it said itself (its acts so far, its last move).

The moves are what the rewritten owner (``scenarios/sead/data/UNDERSTANDING.md``) understands: one
or two short template sentences a turn (never a monologue), the least-used phrasing (never a
near-repeat), the operation steps as instructions in order from the owner's confirmations. What is
left to learn is the call's strategy: open with the identity check, answer a concern before
pitching, pitch until the owner asks what to do, then walk it through the claim.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from dialogue_gym.errors import ConfigError
from dialogue_gym.scenarios.sead.agents import (
    CUES,
    PHRASES,
    READY,
    fresh_phrase,
    next_guide_step,
    note_steps,
    track_estimate,
)
from dialogue_gym.scenarios.sead.parsing import render_agent_output
from trainers.common.atomic import write_json
from trainers.common.rundir import read_checkpoint_json

MOVES: tuple[str, ...] = (
    "opening", "value", "evidence", "cost", "rules", "confirm", "empathy", "respect_time", "simplify",
    "ai_disclosure", "ask_readiness", "guide", "simplify+guide", "empathy+value", "empathy+evidence", "closing",
    "answer", "empathy+answer",
)
"""Dialogue moves: one act, or two acts said as two sentences (``"empathy+value"``). ``guide`` gives
the next operation step the owner has not yet confirmed (:func:`note_steps`), so the policy learns
*when* to walk the owner through the claim, and the templates keep the steps in order. ``answer``
answers the concern in the owner's last words (:func:`answer`): the policy learns *when* to answer
rather than which of 14 concern types maps to which act, which sparse success alone teaches too
slowly to reach a good call in 150 iterations."""

_SIGNALS: tuple[tuple[str, str], ...] = (
    ("irritated", r"ugh|look,|annoying|push"),
    ("doubtful", r"believe|scam|catch|proof"),
    ("uninterested", r"not (really )?interested|why would i need"),
    ("satisfied", r"answers it|fair enough|i see"),
    ("lapse", r"missed that|what did you say"),
    ("not_agreed", r"haven't agreed"),
    ("repeated", r"already said|repeating what i say"),
    ("scripted", r"reading a script"),
    ("confused", r"talking about|makes no sense|what do you mean"),
    ("unanswered", r"didn't answer|asked you what to do"),
    ("what_about", r"what is this about"),
    ("stuck", r"where is that|screen again"),
    ("out_of_order", r"did that already|haven't done the first part"),
    ("distrust", r"not sure i trust"),
)
"""How the owner voices its reaction to the last turn (its words only, never its hidden state)."""

_SAID: tuple[str, ...] = ("value", "evidence", "cost", "rules", "ask_readiness")
"""The agent's own earlier acts it remembers (what it said, not what landed)."""

FEATURES: tuple[str, ...] = (
    "bias", "first_turn", "early", "middle", "late", "steps_0", "steps_1", "steps_2",
    "ready", "quiet", *(f"cue:{act}" for act, _ in CUES), *(f"signal:{name}" for name, _ in _SIGNALS),
    *(f"said:{act}" for act in _SAID), *(f"last:{move}" for move in MOVES),
)
_INDEX = {name: i for i, name in enumerate(FEATURES)}

_SIGNAL_PATTERNS = tuple((name, re.compile(pattern, re.IGNORECASE)) for name, pattern in _SIGNALS)


def features(observation: dict[str, Any], memory: dict[str, Any]) -> list[int]:
    """Indices of the active binary features for the agent's next move: the call's progress, the
    cues and signals in the owner's last words, the steps the owner has confirmed so far
    (:func:`note_steps`, which this updates) and the acts the agent has already said."""
    turn = int(observation["turn"])
    active = ["bias"]
    if turn == 0:
        active.append("first_turn")
    else:
        active.append("early" if turn <= 2 else "middle" if turn <= 5 else "late")
        said = observation["messages"][-1]["content"]
        note_steps(memory, said)
        memory["needs"] = [act for act, pattern in CUES if pattern.search(said)]
        heard = [f"cue:{act}" for act in memory["needs"]]
        heard += [f"signal:{name}" for name, pattern in _SIGNAL_PATTERNS if pattern.search(said)]
        if READY.search(said):
            heard.append("ready")
        active += heard or ["quiet"]
    active.append(f"steps_{min(memory.get('steps_done', 0), 2)}")
    active += [f"said:{act}" for act in _SAID if act in memory.get("said", ())]
    if memory.get("last"):
        active.append(f"last:{memory['last']}")
    return [_INDEX[name] for name in active]


def answer(memory: dict[str, Any]) -> str:
    """What the owner's concern in its last words calls for (:data:`CUES`, as the ``adaptive``
    baseline reads them), or an acknowledgement when it voiced none. It never gives a step or a
    pitch: when to walk the owner through the claim and when to pitch is the policy's to learn."""
    concerns = [act for act in memory.get("needs", []) if act != "guide"]
    act = concerns[0] if concerns else "empathy"
    memory.setdefault("said", set()).add(act)
    return fresh_phrase(act, memory)


def render(move: str, memory: dict[str, Any]) -> str:
    """The utterance of ``move``: the baseline templates, least-used phrasing first, the next due
    step for ``guide``; remembers which acts were said."""
    parts = []
    said = memory.setdefault("said", set())
    memory["last"] = move
    for act in move.split("+"):
        said.add(act)
        if act == "opening":
            parts.append(PHRASES["opening"][0])
        elif act == "guide":
            parts.append(next_guide_step(memory))
        elif act == "answer":
            parts.append(answer(memory))
        else:
            parts.append(fresh_phrase(act, memory))
    return " ".join(parts)


def policy_gradient(
    probabilities: Callable[[list[int]], np.ndarray], shape: tuple[int, ...], records: Sequence[dict[str, Any]], advantages: Sequence[float]
) -> tuple[np.ndarray, float]:
    """The REINFORCE gradient of a linear softmax over moves, averaged over episodes, and the mean entropy
    of its moves: every step ``(active features, choice)`` of episode i adds A_i (onehot(choice) - pi) to
    the rows of its active features. Zero gradient and entropy for no steps."""
    gradient = np.zeros(shape)
    entropy, moves = 0.0, 0
    for record, advantage in zip(records, advantages):
        for active, choice in record["steps"]:
            pi = probabilities(active)
            entropy -= float((pi * np.log(pi + 1e-12)).sum())
            delta = -pi
            delta[choice] += 1.0
            gradient[active] += advantage * delta
            moves += 1
    return gradient / max(1, len(records)), entropy / max(1, moves)


SAVED_FIELDS = {"features": list, "moves": list, "learning_rate": (int, float), "weights": list}
"""The fields of a saved ``strategy.json``."""


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
        gradient, entropy = policy_gradient(self.probabilities, self.weights.shape, records, advantages)
        self.weights += self.learning_rate * gradient
        return {"loss/policy_gradient_norm": float(np.linalg.norm(gradient)), "policy/entropy": entropy}

    # -- persistence ----------------------------------------------------------------------
    def save(self, directory: str | Path) -> None:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        write_json(directory / "strategy.json", {"features": FEATURES, "moves": MOVES, "learning_rate": self.learning_rate, "weights": self.weights.tolist()})

    @classmethod
    def load(cls, directory: str | Path, greedy: bool = False) -> StrategyPolicy:
        data = read_checkpoint_json(Path(directory) / "strategy.json", SAVED_FIELDS)
        if tuple(data["features"]) != FEATURES or tuple(data["moves"]) != MOVES:
            raise ConfigError(f"{directory}: saved strategy policy has other features/moves than this version; retrain it.")
        return cls(data["learning_rate"], greedy, np.asarray(data["weights"]))

    def describe(self, top: int = 3) -> dict[str, list[str]]:
        """The most likely moves per single feature (for reading what was learned)."""
        return {name: [MOVES[i] for i in np.argsort(-self.weights[index])[:top]] for name, index in _INDEX.items()}


