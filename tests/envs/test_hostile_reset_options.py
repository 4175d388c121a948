"""Hostile reset options and hostile text in ``human`` rendering: typed errors only, and the env then
needs a reset; nothing reaches the terminal raw."""

from __future__ import annotations

import gymnasium as gym
import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.errors import DialogueGymError, EpisodeStateError
from dialogue_gym.scenarios.rlada.parsing import _parse_agent_action
from dialogue_gym.scenarios.sead import acts as sead_acts

HOSTILE_OPTIONS = [
    ("SEAD-Outbound-v0", {"profile": {"state": [float("inf"), 1, 1], "behaviors": ["IV1"]}}, "must be three ints"),
    ("SEAD-Outbound-v0", {"profile": {"state": "123", "behaviors": ["IV1"]}}, "must be three ints"),
    ("SEAD-Outbound-v0", {"profile": {"state": [1, 1, 1], "behaviors": None}}, "must be a list of behavior ids"),
    ("SEAD-Outbound-v0", {"profile": {"state": [10**5000, 1, 1], "behaviors": ["IV1"]}}, "int of over 4,300 digits"),
    ("TRACER-UserSim-v0", {"session_id": ["a"]}, r"Unknown session id \['a'\]"),
    ("RLADA-Banking-v0", {"profile": {"intent": "card_payment_fee_charged", "facts": {"merchant": 5}}}, r"facts\['merchant'\] must be a non-empty str"),
    ("RLADA-Banking-v0", {"profile": {"facts": {"x": "y"}}}, r"profile facts \['x'\] are not facts"),
    ("RLADA-Banking-v0", {"profile": {"kind": object()}}, "profile kind must be a str or None"),
    ("RLADA-Banking-v0", {"profile": {"safety": float("nan")}}, "profile safety must be true, false or None, got nan"),
    ("RLADA-Customer-v0", {"profile": {"customer_winnable": {1, 2}}}, "profile customer_winnable must be true, false or None"),
]


@pytest.mark.parametrize("env_id, options, message", HOSTILE_OPTIONS)
def test_hostile_reset_options_raise_a_typed_error_and_leave_the_env_needing_a_reset(env_id, options, message):
    env = gym.make(env_id)
    env.reset(seed=0)
    with pytest.raises(DialogueGymError, match=message):
        env.reset(seed=1, options=options)
    with pytest.raises(EpisodeStateError, match="call reset"):
        env.step("Hello?")


def test_a_profile_round_trips_through_reset_options():
    env = gym.make("RLADA-Banking-v0")
    for seed in range(40):
        env.reset(seed=seed)
        profile = env.unwrapped.game.episode_profile()
        env.reset(seed=seed, options={"profile": profile})
        assert env.unwrapped.game.episode_profile() == profile


def test_human_rendering_escapes_control_characters_and_lone_surrogates(capsys):
    env = gym.make("SEAD-Outbound-v0", render_mode="human")
    env.reset(seed=0)
    env.step("\ud800 hi \x1b[2J there")
    printed = capsys.readouterr().out
    assert "agent: \\ud800 hi \\x1b[2J there" in printed and "\x1b" not in printed
    printed.encode("utf-8")


def test_parsers_do_not_memoise_long_texts():
    _parse_agent_action.cache_clear()
    sead_acts.analyze.cache_clear()
    for index in range(30):
        _parse_agent_action(str(index) + "x" * 19_000, 2000)
        sead_acts.analyze(str(index) + "y" * 19_000)
    assert _parse_agent_action.cache_info().currsize == 0 and sead_acts.analyze.cache_info().currsize == 0


@pytest.mark.parametrize("env_id", ["RLADA-Banking-v0", "RLADA-Customer-v0", "SEAD-Outbound-v0"])
@pytest.mark.parametrize("vector", [False, True])
def test_unknown_reset_options_warn_with_the_id_that_was_made(env_id, vector):
    """RLADA-Customer-v0 plays RLADA-Banking-v0's game, but its warning names the id the user made;
    its trajectories still name the game."""
    env = gym.make_vec(env_id, num_envs=2) if vector else gym.make(env_id)
    with pytest.warns(UserWarning, match=rf"Ignoring unknown reset options \['foo'\]; {env_id} reads"):
        env.reset(seed=0, options={"foo": 1})
    if env_id == "RLADA-Customer-v0" and not vector:
        assert env.unwrapped.game.trajectory().scenario == "RLADA-Banking-v0"
