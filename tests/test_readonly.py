"""The chat messages a game keeps are read-only and shared by its observations (issue 45 item 2):
what a policy is handed equals the per-turn copies it replaces, and editing it changes nothing the game keeps."""

from __future__ import annotations

import copy
import json
import pickle

import gymnasium as gym
import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.probes import vandalise
from dialogue_gym.readonly import ReadOnlyDict, message, message_views
from envs_registry import REGISTRY

CASES = [(entry.id, role) for entry in REGISTRY for role in entry.roles]


def test_a_message_reads_as_the_plain_dict_it_replaces():
    kept = message("user", "hello")
    assert kept == {"role": "user", "content": "hello"} and list(kept) == ["role", "content"]
    assert json.dumps(kept) == json.dumps({"role": "user", "content": "hello"})
    assert pickle.loads(pickle.dumps(kept)) == kept and type(copy.deepcopy(kept)) is ReadOnlyDict
    assert dict(kept) == kept and type(dict(kept)) is dict


@pytest.mark.parametrize(
    "edit",
    [
        lambda m: m.__setitem__("content", "x"),
        lambda m: m.update(content="x"),
        lambda m: m.pop("content"),
        lambda m: m.clear(),
        lambda m: m.setdefault("name", "x"),
        lambda m: m.__delitem__("role"),
    ],
)
def test_a_message_refuses_every_edit(edit):
    kept = message("assistant", "text")
    with pytest.raises(TypeError, match="read-only"):
        edit(kept)
    assert kept == {"role": "assistant", "content": "text"}


def test_message_views_equal_the_copies_they_replace_and_are_the_callers_own_list():
    kept = [message("system", "rules"), message("user", "hi"), message("assistant", "hello")]
    view = message_views(kept)
    assert view == [{**m} for m in kept] and view is not kept
    view.append({"role": "user", "content": "more"})
    view[0] = {"role": "system", "content": "other"}
    assert kept == [message("system", "rules"), message("user", "hi"), message("assistant", "hello")]


def played_messages(env_id: str, role: str, turns: int = 6) -> list[tuple[list, list]]:
    """``(the game's kept messages, the observation's messages)`` of ``role`` at each of its first turns
    of a seeded episode whose every move is its default scripted player's."""
    environment = gym.make(env_id, learner=role, disable_env_checker=True).unwrapped
    environment.reset(seed=11)
    game = environment.game
    policies = {name: environment.make_role_policy(name, environment.default_players[name]) for name in game.roles}
    memories = {name: policies[name].start(game.role_profile(name), 11) for name in game.roles}
    seen = []
    while game.current_role is not None and len(seen) < turns:
        mover = game.current_role
        observation = game.observe(mover)
        if mover == role:
            seen.append(observation["messages"])
        game.step(policies[mover].act(observation, game.info(mover), memories[mover]))
    return seen


@pytest.mark.parametrize("env_id, role", CASES)
def test_every_game_hands_out_its_own_list_of_read_only_messages(env_id, role):
    seen = played_messages(env_id, role)
    assert seen
    for messages in seen:
        assert all(type(m) is ReadOnlyDict and set(m) == {"role", "content"} and isinstance(m["content"], str) for m in messages)
    assert seen[0] is not seen[-1]


@pytest.mark.parametrize("env_id, role", CASES)
def test_vandalising_the_messages_handed_out_changes_no_later_observation(env_id, role):
    environment = gym.make(env_id, learner=role, disable_env_checker=True).unwrapped
    environment.reset(seed=5)
    game = environment.game
    policies = {name: environment.make_role_policy(name, environment.default_players[name]) for name in game.roles}
    memories = {name: policies[name].start(game.role_profile(name), 5) for name in game.roles}
    while game.current_role is not None:
        mover = game.current_role
        observation = game.observe(mover)
        kept = repr(game.observe(mover)["messages"])
        text = policies[mover].act(copy.deepcopy(observation), game.info(mover), memories[mover])
        vandalise(observation)
        assert repr(game.observe(mover)["messages"]) == kept
        game.step(text)
