"""RL-ADA wiring that a formula test cannot see: the game hands the judge's clean-ending finding to
strict PASS (SPEC §3: PASS needs a clean ending), and every schema bound of ``data/tools.json``
(``minimum``, ``maximum``, ``minLength``, ``maxLength``) is enforced at the exact boundary, both by
:func:`schema_errors` and through a tool call in the env."""

from __future__ import annotations

import dataclasses
import json

import gymnasium as gym
import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.scenarios.rlada.data import load_domain
from dialogue_gym.scenarios.rlada.parsing import render_agent_action as act
from dialogue_gym.scenarios.rlada.tools import schema_errors

DOMAIN = load_domain()


class ForcedEnding:
    """The rule judge, with its clean-ending finding replaced (everything else as judged)."""

    def __init__(self, judge, clean_ending):
        self.judge_, self.clean_ending = judge, clean_ending

    def judge(self, trajectory):
        return dataclasses.replace(self.judge_.judge(trajectory), clean_ending=self.clean_ending)


def _solved_call(env, end=True):
    """lookup, the right domain tool, the explanation, and (``end``) a goodbye with end_call."""
    env.reset(seed=4, options={"intent": "declined_card_payment", "concealment": "direct"})
    game = env.unwrapped.game
    card = game.bank.cards[0]
    moves = [
        act("tool_call", "lookup_account", {"account_id": game.bank.customer_id}),
        act("tool_call", "check_card_status", {"card_id": card.card_id}),
        act("speak", f"Your card ending {card.last4} is frozen, which is why it was declined."),
    ]
    if end:
        moves.append(act("end_call", "Thanks for calling, goodbye."))
    for move in moves:
        _, _, terminated, truncated, info = env.step(move)
    assert terminated or truncated
    return info, env.unwrapped.trajectory()


@pytest.mark.parametrize("clean_ending", [True, False])
def test_strict_pass_follows_the_judges_clean_ending(clean_ending):
    env = gym.make("RLADA-Banking-v0")
    game = env.unwrapped.game
    game.judge = ForcedEnding(game.judge, clean_ending)
    info, trajectory = _solved_call(env)
    verdict = trajectory.meta["verdict"]
    assert verdict["routing_correct"] and verdict["lookup_first"] and trajectory.rewards["agent"] >= 2.0, "precondition: all else passes"
    assert info["strict_pass"] is clean_ending, "SPEC §3: strict PASS needs a clean ending"
    assert trajectory.meta["strict_pass"] is clean_ending


def test_a_solved_call_that_times_out_is_not_a_strict_pass():
    # Same call without the goodbye: the 3rd agent action is the last (max_agent_turns=3), a timeout.
    env = gym.make("RLADA-Banking-v0", max_agent_turns=3)
    info, trajectory = _solved_call(env, end=False)
    verdict = trajectory.meta["verdict"]
    assert info["outcome"] == "timeout" and verdict["clean_ending"] is False
    assert verdict["routing_correct"] and verdict["lookup_first"] and trajectory.rewards["agent"] >= 2.0, "precondition: all else passes"
    assert info["strict_pass"] is False, "SPEC §3: strict PASS needs a clean ending"


def _schema(tool, field=None):
    parameters = DOMAIN.tool(tool).parameters
    return parameters if field is None else parameters["properties"][field]


@pytest.mark.parametrize(
    "tool, field, good, bad",
    [
        ("get_transactions", "days", [1, 90], [0, 91]),  # minimum 1, maximum 90
        ("dispute_charge", "amount", [0.01, 100000], [0.009, 100000.01]),  # minimum 0.01, maximum 100000
        ("transfer_funds", "amount", [0.01, 100000], [0.0, 100001]),
        ("dispute_charge", "merchant", ["ab", "m" * 80], ["a", "m" * 81]),  # minLength 2, maxLength 80
        ("transfer_to_human", "reason", ["abc", "r" * 300], ["ab", "r" * 301]),  # minLength 3, maxLength 300
    ],
)
def test_schema_bounds_hold_at_the_exact_boundary(tool, field, good, bad):
    schema = _schema(tool, field)
    for value in good:
        assert schema_errors(value, schema) == [], f"{tool}.{field}={value!r} is inside the schema"
    for value in bad:
        errors = schema_errors(value, schema)
        assert len(errors) == 1 and "tool_args" in errors[0], f"{tool}.{field}={value!r} breaks the schema: {errors}"


def test_the_schema_numbers_are_the_documented_ones():
    assert (_schema("get_transactions", "days")["minimum"], _schema("get_transactions", "days")["maximum"]) == (1, 90)
    assert (_schema("dispute_charge", "merchant")["minLength"], _schema("dispute_charge", "merchant")["maxLength"]) == (2, 80)
    assert _schema("transfer_to_human", "reason")["minLength"] == 3


@pytest.mark.parametrize(
    "tool, args, ok",
    [
        ("get_transactions", {"days": 90}, True),
        ("get_transactions", {"days": 91}, False),
        ("dispute_charge", {"amount": 12.5, "reason": "duplicate", "merchant": "ab"}, True),
        ("dispute_charge", {"amount": 12.5, "reason": "duplicate", "merchant": "a"}, False),
        ("dispute_charge", {"amount": 100000.5, "reason": "duplicate"}, False),
    ],
)
def test_a_call_outside_the_schema_is_an_invalid_action_in_the_env(tool, args, ok):
    env = gym.make("RLADA-Banking-v0")
    env.reset(seed=1)
    game = env.unwrapped.game
    env.step(act("tool_call", "lookup_account", {"account_id": game.bank.customer_id}))
    observation, _, _, _, info = env.step(act("tool_call", tool, {"account_id": game.bank.customer_id, **args}))
    result = json.loads(observation["messages"][-1]["content"])
    if ok:
        assert info["invalid_action"] is None and result.get("error", {}).get("code") != "invalid_arguments"
    else:
        assert info["invalid_action"].startswith("invalid_arguments") and result["error"]["code"] == "invalid_arguments"
