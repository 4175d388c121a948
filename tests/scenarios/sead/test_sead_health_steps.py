"""The owner's state-step rule in both directions (issue 33's list, issue 43 item 6): a drop of more than
the allowed step breaks it as a rise does, and a move of exactly the step does not."""

import gymnasium as gym
import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.backends import CannedBackend
from dialogue_gym.scenarios.sead.parsing import render_user_output

HELLO = "Hello, this is Alex from FoodMap. Am I speaking with the owner?"


def owner_health(state, start):
    """The health record of one LLM-played owner turn that moves from ``start`` to ``state``."""
    reply = render_user_output("Fine, tell me more.", state, 0)
    env = gym.make("SEAD-Outbound-v0", user="llm", user_backend=CannedBackend([reply]), max_agent_turns=15)
    env.reset(seed=0, options={"profile": {"state": list(start), "behaviors": ["IV1"]}})
    env.step(HELLO)
    (turn,) = env.unwrapped.trajectory().turns_of("user")
    return turn.parsed["health"]


@pytest.mark.parametrize(
    "start, state, violations",
    [
        ((4, 2, 2), (1, 2, 2), ["cooperation moved 4 -> 1 in one turn (at most 2)"]),
        ((3, 3, 3), (3, 0, 0), ["emotion moved 3 -> 0 in one turn (at most 2)", "trust moved 3 -> 0 in one turn (at most 2)"]),
        ((4, 2, 2), (2, 2, 2), []),
        ((0, 2, 2), (2, 2, 2), []),
    ],
)
def test_a_state_drop_beyond_the_step_breaks_the_rule_and_a_move_of_exactly_the_step_does_not(start, state, violations):
    assert owner_health(state, start)["rule_violations"] == violations
