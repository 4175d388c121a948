"""Shared fast paths give exactly what the plain code gives: the JSON depth check's bracket count
against the token scan it skips, and RL-ADA's episode stream seeded only when a start lacks a bank seed."""

import random

from hypothesis import example, given, settings
from hypothesis import strategies as st

from dialogue_gym.scenarios.common import _JSON_NESTING_TOKEN, json_depth_exceeds
from dialogue_gym.scenarios.rlada.game import RladaGame


def depth_by_scan(text: str, limit: int) -> bool:
    """The token scan alone (what json_depth_exceeds ran on every text before the bracket count)."""
    depth = 0
    for token in _JSON_NESTING_TOKEN.finditer(text):
        bracket = token.group()
        if bracket in ("[", "{"):
            depth += 1
            if depth > limit:
                return True
        elif bracket in ("]", "}"):
            depth -= 1
    return False


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet='[]{}"\\ a,:', max_size=60), st.integers(0, 6))
@example('["[[[[", [[]]]', 2)
@example("[[[]]]", 2)
@example("[[[]]]", 3)
@example('{"a": "{{{{"}', 1)
def test_the_bracket_count_answers_as_the_scan(text, limit):
    assert json_depth_exceeds(text, limit) == depth_by_scan(text, limit)


def test_a_deep_text_with_few_enough_brackets_is_impossible():
    """At the limit's own count of opening brackets the check answers without the scan, and a text
    that nests that deep does not exceed it; one more bracket nesting one deeper does."""
    assert not json_depth_exceeds("[" * 5 + "]" * 5, 5)
    assert json_depth_exceeds("[" * 6 + "]" * 6, 5)


def test_a_full_rlada_start_seeds_no_stream_and_a_partial_one_draws_as_before():
    game = RladaGame()
    game.reset(seed=9, options=game.evaluation_options(3, 0))
    assert game._rng is None
    game.reset(seed=9, options={"intent": game.domain.intents[0].name, "concealment": "direct"})
    assert game.profile["bank_seed"] == random.Random(9).getrandbits(62)
