"""Decision-point GRPO (SPEC "Decision-point GRPO"): a signal for a language model that cannot yet
finish a dialogue alone.

A decision point is a start (episode seed and reset options) and a learner turn k, cut from a
dialogue of the prefix policy (a fair scripted expert, or the LM itself: on-policy states). Its group
is G copies of the game, replayed from the same seed: in each, the prefix's learner turns before k
are said again word for word, the language model samples turn k (a different seed per copy), and the
continuation policy plays every later learner turn. The counterparts see the same history up
to turn k in every copy and draw from the same generators after it (common random numbers), so the
finished dialogues' rewards differ only through the sampled turn. Advantages are standardised in
the group and the loss covers the sampled turn's tokens only (:func:`group_samples`).

A scripted continuation hears every turn, its answer discarded before the point's turn: its memory is
that of a policy that sat there all along and heard what the counterpart said. One that keeps a memory of
what it said (SEAD's ``adaptive``) is told every learner turn said in its seat (``note_said(memory,
text)``, where it has one: the prefix's turns and the LM's), so it plays on as a policy that said them;
without ``note_said`` it would continue believing it said its own discarded answers.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from dialogue_gym.envs.driver import CounterpartDriver
from dialogue_gym.errors import ScenarioError
from dialogue_gym.game import Game
from dialogue_gym.seeding import mix_seed
from dialogue_gym.types import Trajectory
from trainers.common.play import Finished, play_games
from trainers.grpo.lm import TurnSample

STD_EPS = 1e-6
"""A_i = (R_i - mean R) / (std R + STD_EPS), SPEC's GRPO."""


@dataclass(frozen=True)
class DecisionPoint:
    """Where a group starts: the episode (seed, reset options), the learner turn the LM plays (0-based)
    and ``prefix``, the learner's texts before it (as the prefix policy said them)."""

    seed: int
    options: Mapping[str, Any] = field(default_factory=dict)
    turn: int = 0
    prefix: tuple[str, ...] = ()


def draw_points(
    games: Sequence[Game], policies: Mapping[str, Any], learner: str, starts: Sequence[tuple[int, Mapping[str, Any]]], rng: random.Random
) -> list[DecisionPoint]:
    """One decision point per start: the start played by ``policies`` (the prefix policy in the learner's
    seat), cut at a learner turn drawn uniformly from that dialogue's learner turns; the learner's texts
    before it are kept, so every copy replays them word for word (whatever the prefix policy: the
    expert, or the LM itself, whose batched generation need not repeat exactly)."""
    said: dict[int, list[str]] = {}

    def record(index: int, trajectory: Trajectory, memories: dict[str, Any]) -> None:
        said[index] = [turn.raw for turn in trajectory.turns if turn.role == learner]

    play_games(games[: len(starts)], CounterpartDriver(policies, learner=None), starts, record)
    points = []
    for index, (seed, options) in enumerate(starts):
        if not said[index]:
            raise ScenarioError(f"The start (seed {seed}, options {dict(options)}) ended before the {learner!r} role's first turn; it has no decision point.")
        turn = rng.randrange(len(said[index]))
        points.append(DecisionPoint(seed, options, turn, tuple(said[index][:turn])))
    return points


class DecisionPointSeat:
    """The learner's seat in a decision-point game: the point's recorded prefix before its turn, ``lm``
    at it, ``continuation`` after it (``continuation`` may be ``lm`` itself: then the LM plays on).

    Set each game's point with :meth:`assign` on the memories :meth:`CounterpartDriver.start` returned."""

    def __init__(self, lm: Any, continuation: Any):
        self.lm, self.continuation = lm, continuation
        self.scripted = continuation is not lm

    def start(self, profile: dict[str, Any], seed: int) -> dict[str, Any]:
        scripted = self.continuation.start(profile, seed) if self.scripted else None
        return {"scripted": scripted, "profile": profile, "moves": 0, "point": None, "lm": None}

    def assign(self, memory: dict[str, Any], point: DecisionPoint, lm_seed: int, greedy: bool = False) -> None:
        """This game replays ``point``'s prefix, then its LM plays the point's turn, sampling with ``lm_seed``
        (``greedy``: decoding greedily, the turn held-out evaluation would play there)."""
        memory["point"] = point
        memory["greedy"] = greedy
        memory["lm"] = self.lm.start(memory["profile"], lm_seed)

    def act_batch(self, observations, infos, memories) -> list[str]:
        if any(memory["point"] is None for memory in memories):
            raise ScenarioError("DecisionPointSeat: a game started without a decision point; call assign(memory, point, lm_seed) after driver.start.")
        # A scripted continuation hears every turn (its answer discarded before the point's turn), so its
        # memory is that of a policy that sat there all along.
        heard = self.continuation.act_batch(observations, infos, [m["scripted"] for m in memories]) if self.scripted else None
        texts = [""] * len(observations)
        lm_rows = []
        for row, memory in enumerate(memories):
            moves, point = memory["moves"], memory["point"]
            if moves < point.turn:
                texts[row] = point.prefix[moves]
            elif moves == point.turn or not self.scripted:
                lm_rows.append(row)
            else:
                texts[row] = heard[row]
            if moves == point.turn:
                memory["heard"] = json.dumps(observations[row]["messages"])
            memory["moves"] += 1
        if lm_rows:
            # Only the point's turn of a greedy copy is greedy: an LM continuation samples on in every copy.
            for row in lm_rows:
                memories[row]["lm"]["greedy"] = memories[row]["greedy"] and memories[row]["moves"] - 1 == memories[row]["point"].turn
            sampled = self.lm.act_batch([observations[r] for r in lm_rows], [infos[r] for r in lm_rows], [memories[r]["lm"] for r in lm_rows])
            for row, text in zip(lm_rows, sampled):
                texts[row] = text
        note_said = getattr(self.continuation, "note_said", None) if self.scripted else None
        if note_said is not None:
            for text, memory in zip(texts, memories):
                note_said(memory["scripted"], text)
        return texts


def play_groups(
    games: Sequence[Game], seat: DecisionPointSeat, counterparts: Mapping[str, Any], learner: str,
    points: Sequence[DecisionPoint], group_size: int, seed: int, greedy_copy: bool = False,
) -> list[Trajectory]:
    """Play every point's G copies (``len(points) * group_size`` games, in lockstep) and return their
    trajectories point by point. Copy g of point p samples its turn with seed ``mix_seed(seed, p, g)``;
    with ``greedy_copy``, copy 0 decodes its turn greedily instead (``meta["decision_point"]["greedy"]``),
    so the group's advantages score each sampled turn against the turn greedy evaluation plays there.
    A trajectory's ``meta["learner_record"]`` is the LM's record of that turn (``prompt_ids``,
    ``completion_ids``, ``logprobs``; a greedy turn's logprobs are of the untempered model, see
    :func:`rescore_greedy`) and ``meta["decision_point"]`` the point and copy. Raises
    ScenarioError if the copies of a point did not reach its turn with the same history (the replay was
    not deterministic)."""
    total = len(points) * group_size
    if len(games) < total:
        raise ScenarioError(f"play_groups needs {total} games ({len(points)} points x G = {group_size}), got {len(games)}.")
    driver = CounterpartDriver({**counterparts, learner: seat}, learner=None)
    done: dict[int, tuple[Trajectory, dict[str, Any]]] = {}
    memories: list[dict[str, Any]] = []
    for index, game in enumerate(games[:total]):
        point = points[index // group_size]
        game.start_source = Finished(index, lambda i, trajectory: done.__setitem__(i, (trajectory, memories[i][learner])))
        game.reset(seed=point.seed, options=dict(point.options))
    for index, game in enumerate(games[:total]):
        memories.append(driver.start(game))
        point_index, copy = divmod(index, group_size)
        seat.assign(memories[-1][learner], points[point_index], mix_seed(seed, point_index, copy), greedy=greedy_copy and copy == 0)
    driver.advance(games[:total], memories)
    trajectories = []
    for point_index, point in enumerate(points):
        copies = [done[point_index * group_size + copy] for copy in range(group_size)]
        heard = {memory.get("heard") for _, memory in copies}
        if len(heard) != 1 or None in heard:
            raise ScenarioError(
                f"Decision point {point_index} (seed {point.seed}, turn {point.turn}): its {group_size} copies did not all reach the turn "
                "with the same history; the game or a policy in it is not deterministic given the seed, so the group has no common baseline."
            )
        for copy, (trajectory, memory) in enumerate(copies):
            trajectory.learner = learner
            trajectory.meta = {**trajectory.meta, "learner_record": memory["lm"]["turns"][0],
                               "decision_point": {"seed": point.seed, "turn": point.turn, "copy": copy, "greedy": greedy_copy and copy == 0}}
            trajectories.append(trajectory)
    return trajectories


def rescore_greedy(trajectories: Sequence[Trajectory], score: Any) -> int:
    """Replace the recorded logprobs of each greedy copy's turn by ``score(prompt_ids, completion_ids)``
    (the policy's logprobs at its rollout temperature, :meth:`CausalLMPolicy.score`) and return how many
    turns were rescored. Greedy decoding records the untempered model's logprobs, while the GRPO ratio's
    numerator is tempered: left as recorded, the greedy copy's ratio would start away from 1 and clipping
    would drop its gradient. Rescoring the saved records each time also covers a resumed iteration."""
    count = 0
    for trajectory in trajectories:
        if trajectory.meta["decision_point"].get("greedy"):
            record = trajectory.meta["learner_record"]
            if record["completion_ids"]:
                trajectory.meta["learner_record"] = {**record, "logprobs": score(record["prompt_ids"], record["completion_ids"])}
            count += 1
    return count


def group_advantages(rewards: Sequence[float]) -> np.ndarray:
    """A_i = (R_i - mean R) / (std R + 1e-6) within one group (population std)."""
    values = np.asarray(rewards, dtype=np.float64)
    return (values - values.mean()) / (values.std() + STD_EPS)


def pooled_rewards(rewards: Sequence[float], turns: Sequence[Sequence[int]]) -> list[float]:
    """Each copy's reward replaced by the mean reward of the copies in its group that sampled the same
    turn (token for token). An LM continuation samples on after the point, so two copies that said the
    same thing can end differently (continuation noise: 25% of the 1,800-step clone's groups at T = 1,
    docs/training.md); pooled, a reward difference in the group comes from the sampled turns alone. With
    a scripted continuation, copies that said the same play on identically and pooling changes nothing."""
    if len(rewards) != len(turns):
        raise ValueError(f"pooled_rewards: {len(rewards)} rewards for {len(turns)} sampled turns; pass one turn per copy.")
    by_turn: dict[tuple[int, ...], list[float]] = {}
    for reward, turn in zip(rewards, turns):
        by_turn.setdefault(tuple(turn), []).append(reward)
    return [float(np.mean(by_turn[tuple(turn)])) for turn in turns]


def over_greedy_advantages(rewards: Sequence[float], greedy_reward: float) -> np.ndarray:
    """A_i = max(0, R_i - R_greedy): a copy counts only where its turn did better than the greedy copy's.
    Group-normalised advantages spend most of their weight pushing down the samples worse than a greedy
    turn that already wins (docs/training.md, eleventh round: a sample beats the greedy turn in about 6% of
    groups); these train only on the turns that beat the argmax, the signal that can move it.
    :func:`group_samples` leaves the copies at 0 out of the batch."""
    return np.maximum(0.0, np.asarray(rewards, dtype=np.float64) - greedy_reward)


def group_samples(
    trajectories: Sequence[Trajectory], group_size: int, learner: str, pool_same_turn: bool = False, over_greedy: bool = False,
) -> tuple[list[TurnSample], dict[str, float]]:
    """The training samples of :func:`play_groups`' ``trajectories`` (each sampled turn's tokens,
    weighted by its copy's advantage within its group of ``group_size``; with ``pool_same_turn`` the
    advantages are of :func:`pooled_rewards`; with ``over_greedy``, :func:`over_greedy_advantages` against
    the group's greedy copy) and rollout metrics: mean reward (as played), the share of
    groups whose rewards (as trained on) differ (the others carry no signal), the mean number of distinct
    sampled turns per group, and the mean sampled-turn length."""
    samples, rewards, informative, distinct = [], [], 0, 0
    greedy_groups, beaten, beats = 0, 0, 0
    groups = [trajectories[start : start + group_size] for start in range(0, len(trajectories), group_size)]
    for group in groups:
        group_rewards = [trajectory.rewards.get(learner, 0.0) for trajectory in group]
        rewards.extend(group_rewards)
        greedy = [reward for reward, trajectory in zip(group_rewards, group) if trajectory.meta.get("decision_point", {}).get("greedy")]
        if greedy:
            greedy_groups += 1
            beaten += max(group_rewards) > greedy[0]
            beats += min(group_rewards) < greedy[0]
        said = [trajectory.meta["learner_record"]["completion_ids"] for trajectory in group]
        distinct += len({tuple(turn) for turn in said})
        if pool_same_turn:
            group_rewards = pooled_rewards(group_rewards, said)
        informative += len(set(group_rewards)) > 1
        if over_greedy and not greedy:
            raise ValueError("group_samples(over_greedy=True) needs a greedy copy in every group; play the groups with greedy_copy=True.")
        advantages = over_greedy_advantages(group_rewards, greedy[0]) if over_greedy else group_advantages(group_rewards)
        for advantage, turn in zip(advantages, (trajectory.meta["learner_record"] for trajectory in group)):
            # Over the greedy copy, a copy at 0 carries no gradient; left in, it would only dilute the
            # token mean the loss takes, and most copies are at 0 (the update would shrink about 16-fold).
            if turn["completion_ids"] and not (over_greedy and advantage == 0.0):
                samples.append(TurnSample(turn["prompt_ids"], turn["completion_ids"], turn["logprobs"], [float(advantage)] * len(turn["completion_ids"])))
    metrics = {
        "decision/mean_reward": float(np.mean(rewards)) if rewards else float("nan"),
        "decision/informative_groups": informative / max(1, len(groups)),
        "decision/distinct_turns": distinct / max(1, len(groups)),
        "decision/sampled_tokens": float(np.mean([len(s.completion_ids) for s in samples])) if samples else 0.0,
    }
    if greedy_groups:
        # With a greedy copy: how often a sampled turn beat the argmax's, and how often the argmax beat one.
        metrics["decision/greedy_beaten"] = beaten / greedy_groups
        metrics["decision/greedy_beats"] = beats / greedy_groups
    return samples, metrics
