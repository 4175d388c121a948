"""verify's building blocks pinned by hand (issue 43, item 6: verify.py's mutants): when two saved
values are the same, how a value is quoted, the first difference of a replay, the one-line verdict,
where the seeds come from and when unhealthy counterparts count as invalid."""

from __future__ import annotations

import math

import pytest

from dialogue_gym.errors import ConfigError
from dialogue_gym.verify import Verdict, _first_difference, _same, _seeding, _short, _unhealthy_flag


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        (1.0, 1.0 + 1e-10, True),  # within 1e-9 relative
        (1.0, 1.0 + 1e-8, False),
        (0.0, 1e-13, True),  # within 1e-12 absolute
        (0.0, 1e-11, False),
        (True, 1.0 + 1e-12, False),  # a bool is compared exactly, never within a tolerance
        (1.0 + 1e-12, True, False),
        (False, False, True),
        (False, True, False),
        (math.nan, math.nan, True),
        (math.nan, 1.0, False),
        (1.0, math.nan, False),
        (None, math.nan, True),  # strict JSON writes NaN as null
        (math.nan, None, True),
        (None, None, True),
        (None, 0.0, False),
        (0.0, None, False),
        ({"a": 1.0, "b": [1, 2]}, {"b": [1, 2], "a": 1.0 + 1e-12}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ({"a": 1}, {"a": 2}, False),
        ({"a": 1}, ["a"], False),  # a dict is never the same as a list or a string
        (["a"], {"a": 1}, False),
        ({"a": 1}, "a", False),
        ([1, 2], (1, 2), True),
        ([1, 2], [1, 2, 3], False),
        ([1, 2], [1, 3], False),
        ("x", "x", True),
        ("x", "y", False),
    ],
)
def test_same(a, b, same):
    assert _same(a, b) is same


def test_short_quotes_json_or_a_repr_and_cuts_at_the_width():
    assert _short("it's") == '"it\'s"'
    assert _short([1, "é"]) == '[1, "\\u00e9"]'
    assert _short("x" * 78) == "'" + "x" * 78 + "'"  # 80 characters: whole
    assert _short("x" * 79) == "'" + "x" * 76 + "..."  # 81: cut to 80
    assert _short(12345, width=4) == "1..."
    assert _short(1234, width=4) == "1234"


def _record(turns, **rest):
    return {"turns": turns, "scenario": "S", "seed": 1, "profile": {}, "outcome": "success", "rewards": {}, "reward_terms": {}, "meta": {}, **rest}


def test_the_first_difference_names_the_turn_and_key_or_the_field():
    user = {"role": "user", "text": "hi", "reward": 1.0}
    assert _first_difference(_record([user, user]), _record([user, {**user, "text": "ho"}])) == (
        "turn 1 (user) text: recorded 'hi', replay gives 'ho'"
    )
    assert _first_difference(_record([user]), _record([user, user])) == "recorded 1 turns, replay gives 2"
    assert _first_difference(_record([user]), _record([user], outcome="failure")) == "outcome: recorded 'success', replay gives 'failure'"
    assert _first_difference(_record([user]), _record([user], meta={"x": 1})) == "meta: recorded {}, replay gives {\"x\": 1}"
    assert _first_difference(_record([user]), _record([{**user, "reward": 1.0 + 1e-12}])) == "no difference"


def test_the_verdict_line():
    assert Verdict(episodes=4, agents=["a", "b"]).line() == "verified: 4 episodes of 2 agent(s) re-scored and match the results, none replayed"
    assert Verdict(episodes=4, replayed=3, agents=["a"]).line() == (
        "verified: 4 episodes of 1 agent(s) re-scored and match the results, 3 replayed turn by turn"
    )
    wrong = Verdict(episodes=4, agents=["a"], mismatches=["first thing", "second"])
    assert not wrong.ok and wrong.line() == "NOT verified: 2 mismatch(es); first: first thing"


def test_seeds_come_from_the_secret_when_there_is_one_else_from_the_public_seed():
    seal, seed = _seeding({"secret": "ab" * 16, "seed": 7})
    assert seal is not None and seal.secret == bytes.fromhex("ab" * 16) and seed == 0
    assert _seeding({"seed": 7}) == (None, 7)
    for provenance in ({"sealed": True, "seed": 7}, {"replay": True, "seed": 7}):
        with pytest.raises(ConfigError, match="sealed run but hold no secret"):
            _seeding(provenance)
    for bad in (True, "7", None, 7.0):
        with pytest.raises(ConfigError, match=r"provenance\['seed'\] must be an int for an open run"):
            _seeding({"seed": bad})


@pytest.mark.parametrize(
    ("provenance", "flag"),
    [
        ({"invalid_on_unhealthy": True, "command": "eval"}, True),
        ({"invalid_on_unhealthy": False, "command": "eval --invalid-on-unhealthy"}, False),  # the key wins
        ({"command": "dialogue-gym eval X --invalid-on-unhealthy"}, True),  # files saved before the key
        ({"command": "dialogue-gym eval X"}, False),
        ({"command": None}, False),
        ({}, False),
    ],
)
def test_unhealthy_counterparts_count_as_invalid_when_the_run_asked(provenance, flag):
    assert _unhealthy_flag(provenance) is flag
