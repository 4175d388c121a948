"""TRACER / DM-Bench game rules, users, dynamics and judges pinned where mutation testing found them
loose (issue 43 item 6): each test names the bug it catches; the values are worked out by hand."""

from __future__ import annotations

import random

import numpy as np
import pytest

from dialogue_gym.errors import ConfigError
from dialogue_gym.scenarios.tracer.data import load_world
from dialogue_gym.scenarios.tracer.dynamics import FeatureMap, IntentDynamics, softmax
from dialogue_gym.scenarios.tracer.game import TracerConfig, TracerGame
from dialogue_gym.scenarios.tracer.parsing import render_user_output
from dialogue_gym.scenarios.tracer.users import (
    IntentDynamicsUser,
    ScheduleUser,
    eager_user,
    render_reply,
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


USER_PROFILE = {"user": {"personality": "skeptical", "need": "urgent"}, "merchant": {"industry": "automotive", "facts": []}}
OPENING = "Hello, this is the car shop."
REPLY = "I mainly want something for commuting and I need it soon"
RATIONALE = "the caller sounds like a salesperson so I keep my answers short and careful until I learn more about prices"


def user_view(assistant_line: str) -> dict:
    """The user's observation after its first reply (a record with a long rationale) and the assistant's next line."""
    return {
        "messages": [
            {"role": "system", "content": "You are a customer."},
            {"role": "user", "content": OPENING},
            {"role": "assistant", "content": render_user_output(REPLY, 2, RATIONALE)},
            {"role": "user", "content": assistant_line},
        ],
        "turn": 1,
    }


def test_the_intent_dynamics_user_hears_the_assistants_lines():
    """What it heard is the role-"user" messages (the opening, then the assistant's turns) and its
    previous level the last of its intent trajectory: a line that does not echo its reply is no echo."""
    user = IntentDynamicsUser()
    names = user.dynamics.feature_map
    line = "Our showroom is open every day, would you like to visit?"
    x = user.context(user_view(line), {"intent_trajectory": [2, 3]}, {"profile": USER_PROFILE})
    assert np.array_equal(x, names.features(USER_PROFILE, [OPENING, line], 3, 1, [REPLY]))
    assert x[names.index("turn:echo")] == 0.0 and x[names.index("prev:3")] == 1.0


def test_the_intent_dynamics_user_checks_echoes_against_its_reply_not_its_record():
    """An assistant line that quotes the user's whole reply and goes on echoes the reply; it neither
    holds the whole record nor shares half its words (the record carries a long rationale)."""
    user = IntentDynamicsUser()
    line = f"{REPLY}. Then our compact sedans are a good fit for you."
    x = user.context(user_view(line), {"intent_trajectory": [2]}, {"profile": USER_PROFILE})
    assert x[user.dynamics.feature_map.index("turn:echo")] == 1.0


def test_a_user_reply_is_checked_against_what_the_assistant_said_not_its_raw_output():
    """The assistant's raw output carries a think block; what the user heard is the <response> only. A
    reply that quotes all of it and goes on copies the assistant's line; it holds none of the think block."""
    game = TracerGame()
    game.reset(seed=0, options={"session_id": "syn-g00-s00"})
    game.step(render_user_output("Okay?", 3, "why"))
    said = "We can book a test drive for you any day of the week."
    game.step(f"<think>they want to try the car first</think><response>{said}</response>")
    result = game.step(render_user_output(f"{said} Great, how do I book it?", 4, "keen"))
    assert "the reply copies the assistant's last line" in result.info["invalid_action"]


def test_the_fallback_level_is_one_of_the_four_middle_levels():
    # LEVELS = 6: range(1, 5) holds 1-4; 0 and 5 end an episode, so neither can be the fallback
    assert [TracerConfig(fallback_intent_level=level).fallback_intent_level for level in (1, 4)] == [1, 4]
    for level in (0, 5, 6):
        with pytest.raises(ConfigError, match="fallback_intent_level must be an int 1-4"):
            TracerConfig(fallback_intent_level=level)


def test_without_the_tracer_user_reward_the_user_earns_nothing():
    game = TracerGame(TracerConfig(user_reward="none"))
    game.reset(seed=0, options={"session_id": "syn-g00-s00"})
    game.step(render_user_output("Okay?", 3, "why"))
    game.step("We can book a test drive for you any day of the week.")
    result = game.step(render_user_output("138xxxx1234", 5, "ready"))
    assert result.terminated and game.scores is None and "reward_terms" not in result.info
    assert game.trajectory().rewards["user"] == 0.0 and "tracer_reward" not in game.trajectory().meta


def test_softmax_takes_huge_logits_without_overflow():
    # exp(1000) overflows a float64; shifted by the maximum the logits are (0, -1000, ...): one level certain
    assert softmax(np.array([1000.0, 0.0, 0.0, 0.0, 0.0, 0.0])).tolist() == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]


def test_zero_dynamics_use_the_feature_map_given_or_the_worlds():
    small = FeatureMap(("bias", "progress"))
    assert IntentDynamics.zeros(small).weights.shape == (2, 6) and IntentDynamics.zeros(small).feature_map is small
    default = IntentDynamics.zeros()
    assert default.feature_map == FEATURES and default.weights.shape == (FEATURES.size, 6) and not default.weights.any()


class Lowest(random.Random):
    """Every pick is the first option, every integer the lowest allowed, every uniform ``value``."""

    def __init__(self, value: float):
        super().__init__(0)
        self.value = value

    def randrange(self, *args, **kwargs):
        return 0

    def randint(self, a, b):
        return a

    def choice(self, seq):
        return seq[0]

    def _randbelow(self, n):  # what render_reply draws its numbers with
        return 0

    def random(self):
        return self.value


def test_a_reply_is_rendered_from_the_first_templates_with_the_lowest_numbers():
    # level 5's first reply "My phone number is {phone}.", the phone 1 + 30 + xxxx + 1000
    assert render_reply(5, {"user": {}}, Lowest(0.9)) == ("My phone number is 130xxxx1000.", "The offer fits what the user needs, so they leave their contact.")


class Highest(Lowest):
    """Every pick is the last option and every integer the highest allowed."""

    def randrange(self, n, *args, **kwargs):
        return n - 1

    def randint(self, a, b):
        return b

    def _randbelow(self, n):
        return n - 1


def test_a_reply_is_rendered_from_the_last_templates_with_the_highest_numbers():
    # level 5's last reply "OK, my number is {phone}, call me.", the phone 1 + 89 + xxxx + 9999
    assert render_reply(5, {"user": {}}, Highest(0.9)) == ("OK, my number is 189xxxx9999, call me.", "The user is ready to go ahead and gives their number.")


class ThirdLowest(Lowest):
    """The third reply (level 5's "Add my WeChat: {wechat}."; the last rationale), numbers and letters the lowest allowed."""

    def randrange(self, n, *args, **kwargs):
        return min(2, n - 1)


class ThirdHighest(Highest):
    def randrange(self, n, *args, **kwargs):
        return min(2, n - 1)


def test_a_wechat_id_spans_its_whole_range():
    # randint(100, 999) and choice('abcdefgh'): user100a to user999h
    assert render_reply(5, {"user": {}}, ThirdLowest(0.9))[0] == "Add my WeChat: user100a."
    assert render_reply(5, {"user": {}}, ThirdHighest(0.9))[0] == "Add my WeChat: user999h."


def test_a_need_of_sixty_characters_is_too_long_to_quote():
    profile = {"merchant": {"industry": "automotive"}, "user": {"initial_intent": "n" * 59 + "."}}
    assert render_reply(3, profile, Lowest(0.9)) == ("Do you have used cars?", f"The user {'n' * 59}, so they ask a basic question.")
    profile["user"]["initial_intent"] = "n" * 60
    assert render_reply(3, profile, Lowest(0.9))[1] == "The user have a concrete need, so they ask a basic question."


def test_only_an_impatient_user_drops_its_final_stop_half_the_time():
    impatient = {"user": {"personality": "impatient and direct"}}
    assert render_reply(5, impatient, Lowest(0.4))[0] == "My phone number is 130xxxx1000"
    assert render_reply(5, impatient, Lowest(0.6))[0] == "My phone number is 130xxxx1000."
    assert render_reply(5, {"user": {"personality": "skeptical"}}, Lowest(0.4))[0] == "My phone number is 130xxxx1000."
