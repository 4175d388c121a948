"""evaluate's continuous batching: a slot is refilled as soon as its episode ends, every episode stays
exactly what one-at-a-time play gives, backend batches stay full, and the file stays in start order."""

import importlib.util
import json
import math
from pathlib import Path

import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.backends.base import GenerationOutput
from dialogue_gym.envs.driver import role_seed
from dialogue_gym.evaluation import EvaluationOrder, episode_seed, evaluate, load_trajectories
from dialogue_gym.scenarios.sead.game import SeadGame
from dialogue_gym.scenarios.sead.parsing import render_user_output
from dialogue_gym.seeding import mix_seed
from envs_registry import REGISTRY

GO_ON = render_user_output("Go on.", (2, 2, 2), 0)
HANG_UP = render_user_output("No thanks, bye.", (1, 1, 1), -1)
SEAD_USER_REPLIES = [GO_ON, render_user_output("Tell me more.", (3, 2, 3), 0), render_user_output("OK.", (3, 2, 2), 0), HANG_UP]
OTHER_REPLIES = ["<reply>Yes, go on.</reply>", "I see. What next?", "<think>hm</think><reply>No.</reply>", "ok"]


def dicts(trajectories):
    return json.dumps([t.to_dict() for t in trajectories])


class KeyedBackend:
    """Replies with ``replies[mix_seed(request seed) % len(replies)]``: a pure function of the request,
    so an episode's transcript cannot depend on its batch mates. Records each call's batch size."""

    def __init__(self, replies):
        self.replies = replies
        self.sizes = []

    def generate(self, requests):
        self.sizes.append(len(requests))
        return [GenerationOutput(self.replies[mix_seed(r.sampling.seed) % len(self.replies)], finish_reason="stop") for r in requests]


class HangUpAfter:
    """The SEAD user, LLM-played: says "Go on." and hangs up on its ``lengths[i]``-th reply in the
    episode at position ``i`` of the run (found from the request seed: the user's role seed plus the
    turn). Records each call's batch size."""

    def __init__(self, lengths, seed):
        game = SeadGame()
        order = EvaluationOrder(game.evaluation_strata(), seed)
        self.lengths = {role_seed(episode_seed(seed, order.start(i), 0), "user", game.roles): n for i, n in enumerate(lengths)}
        self.replies = {user_seed: 0 for user_seed in self.lengths}
        self.sizes = []

    def generate(self, requests):
        self.sizes.append(len(requests))
        outputs = []
        for request in requests:
            (user_seed,) = [s for s in self.lengths if 0 <= request.sampling.seed - s < 64]
            self.replies[user_seed] += 1
            outputs.append(GenerationOutput(HANG_UP if self.replies[user_seed] == self.lengths[user_seed] else GO_ON))
        return outputs


@pytest.mark.parametrize("entry", REGISTRY, ids=lambda entry: entry.id)
def test_every_id_plays_the_same_episodes_whatever_the_batch_size(entry):
    """Scripted play: batch_size 1 (one episode at a time) is the reference; 7 does not divide the run."""
    kwargs = {"learner": entry.default_learner, "seed": 3}
    reference = evaluate(entry.id, entry.agents[0], 30, batch_size=1, **kwargs)
    assert len({len(t.turns) for t in reference}) > 1, "episodes of one length would not tell refilling from lockstep"
    for batch_size in (7, 32):
        assert dicts(evaluate(entry.id, entry.agents[0], 30, batch_size=batch_size, **kwargs)) == dicts(reference)
    with_repeats = evaluate(entry.id, entry.agents[0], 6, repeats=2, batch_size=5, **kwargs)
    assert dicts(with_repeats) == dicts(evaluate(entry.id, entry.agents[0], 6, repeats=2, batch_size=1, **kwargs))


@pytest.mark.parametrize("entry", REGISTRY, ids=lambda entry: entry.id)
def test_an_llm_played_counterpart_gets_the_same_replies_whatever_the_batch_size(entry):
    (counterpart,) = [role for role in entry.roles if role != entry.default_learner]
    replies = SEAD_USER_REPLIES if entry.id == "SEAD-Outbound-v0" else OTHER_REPLIES
    runs = {}
    for batch_size in (1, 8):
        backend = KeyedBackend(replies)
        env_kwargs = {counterpart: "llm", f"{counterpart}_backend": backend}
        runs[batch_size] = evaluate(entry.id, entry.agents[0], 20, seed=1, learner=entry.default_learner, env_kwargs=env_kwargs, batch_size=batch_size)
        assert max(backend.sizes) == batch_size
    assert dicts(runs[8]) == dicts(runs[1])
    assert all(t.turns_of(counterpart) for t in runs[1])


def test_two_llm_roles_are_batched_alike_and_play_the_same_episodes():
    runs = {}
    for batch_size in (1, 6):
        agent, user = KeyedBackend(["<response>Hello, can you open the app?</response>", "Goodbye."]), KeyedBackend(SEAD_USER_REPLIES)
        runs[batch_size] = evaluate(
            "SEAD-Outbound-v0", "llm", 15, agent_backend=agent, env_kwargs={"user": "llm", "user_backend": user}, batch_size=batch_size
        )
        assert sum(agent.sizes) == sum(len(t.turns_of("agent")) for t in runs[batch_size])
    assert len({len(t.turns) for t in runs[1]}) > 1
    assert dicts(runs[6]) == dicts(runs[1])


def test_a_freed_slot_is_refilled_at_once_hand_counted():
    """User replies per episode, in start order: 4, 1, 2, 1, 3 (11 requests); batch_size 2.

    Lockstep groups (4, 1), (2, 1), (3) would take 4 + 2 + 3 = 9 calls. Refilling (episode: reply count):
    round 1: e0:1 e1:1 (e1 ends, e2 takes its slot); 2: e0:2 e2:1; 3: e0:3 e2:2 (ends, e3 starts);
    4: e0:4 e3:1 (both end, e4 starts); 5-7: e4 alone. 7 calls of sizes 2, 2, 2, 2, 1, 1, 1.
    """
    lengths = [4, 1, 2, 1, 3]
    backend = HangUpAfter(lengths, seed=0)
    trajectories = evaluate("SEAD-Outbound-v0", "sop", 5, env_kwargs={"user": "llm", "user_backend": backend}, batch_size=2)
    assert [len(t.turns_of("user")) for t in trajectories] == lengths
    assert {t.outcome.value for t in trajectories} == {"hangup"}
    assert backend.sizes == [2, 2, 2, 2, 1, 1, 1]
    one_at_a_time = HangUpAfter(lengths, seed=0)
    reference = evaluate("SEAD-Outbound-v0", "sop", 5, env_kwargs={"user": "llm", "user_backend": one_at_a_time}, batch_size=1)
    assert one_at_a_time.sizes == [1] * 11
    assert dicts(trajectories) == dicts(reference)


def test_batches_stay_full_while_episodes_remain_to_start():
    """40 episodes of 1-6 user replies, batch_size 8: every call is full until the last episode has
    started; then the batch only shrinks as the last episodes end."""
    lengths = [1 + mix_seed(7, i) % 6 for i in range(40)]
    backend = HangUpAfter(lengths, seed=0)
    trajectories = evaluate("SEAD-Outbound-v0", "sop", 40, env_kwargs={"user": "llm", "user_backend": backend}, batch_size=8)
    assert [len(t.turns_of("user")) for t in trajectories] == lengths
    assert sum(backend.sizes) == sum(lengths)
    draining = next(call for call, size in enumerate(backend.sizes) if size < 8)
    assert set(backend.sizes[:draining]) == {8}
    assert backend.sizes[draining:] == sorted(backend.sizes[draining:], reverse=True)
    assert len(backend.sizes) < math.ceil(sum(lengths) / 8) + max(lengths)


def test_the_file_is_written_in_start_order_and_an_interrupted_run_resumes(tmp_path):
    """The episode at position 0 is the longest, so others end first; the file and on_episode still
    follow start order, and a run stopped mid-way leaves a prefix that first_episode completes."""
    lengths = [6, 1, 2, 1, 3, 2, 1, 1]
    kwargs = {"batch_size": 3}
    whole = evaluate("SEAD-Outbound-v0", "sop", 8, env_kwargs={"user": "llm", "user_backend": HangUpAfter(lengths, 0)}, **kwargs)
    assert [len(t.turns_of("user")) for t in whole] == lengths
    seen = []
    out = tmp_path / "run.jsonl"

    def stop_after_five(trajectory):
        seen.append(trajectory.meta["start"])
        if len(seen) == 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        evaluate("SEAD-Outbound-v0", "sop", 8, env_kwargs={"user": "llm", "user_backend": HangUpAfter(lengths, 0)},
                 out=out, on_episode=stop_after_five, **kwargs)
    assert seen == [t.meta["start"] for t in whole[:5]]
    assert dicts(load_trajectories(out)) == dicts(whole[:5])
    rest = {"user": "llm", "user_backend": HangUpAfter(lengths, 0)}
    evaluate("SEAD-Outbound-v0", "sop", 3, first_episode=5, env_kwargs=rest, out=out, append=True, **kwargs)
    assert dicts(load_trajectories(out)) == dicts(whole)


def test_the_batching_benchmark_counts_fewer_calls_than_fixed_groups(capsys):
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "evaluate_batching.py"
    spec = importlib.util.spec_from_file_location("benchmark_evaluate_batching", path)
    benchmark = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(benchmark)
    row = benchmark.main(["--episodes", "48", "--batch-size", "8"])
    assert row["identical_to_one_at_a_time"]
    assert row["lower_bound"] <= row["calls"] < row["fixed_group_calls"]
    assert row["mean_fill"] == row["requests"] / row["calls"] / 8
    assert f"{row['requests']} user requests in {row['calls']} backend calls" in capsys.readouterr().out


def _dicts(trajectories):
    return [t.to_dict() for t in trajectories]


def test_a_run_nested_in_another_plays_on_games_of_its_own():
    """A callback that runs another evaluation on the same evaluator (or one of for_agent's, which share
    its games) reset games the outer run was still playing, and the outer run never ended."""
    from dialogue_gym.evaluation import Evaluator

    import itertools

    evaluator = Evaluator("SEAD-Outbound-v0", "sop", batch_size=4)
    baseline = evaluator.for_agent("adaptive")
    expected_outer, expected_inner = _dicts(evaluator.run(8, seed=3)), _dicts(baseline.run(2, seed=1))
    inner = []

    def run_the_baseline_once(_):
        if not inner:
            inner.append(baseline.run(2, seed=1))

    outer = evaluator.run(8, seed=3, on_episode=run_the_baseline_once)
    assert _dicts(outer) == expected_outer and _dicts(inner[0]) == expected_inner

    def played(pairs):  # (index in plays, trajectory) in completion order -> by index
        return sorted((index, trajectory.to_dict()) for index, trajectory in pairs)

    alone = [played(evaluator.play(evaluator.plays(6, 3), 3)), played(baseline.play(baseline.plays(6, 3), 3))]
    read = [[], []]  # two play() generators read in turn
    for pair in itertools.zip_longest(evaluator.play(evaluator.plays(6, 3), 3), baseline.play(baseline.plays(6, 3), 3)):
        for source, item in enumerate(pair):
            if item is not None:
                read[source].append(item)
    assert [played(items) for items in read] == alone


def test_a_batch_size_far_beyond_the_episodes_costs_nothing():
    """Slots past the last play stay empty: 2 episodes with batch_size 10**12 used to walk every slot."""
    assert _dicts(evaluate("SEAD-Outbound-v0", "sop", 2, seed=5, batch_size=10**12)) == _dicts(evaluate("SEAD-Outbound-v0", "sop", 2, seed=5))
