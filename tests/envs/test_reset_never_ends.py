"""``reset`` (and the vector view's autoreset) never hands back an episode that already ended: one that
ends before the learner's first move is set aside and re-drawn from a seed derived from the requested
one, the same way in every view; persistent failures raise a typed error."""

import gymnasium as gym
import numpy as np
import pytest
from toy_game import Counterpart, ToyGame

import dialogue_gym  # noqa: F401
from dialogue_gym.backends import CannedBackend
from dialogue_gym.envs.driver import MAX_DRAWS, redraw_seed
from dialogue_gym.envs.single import DialogueEnv
from dialogue_gym.envs.vector import DialogueVectorEnv
from dialogue_gym.errors import BackendError, EpisodeStateError, ScenarioError
from dialogue_gym.scenarios.tracer.parsing import render_user_output
from dialogue_gym.types import Outcome

pytestmark = pytest.mark.filterwarnings("ignore:.*before the 'learner' role's first move")


def single(counterpart):
    return DialogueEnv(ToyGame(), "learner", {"counterpart": counterpart})


def vector(counterpart, num_envs):
    return DialogueVectorEnv(ToyGame, num_envs, "learner", {"counterpart": counterpart})


@pytest.mark.parametrize("fails", [False, True], ids=["counterpart-ends-dialogue", "backend-fails-first-move"])
def test_single_view_redraws_an_episode_that_ended_before_the_learner_moved(fails):
    env = single(Counterpart(hangs_up=lambda seed: seed == 7, fails=fails))
    with pytest.warns(UserWarning, match=r"Toy-v0 episode seed 7 ended \((hangup|backend_failure: counterpart policy failed: HTTP 503.*)\) before"):
        observation, info = env.reset(seed=7)
    assert not env.game.done and env.game.current_role == "learner" and info["outcome"] is None
    assert env.game.seed == redraw_seed(7, 1) and env.trajectory().seed == redraw_seed(7, 1)
    _, reward, terminated, _, _ = env.step("hi")
    assert reward == 1.0 and not terminated


@pytest.mark.parametrize("fails", [False, True], ids=["counterpart-ends-dialogue", "backend-fails-first-move"])
def test_vector_view_redraws_like_the_single_view_and_lists_the_set_aside_episode(fails):
    envs = vector(Counterpart(hangs_up=lambda seed: seed == 7, fails=fails), 3)
    envs.reset(seed=6)
    assert [game.done for game in envs.games] == [False, False, False]
    assert [game.seed for game in envs.games] == [6, redraw_seed(7, 1), 8]
    (set_aside,) = envs.pop_trajectories()
    assert set_aside.seed == 7 and set_aside.learner == "learner" and not set_aside.turns_of("learner")
    assert set_aside.outcome is (Outcome.BACKEND_FAILURE if fails else Outcome.HANGUP)
    _, rewards, terminations, _, _ = envs.step(["a", "b", "c"])
    assert rewards.tolist() == [1.0, 1.0, 1.0] and not terminations.any()
    reference = single(Counterpart(hangs_up=lambda seed: seed == 7, fails=fails))
    reference.reset(seed=7)
    reference.step("b")
    assert envs.games[1].trajectory().to_dict() == reference.game.trajectory().to_dict()


def test_vector_autoreset_never_hands_back_an_ended_episode():
    envs = vector(Counterpart(hangs_up=lambda seed: seed % 3 == 0), 4)
    envs.reset(seed=0)
    assert sorted(t.seed for t in envs.pop_trajectories()) == [0, 3]
    terminations = np.zeros(4, dtype=bool)
    set_aside = 0
    for _ in range(30):
        assert all(game.current_role == "learner" for game, ended in zip(envs.games, terminations) if not ended)
        _, _, terminations, _, _ = envs.step(["x"] * 4)
        for game, terminated in zip(envs.games, terminations):
            assert terminated == game.done
            assert terminated or game.current_role == "learner"
        for trajectory in envs.pop_trajectories():
            if not trajectory.turns_of("learner"):
                assert trajectory.outcome is Outcome.HANGUP and trajectory.seed % 3 == 0
                set_aside += 1
    assert set_aside > 0, "no autoreset drew an episode that the counterpart ended at once"


@pytest.mark.parametrize(
    "fails, error, match",
    [
        (True, BackendError, r"8 episodes drawn for reset\(seed=3\) in a row ended before the 'learner' role's first move: "
         r"a counterpart's backend failed each time \(last: counterpart policy failed: HTTP 503.*Check that the backend"),
        (False, ScenarioError, r"8 episodes drawn for reset\(seed=3\) in a row .*last outcome: hangup.*learner never gets a turn"),
    ],
)
def test_a_counterpart_that_always_ends_at_once_gives_a_typed_error_after_bounded_draws(fails, error, match):
    counterpart = Counterpart(hangs_up=lambda seed: True, fails=fails)
    env = single(counterpart)
    with pytest.raises(error, match=match):
        env.reset(seed=3)
    assert counterpart.moves == MAX_DRAWS
    with pytest.raises(EpisodeStateError, match=rf"step\(\) called but the last reset\(\) raised {error.__name__}: 8 episodes"):
        env.step("hi")
    envs = vector(Counterpart(hangs_up=lambda seed: seed != 3, fails=fails), 2)
    with pytest.raises(error, match=match.replace("seed=3", "seed=4")):
        envs.reset(seed=3)
    with pytest.raises(EpisodeStateError, match=r"step\(\) called but the last reset\(\) raised"):
        envs.step(["a", "b"])


class FailFirstRequests(CannedBackend):
    """Canned user replies, except that the first ``failures`` requests fail (as after the backend's retries)."""

    def __init__(self, failures):
        super().__init__([render_user_output("Tell me more.", 2)])
        self.failures = failures

    def generate(self, requests):
        outputs = super().generate(requests)
        for output in outputs:
            if self.failures > 0:
                self.failures -= 1
                output.text, output.error = "", "HTTP 503: injected"
        return outputs


def test_llm_user_failing_its_opening_move_is_redrawn_in_single_and_vector_views():
    env = gym.make("DMBench-Assistant-v0", user="llm", user_backend=FailFirstRequests(1))
    with pytest.warns(UserWarning, match=r"ended \(backend_failure: user policy failed: HTTP 503: injected\) before the 'assistant'"):
        env.reset(seed=0)
    game = env.unwrapped.game
    assert not game.done and game.current_role == "assistant" and game.seed == redraw_seed(0, 1)
    _, _, terminated, _, info = env.step("Hello! How can I help you today?")
    assert not terminated and info["outcome"] is None

    envs = gym.make_vec("DMBench-Assistant-v0", num_envs=3, user="llm", user_backend=FailFirstRequests(1))
    with pytest.warns(UserWarning, match="backend_failure"):
        envs.reset(seed=0)
    (failed,) = envs.unwrapped.pop_trajectories()
    assert failed.outcome is Outcome.BACKEND_FAILURE and failed.seed == 0 and failed.meta["failure"].endswith("HTTP 503: injected")
    _, _, terminations, _, _ = envs.step(["Hello! How can I help you today?"] * 3)
    assert not terminations.any()


@pytest.mark.filterwarnings("ignore:.*before the 'assistant' role's first move")
def test_dmbench_vector_reset_then_step_works_for_121_envs():
    envs = gym.make_vec("DMBench-Assistant-v0", num_envs=121)
    envs.reset(seed=0)
    assert not any(game.done for game in envs.unwrapped.games)
    _, rewards, _, _, _ = envs.step(["Hello! What are you looking for today?"] * 121)
    assert np.isfinite(rewards).all()
