"""Backend failures end episodes as ``backend_failure`` with their cause, in every view and in evaluate()."""

import json
import math

import gymnasium as gym
import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.backends import CannedBackend, GenerationRequest
from dialogue_gym.errors import BackendError, ConfigError, EpisodeStateError
from dialogue_gym.evaluation import evaluate, load_trajectories
from dialogue_gym.metrics import core
from dialogue_gym.metrics import sead as sead_metrics
from dialogue_gym.scenarios.sead.game import SeadGame
from dialogue_gym.scenarios.sead.parsing import render_user_output
from dialogue_gym.simulators.llm import LLMPolicy
from dialogue_gym.types import Outcome, Trajectory

GO_ON = render_user_output("Go on.", (2, 2, 2), 0)


class FlakyBackend(CannedBackend):
    """Canned replies, except that every request whose seed is in ``failing_seeds`` fails (as a backend
    reports it after its retries)."""

    def __init__(self, failing_seeds=(), replies=(GO_ON,)):
        super().__init__(list(replies))
        self.failing_seeds = set(failing_seeds)
        self.seen: list[GenerationRequest] = []

    def generate(self, requests):
        self.seen.extend(requests)
        outputs = super().generate(requests)
        for output, request in zip(outputs, requests):
            if request.sampling.seed in self.failing_seeds:
                output.text, output.error = "", f"HTTP 503: injected for seed {request.sampling.seed}"
        return outputs


def test_game_abort_ends_with_the_cause_and_no_rewards():
    game = SeadGame()
    with pytest.raises(EpisodeStateError, match=r"abort\(\) called before reset\(\)"):
        game.abort("x")
    game.reset(seed=1)
    game.step("Hello, is this the owner?")
    with pytest.raises(ConfigError, match=r"abort\(cause\) needs a non-empty str .*got ''"):
        game.abort("")
    result = game.abort("user policy failed: HTTP 503")
    assert result.role == "user" and result.truncated and not result.terminated and result.rewards == {}
    assert game.done and game.info("agent")["outcome"] == "backend_failure"
    trajectory = game.trajectory()
    assert trajectory.outcome is Outcome.BACKEND_FAILURE and trajectory.meta == {"failure": "user policy failed: HTTP 503"}
    assert trajectory.rewards == {"agent": 0.0, "user": 0.0} and len(trajectory.turns) == 1
    assert Trajectory.from_dict(json.loads(json.dumps(trajectory.to_dict()))).to_dict() == trajectory.to_dict()
    with pytest.raises(EpisodeStateError, match=r"abort\(\) called after the episode ended"):
        game.abort("again")
    game.reset(seed=2)
    assert game.trajectory().meta == {} and game.outcome is None  # a new episode forgets the failure


def test_llm_policy_reports_errors_beside_texts_and_act_batch_refuses_to_hide_them():
    policy = LLMPolicy(FlakyBackend(failing_seeds={11}))
    observations = [{"messages": [{"role": "user", "content": "hi"}], "turn": 1}] * 2
    texts, errors = policy.act_batch_with_errors(observations, [{}, {}], [10, 20])
    assert texts == ["", GO_ON] and errors == ["HTTP 503: injected for seed 11", None]
    with pytest.raises(BackendError, match=r"failed 1 of 2 requests \(first: request 0: HTTP 503: injected for seed 11\).*backend_failure"):
        policy.act_batch(observations, [{}, {}], [10, 20])


def test_single_and_vector_views_end_failed_episodes():
    backend = FlakyBackend()
    env = gym.make("SEAD-Outbound-v0", user="llm", user_backend=backend)
    env.reset(seed=0)
    _, _, terminated, _, _ = env.step("Hello")
    assert not terminated  # the first user turn worked
    backend.failing_seeds = {backend.seen[-1].sampling.seed + 1}  # the user's next turn will fail
    _, reward, terminated, _, info = env.step("Please claim the credit.")
    assert terminated and reward == 0.0 and info["outcome"] == "backend_failure"
    assert env.unwrapped.trajectory().meta["failure"].startswith("user policy failed: HTTP 503")

    backend = FlakyBackend()
    envs = gym.make_vec("SEAD-Outbound-v0", num_envs=3, user="llm", user_backend=backend)
    envs.reset(seed=0)
    _, _, terminations, _, _ = envs.step(["Hello"] * 3)
    assert not terminations.any()
    backend.failing_seeds = {backend.seen[-1].sampling.seed + 1}  # env 2's next user turn fails, only
    _, _, terminations, _, infos = envs.step(["Go on?"] * 3)
    assert terminations.tolist() == [False, False, True] and infos["outcome"][2] == "backend_failure"
    (failed,) = envs.unwrapped.pop_trajectories()
    assert failed.outcome is Outcome.BACKEND_FAILURE and "HTTP 503" in failed.meta["failure"]


def test_evaluate_keeps_every_episode_and_the_summary_counts_both(tmp_path):
    probe = FlakyBackend()
    evaluate("SEAD-Outbound-v0", "sop", 12, env_kwargs={"user": "llm", "user_backend": probe, "max_agent_turns": 2})
    failing = {r.sampling.seed for r in probe.seen[::5]}  # every 5th request fails
    out = tmp_path / "run.jsonl"
    trajectories = evaluate(
        "SEAD-Outbound-v0", "sop", 12, batch_size=5, out=out,
        env_kwargs={"user": "llm", "user_backend": FlakyBackend(failing), "max_agent_turns": 2},
    )
    assert [t.seed for t in trajectories] == [t.meta["start"] for t in trajectories] and len({t.seed for t in trajectories}) == 12
    failed = [t for t in trajectories if t.outcome is Outcome.BACKEND_FAILURE]
    assert 0 < len(failed) < 12
    for t in failed:
        assert t.meta["failure"].startswith("user policy failed: HTTP 503: injected") and t.meta["agent"] == "sop"
    for t in trajectories:
        if t.outcome is not Outcome.BACKEND_FAILURE:
            assert t.outcome is Outcome.TIMEOUT and len(t.turns) == 4 and "failure" not in t.meta
    assert [t.to_dict() for t in load_trajectories(out)] == [t.to_dict() for t in trajectories]
    summary = sead_metrics.summary(trajectories)
    assert (summary["episodes"], summary["completed"], summary["backend_failures"]) == (12, 12 - len(failed), len(failed))
    assert summary["backend_failure_rate"] == pytest.approx(len(failed) / 12)
    assert summary["cr"] == 0.0 and summary["att_all"] == 2.0  # computed over the completed episodes only
    assert core.backend_failures(trajectories) == len(failed) and len(core.completed(trajectories)) == 12 - len(failed)
    assert math.isnan(core.backend_failure_rate([]))


class _MiscountingPolicy:
    """Returns one text too few, or a str instead of a list: a policy bug, not model output."""

    def __init__(self, as_str=False):
        self.as_str = as_str

    def start(self, profile, seed):
        return None

    def act_batch(self, observations, infos, memories):
        if self.as_str:
            return "Hello, is this the owner?"
        return ["Hello, is this the owner?"] * (len(observations) - 1)


def _step_single():
    env = gym.make("SEAD-Outbound-v0", user=_MiscountingPolicy())
    env.reset(seed=0)
    env.step("Hello, this is Alex from FoodMap. Am I speaking with the owner?")


def _step_vector():
    envs = gym.make_vec("SEAD-Outbound-v0", num_envs=3, user=_MiscountingPolicy())
    envs.reset(seed=0)
    envs.step(["Hello, this is Alex from FoodMap. Am I speaking with the owner?"] * 3)


@pytest.mark.parametrize(
    "run, message",
    [
        (lambda: evaluate("SEAD-Outbound-v0", _MiscountingPolicy(), 4, batch_size=2), "returned 1 texts for 2 observations"),
        (lambda: evaluate("SEAD-Outbound-v0", _MiscountingPolicy(as_str=True), 4, batch_size=2), "returned a str for 2 observations"),
        (_step_single, "returned 0 texts for 1 observations"),
        (_step_vector, "returned 2 texts for 3 observations"),
    ],
)
def test_a_policy_that_miscounts_its_texts_is_named_not_waited_on(run, message):
    """Zipped with the games, a short list left a game waiting forever (an endless loop at full CPU in
    evaluate, step and the vector env), and a str was played one character a game."""
    with pytest.raises(ConfigError, match=rf"^The policy _MiscountingPolicy {message}; act_batch must return a list of one str per observation"):
        run()
