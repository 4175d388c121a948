"""CPU strategy policies for both RL-ADA sides: linear softmax policies over a few decisions, so a
whole co-evolution (bootstrap, arena matches, isolation gyms) runs on a laptop in minutes.

* :class:`StrategyAgent` decides, at each point where it has not routed yet, whether to ask a
  clarifying question or to route to one of the six tools; its features are the cue lexicon's hits
  in what the customer said (it never sees the intent). After routing it plays the protocol of the
  baseline agents (lookup, the tool, an explanation, end_call).
* :class:`StrategyCustomer` chooses its concealment style (direct / vague / one of two camouflage
  stories) for its opening and for every answer to a question; its features are its own intent's
  tool and family and the phase of the call. Utterances come from the scripted customer's lines.

Both implement the GRPO core's :class:`~trainers.grpo.policy.TrainablePolicy` (start / act_batch /
record / update / save); every decision point is one sample, weighted by its episode's advantage.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from dialogue_gym.errors import ConfigError
from dialogue_gym.scenarios.rlada.agents import (
    KeywordRouterAgent,
    clarify,
    customer_text,
    procedure_action,
)
from dialogue_gym.scenarios.rlada.cues import active_cues, context_cues, cue_hits
from dialogue_gym.scenarios.rlada.customers import customer_turn, start_memory
from dialogue_gym.scenarios.rlada.data import Domain
from trainers.common.atomic import write_json
from trainers.common.rundir import read_checkpoint_json


class LinearSoftmax:
    """Softmax over ``moves`` with logits = the sum of the weight rows of the active binary features."""

    def __init__(self, features: Sequence[str], moves: Sequence[str], learning_rate: float, weights: np.ndarray | None = None):
        if not learning_rate > 0:
            raise ConfigError(f"learning_rate must be > 0, got {learning_rate!r}.")
        self.features, self.moves = tuple(features), tuple(moves)
        self.index = {name: i for i, name in enumerate(self.features)}
        self.learning_rate = float(learning_rate)
        shape = (len(self.features), len(self.moves))
        self.weights = np.zeros(shape) if weights is None else np.array(weights, dtype=float)
        if self.weights.shape != shape:
            raise ConfigError(f"weights must have shape {shape}, got {self.weights.shape}; the checkpoint is from another domain or version.")

    def probabilities(self, active: Sequence[int], mask: Sequence[bool] | None = None) -> np.ndarray:
        logits = self.weights[list(active)].sum(axis=0)
        if mask is not None:
            logits = np.where(mask, logits, -np.inf)
        logits = logits - logits.max()
        exp = np.exp(logits)
        return exp / exp.sum()

    def choose(self, active: Sequence[int], rng: random.Random, greedy: bool, mask: Sequence[bool] | None = None) -> int:
        probabilities = self.probabilities(active, mask)
        if greedy:
            return int(probabilities.argmax())
        return min(int(np.searchsorted(np.cumsum(probabilities), rng.random())), len(self.moves) - 1)

    def gradient_step(self, samples: Sequence[tuple[Sequence[int], int, Sequence[bool] | None, float]], scale: float) -> dict[str, float]:
        """Ascend sum_i w_i * grad log pi(choice_i | active_i) / scale over ``(active, choice, mask, w)`` samples."""
        gradient = np.zeros_like(self.weights)
        entropy = 0.0
        for active, choice, mask, weight in samples:
            probabilities = self.probabilities(active, mask)
            entropy -= float((probabilities * np.log(probabilities + 1e-12)).sum())
            delta = -probabilities
            delta[choice] += 1.0
            gradient[list(active)] += weight * delta
        if samples:
            self.weights += self.learning_rate * gradient / max(1.0, scale)
        return {"loss/policy_gradient_norm": float(np.linalg.norm(gradient) / max(1.0, scale)), "policy/entropy": entropy / max(1, len(samples))}

    def to_dict(self) -> dict[str, Any]:
        return {"features": list(self.features), "moves": list(self.moves), "learning_rate": self.learning_rate, "weights": self.weights.tolist()}

    def describe(self, top: int = 2) -> dict[str, list[str]]:
        """The most likely moves per single feature (to read what was learned)."""
        return {name: [self.moves[i] for i in np.argsort(-self.weights[index])[:top]] for name, index in self.index.items()}


class _StrategyBase:
    """start / record / update / save / load shared by both sides."""

    filename = "strategy.json"
    core: LinearSoftmax
    greedy: bool

    def record(self, memory: dict[str, Any]) -> dict[str, Any]:
        return {"steps": memory["steps"]}

    def update(self, records: Sequence[dict[str, Any]], advantages: Sequence[float]) -> dict[str, float]:
        """One policy-gradient step: every decision of episode i gets A_i."""
        samples = [(active, choice, mask, float(a)) for record, a in zip(records, advantages) for active, choice, mask in record["steps"]]
        return self.core.gradient_step(samples, len(records))

    def save(self, directory: str | Path) -> None:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        write_json(directory / self.filename, self.core.to_dict())

    @staticmethod
    def _load_core(directory: str | Path, filename: str, features: Sequence[str], moves: Sequence[str]) -> LinearSoftmax:
        path = Path(directory) / filename
        data = read_checkpoint_json(path, {"features": list, "moves": list, "learning_rate": (int, float), "weights": list})
        if tuple(data["features"]) != tuple(features) or tuple(data["moves"]) != tuple(moves):
            raise ConfigError(f"{path}: saved strategy has other features/moves than this domain; retrain it.")
        return LinearSoftmax(features, moves, data["learning_rate"], np.asarray(data["weights"]))


# -- the support agent ----------------------------------------------------------------------------
def agent_features(domain: Domain) -> tuple[str, ...]:
    """Bias; questions asked so far; no cue at all; per tool: one cue, two or more, the unique leader;
    the context cues (story details); then one feature per lexicon cue (so it can learn which mislead)."""
    per_tool = [f"{tool}:{kind}" for tool in domain.tool_names for kind in ("1", "2+", "top")]
    context = [f"context:{name}" for name, _ in domain.context]
    return ("bias", "asked_0", "asked_1", "asked_2+", "no_cue", *per_tool, *context, *(f"cue:{name}" for name in domain.cue_names))


class StrategyAgent(_StrategyBase):
    """Ask or route, from the cues in what the customer has said; then the scripted protocol.

    ``teacher`` (a :class:`~dialogue_gym.scenarios.rlada.agents.KeywordRouterAgent`) makes the
    decisions instead while its choices are recorded: the supervised bootstrap ("SFT") of DA0."""

    filename = "agent_strategy.json"

    def __init__(self, domain: Domain, learning_rate: float = 1.0, greedy: bool = False, max_questions: int = 2, core: LinearSoftmax | None = None):
        self.domain = domain
        self.moves = ("ask", *domain.tool_names)
        self.core = core or LinearSoftmax(agent_features(domain), self.moves, learning_rate)
        self.greedy = greedy
        self.max_questions = max_questions
        self.teacher: KeywordRouterAgent | None = None

    def start(self, profile: dict[str, Any], seed: int) -> dict[str, Any]:
        return {"rng": random.Random(seed), "steps": []}

    def active(self, observation: dict[str, Any], memory: dict[str, Any]) -> list[int]:
        asked = memory.get("asked", 0)
        said = customer_text(observation)
        counts = cue_hits(said, self.domain)
        names = ["bias", "asked_0" if asked == 0 else "asked_1" if asked == 1 else "asked_2+"]
        names += [f"{tool}:{'1' if n == 1 else '2+'}" for tool, n in counts.items() if n]
        best = max(counts.values())
        leaders = [tool for tool, n in counts.items() if n == best]
        names += [f"context:{name}" for name in context_cues(said, self.domain)]
        if best == 0:
            names.append("no_cue")
        elif len(leaders) == 1:
            names.append(f"{leaders[0]}:top")
        offset = len(self.core.features) - len(self.domain.cue_names)
        return [self.core.index[name] for name in names] + [offset + i for i in active_cues(said, self.domain)]

    def act(self, observation: dict[str, Any], memory: dict[str, Any]) -> str:
        if "route" not in memory:
            active = self.active(observation, memory)
            mask = [memory.get("asked", 0) < self.max_questions, *[True] * (len(self.moves) - 1)]
            if self.teacher is not None:
                routed = self.teacher.route(observation, memory)
                choice = 0 if routed is None else self.moves.index(routed)
            else:
                choice = self.core.choose(active, memory["rng"], self.greedy, mask)
            memory["steps"].append([active, choice, mask])
            if choice == 0:
                return clarify(memory)
            memory["route"] = self.moves[choice]
        return procedure_action(memory["route"], observation, memory, self.max_questions)

    def act_batch(self, observations, infos, memories) -> list[str]:
        return [self.act(o, m) for o, m in zip(observations, memories)]

    def imitate(self, records: Sequence[dict[str, Any]], epochs: int, step_size: float = 1.0) -> dict[str, float]:
        """Supervised fit to recorded teacher decisions (full-batch cross-entropy ascent with ``step_size``
        per epoch, whatever the policy's RL learning rate); returns the fit accuracy."""
        samples = [(active, choice, mask, 1.0) for record in records for active, choice, mask in record["steps"]]
        learning_rate, self.core.learning_rate = self.core.learning_rate, step_size
        for _ in range(epochs):
            self.core.gradient_step(samples, len(samples) / 8)
        self.core.learning_rate = learning_rate
        hits = sum(int(self.core.probabilities(a, m).argmax() == c) for a, c, m, _ in samples)
        return {"sft/decisions": float(len(samples)), "sft/accuracy": hits / max(1, len(samples))}

    @classmethod
    def load(cls, domain: Domain, directory: str | Path, greedy: bool = False) -> StrategyAgent:
        core = cls._load_core(directory, cls.filename, agent_features(domain), ("ask", *domain.tool_names))
        return cls(domain, core.learning_rate, greedy, core=core)


# -- the adversarial customer ------------------------------------------------------------------------
PHASES = ("opening", "answer_1", "answer_2", "answer_3+")
CUSTOMER_MOVES = ("direct", "vague", "camouflage_a", "camouflage_b")
"""How the customer speaks at a decision: plainly, vaguely, or with one of its two camouflage stories
(the intent's family has two; the same choice at a later answer gives the camouflage follow-up)."""


def customer_features(domain: Domain) -> tuple[str, ...]:
    families = sorted(domain.customer["families"])
    return ("bias", *(f"phase:{p}" for p in PHASES), *(f"tool:{t}" for t in domain.tool_names), *(f"family:{f}" for f in families))


class StrategyCustomer(_StrategyBase):
    """Chooses how openly to speak (:data:`CUSTOMER_MOVES`) at its opening and at every answer to a
    question, from its own intent's tool and family and the phase of the call."""

    filename = "customer_strategy.json"

    def __init__(self, domain: Domain, learning_rate: float = 1.0, greedy: bool = False, core: LinearSoftmax | None = None):
        self.domain = domain
        self.moves = CUSTOMER_MOVES
        self.core = core or LinearSoftmax(customer_features(domain), CUSTOMER_MOVES, learning_rate)
        self.greedy = greedy

    def start(self, profile: dict[str, Any], seed: int) -> dict[str, Any]:
        memory = start_memory(self.domain, profile, seed)
        memory["steps"] = []
        memory["choice_rng"] = random.Random(seed ^ 0x5EED)
        return memory

    def act(self, observation: dict[str, Any], memory: dict[str, Any]) -> str:
        messages = observation["messages"]
        opening = not any(m["role"] == "assistant" for m in messages)
        asked = not opening and messages[-1]["role"] == "user" and "?" in messages[-1]["content"]
        if not (opening or asked):
            return customer_turn(self.domain, memory, "direct", observation)
        phase = "opening" if opening else PHASES[min(memory["questions"] + 1, 3)]
        intent = memory["intent"]
        names = ("bias", f"phase:{phase}", f"tool:{intent.tool}", f"family:{intent.family}")
        active = [self.core.index[name] for name in names]
        choice = self.core.choose(active, memory["choice_rng"], self.greedy)
        memory["steps"].append([active, choice, None])
        move = CUSTOMER_MOVES[choice]
        if move.startswith("camouflage"):
            return customer_turn(self.domain, memory, "camouflage", observation, variant=0 if move.endswith("a") else 1)
        return customer_turn(self.domain, memory, move, observation)

    def act_batch(self, observations, infos, memories) -> list[str]:
        return [self.act(o, m) for o, m in zip(observations, memories)]

    @classmethod
    def load(cls, domain: Domain, directory: str | Path, greedy: bool = False) -> StrategyCustomer:
        core = cls._load_core(directory, cls.filename, customer_features(domain), CUSTOMER_MOVES)
        return cls(domain, core.learning_rate, greedy, core=core)
