"""The intent-dynamics features and draws: the fast paths of FeatureMap.features and of the scripted
user's level equal what they replace."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dialogue_gym.envs.driver import CounterpartDriver
from dialogue_gym.scenarios.tracer import dynamics
from dialogue_gym.scenarios.tracer.acts import carries, read_turn
from dialogue_gym.scenarios.tracer.assistants import SopAssistant
from dialogue_gym.scenarios.tracer.data import load_phrases
from dialogue_gym.scenarios.tracer.game import DMBenchGame, TracerGame
from dialogue_gym.scenarios.tracer.synthetic import GroundTruthUser
from dialogue_gym.scenarios.tracer.users import IntentDynamicsUser

FACTS = (
    "down payments start from 15% on most models",
    "test drives can be booked any day of the week",
)
_PHRASES = load_phrases()["phrases"]
LINES = (
    *_PHRASES["contact"],  # each asks for contact
    *_PHRASES["answer"],
    *_PHRASES["empathy"],
    "Call me. Call me. Call me.",
    "",
    "phone wechat number contact",
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(LINES), max_size=12), st.integers(0, 5), st.booleans())
def test_asked_for_contact_is_the_full_count_compared(utterances, times, with_facts):
    facts = FACTS if with_facts else ()
    count = sum(carries(u, dynamics.CONTACT_ACT, facts) for u in utterances)
    assert dynamics._asked_for_contact(utterances, facts, times) == (count >= times)


def test_the_lines_include_both_kinds():
    """The drawn lines hold requests and non-requests, so the equality above is tested on both."""
    asked = [carries(line, dynamics.CONTACT_ACT, FACTS) for line in LINES]
    assert any(asked) and not all(asked)


# -- the scripted user's memoised decisions (draw_decision) ------------------------------------
PACKAGED = dynamics.IntentDynamics.from_file()
MAP = PACKAGED.feature_map


def plain_features(feature_map, profile, assistant_utterances, previous_level, turn, own_replies=()):
    """FeatureMap.features as written before it went through active() and vector(): the reference."""
    x = np.zeros(feature_map.size)
    positions = dynamics._positions(feature_map.names)
    facts = tuple(str(f) for f in profile.get("merchant", {}).get("facts", ()))
    on = ["bias", "prev:start" if previous_level is None else f"prev:{previous_level}"]
    if assistant_utterances:
        heard = own_replies[-1] if own_replies else ""
        reading = read_turn(assistant_utterances[-1], facts, heard, assistant_utterances[:-1])
        on += [f"act:{act}" for act in reading.acts]
        on += [f"turn:{flag}" for flag in reading.flags]
    else:
        on.append("act:none")
    if dynamics._asked_for_contact(assistant_utterances, facts, dynamics.PUSHY_AFTER):
        on.append("pushy")
    user = profile.get("user", {})
    on += [f"personality:{user.get('personality')}", f"need:{user.get('need')}"]
    on.append(f"industry:{profile.get('merchant', {}).get('industry')}")
    for name in on:
        position = positions.get(name)
        if position is not None:
            x[position] = 1.0
    x[positions["progress"]] = min(turn, feature_map.max_turns) / feature_map.max_turns
    return x


PERSONAS = (
    {"user": {"personality": "skeptical", "need": "urgent"}, "merchant": {"industry": "automotive", "facts": list(FACTS)}},
    {"user": {"personality": "impatient and direct", "need": "nope"}, "merchant": {"industry": "unknown"}},
    {"user": {}, "merchant": {"facts": [FACTS[0]]}},
    {},
)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(PERSONAS),
    st.lists(st.sampled_from(LINES), max_size=8),
    st.one_of(st.none(), st.integers(0, 6)),
    st.integers(0, 20),
    st.lists(st.sampled_from(("Why?", "How much is it?", "", "Not interested.", LINES[0])), max_size=2),
)
def test_features_are_the_plain_features(profile, utterances, previous, turn, replies):
    """features() is vector(*active()): the same x as the written-out loop, for every persona (unknown
    categories, none at all), history, previous level (out of range too), turn (past max_turns) and reply."""
    hot, progress = MAP.active(profile, utterances, previous, turn, replies)
    assert list(hot) == sorted(set(hot))
    expected = plain_features(MAP, profile, utterances, previous, turn, replies)
    assert np.array_equal(MAP.features(profile, utterances, previous, turn, replies), expected)
    assert np.array_equal(MAP.vector(hot, progress), expected)


def read_only(weights):
    weights = np.array(weights, dtype=np.float64)
    weights.flags.writeable = False
    return weights


@settings(max_examples=150, deadline=None)
@given(st.sets(st.integers(0, MAP.size - 1), max_size=10), st.integers(0, 20), st.integers(0, 2**32), st.floats(-30, 30))
def test_a_memoised_decision_is_the_plain_draw(hot, turn, seed, scale):
    """draw_decision, drawn twice (the second time from its memo), equals draw_level on the plain logits
    and leaves the generator where draw_level leaves it; for the packaged weights and scaled ones."""
    hot, progress = tuple(sorted(hot)), min(turn, MAP.max_turns) / MAP.max_turns
    for weights in (read_only(PACKAGED.weights), read_only(PACKAGED.weights * scale)):
        model = dynamics.IntentDynamics(MAP, weights)
        for _ in range(2):
            fast, plain = random.Random(seed), random.Random(seed)
            assert dynamics.draw_decision(model, hot, progress, fast) == dynamics.draw_level(MAP.vector(hot, progress) @ weights, plain)
            assert fast.getstate() == plain.getstate()


def test_a_decision_memo_is_per_matrix_feature_map_and_progress_and_read_back():
    """Two read-only matrices, one matrix under two feature maps (its progress at another position)
    and one decision at two progress values never share a memoised CDF; a decision drawn again is read
    from its memo; writeable weights are refused, since they could change under the memo."""
    bias, at = MAP.index("bias"), MAP.index("progress")
    top = np.zeros((MAP.size, 6))
    top[at, 5] = 50.0
    model = dynamics.IntentDynamics(MAP, read_only(top))
    flat = dynamics.IntentDynamics(MAP, read_only(np.zeros((MAP.size, 6))))
    names = list(MAP.names)
    names[bias], names[at] = names[at], names[bias]
    moved = dynamics.IntentDynamics(dynamics.FeatureMap(tuple(names), MAP.max_turns), model.weights)

    def draw(of, progress):  # random.Random(1)'s first draw is 0.134: level 0 of six equal levels
        return dynamics.draw_decision(of, (bias,), progress, random.Random(1))

    try:
        assert [draw(model, 0.0), draw(model, 0.5), draw(flat, 0.5), draw(moved, 0.5), draw(model, 0.5)] == [0, 5, 0, 0, 5]
        dynamics._DECISIONS[id(model.weights)][2][((bias,), 0.0)] = [0.0, 0.0, 1.0, 1.0, 1.0, 1.0]
        assert draw(model, 0.0) == 2, "a decision drawn before is drawn from its memoised CDF"
    finally:
        dynamics._DECISIONS.clear()
    with pytest.raises(ValueError, match="read-only"):
        dynamics.draw_decision(dynamics.IntentDynamics(MAP, np.zeros((MAP.size, 6))), (bias,), 0.0, random.Random(1))


def test_the_decision_memos_are_bounded(monkeypatch):
    """At most _MAX_CUMULATIVE decisions per matrix and _MAX_DECISION_MODELS matrices are kept (a full
    memo starts again), and every draw past the bound is still the plain one."""
    monkeypatch.setattr(dynamics, "_MAX_CUMULATIVE", 4)
    monkeypatch.setattr(dynamics, "_MAX_DECISION_MODELS", 3)
    dynamics._DECISIONS.clear()
    models = [dynamics.IntentDynamics(MAP, read_only(PACKAGED.weights * scale)) for scale in (1.0, 2.0, 3.0, 4.0, 5.0)]

    def same_draw(model, hot, progress, seed):
        fast, plain = random.Random(seed), random.Random(seed)
        assert dynamics.draw_decision(model, hot, progress, fast) == dynamics.draw_level(MAP.vector(hot, progress) @ model.weights, plain)

    try:
        for turn in range(11):
            same_draw(models[0], (0, 1 + turn % 7), turn / 10, turn)
            assert len(dynamics._DECISIONS[id(models[0].weights)][2]) <= 4
        for seed, model in enumerate(models * 2):
            same_draw(model, (0,), 0.5, seed)
            assert len(dynamics._DECISIONS) <= 3
    finally:
        dynamics._DECISIONS.clear()


def played(game_class, user, seed, session):
    game = game_class()
    driver = CounterpartDriver({"assistant": SopAssistant(), "user": user}, learner=None)
    game.reset(seed=seed, options={"session_id": session})
    driver.advance([game], [driver.start(game)])
    return [(turn.role, turn.raw) for turn in game.turns]


def test_the_default_user_plays_its_decisions_memoised_and_as_the_plain_draws():
    """The default scripted user's weights are read-only and its levels go through draw_decision; the
    same user with writeable weights (the plain context, logits and draw_level) plays the same episodes."""
    default = IntentDynamicsUser()
    assert not default.dynamics.weights.flags.writeable and default._memoised_decisions()
    with pytest.raises(ValueError):
        default.dynamics.weights[0, 0] = 1.0
    plain = IntentDynamicsUser(dynamics.IntentDynamics.from_file())
    assert not plain._memoised_decisions()
    sessions = TracerGame().references.sessions
    for seed in range(24):
        session = sessions[(7 * seed) % len(sessions)].session_id
        for game_class in (TracerGame, DMBenchGame):
            assert played(game_class, default, seed, session) == played(game_class, plain, seed, session)


def test_only_the_plain_decision_is_memoised():
    """A subclass with its own context or logits (the synthetic generator's hidden effects), another
    feature map class, and weights that are writeable, not float64 or of another shape go the plain way."""

    class OwnContext(IntentDynamicsUser):
        def context(self, observation, info, memory):
            return super().context(observation, info, memory)

    class OwnLogits(IntentDynamicsUser):
        def logits(self, x, memory):
            return super().logits(x, memory) + 1.0

    class OwnFeatures(dynamics.FeatureMap):
        pass

    assert not GroundTruthUser({}, {})._memoised_decisions()
    assert not OwnContext()._memoised_decisions() and not OwnLogits()._memoised_decisions()
    mapped = IntentDynamicsUser()
    mapped.dynamics = dynamics.IntentDynamics(OwnFeatures(MAP.names, MAP.max_turns), read_only(PACKAGED.weights))
    assert not mapped._memoised_decisions()
    for weights in (read_only(PACKAGED.weights).astype(np.float32), read_only(PACKAGED.weights[:, :5])):
        weights.flags.writeable = False
        user = IntentDynamicsUser()
        user.dynamics.weights = weights
        assert not user._memoised_decisions()
    user = IntentDynamicsUser()
    user.dynamics.weights = read_only(PACKAGED.weights)
    assert user._memoised_decisions()
