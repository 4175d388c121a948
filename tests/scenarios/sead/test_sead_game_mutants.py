"""SEAD's game rules, profiles and parsers pinned where mutation testing found them loose (issue 43
item 6): each test names the bug it catches; the values are worked out by hand from the rules."""

from __future__ import annotations

import dataclasses
import random

import gymnasium as gym
import numpy as np
import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.errors import ScenarioError
from dialogue_gym.scenarios.sead.acts import analyze
from dialogue_gym.scenarios.sead.data import load_behaviors
from dialogue_gym.scenarios.sead.game import SILENCE, SeadConfig, SeadGame
from dialogue_gym.scenarios.sead.parsing import (
    parse_agent_output,
    parse_user_output,
    render_agent_output,
    render_user_output,
)
from dialogue_gym.scenarios.sead.prompts import caller_turn
from dialogue_gym.scenarios.sead.scripted_user import (
    STEP_DONE,
    STEP_STUCK,
    ScriptedUser,
)
from dialogue_gym.scenarios.sead.state import (
    ALL_STATES,
    Profile,
    UserState,
    sample_profile,
    state_index,
)

PROFILE = {"state": [3, 2, 3], "behaviors": ["CC1"]}


def started() -> SeadGame:
    game = SeadGame()
    game.reset(seed=0, options={"profile": PROFILE})
    return game


def test_the_users_behavior_mask_is_handed_out_as_a_copy():
    game = started()
    handed = game.observe("user")["behaviors"]
    before = handed.copy()
    handed[:] = 1 - handed
    assert np.array_equal(game.observe("user")["behaviors"], before)


def test_the_caller_hears_the_owners_reply_not_its_record():
    game = started()
    game.step(render_agent_output("Hello"))
    game.step(render_user_output("Who is this?", (3, 2, 3), 0, think="secret plan"))
    assert game.observe("agent")["messages"][-1] == {"role": "user", "content": "Who is this?"}
    game.step(render_agent_output("It's FoodMap."))
    game.step(render_user_output("", (3, 2, 3), 0))
    assert game.observe("agent")["messages"][-1]["content"] == SILENCE


def test_an_evaluation_start_takes_its_state_from_the_episode_and_its_behaviors_from_the_seed():
    game = SeadGame()
    # state: ALL_STATES[episode % 120]; 121 % 120 = 1 -> (0, 0, 1), the second in (c, e, tr) order
    assert game.evaluation_options(121, 5)["profile"]["state"] == [0, 0, 1]
    assert game.evaluation_options(7, 5) == game.evaluation_options(7, 5)
    behaviors = {seed: [game.evaluation_options(episode, seed)["profile"]["behaviors"] for episode in range(10)] for seed in (0, 1)}
    assert behaviors[0] != behaviors[1]


def test_a_state_index_is_its_place_in_the_lexicographic_order():
    # (c, e, tr) = (1, 2, 3): (1 * 4 + 2) * 6 + 3 = 39
    assert state_index((1, 2, 3)) == 39
    assert [state_index(state) for state in ALL_STATES] == list(range(120))


def test_a_profile_dicts_persona_survives_coercion():
    profile = Profile.coerce({"state": [1, 1, 1], "behaviors": ["CC1"], "persona": "a chef who hates apps"}, ("CC1",))
    assert profile.persona == "a chef who hates apps" and profile.to_dict()["persona"] == "a chef who hates apps"


def test_sampled_profiles_draw_every_behavior_of_the_library():
    ids = ("A", "B", "C", "D")
    drawn = {b for seed in range(200) for b in sample_profile(random.Random(seed), ids).behaviors}
    assert drawn == set(ids)


def test_a_profile_takes_one_to_three_behaviors_and_is_frozen():
    ids = ("A", "B", "C", "D")
    profile = Profile.coerce({"state": [0, 0, 0], "behaviors": ["A", "B", "C"]}, ids)
    assert profile.behaviors == ("A", "B", "C")
    with pytest.raises(ScenarioError, match="needs 1-3 behaviors, got 4"):
        Profile.coerce({"state": [0, 0, 0], "behaviors": list(ids)}, ids)
    with pytest.raises(dataclasses.FrozenInstanceError):
        profile.behaviors = ("A",)


def test_the_utterance_space_holds_twice_the_utterance_limit_and_at_least_4096_characters():
    # default 2000 characters: max(4096, 4000) = 4096; 3000: max(4096, 6000) = 6000
    assert SeadGame().action_space("agent").max_length == 4096
    assert SeadGame(SeadConfig(max_utterance_chars=3000)).action_space("user").max_length == 6000


def test_a_parsed_agent_turn_records_its_estimate_as_a_list_or_none():
    assert parse_agent_output(render_agent_output("Hi.", (3, 2, 4))).parsed() == {"estimate": [3, 2, 4], "stage": None, "status": None, "format": "tags"}
    assert parse_agent_output("Hi.").parsed()["estimate"] is None


class Draws(random.Random):
    """A generator whose every uniform draw is ``value``: the scripted user's chances worked out by hand."""

    def __init__(self, value: float):
        super().__init__(0)
        self.value = value

    def random(self) -> float:
        return self.value


def test_an_owner_bad_with_apps_gets_the_lower_step_chance():
    """step_success = (0.95, 0.6): a draw of 0.7 is a done step for most owners (0.7 < 0.95) and a
    stuck one for an owner with operational concerns who was not told simply (0.7 >= 0.6)."""
    user = ScriptedUser(load_behaviors())
    recognition = analyze("Please open your merchant back-office app.")
    assert recognition.steps == ("open_app",) and "simplify" not in recognition.acts
    outcomes = {}
    for behavior in ("IC1", "OC1"):
        memory = user.start({"behaviors": [behavior]}, 0)
        said: list[str] = []
        user._follow(memory, Draws(0.7), recognition, recognition.acts, 3, said)
        outcomes[behavior] = (memory.steps_done, memory.step_again, said)
    assert outcomes == {"IC1": (1, False, [STEP_DONE["open_app"]]), "OC1": (0, True, [STEP_STUCK])}


def owner_reply(user: ScriptedUser, memory, text: str, state=(3, 2, 3), turn: int = 3) -> str:
    observation = {"messages": [{"role": "user", "content": caller_turn(text, UserState(*state))}], "turn": turn, "state": np.array(state)}
    return user.act(observation, {}, memory)


def test_answering_after_quoting_the_owners_question_is_no_echo():
    """An echo is a turn whose own words come from the owner's line; a long answer that quotes the
    question first takes most of its words elsewhere, so it is no echo (the owner's line, measured
    the other way round, is all in it)."""
    user = ScriptedUser(load_behaviors())
    question = "Are there any hidden fees I should know about?"
    answer = f"{question} No: the credit is free, you pay nothing, and FoodMap charges no commission on the orders it brings."
    replies = []
    for seed in range(20):
        memory = user.start({"behaviors": ["CC1"]}, seed)
        memory.last_reply = question
        replies.append(owner_reply(user, memory, answer))
    assert not any("Why are you repeating what I say?" in reply for reply in replies)
    memory = user.start({"behaviors": ["CC1"]}, 0)
    memory.last_reply = question
    assert "Why are you repeating what I say?" in owner_reply(user, memory, question)


def test_the_scripted_owner_draws_from_the_episode_seed():
    """The same profile and the same caller lines, at ten seeds: the owner's replies differ between seeds."""
    env = gym.make("SEAD-Outbound-v0")
    lines = ("Hello, this is Alex from FoodMap. Am I speaking with the owner?", "We offer free advertising credit.", "It costs nothing.")
    dialogues = set()
    for seed in range(10):
        env.reset(seed=seed, options={"profile": {"state": [2, 2, 2], "behaviors": ["TS1"]}})
        replies = []
        for line in lines:
            observation, _, terminated, _, _ = env.step(line)
            replies.append(observation["messages"][-1]["content"])
            if terminated:
                break
        dialogues.add(tuple(replies))
    assert len(dialogues) > 1


@pytest.mark.parametrize("state", [[1, 2], [1, 2.5, 3], [1, True, 3], (1, 2, 3, 4)])
def test_a_profile_state_must_be_exactly_three_ints(state):
    with pytest.raises(ScenarioError, match="must be three ints"):
        Profile.coerce({"state": state, "behaviors": ["CC1"]}, ("CC1",))


@pytest.mark.parametrize("behaviors", [["CC1", 5], "CC1"])
def test_profile_behaviors_must_be_a_list_of_ids(behaviors):
    with pytest.raises(ScenarioError, match="must be a list of behavior ids"):
        Profile.coerce({"state": [1, 1, 1], "behaviors": behaviors}, ("CC1",))


def reply_with_draws(text: str, state=(2, 2, 2), turn: int = 3, draw: float = 0.5, behaviors=("CC1",), **memory_fields):
    """The owner's record for one caller turn, with every uniform draw ``draw`` (0.5: no lapse, since
    0.5 >= 0.04; a chance p happens when 0.5 < p), from a fresh memory with ``memory_fields`` set."""
    user = ScriptedUser(load_behaviors())
    memory = user.start({"behaviors": list(behaviors)}, 0)
    memory.rng = Draws(draw)
    for name, value in memory_fields.items():
        setattr(memory, name, value)
    return parse_user_output(owner_reply(user, memory, text, state, turn), UserState(*state))


def test_at_turn_two_the_owner_asks_who_the_caller_wants_unless_it_was_asked():
    who = "Who are you even looking for?"
    assert who in reply_with_draws("We offer free advertising credit for your restaurant.", turn=2).reply
    assert who not in reply_with_draws("Am I speaking with the owner of the restaurant?", turn=2).reply


def test_value_wins_interest_only_from_a_calm_owner_or_with_empathy():
    """Emotion 1, value alone: no interest (cooperation stays 2); emotion 2: interest at a draw of
    0.5 < 0.6 (cooperation 2 -> 3)."""
    line = "The free credit brings you more customers."
    assert reply_with_draws(line, state=(2, 1, 2)).state.cooperation == 2
    assert reply_with_draws(line, state=(2, 2, 2)).state.cooperation == 3


def test_a_concern_ignored_past_patience_ends_the_call_as_a_hang_up():
    """CC1 raised three rounds ago and not answered now (value does not resolve a cost concern): its
    age becomes 4 > patience_rounds = 3, and the owner hangs up with status -1."""
    move = reply_with_draws("The free credit brings you more customers.", open={"CC1": 3}, voiced={"CC1"})
    assert move.status == -1 and "I asked you already. Forget it." in move.reply and move.problem is None


def test_a_willing_owner_with_trust_two_asks_what_to_do():
    """No open concern, cooperation >= 3 and trust >= 2 (a draw of 0.5 < 0.8): it asks for the steps;
    with trust 1 it does not."""
    line = "The free credit brings you more customers."
    assert "Alright, so what do I need to do?" in reply_with_draws(line, state=(3, 2, 2), voiced={"CC1"}).reply
    assert "Alright, so what do I need to do?" not in reply_with_draws(line, state=(3, 2, 1), voiced={"CC1"}).reply


@pytest.mark.parametrize("value", ["state", {"behaviors": ["CC1"]}])
def test_a_profile_is_a_profile_or_a_dict_with_a_state(value):
    with pytest.raises(ScenarioError, match="must be a Profile or a dict like"):
        Profile.coerce(value, ("CC1",))


def test_the_config_is_frozen_and_the_turn_space_counts_zero_to_the_turn_limit():
    with pytest.raises(dataclasses.FrozenInstanceError):
        SeadConfig().max_agent_turns = 3
    # max_agent_turns = 15: the observed turn is 0..15, Discrete(16)
    assert SeadGame().observation_space("agent")["turn"].n == 16
    assert SeadGame(SeadConfig(max_agent_turns=4)).observation_space("user")["turn"].n == 5
