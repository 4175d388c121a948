"""A trainable owner for SEAD's "Train URM" ablation (paper Table 3: the user role-play model trained
jointly with the agent, rewarded when the agent fails; CR 35.2 against SEAD's 52.0).

The paper's jointly trained role-play model writes the whole user record each turn: its reply, its
own next state (cooperation, emotion, trust) and the status that ends the call (1 done, -1 hang-up).
This CPU analogue has the same power over the call. Each owner turn it picks one of :data:`MOVES`:

* ``play``: the fixed scripted owner's record, unchanged (what SEAD's fixed role-play model does);
* ``cool`` / ``warm``: the scripted reply, with the owner's own next state one level lower / higher on
  every dimension (the state the scripted dynamics read on the next turn, so the call drifts);
* ``hang_up``: end the call now (status -1), with the scripted owner's words plus its goodbye line;
* ``accept``: do the operation now (status 1), whatever the agent said, with cooperation raised to
  the game's minimum for acting (an LLM user writes that number itself too).

The agent hears ordinary owner text throughout: every reply is made of the scripted owner's own
phrases. The policy reads the call as the owner sees it: the turn, its own state, the acts it
recognises in the agent's last words (:func:`~dialogue_gym.scenarios.sead.acts.analyze`, the
scripted owner's own recogniser) and what the scripted owner would do next (continue, hang up, done).

It starts close to the fixed owner (``play`` with probability :data:`INITIAL_PLAY_PROBABILITY` on
every turn), as the paper's joint run starts from the same role-play model, and is trained with the
agent's GRPO (batch-mean advantage, one step per iteration) on the game's adversarial user reward
(``SeadConfig.user_reward="adversarial"``: success_reward when the agent fails).
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from dialogue_gym.errors import ConfigError
from dialogue_gym.scenarios.sead.acts import ACTS, analyze
from dialogue_gym.scenarios.sead.game import MIN_COOPERATION_TO_ACT, SILENCE
from dialogue_gym.scenarios.sead.parsing import parse_user_output, render_user_output
from dialogue_gym.scenarios.sead.prompts import caller_words
from dialogue_gym.scenarios.sead.scripted_user import COMPLETED, ScriptedUser
from dialogue_gym.scenarios.sead.state import STATE_DIMS, STATE_NAMES, UserState
from dialogue_gym.seeding import mix_seed
from trainers.common.atomic import write_json
from trainers.common.rundir import read_checkpoint_json
from trainers.grpo.strategy import policy_gradient

MOVES: tuple[str, ...] = ("play", "cool", "warm", "hang_up", "accept")
"""The owner's choices each turn (see the module docstring)."""
INITIAL_PLAY_PROBABILITY = 0.95
"""Chance of ``play`` per turn before training (the others share the rest): the fixed owner, slightly
loosened, as a sampled LLM role-play model is. Fixed before any run, not tuned."""
HANG_UP_LINE = "I'm not interested. Goodbye."
"""The scripted owner's own goodbye, said when the trained owner hangs up."""

_SCRIPTED_STATUS = {0: "continue", 1: "done", -1: "hang_up"}
FEATURES: tuple[str, ...] = (
    "bias", "early", "middle", "late",
    *(f"{name}:{level}" for name, levels in zip(STATE_NAMES, STATE_DIMS) for level in range(levels)),
    *(f"heard:{act}" for act in sorted(ACTS)), "heard:nothing",
    *(f"scripted:{status}" for status in _SCRIPTED_STATUS.values()),
)
_INDEX = {name: i for i, name in enumerate(FEATURES)}


def initial_weights() -> np.ndarray:
    """Zero weights but the bias row, whose ``play`` logit gives ``play`` INITIAL_PLAY_PROBABILITY."""
    weights = np.zeros((len(FEATURES), len(MOVES)))
    others = len(MOVES) - 1
    weights[_INDEX["bias"], MOVES.index("play")] = math.log(others * INITIAL_PLAY_PROBABILITY / (1 - INITIAL_PLAY_PROBABILITY))
    return weights


def features(observation: dict[str, Any], scripted_status: int) -> list[int]:
    """Active feature indices: the turn, the owner's own state, the acts it heard, the scripted status."""
    turn = int(observation["turn"])
    active = ["bias", "early" if turn <= 2 else "middle" if turn <= 5 else "late"]
    active += [f"{name}:{int(level)}" for name, level in zip(STATE_NAMES, observation["state"])]
    utterance = caller_words(observation["messages"][-1]["content"])
    heard = analyze("" if utterance.strip() == SILENCE else utterance).acts
    active += [f"heard:{act}" for act in sorted(heard)] or ["heard:nothing"]
    active.append(f"scripted:{_SCRIPTED_STATUS[scripted_status]}")
    return [_INDEX[name] for name in active]


def _shifted(state: UserState, step: int) -> UserState:
    return UserState(*(value + step for value in state)).clamped()


def apply_move(move: str, scripted_record: str, before: UserState) -> str:
    """The user record of ``move``, built from the scripted owner's record of this turn."""
    scripted = parse_user_output(scripted_record, before)
    if move == "play":
        return scripted_record
    if move == "hang_up":
        return render_user_output(f"{scripted.reply} {HANG_UP_LINE}", scripted.state, -1, scripted.think)
    if move == "accept":
        state = scripted.state._replace(cooperation=max(scripted.state.cooperation, MIN_COOPERATION_TO_ACT))
        return render_user_output(COMPLETED, state, 1, scripted.think)
    state = _shifted(scripted.state, -1 if move == "cool" else 1)
    # A colder owner may no longer be able to act; the game would flag a completion below the minimum.
    status = 0 if scripted.status == 1 and state.cooperation < MIN_COOPERATION_TO_ACT else scripted.status
    return render_user_output(scripted.reply, state, status, scripted.think)


class JointUser:
    """Linear softmax over :data:`MOVES` from binary :data:`FEATURES` on top of the scripted owner.

    Args:
        scripted: the fixed owner whose records ``play`` returns and the other moves rewrite.
        learning_rate: step size of the gradient ascent on the advantage-weighted log-probabilities.
        weights: initial weights (default :func:`initial_weights`).
    """

    def __init__(self, scripted: ScriptedUser, learning_rate: float, weights: np.ndarray | None = None):
        if not learning_rate > 0:
            raise ConfigError(f"learning_rate must be > 0, got {learning_rate!r}.")
        self.scripted = scripted
        self.learning_rate = float(learning_rate)
        self.weights = initial_weights() if weights is None else np.array(weights, dtype=float)
        if self.weights.shape != (len(FEATURES), len(MOVES)):
            raise ConfigError(f"weights must have shape {(len(FEATURES), len(MOVES))}, got {self.weights.shape}.")

    # -- acting -------------------------------------------------------------------------
    def start(self, profile: dict[str, Any], seed: int) -> dict[str, Any]:
        # Its own stream, so the scripted owner's draws stay those of the fixed owner with this seed.
        return {"scripted": self.scripted.start(profile, seed), "rng": random.Random(mix_seed(seed, 1)), "steps": [], "moves": []}

    def probabilities(self, active: Sequence[int]) -> np.ndarray:
        logits = self.weights[list(active)].sum(axis=0)
        logits -= logits.max()
        exp = np.exp(logits)
        return exp / exp.sum()

    def act(self, observation: dict[str, Any], info: dict[str, Any], memory: dict[str, Any]) -> str:
        before = UserState(*(int(v) for v in observation["state"]))
        scripted_record = self.scripted.act(observation, info, memory["scripted"])
        active = features(observation, parse_user_output(scripted_record, before).status)
        probabilities = self.probabilities(active)
        choice = min(int(np.searchsorted(np.cumsum(probabilities), memory["rng"].random())), len(MOVES) - 1)
        memory["steps"].append([active, choice])
        memory["moves"].append(MOVES[choice])
        return apply_move(MOVES[choice], scripted_record, before)

    def act_batch(self, observations, infos, memories) -> list[str]:
        return [self.act(o, i, m) for o, i, m in zip(observations, infos, memories)]

    # -- learning -----------------------------------------------------------------------
    def record(self, memory: dict[str, Any]) -> dict[str, Any]:
        return {"steps": memory["steps"], "moves": memory["moves"]}

    def update(self, records: Sequence[dict[str, Any]], advantages: Sequence[float]) -> dict[str, float]:
        """One policy-gradient step: every move of dialogue i gets A_i, averaged over the dialogues
        (the agent's GRPO step, :meth:`trainers.grpo.strategy.StrategyPolicy.update`)."""
        gradient, entropy = policy_gradient(self.probabilities, self.weights.shape, records, advantages)
        self.weights += self.learning_rate * gradient
        return {"user/gradient_norm": float(np.linalg.norm(gradient)), "user/entropy": entropy}

    # -- persistence ----------------------------------------------------------------------
    def save(self, directory: str | Path) -> None:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        write_json(directory / "joint_user.json", {"features": FEATURES, "moves": MOVES, "learning_rate": self.learning_rate, "weights": self.weights.tolist()})

    @classmethod
    def load(cls, directory: str | Path, scripted: ScriptedUser) -> JointUser:
        path = Path(directory) / "joint_user.json"
        if not path.exists():
            raise ConfigError(f"{directory} holds no joint_user.json; pass the folder JointUser.save wrote.")
        data = read_checkpoint_json(path, {"features": list, "moves": list, "learning_rate": (int, float), "weights": list})
        if tuple(data["features"]) != FEATURES or tuple(data["moves"]) != MOVES:
            raise ConfigError(f"{path}: saved user policy has other features/moves than this version; train it again.")
        return cls(scripted, data["learning_rate"], np.asarray(data["weights"]))


def collapse_shares(records: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Shares of dialogues the trained owner ended itself: by hanging up, by accepting arbitrarily,
    and with any deviation from the scripted owner (``user/deviated``)."""
    ended = [record["moves"][-1] if record["moves"] else "play" for record in records]
    count = max(1, len(records))
    return {
        "user/hang_up_share": sum(move == "hang_up" for move in ended) / count,
        "user/accept_share": sum(move == "accept" for move in ended) / count,
        "user/deviated_share": sum(any(move != "play" for move in record["moves"]) for record in records) / count,
    }
