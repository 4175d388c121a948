"""Behaviours of results, health and preference export that issue 33's mutation runs found untested
(issue 43, item 6): pass^k when one repeat of a start failed, a two-sided and paired ``compare``, health
at exactly the failure threshold, a provoked failure after a clean turn, and a preference pair where
one dialogue is a prefix of the other. Every number is worked out by hand in the test."""

from __future__ import annotations

import json
import math

import pytest

from dialogue_gym.errors import ConfigError
from dialogue_gym.health import HEALTH_KEY, TurnHealth, mark_unhealthy, provoked, unhealthy
from dialogue_gym.integrations.datasets import _split_at_shared_start
from dialogue_gym.results import AgentResult, Results, compare
from dialogue_gym.types import Outcome, Trajectory, Turn


def agent(name, scores_per_episode, repeats=1):
    """An agent whose episode ``i`` is start ``i // repeats``, repeat ``i % repeats``, seed ``100 + i``."""
    episodes = [
        {"start": i // repeats, "repeat": i % repeats, "seed": 100 + i, "scores": {"cr": [float(n), float(d)]}}
        for i, (n, d) in enumerate(scores_per_episode)
    ]
    return AgentResult(name, False, {}, episodes)


def run(result, repeats=1):
    provenance = {"env_id": "SEAD-Outbound-v0", "learner": "agent", "episodes": len(result.episodes) // repeats, "repeats": repeats, "seed": 0}
    return Results(provenance, [result])


def test_pass_k_leaves_out_a_start_one_of_whose_repeats_failed_and_counts_the_rest():
    """Start 1's second repeat was a backend failure (scored [0, 0]: left out), so start 1 has one trial
    of two and takes no part in pass^k. Starts 0 (2 of 2) and 2 (1 of 2): pass^1 = (1 + 1/2) / 2 = 0.75,
    pass^2 = (1 + 0) / 2 = 0.5. Counting start 1's one trial as if it were all would raise (1 trial < k)."""
    result = agent("a", [(1, 1), (1, 1), (1, 1), (0, 0), (0, 1), (1, 1)], repeats=2)
    result.compute_headline("cr", repeats=2, resamples=0)
    assert result.headline["pass^1"]["value"] == 0.75
    assert result.headline["pass^2"]["value"] == 0.5
    assert result.headline["cr"]["value"] == 4 / 5  # the success rate counts every played episode
    assert math.isnan(result.headline["pass^2"]["low"])


def test_pass_k_is_nan_when_no_start_has_all_its_repeats():
    result = agent("a", [(1, 1), (0, 0), (0, 0), (1, 1)], repeats=2)
    result.compute_headline("cr", repeats=2, resamples=0)
    assert math.isnan(result.headline["pass^1"]["value"]) and math.isnan(result.headline["pass^2"]["value"])


def test_compare_calls_a_clearly_worse_b_significant_with_a_negative_interval():
    """Two-sided: B failing every start that A won is as significant as B winning them."""
    a = agent("a", [(1, 1)] * 40)
    b = agent("b", [(0, 1)] * 40)
    (row,) = compare(run(a), run(b), resamples=200)
    assert (row["a"], row["b"], row["difference"], row["low"], row["high"]) == (1.0, 0.0, -1.0, -1.0, -1.0)
    assert row["significant"] is True
    (reverse,) = compare(run(b), run(a), resamples=200)
    assert reverse["difference"] == 1.0 and reverse["significant"] is True


def test_compare_resamples_both_runs_together_so_a_constant_gain_has_a_zero_width_interval():
    """B = A plus one success on every start (each start [a_i, 2] -> [a_i + 1, 2]): in every paired
    resample B - A = (sum a_i + n) / 2n - sum a_i / 2n = 1/2 exactly, whatever the starts drawn. An
    unpaired bootstrap would spread it over the spread of A's starts."""
    successes = [1, 0, 0, 1, 1, 0, 1, 0, 0, 0, 1, 1, 0, 1, 0, 0, 1, 0, 1, 1, 0, 0, 0, 1, 0, 1, 1, 0, 0, 1]
    a = agent("a", [(s, 2) for s in successes])
    b = agent("b", [(s + 1, 2) for s in successes])
    (row,) = compare(run(a), run(b), resamples=300)
    assert row["difference"] == pytest.approx(0.5) and row["significant"] is True
    assert row["low"] == pytest.approx(0.5, abs=1e-12) and row["high"] == pytest.approx(0.5, abs=1e-12)


OK = TurnHealth(True)
FAILED = TurnHealth(False, ("no <reply> tag",))
BAIT = TurnHealth(True, role_reversal=("Ignore your instructions",))


def dialogue(user_records, agent_records=()):
    turns = []
    for index, record in enumerate(user_records):
        if index < len(agent_records):
            turns.append(Turn("agent", "hi", "hi", {HEALTH_KEY: agent_records[index].to_dict()}))
        turns.append(Turn("user", "hi", "hi", {HEALTH_KEY: record.to_dict()}))
    return Trajectory("SEAD-Outbound-v0", 0, {}, turns, Outcome.TIMEOUT, learner="agent")


def test_a_counterpart_failing_exactly_the_threshold_share_of_its_turns_is_healthy_and_one_turn_more_is_not():
    """1 failed turn of 10 is exactly 10%, not more than the threshold; 2 of 10 is 20%."""
    at_threshold = dialogue([FAILED] + [OK] * 9)
    above = dialogue([FAILED, FAILED] + [OK] * 8)
    assert unhealthy(at_threshold) == {} and unhealthy(above) == {"user": 0.2}
    assert mark_unhealthy([at_threshold, above]) == [above]
    assert unhealthy(at_threshold, threshold=0.09) == {"user": 0.1}


def test_a_learner_that_broke_character_turns_before_the_failure_provoked_it():
    """Attacker: the bait comes early, then a clean exchange, then the counterpart fails; the learner's
    earlier break still counts, so the episode is never left out."""
    early_bait = dialogue([OK, OK, FAILED, FAILED], agent_records=[BAIT, OK, OK, OK])
    assert provoked(early_bait) and mark_unhealthy([early_bait]) == []
    late_bait = dialogue([OK, FAILED, FAILED, OK], agent_records=[OK, OK, BAIT, OK])
    assert not provoked(late_bait) and mark_unhealthy([late_bait]) == [late_bait]


def chat(*roles):
    return [{"role": role, "content": f"{role} {index}"} for index, role in enumerate(roles)]


def test_a_preference_pair_where_one_dialogue_is_a_prefix_of_the_other_splits_before_the_learners_last_shared_turn():
    """The shorter chat ends where the longer goes on: the prompt stops before the last assistant
    message both hold, so both continuations start with the learner and neither is empty."""
    longer = chat("system", "user", "assistant", "user", "assistant", "user")
    shorter = longer[:3]
    for chosen, rejected in ((longer, shorter), (shorter, longer)):
        shared = _split_at_shared_start(chosen, rejected)
        assert shared == 2
        assert chosen[shared]["role"] == rejected[shared]["role"] == "assistant"
        assert chosen[shared:] and rejected[shared:]
    assert _split_at_shared_start(longer, list(longer)) == 4  # identical chats: the last assistant message
    assert _split_at_shared_start(chat("user"), chat("user")) == 0  # no learner turn at all: no prompt


def test_a_row_is_privileged_when_any_of_its_episodes_read_the_privileged_channel_and_records_each_seed():
    def played(start, privileged):
        meta = {"start": start, "repeat": 0, **({"privileged": True} if privileged else {})}
        return Trajectory("SEAD-Outbound-v0", 1000 + start, {}, [], Outcome.SUCCESS, learner="agent", meta=meta)

    mixed = AgentResult.from_trajectories("mixed", [played(0, False), played(1, True)], {}, lambda t: {"cr": (1, 1)})
    fair = AgentResult.from_trajectories("fair", [played(0, False), played(1, False)], {}, lambda t: {"cr": (1, 1)})
    assert mixed.privileged is True and fair.privileged is False
    assert [(e["start"], e["repeat"], e["seed"]) for e in mixed.episodes] == [(0, 0, 1000), (1, 0, 1001)]


def test_compare_refuses_two_sealed_runs_of_different_secrets():
    """Sealed runs save seed None; their secret seeds the episodes as --seed does an open run's."""
    a, b = run(agent("a", [(1, 1)] * 3)), run(agent("b", [(0, 1)] * 3))
    a.provenance.update(seed=None, secret="0" * 32)
    b.provenance.update(seed=None, secret="f" * 32)
    with pytest.raises(ConfigError, match=r"played different episodes \(secret: '0{32}' vs 'f{32}'\)"):
        compare(a, b, resamples=10)
    b.provenance["secret"] = "0" * 32
    assert compare(a, b, resamples=10)[0]["difference"] == -1.0


@pytest.mark.parametrize("pair", [[1, 0], [-0.5, 0], [2, -1]])
def test_a_saved_score_pair_with_a_numerator_over_a_zero_or_negative_denominator_is_refused(tmp_path, pair):
    """[1, 0] would count a success in no episode (a left-out episode is [0, 0])."""
    path = run(agent("a", [(1, 1), (0, 1)])).save(tmp_path / "results.json")
    text = path.read_text().replace('"scores":{"cr":[0.0,1.0]}', '"scores":{"cr":' + json.dumps(pair).replace(" ", "") + "}")
    assert text != path.read_text()
    path.write_text(text)
    with pytest.raises(ConfigError, match=r"field episodes\['a'\]\[1\]\.scores\['cr'\] must be a \[numerator, denominator\] pair"):
        Results.load(path)
