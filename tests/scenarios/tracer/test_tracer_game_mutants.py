"""TRACER / DM-Bench game rules, users, dynamics and judges pinned where mutation testing found them
loose (issue 43 item 6): each test names the bug it catches; the values are worked out by hand."""

from __future__ import annotations

import numpy as np

from dialogue_gym.scenarios.tracer.data import load_world
from dialogue_gym.scenarios.tracer.dynamics import FeatureMap
from dialogue_gym.scenarios.tracer.game import TracerGame
from dialogue_gym.scenarios.tracer.parsing import render_user_output
from dialogue_gym.scenarios.tracer.users import (
    IntentDynamicsUser,
    ScheduleUser,
    eager_user,
)


def test_an_evaluation_start_walks_the_sessions_in_turn_whatever_the_seed():
    game = TracerGame()
    sessions = [session.session_id for session in game.references.sessions]
    count = len(sessions)
    assert [game.evaluation_options(episode, 99)["session_id"] for episode in range(count + 1)] == [*sessions, sessions[0]]


def test_a_schedule_user_repeats_its_last_level():
    user = eager_user()
    assert [user.level({"turn": turn}, {}, {}) for turn in range(6)] == [3, 4, 5, 5, 5, 5]
    assert [ScheduleUser((1, 2)).level({"turn": turn}, {}, {}) for turn in range(4)] == [1, 2, 2, 2]


# -- the intent-dynamics features -----------------------------------------------------------------

FEATURES = FeatureMap.from_world(load_world())
PROFILE = {"user": {"personality": "skeptical", "need": "urgent"}, "merchant": {"industry": "legal", "facts": []}}


def switched_on(x) -> set[str]:
    return {name for name, value in zip(FEATURES.names, x) if value == 1.0 and name != "progress"}


def test_the_persona_need_and_industry_switch_on_their_own_features():
    x = FEATURES.features(PROFILE, [], None, 0)
    assert switched_on(x) == {"bias", "prev:start", "act:none", "personality:skeptical", "need:urgent", "industry:legal"}
    assert x[FEATURES.index("progress")] == 0.0


def test_progress_is_the_share_of_the_turn_limit_capped_at_one():
    # MAX_USER_TURNS = 15: turn 3 is 3 / 15 = 0.2; turns 15 and 20 are both 1.0
    progress = FEATURES.index("progress")
    assert [FEATURES.features(PROFILE, [], 2, turn)[progress] for turn in (3, 15, 20)] == [0.2, 1.0, 1.0]


def test_an_echo_is_of_the_users_last_reply_and_a_first_turn_repeats_nothing():
    opening = "Good morning, this is the legal office calling about your case."
    line = "We are comparing several providers before deciding anything this month"
    first = switched_on(FEATURES.features(PROFILE, [opening], 2, 1, ["Who is calling, please?"]))
    assert "turn:repeat" not in first and "turn:echo" not in first
    echoed = switched_on(FEATURES.features(PROFILE, [opening, line], 2, 2, ["Who is calling, please?", line]))
    assert "turn:echo" in echoed
    earlier = switched_on(FEATURES.features(PROFILE, [opening, line], 2, 2, [line, "Who is calling, please?"]))
    assert "turn:echo" not in earlier


# -- the scripted users ---------------------------------------------------------------------------


def test_the_intent_dynamics_user_reads_its_own_context():
    """What it heard is the role-"user" messages (the opening, then the assistant's turns), what it
    said the replies of its own records, and its previous level the last of its intent trajectory."""
    user = IntentDynamicsUser()
    profile = {"user": {"personality": "skeptical", "need": "urgent"}, "merchant": {"industry": "automotive", "facts": []}}
    reply = "I mainly want something for commuting and I need it soon"
    observation = {
        "messages": [
            {"role": "system", "content": "You are a customer."},
            {"role": "user", "content": "Hello, this is the car shop."},
            {"role": "assistant", "content": render_user_output(reply, 2, "curious")},
            {"role": "user", "content": reply},
        ],
        "turn": 1,
    }
    x = user.context(observation, {"intent_trajectory": [2, 3]}, {"profile": profile})
    expected = user.dynamics.feature_map.features(profile, ["Hello, this is the car shop.", reply], 3, 1, [reply])
    assert np.array_equal(x, expected)
    assert x[user.dynamics.feature_map.index("turn:echo")] == 1.0 and x[user.dynamics.feature_map.index("prev:3")] == 1.0
