"""SEAD's fast paths give exactly what the plain code gives: the agent record's score tags from a
template, the owner's state arrays built once, the profile's integer check, the owner's echo check
on content words it already has, and an episode stream seeded only when a game draws from it."""

import numbers
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dialogue_gym.errors import ScenarioError
from dialogue_gym.scenarios.sead import game as sead_game
from dialogue_gym.scenarios.sead import parsing
from dialogue_gym.scenarios.sead.game import SeadGame
from dialogue_gym.scenarios.sead.parsing import AGENT_SCORE_FIELDS, render_agent_output
from dialogue_gym.scenarios.sead.scripted_user import VOCABULARY, echoes, words_echo
from dialogue_gym.scenarios.sead.state import (
    ALL_STATES,
    Profile,
    _is_integer,
    sample_profile,
)
from dialogue_gym.scenarios.understanding import content_words


def tags_one_by_one(estimate) -> str:
    """The score tags as they were written before the template: one f-string per field."""
    return "".join(f"<{name}>{value}</{name}>" for name, value in zip(AGENT_SCORE_FIELDS, estimate))


@settings(max_examples=200, deadline=None)
@given(
    st.text(max_size=30),
    st.lists(st.one_of(st.integers(-10, 10), st.text(max_size=6), st.floats(allow_nan=False), st.booleans()), min_size=0, max_size=4),
)
def test_the_score_tags_are_the_tags_written_one_by_one(utterance, estimate):
    """Full estimates (ints as agents write them, and strings with braces, floats, bools) go through
    the template; shorter and longer ones through the field-by-field code, which writes one tag per field."""
    estimate = tuple(estimate)
    assert render_agent_output(utterance, estimate) == f"<response>{utterance}</response>" + tags_one_by_one(estimate)


def test_the_template_serves_full_estimates():
    """The template is what writes a three-score estimate (the scripted agents' every turn)."""
    assert parsing._ESTIMATE_TAGS.format(2, "{x}", 4) == tags_one_by_one((2, "{x}", 4))
    assert render_agent_output("Hi.", (1, 2, 3)).endswith("<trust_score>3</trust_score>")
    assert render_agent_output("Hi.") == "<response>Hi.</response>"


def test_every_observed_state_array_is_built_afresh_as_before():
    """The owner sees, for each of the 120 states, the int64 array built from it, writable and its
    own: editing it changes neither the game's state nor the next observation."""
    game = SeadGame()
    for state in ALL_STATES:
        game.reset(seed=1, options={"profile": {"state": list(state), "behaviors": [game.library.ids[0]]}})
        game.step("<response>Hello, this is Alex from FoodMap.</response>")
        handed = game.observe("user")["state"]
        assert handed.dtype == np.int64 and handed.tolist() == list(state) and handed.flags.writeable
        handed[:] = 0
        assert game.observe("user")["state"].tolist() == list(state)
        assert tuple(game.state) == state
    # the arrays copied from cannot be edited in place either, by the game or anyone reaching them
    assert not any(array.flags.writeable for array in sead_game._STATE_ARRAYS.values())
    assert len(sead_game._STATE_ARRAYS) == len(ALL_STATES)


@pytest.mark.parametrize(
    "value",
    [0, 3, -1, 10**30, True, False, np.int64(2), np.int8(-3), np.bool_(True), 2.0, "2", None, [1], 1 + 0j],
)
def test_the_integer_check_is_the_abc_check(value):
    assert _is_integer(value) == (isinstance(value, numbers.Integral) and not isinstance(value, bool))


def test_profiles_coerce_as_before():
    """A profile's dict form reads back as the profile; a bool or a float in the state is refused."""
    game = SeadGame()
    rng = random.Random(3)
    for _ in range(200):
        profile = sample_profile(rng, game.library.ids)
        assert Profile.coerce(profile.to_dict(), game.library.ids) == profile
    # not a list or tuple (a set of three ints, an int, a string of three digits), or not three ints
    for bad in ([True, 1, 1], [1.0, 1, 1], [1, 1, "1"], {1, 2, 3}, 5, "123", [1, 1]):
        with pytest.raises(ScenarioError, match="three ints"):
            Profile.coerce({"state": bad, "behaviors": [game.library.ids[0]]}, game.library.ids)


@pytest.mark.parametrize(
    "utterance, owner_line",
    [
        ("Is there a hidden fee or some catch?", "Is there a hidden fee or some catch?"),
        ("There are no hidden fees.", "Is there a hidden fee or some catch?"),
        ("No, there are no hidden fees, and the credit is free of charge.", "Is there a hidden fee or some catch?"),
        ("", "Hello?"),
        ("Free credit for your restaurant, more customers nearby.", "Why would I need more customers nearby for my restaurant?"),
    ],
)
def test_the_echo_check_on_known_words_is_the_echo_check(utterance, owner_line):
    for share, min_words in ((0.8, 3), (0.5, 1), (1.0, 4)):
        mine = content_words(utterance, VOCABULARY)
        assert words_echo(mine, owner_line, share, min_words) == echoes(utterance, owner_line, share, min_words)


def test_the_episode_stream_is_the_seeded_stream_and_a_given_start_seeds_none():
    """A reset without options draws its profile from ``Random(seed)`` as before; one whose start
    comes whole from its options (every evaluation start) seeds no stream at all."""
    game = SeadGame()
    game.reset(seed=11)
    assert game.profile == sample_profile(random.Random(11), game.library.ids)
    game.reset(seed=11, options=game.evaluation_options(4, 0))
    assert game._rng is None
    assert game.rng.random() == random.Random(11).random()
    game.reset(seed=12)  # a new episode restarts the stream from its own seed
    assert game.profile == sample_profile(random.Random(12), game.library.ids)


def test_each_agent_turn_keeps_its_own_parsed_record():
    """The same agent text twice is parsed once (the parser's memo shares the move), yet each turn's
    ``parsed`` is its own dict with its own health entry: editing one record leaves the other as it was."""
    game = SeadGame()
    game.reset(seed=3, options=game.evaluation_options(0, 0))
    line = "<response>Hello, this is Alex from FoodMap.</response><cooperation_score>2</cooperation_score><emotion_score>2</emotion_score><trust_score>2</trust_score>"
    for _ in range(2):
        game.step(line)
        if game.current_role == "user":
            game.step("<reply>Who is this?</reply><cooperation>2</cooperation><emotion>2</emotion><trust>2</trust><status>0</status>")
    first, second = (turn.parsed for turn in game.turns if turn.role == "agent")
    assert first == second and first is not second and "health" in first
    first["health"]["edited"] = True
    first["estimate"].append(9)
    assert "edited" not in second["health"] and second["estimate"] == [2, 2, 2]
