"""A ``reset`` or ``step`` that raises leaves no episode running in any view: the next ``step`` raises
EpisodeStateError saying to call ``reset``, instead of continuing the old episode under the new seed or
recording a half-played turn; the next good ``reset`` plays exactly as a fresh env would."""

import gymnasium as gym
import pytest
from toy_game import Counterpart, ToyGame

import dialogue_gym  # noqa: F401
from dialogue_gym.envs import sead_outbound_v0
from dialogue_gym.envs.single import DialogueEnv
from dialogue_gym.envs.vector import DialogueVectorEnv
from dialogue_gym.errors import (
    ConfigError,
    EpisodeStateError,
    InvalidAction,
    ScenarioError,
)
from dialogue_gym.scenarios.sead.parsing import render_user_output

HELLO = "Hello, is this the owner?"
BAD_RESETS = [
    ({"options": {"profile": "nonsense"}}, ScenarioError, "profile"),
    ({"seed": -1}, ConfigError, r"seed must be a non-negative int or None, got int: -1"),
    ({"seed": "abc"}, ConfigError, r"seed must be a non-negative int or None, got str: 'abc'"),
    ({"seed": True}, ConfigError, r"seed must be a non-negative int or None, got bool: True"),
    ({"options": "profile"}, ConfigError, r"options must be a dict or None, got str: 'profile'"),
]
IDS = ["bad-options", "negative-seed", "str-seed", "bool-seed", "non-dict-options"]


def no_episode_running(exc_type):
    return pytest.raises(EpisodeStateError, match=rf"step\(\) called but the last reset\(\) raised {exc_type.__name__}: .*call reset\(\)")


def fresh_single_transcript(seed):
    env = gym.make("SEAD-Outbound-v0")
    env.reset(seed=seed)
    env.step(HELLO)
    return env.unwrapped.trajectory().to_dict()


@pytest.mark.parametrize("bad, error, match", BAD_RESETS, ids=IDS)
def test_single_view(bad, error, match):
    env = gym.make("SEAD-Outbound-v0")
    env.reset(seed=0)
    env.step(HELLO)
    with pytest.raises(error, match=match):
        env.reset(**{"seed": 1, **bad})
    with no_episode_running(error):
        env.step(HELLO)
    env.reset(seed=1)
    env.step(HELLO)
    assert env.unwrapped.trajectory().to_dict() == fresh_single_transcript(1)


@pytest.mark.parametrize("bad, error, match", BAD_RESETS, ids=IDS)
def test_vector_view(bad, error, match):
    envs = gym.make_vec("SEAD-Outbound-v0", num_envs=2)
    envs.reset(seed=0)
    envs.step([HELLO, HELLO])
    with pytest.raises(error, match=match):
        envs.reset(**{"seed": 1, **bad})
    with no_episode_running(error):
        envs.step([HELLO, HELLO])
    envs.reset(seed=1)
    envs.step([HELLO, HELLO])
    assert envs.unwrapped.games[0].trajectory().to_dict() == {**fresh_single_transcript(1), "learner": None}


def test_vector_view_rejects_bad_seed_lists():
    envs = gym.make_vec("SEAD-Outbound-v0", num_envs=2)
    envs.reset(seed=0)
    with pytest.raises(ConfigError, match=r"seed must be a non-negative int or None, got int: -3"):
        envs.reset(seed=[1, -3])
    with pytest.raises(ConfigError, match=r"needs 2 non-negative ints, got \[1, None\]"):
        envs.reset(seed=[1, None])
    with pytest.raises(ConfigError, match=r"needs 2 seeds, one per sub-env, got 3"):
        envs.reset(seed=(1, 2, 3))
    with pytest.raises(EpisodeStateError, match="the last reset"):
        envs.step([HELLO, HELLO])


@pytest.mark.parametrize("bad, error, match", BAD_RESETS, ids=IDS)
def test_aec_view(bad, error, match):
    env = sead_outbound_v0.env()
    env.reset(seed=0)
    env.step(HELLO)
    with pytest.raises(error, match=match):
        env.reset(**{"seed": 1, **bad})
    with no_episode_running(error):
        env.step(HELLO)
    env.reset(seed=1)
    env.step(HELLO)
    assert env.unwrapped.game.trajectory().turns[0].raw == HELLO and len(env.unwrapped.game.trajectory().turns) == 1


@pytest.mark.parametrize("bad, error, match", BAD_RESETS, ids=IDS)
def test_parallel_view(bad, error, match):
    env = sead_outbound_v0.parallel_env()
    env.reset(seed=0)
    env.step({"agent": HELLO, "user": ""})
    with pytest.raises(error, match=match):
        env.reset(**{"seed": 1, **bad})
    assert env.agents == []
    with no_episode_running(error):
        env.step({"agent": HELLO, "user": ""})
    env.reset(seed=1)
    with pytest.raises(ConfigError, match=r"step\(\) needs a dict of actions keyed by agent, got str: 'hi'; pass e.g. \{'agent': text\}"):
        env.step("hi")
    env.step({"agent": HELLO, "user": ""})
    assert [turn.raw for turn in env.trajectory().turns] == [HELLO]


def test_game_base_failed_reset_does_not_keep_the_old_episode_under_the_new_seed():
    game = sead_outbound_v0.raw_env().game
    game.reset(seed=0)
    game.step(HELLO)
    with pytest.raises(ScenarioError):
        game.reset(seed=5, options={"profile": "nonsense"})
    assert game.current_role is None and not game.done and not game.started
    with pytest.raises(EpisodeStateError, match=r"step\(\) called but the last reset\(\) raised ScenarioError"):
        game.step(render_user_output("Hi.", (2, 2, 2), 0))
    with pytest.raises(EpisodeStateError, match=r"abort\(\) called but the last reset\(\) raised"):
        game.abort("x")


def test_a_move_that_raises_ends_the_episode_instead_of_leaving_it_half_played():
    env = sead_outbound_v0.env(invalid_action="raise")
    env.reset(seed=0)
    with pytest.raises(InvalidAction, match="The episode cannot continue after this error; call reset"):
        env.step("")
    with pytest.raises(EpisodeStateError, match=r"step\(\) called but the last step\(\) raised InvalidAction: The 'agent' output"):
        env.step(HELLO)
    assert len(env.unwrapped.game.trajectory().turns) == 1
    env.reset(seed=0)
    env.step(HELLO)
    assert [turn.raw for turn in env.unwrapped.game.trajectory().turns] == [HELLO]


def test_a_non_str_action_is_refused_before_anything_changes_and_the_episode_goes_on():
    env = gym.make("SEAD-Outbound-v0")
    env.reset(seed=0)
    with pytest.raises(InvalidAction, match="must be a str"):
        env.step(42)
    env.step(HELLO)
    assert env.unwrapped.trajectory().to_dict() == fresh_single_transcript(0)


class BreaksOnSecondMove(Counterpart):
    """Says ``"hello"`` once per episode, then raises (a policy bug or an unhandled backend error)."""

    def act_batch_with_errors(self, observations, infos, memories):
        if any(memory.get("moved") for memory in memories):
            raise RuntimeError("policy crashed")
        return super().act_batch_with_errors(observations, infos, memories)


def test_single_view_counterpart_crash_mid_step_leaves_no_half_played_turn():
    env = DialogueEnv(ToyGame(), "learner", {"counterpart": BreaksOnSecondMove()})
    env.reset(seed=0)
    with pytest.raises(RuntimeError, match="policy crashed"):
        env.step("first")
    with pytest.raises(EpisodeStateError, match=r"step\(\) called but the last step\(\) raised RuntimeError: policy crashed"):
        env.step("second")
    assert [turn.role for turn in env.trajectory().turns] == ["counterpart", "learner"]


def test_vector_view_counterpart_crash_mid_step_leaves_no_half_played_turn():
    envs = DialogueVectorEnv(ToyGame, 2, "learner", {"counterpart": BreaksOnSecondMove()})
    envs.reset(seed=0)
    with pytest.raises(RuntimeError, match="policy crashed"):
        envs.step(["first", "first"])
    with pytest.raises(EpisodeStateError, match=r"step\(\) called but the last step\(\) raised RuntimeError: policy crashed"):
        envs.step(["second", "second"])
    assert [[turn.role for turn in game.trajectory().turns] for game in envs.games] == [["counterpart", "learner"]] * 2
    envs.reset(seed=0)
    assert [len(game.trajectory().turns) for game in envs.games] == [1, 1]
