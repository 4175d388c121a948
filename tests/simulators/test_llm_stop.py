"""Stop strings of LLM-played roles: each scenario's defaults reach the backend, a cut closing tag is written back."""

import gymnasium as gym
import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.backends import CannedBackend
from dialogue_gym.errors import ConfigError
from dialogue_gym.simulators.llm import LLMPolicy, restore_closing_stop


class Recording(CannedBackend):
    """A canned backend that keeps the sampling of every request."""

    def __init__(self, replies):
        super().__init__(replies)
        self.sampling = []

    def generate(self, requests):
        self.sampling.extend(request.sampling for request in requests)
        return super().generate(requests)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("<reply>hi</reply><status>0", "<reply>hi</reply><status>0</status>"),
        ("<reply>hi</reply><status>0 ", "<reply>hi</reply><status>0</status>"),
        ("<reply>hi</reply><status>0</status>", "<reply>hi</reply><status>0</status>"),
        ("no tags at all", "no tags at all"),
        ("<status>0</status> then <status>", "<status>0</status> then <status></status>"),
    ],
)
def test_a_cut_closing_tag_is_written_back_only_inside_its_tag(text, expected):
    assert restore_closing_stop(text, ("</status>",)) == expected
    assert restore_closing_stop(text, ("\n\n",)) == text, "only closing-tag stops are part of a record"


@pytest.mark.parametrize(
    "env_id, role, learner, stop",
    [
        ("SEAD-Outbound-v0", "user", "agent", ("</status>",)),
        ("SEAD-Outbound-v0", "agent", "user", ("</trust_score>",)),
        ("DMBench-Assistant-v0", "user", "assistant", ("</reply>",)),
        ("TRACER-UserSim-v0", "assistant", "user", ("\n\n",)),
        ("RLADA-Banking-v0", "customer", "agent", ("\n\n",)),
    ],
)
def test_each_llm_role_stops_at_the_end_of_its_format(env_id, role, learner, stop):
    backend = Recording(["Hello there."])
    env = gym.make(env_id, learner=learner, **{role: "llm", f"{role}_backend": backend})
    env.reset(seed=0)
    if not backend.sampling:
        env.step("Hello, how are you?")
    assert backend.sampling[0].stop == stop


def test_explicit_sampling_wins_and_a_bad_stop_is_a_config_error():
    backend = Recording(["Hi."])
    env = gym.make("SEAD-Outbound-v0", user="llm", user_backend=backend, user_sampling={"stop": ["</reply>"], "temperature": 0})
    env.reset(seed=0)
    env.step("Hello")
    assert backend.sampling[0].stop == ("</reply>",) and backend.sampling[0].temperature == 0
    with pytest.raises(ConfigError, match="sampling\\['stop'\\] must be a list of non-empty strings, got '</status>'"):
        LLMPolicy(backend, {"stop": "</status>"})
    with pytest.raises(ConfigError, match="has an unknown field"):
        LLMPolicy(backend, {"temprature": 0.5})


def test_the_policy_writes_the_stop_back_into_the_record_the_game_reads():
    cut = "<think>ok</think><reply>Who is this?</reply><cooperation>2</cooperation><emotion>2</emotion><trust>3</trust><status>0"
    env = gym.make("SEAD-Outbound-v0", user="llm", user_backend=CannedBackend([cut]))
    env.reset(seed=0, options={"profile": {"state": [2, 2, 3], "behaviors": ["IV1"]}})
    env.step("Hello")
    (turn,) = env.unwrapped.trajectory().turns_of("user")
    assert turn.raw == cut + "</status>" and turn.invalid is None and turn.parsed["health"]["format_ok"]
