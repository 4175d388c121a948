"""Decision-point GRPO (SPEC "Decision-point GRPO"): replay to turn k, G sampled turns, the expert
finishes, group-standardised advantages on the sampled turn's tokens only."""

import json
import random

import numpy as np
import pytest

from dialogue_gym.errors import ScenarioError
from dialogue_gym.scenarios.sead.game import SeadConfig, SeadGame
from dialogue_gym.scenarios.sead.policies import make_policy
from dialogue_gym.types import Outcome
from trainers.grpo.decision_point import (
    STD_EPS,
    DecisionPoint,
    DecisionPointSeat,
    draw_points,
    group_advantages,
    group_samples,
    play_groups,
    pooled_rewards,
    rescore_greedy,
)

GARBLE = ""
"""A move SEAD's parser rejects (an empty utterance): invalid, penalised, heard by the owner as silence."""
EOS = 0


def ids(text):
    """FakeLM's token ids: the text's bytes, then an end-of-sequence token (as a real LM's turn ends)."""
    return [*text.encode(), EOS]


class FakeLM:
    """Plays like the expert, except that candidates whose seed is odd say something useless; records
    a turn sample per move as CausalLMPolicy does (token ids are the text's bytes)."""

    def __init__(self, expert):
        self.expert = expert

    def start(self, profile, seed):
        return {"seed": seed, "turns": [], "inner": self.expert.start(profile, seed)}

    def act_batch(self, observations, infos, memories):
        texts = []
        for observation, info, memory in zip(observations, infos, memories):
            [expert_text] = self.expert.act_batch([observation], [info], [memory["inner"]])
            text = GARBLE if memory["seed"] % 2 else expert_text
            prompt = json.dumps(observation["messages"]).encode()
            memory["turns"].append({"prompt_ids": list(prompt[:8]), "completion_ids": ids(text), "logprobs": [-1.0] * len(ids(text))})
            texts.append(text)
        return texts


class Constant:
    """A scripted seat policy that says ``text`` and counts how often it was asked."""

    def __init__(self, text):
        self.text, self.asked = text, 0

    def start(self, profile, seed):
        return {}

    def act_batch(self, observations, infos, memories):
        self.asked += len(observations)
        return [self.text] * len(observations)


def sead_setup(games=16):
    pool = [SeadGame(SeadConfig(max_agent_turns=8)) for _ in range(games)]
    library = pool[0].library
    return pool, make_policy("agent", "adaptive", library), make_policy("user", "scripted", library)


def test_group_advantages_standardise_with_the_population_std():
    # rewards 1, 0, 0, 0: mean 0.25, population std sqrt(0.25 * 0.75) = 0.4330127 (ddof=1 would give 0.5, A = 1.5)
    advantages = group_advantages([1.0, 0.0, 0.0, 0.0])
    assert advantages[0] == pytest.approx(0.75 / (0.4330127019 + STD_EPS))
    assert advantages[1] == pytest.approx(-0.25 / (0.4330127019 + STD_EPS))
    assert advantages[0] == pytest.approx(1.7320468, abs=1e-6)
    assert group_advantages([0.3, 0.3, 0.3]).tolist() == [0.0, 0.0, 0.0]  # no spread, no signal
    assert STD_EPS == 1e-6


def test_the_seat_replays_the_prefix_then_samples_then_continues_and_the_continuation_hears_every_turn():
    lm, continuation = Constant("L"), Constant("C")
    lm.start = lambda profile, seed: {"seed": seed}
    seat = DecisionPointSeat(lm, continuation)
    memory = seat.start({}, 0)
    seat.assign(memory, DecisionPoint(seed=0, turn=2, prefix=("P0", "P1")), lm_seed=9)
    said = [seat.act_batch([{"messages": [{"role": "user", "content": str(t)}]}], [{}], [memory])[0] for t in range(5)]
    assert said == ["P0", "P1", "L", "C", "C"]
    assert continuation.asked == 5 and lm.asked == 1
    assert json.loads(memory["heard"]) == [{"role": "user", "content": "2"}]  # the history the LM's turn was sampled from
    with pytest.raises(ScenarioError, match="call assign"):
        seat.act_batch([{"messages": []}], [{}], [seat.start({}, 0)])


def test_the_lm_as_continuation_plays_from_its_turn_to_the_end():
    lm = Constant("L")
    lm.start = lambda profile, seed: {"seed": seed}
    seat = DecisionPointSeat(lm, lm)
    memory = seat.start({}, 0)
    seat.assign(memory, DecisionPoint(seed=0, turn=1, prefix=("P",)), lm_seed=3)
    assert [seat.act_batch([{"messages": []}], [{}], [memory])[0] for _ in range(4)] == ["P", "L", "L", "L"]
    assert lm.asked == 3


def test_draw_points_cut_each_expert_dialogue_at_one_of_its_learner_turns():
    pool, expert, user = sead_setup()
    starts = [(seed, {}) for seed in range(12)]
    points = draw_points(pool, {"agent": expert, "user": user}, "agent", starts, random.Random(0))
    lengths = {}
    for game, (seed, options) in zip(pool, starts):
        game.reset(seed=seed)
    from trainers.common.play import play_games
    from dialogue_gym.envs.driver import CounterpartDriver

    play_games(pool[:12], CounterpartDriver({"agent": expert, "user": user}, None), starts,
               lambda i, t, m: lengths.__setitem__(i, sum(turn.role == "agent" for turn in t.turns)))
    assert [p.seed for p in points] == list(range(12))
    assert all(0 <= p.turn < lengths[i] for i, p in enumerate(points))
    assert len({p.turn for p in points}) > 2  # drawn, not always the first or last turn


def test_copies_share_the_prefix_and_differ_only_from_the_sampled_turn():
    pool, expert, user = sead_setup()
    seat = DecisionPointSeat(FakeLM(expert), expert)
    points = draw_points(pool, {"agent": expert, "user": user}, "agent", [(7, {}), (8, {})], random.Random(3))
    assert all(len(p.prefix) == p.turn for p in points) and points[0].turn > 0
    trajectories = play_groups(pool, seat, {"user": user}, "agent", points, 4, seed=11)
    assert len(trajectories) == 8
    for point_index, point in enumerate(points):
        group = trajectories[4 * point_index : 4 * point_index + 4]
        prefixes = set()
        for copy, trajectory in enumerate(group):
            agent_turns = [turn for turn in trajectory.turns if turn.role == "agent"]
            cut = trajectory.turns.index(agent_turns[point.turn])
            assert tuple(turn.raw for turn in agent_turns[: point.turn]) == point.prefix  # said again word for word
            prefixes.add(json.dumps([(t.role, t.raw) for t in trajectory.turns[:cut]]))
            assert trajectory.meta["decision_point"] == {"seed": point.seed, "turn": point.turn, "copy": copy, "greedy": False}
            assert trajectory.meta["learner_record"]["completion_ids"] == ids(agent_turns[point.turn].raw)
        assert len(prefixes) == 1
        sampled = {trajectory.meta["learner_record"]["completion_ids"] == ids(GARBLE) for trajectory in group}
        assert sampled == {True, False}  # the candidates were drawn with different seeds


def test_a_garbled_sampled_turn_costs_its_copy_the_invalid_penalty_and_a_negative_advantage():
    pool, expert, user = sead_setup(64)
    seat = DecisionPointSeat(FakeLM(expert), expert)
    drawn = draw_points(pool, {"agent": expert, "user": user}, "agent", [(seed, {}) for seed in range(16)], random.Random(0))
    points = [DecisionPoint(point.seed, point.options, min(point.turn, 1), point.prefix[:1]) for point in drawn]
    trajectories = play_groups(pool, seat, {"user": user}, "agent", points, 4, seed=5)
    garbled = [t for t in trajectories if t.meta["learner_record"]["completion_ids"] == ids(GARBLE)]
    assert garbled
    for trajectory in garbled:
        converted = 1.0 if trajectory.outcome == Outcome.SUCCESS else 0.0
        assert trajectory.rewards["agent"] == pytest.approx(converted - 0.1)  # SPEC: the invalid-format penalty 0.1
    samples, metrics = group_samples(trajectories, 4, "agent")
    assert len(samples) == len(trajectories)
    by_text = {}
    for trajectory, sample in zip(trajectories, samples):
        assert len(set(sample.advantages)) == 1 and len(sample.advantages) == len(sample.completion_ids)
        by_text.setdefault(trajectory.meta["learner_record"]["completion_ids"] == ids(GARBLE), []).append(sample.advantages[0])
    assert np.mean(by_text[True]) < 0 < np.mean(by_text[False])
    assert 0 < metrics["decision/informative_groups"] <= 1
    assert metrics["decision/mean_reward"] == pytest.approx(np.mean([t.rewards["agent"] for t in trajectories]))


def test_a_game_that_is_not_deterministic_given_its_seed_is_refused():
    pool, expert, user = sead_setup()
    counter = iter(range(10**6))

    class Drifting(Constant):
        """An owner whose words depend on how often it was asked, not on the episode's seed and history."""

        def act_batch(self, observations, infos, memories):
            return [f"<reply>Number {next(counter)}.</reply><cooperation>2</cooperation><emotion>2</emotion><trust>2</trust><status>0</status>"
                    for _ in observations]

    seat = DecisionPointSeat(FakeLM(expert), expert)
    point = DecisionPoint(seed=1, turn=2, prefix=("<response>Hello.</response>", "<response>Hello again.</response>"))
    with pytest.raises(ScenarioError, match="did not all reach the turn with the same history"):
        play_groups(pool, seat, {"user": Drifting("")}, "agent", [point], 4, seed=0)


def test_too_few_games_are_named():
    pool, expert, user = sead_setup(3)
    with pytest.raises(ScenarioError, match=r"needs 4 games \(1 points x G = 4\), got 3"):
        play_groups(pool, DecisionPointSeat(FakeLM(expert), expert), {"user": user}, "agent", [DecisionPoint(seed=1)], 4, seed=0)


def test_a_decision_point_is_a_frozen_value_that_defaults_to_the_first_turn():
    from dataclasses import FrozenInstanceError

    point = DecisionPoint(seed=3)
    assert point.turn == 0 and dict(point.options) == {}
    with pytest.raises(FrozenInstanceError):
        point.turn = 2


def test_a_one_turn_dialogue_has_its_only_turn_as_the_point_and_a_learner_that_never_moves_has_none():
    pool = [SeadGame(SeadConfig(max_agent_turns=1)) for _ in range(6)]
    expert, user = make_policy("agent", "adaptive", pool[0].library), make_policy("user", "scripted", pool[0].library)
    starts = [(seed, {}) for seed in range(6)]
    points = draw_points(pool, {"agent": expert, "user": user}, "agent", starts, random.Random(0))
    assert [p.turn for p in points] == [0] * 6 and all(p.prefix == () for p in points)
    with pytest.raises(ScenarioError, match=r"ended before the 'caller' role's first turn; it has no decision point"):
        draw_points(pool, {"agent": expert, "user": user}, "caller", starts, random.Random(0))


def _trajectory(reward, completion):
    from dialogue_gym.types import Trajectory

    trajectory = Trajectory(scenario="t", seed=0, profile={}, turns=[], rewards={} if reward is None else {"agent": reward})
    trajectory.meta = {"learner_record": {"prompt_ids": [1, 2], "completion_ids": completion, "logprobs": [-1.0] * len(completion)}}
    return trajectory


def test_group_samples_count_informative_groups_and_treat_a_missing_reward_as_zero():
    # group 1: rewards 1, 0 (informative); group 2: 0.5, 0.5 (not); group 3: an aborted copy (no reward: 0) and 0
    trajectories = [_trajectory(1.0, [5]), _trajectory(0.0, [6, 7]), _trajectory(0.5, [5]), _trajectory(0.5, [5]),
                    _trajectory(None, [8]), _trajectory(0.0, [])]
    samples, metrics = group_samples(trajectories, 2, "agent")
    assert metrics["decision/informative_groups"] == pytest.approx(1 / 3)
    assert metrics["decision/mean_reward"] == pytest.approx(2.0 / 6)
    assert [s.advantages for s in samples] == [[pytest.approx(1.0, abs=1e-5)], [pytest.approx(-1.0, abs=1e-5)] * 2, [0.0], [0.0], [0.0]]
    assert metrics["decision/sampled_tokens"] == pytest.approx((1 + 2 + 1 + 1 + 1) / 5)  # the empty completion is no sample
    assert group_samples(trajectories[:2], 2, "agent")[1]["decision/informative_groups"] == 1.0  # one group, informative
    empty_samples, empty = group_samples([], 4, "agent")
    assert empty_samples == [] and empty["decision/informative_groups"] == 0 and empty["decision/sampled_tokens"] == 0.0


def test_pooled_rewards_average_the_copies_that_said_the_same_turn_token_for_token():
    # turns a, a, b, c with rewards 1, 0, 1, 1: the two a copies pool to 0.5; b and c keep theirs
    assert pooled_rewards([1.0, 0.0, 1.0, 1.0], [[5, 0], [5, 0], [6, 0], [5]]) == [0.5, 0.5, 1.0, 1.0]
    # three copies of one turn: the group's mean, 2/3, for each
    assert pooled_rewards([1.0, 1.0, 0.0], [(7,), [7], [7]]) == [pytest.approx(2 / 3)] * 3
    with pytest.raises(ValueError, match="3 rewards for 2 sampled turns"):
        pooled_rewards([1.0, 0.0, 1.0], [[1], [2]])


def test_pooling_turns_continuation_noise_into_no_signal_and_keeps_a_real_difference():
    # group 1: one turn [5] said twice, rewards 1 and 0 (the continuation's luck): informative unpooled,
    # carries no signal pooled. Group 2: turns [5], [5], [6] with rewards 1, 0, 1: pooled 0.5, 0.5, 1,
    # mean 2/3, deviations -1/6, -1/6, +1/3, population std sqrt(1/18) = sqrt(2)/6: advantages -1/sqrt(2)
    # x 2 and sqrt(2).
    trajectories = [_trajectory(1.0, [5]), _trajectory(0.0, [5]), _trajectory(0.0, [5]),
                    _trajectory(1.0, [5]), _trajectory(0.0, [5]), _trajectory(1.0, [6])]
    raw_samples, raw = group_samples(trajectories, 3, "agent")
    samples, pooled = group_samples(trajectories, 3, "agent", pool_same_turn=True)
    assert raw["decision/informative_groups"] == 1.0 and pooled["decision/informative_groups"] == 0.5
    assert pooled["decision/mean_reward"] == raw["decision/mean_reward"] == pytest.approx(3 / 6)  # as played
    assert pooled["decision/distinct_turns"] == raw["decision/distinct_turns"] == pytest.approx((1 + 2) / 2)
    assert [s.advantages[0] for s in samples[:3]] == [0.0, 0.0, 0.0]
    assert [s.advantages[0] for s in samples[3:]] == [pytest.approx(-(2**-0.5), abs=1e-5)] * 2 + [pytest.approx(2**0.5, abs=1e-5)]
    assert [s.advantages[0] for s in raw_samples[:3]] != [0.0, 0.0, 0.0]


@pytest.mark.parametrize("pool", [False, True])
def test_the_sead_trainer_passes_pool_same_turn_to_the_update(pool):
    # One recorded group of two copies that said the same turn and ended 1 and 0 (continuation noise):
    # the update the trainer makes trains on advantages +-1 unpooled and 0 pooled.
    from trainers.sead.config import build_config
    from trainers.sead.train import decision_point_step

    class Recorded:
        def completed_episodes(self, iteration):
            return {0: _trajectory(1.0, [5]), 1: _trajectory(0.0, [5])}

    class Policy:
        def step(self, samples):
            return {"advantages": [s.advantages[0] for s in samples]}

    config = build_config("cpu-lm-scratch", group_size=2, pool_same_turn=pool)
    _, update = decision_point_step(config, Recorded(), 0, [{}], Policy(), None, None, None, [])
    assert update["decision/informative_groups"] == (0.0 if pool else 1.0)
    assert update["advantages"] == ([0.0, 0.0] if pool else [pytest.approx(1.0, abs=1e-5), pytest.approx(-1.0, abs=1e-5)])


def test_the_sead_trainer_rescores_the_greedy_copies_of_a_recorded_iteration_with_greedy_copy():
    # A resumed iteration's saved greedy turn carries the untempered logprobs it was decoded with: the
    # update must train on the policy's tempered scores of it, and only with greedy_copy on.
    from trainers.sead.config import build_config
    from trainers.sead.train import decision_point_step

    class Recorded:
        def completed_episodes(self, iteration):
            greedy, sampled = _trajectory(1.0, [5, 6]), _trajectory(0.0, [7])
            greedy.meta["decision_point"], sampled.meta["decision_point"] = {"copy": 0, "greedy": True}, {"copy": 1, "greedy": False}
            return {0: greedy, 1: sampled}

    class Policy:
        def score(self, prompt, completion):
            return [-0.25] * len(completion)

        def step(self, samples):
            return {"old": [s.old_logprobs for s in samples]}

    for greedy_copy, expected in ((True, [[-0.25, -0.25], [-1.0]]), (False, [[-1.0, -1.0], [-1.0]])):
        config = build_config("cpu-lm-scratch", group_size=2, greedy_copy=greedy_copy)
        _, update = decision_point_step(config, Recorded(), 0, [{}], Policy(), None, None, None, [])
        assert update["old"] == expected
        assert update["decision/greedy_beats"] == 1.0


class GreedyOrGarble(FakeLM):
    """Says the expert's turn when its memory is marked greedy (the argmax) and garbles every sampled
    turn; records whether each move was greedy."""

    def act_batch(self, observations, infos, memories):
        texts = []
        for observation, info, memory in zip(observations, infos, memories):
            [expert_text] = self.expert.act_batch([observation], [info], [memory["inner"]])
            text = expert_text if memory.get("greedy") else GARBLE
            memory["turns"].append({"prompt_ids": [1], "completion_ids": ids(text), "logprobs": [-9.0] * len(ids(text)), "greedy": bool(memory.get("greedy"))})
            texts.append(text)
        return texts


def test_with_greedy_copy_copy_0_plays_the_argmax_once_per_group_and_counts_once_in_its_advantages():
    pool, expert, user = sead_setup(32)
    lm = GreedyOrGarble(expert)
    points = draw_points(pool, {"agent": expert, "user": user}, "agent", [(seed, {}) for seed in range(4)], random.Random(1))
    trajectories = play_groups(pool, DecisionPointSeat(lm, expert), {"user": user}, "agent", points, 4, seed=2, greedy_copy=True)
    assert len(trajectories) == 16
    for point_index in range(4):
        group = trajectories[4 * point_index : 4 * point_index + 4]
        assert [t.meta["decision_point"]["greedy"] for t in group] == [True, False, False, False]
        assert [t.meta["learner_record"]["greedy"] for t in group] == [True, False, False, False]
        assert group[0].meta["learner_record"]["completion_ids"] != ids(GARBLE)  # the argmax, not a sample
        assert all(t.meta["learner_record"]["completion_ids"] == ids(GARBLE) for t in group[1:])
    samples, metrics = group_samples(trajectories, 4, "agent")
    assert len(samples) == 16  # the greedy turn is one of the G, not an extra one
    for point_index in range(4):
        rewards = [t.rewards["agent"] for t in trajectories[4 * point_index : 4 * point_index + 4]]
        advantages = [s.advantages[0] for s in samples[4 * point_index : 4 * point_index + 4]]
        assert advantages == pytest.approx(group_advantages(rewards).tolist(), abs=1e-9)
    # a garbled sample costs the invalid penalty: the argmax beats some sample at most points
    groups = [[t.rewards["agent"] for t in trajectories[4 * p : 4 * p + 4]] for p in range(4)]
    assert metrics["decision/greedy_beats"] == sum(min(g[1:]) < g[0] for g in groups) / 4 >= 0.5
    assert metrics["decision/greedy_beaten"] == sum(max(g[1:]) > g[0] for g in groups) / 4 < 0.5
    plain = play_groups(pool, DecisionPointSeat(lm, expert), {"user": user}, "agent", points, 4, seed=2)
    assert all(t.meta["learner_record"]["completion_ids"] == ids(GARBLE) for t in plain)
    assert "decision/greedy_beats" not in group_samples(plain, 4, "agent")[1]


def test_only_the_point_turn_of_a_greedy_copy_is_greedy_when_the_lm_plays_on():
    lm = Constant("L")
    greedy_at = []
    lm.start = lambda profile, seed: {"seed": seed}
    lm.act_batch = lambda observations, infos, memories: [greedy_at.append(m.get("greedy")) or "L" for m in memories]
    seat = DecisionPointSeat(lm, lm)
    memory = seat.start({}, 0)
    seat.assign(memory, DecisionPoint(seed=0, turn=1, prefix=("P",)), lm_seed=3, greedy=True)
    assert [seat.act_batch([{"messages": []}], [{}], [memory])[0] for _ in range(4)] == ["P", "L", "L", "L"]
    assert greedy_at == [True, False, False]


def test_rescore_greedy_replaces_the_logprobs_of_greedy_turns_only():
    greedy, sampled, empty = _trajectory(1.0, [5, 6]), _trajectory(0.0, [7]), _trajectory(0.0, [])
    greedy.meta["decision_point"] = {"copy": 0, "greedy": True}
    sampled.meta["decision_point"] = {"copy": 1, "greedy": False}
    empty.meta["decision_point"] = {"copy": 0, "greedy": True}
    asked = []

    def score(prompt, completion):
        asked.append((list(prompt), list(completion)))
        return [-0.5 * (i + 1) for i in range(len(completion))]

    assert rescore_greedy([greedy, sampled, empty], score) == 2
    assert greedy.meta["learner_record"]["logprobs"] == [-0.5, -1.0]
    assert sampled.meta["learner_record"]["logprobs"] == [-1.0]
    assert asked == [([1, 2], [5, 6])]  # an empty turn has nothing to score


def test_the_sead_trainer_plays_a_greedy_copy_in_every_group_with_greedy_copy():
    from dialogue_gym.curriculum import ProfileController
    from trainers.sead.config import build_config
    from trainers.sead.train import decision_point_step

    class Fresh:
        def completed_episodes(self, iteration):
            return {}

        def append_trajectories(self, trajectories, iteration):
            self.saved = list(trajectories)

    class Learner(GreedyOrGarble):
        def score(self, prompt, completion):
            return [-0.25] * len(completion)

        def step(self, samples):
            return {"old": [s.old_logprobs[0] for s in samples]}

    pool, expert, user = sead_setup(8)
    lm = Learner(expert)
    profiles = ProfileController(mode="full", batch_size=2, n_max=200, seed=0).sample()
    for greedy_copy in (True, False):
        config = build_config("cpu-lm-scratch", group_size=4, greedy_copy=greedy_copy)
        trajectories, update = decision_point_step(config, Fresh(), 0, profiles, lm, expert, DecisionPointSeat(lm, expert), user, pool)
        assert [t.meta["decision_point"]["greedy"] for t in trajectories] == [greedy_copy, False, False, False] * 2
        assert update["old"] == ([-0.25, -9.0, -9.0, -9.0] * 2 if greedy_copy else [-9.0] * 8)
        assert ("decision/greedy_beats" in update) is greedy_copy


@pytest.mark.parametrize(
    ("prefix", "lm_says", "owner", "old", "new"),
    [
        # the LM repeats step 1 where the label was step 2: the continuation gives step 2, not its rewording
        (("opening", "guide 0"), "guide 0", ("Okay, the app is open. What's next?", "You already said that. What's next?"), "guide_again 1", "guide 1"),
        # the prefix skipped to step 2 and the LM gave step 1: step 2 is given in its other wording, not repeated
        (("opening", "guide 1"), "guide 0", ("What's next?", "Okay, the app is open. What's next?"), "guide 1", "guide_again 1"),
        # the LM skipped to step 2: once step 1 is confirmed, step 2 is given in its other wording, not repeated
        (("opening", "guide 0"), "guide 1", ("What's next?", "Okay, the app is open. What's next?"), "guide 1", "guide_again 1"),
    ],
)
def test_a_scripted_continuation_plays_on_from_what_the_prefix_and_the_lm_said(prefix, lm_says, owner, old, new):
    from dialogue_gym.scenarios.sead.agents import PHRASES
    from dialogue_gym.scenarios.sead.parsing import parse_agent_output

    def line(name):
        act, _, index = name.partition(" ")
        return PHRASES[act][int(index or 0)]

    heard = ['"Hello?"', "Alright, so what do I need to do?", *owner]
    said = {}
    for follows in (True, False):
        continuation = make_policy("agent", "adaptive", None)
        if not follows:  # today's seat: a continuation not told what was said
            continuation = Constant("")
            adaptive = make_policy("agent", "adaptive", None)
            continuation.start, continuation.act_batch = adaptive.start, adaptive.act_batch
        lm = Constant(line(lm_says))
        lm.start = lambda profile, seed: {"seed": seed}
        seat = DecisionPointSeat(lm, continuation)
        memory = seat.start({}, 0)
        seat.assign(memory, DecisionPoint(seed=0, turn=2, prefix=tuple(line(name) for name in prefix)), lm_seed=1)
        messages = []
        for turn, owner_line in enumerate(heard):
            messages.append({"role": "user", "content": owner_line})
            [text] = seat.act_batch([{"turn": turn, "messages": list(messages)}], [{}], [memory])
            messages.append({"role": "assistant", "content": text})
        said[follows] = parse_agent_output(text).utterance
    assert said == {True: line(new), False: line(old)}
