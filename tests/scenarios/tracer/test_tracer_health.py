"""TRACER / DM-Bench health checks: the user's format, voice and intent rules, the assistant's voice, the LLM judge."""

import gymnasium as gym
import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.backends import CannedBackend
from dialogue_gym.evaluation import evaluate
from dialogue_gym.health import counterpart_health, health_records
from dialogue_gym.scenarios.tracer.acts import reply_problem
from dialogue_gym.scenarios.tracer.judges import LLMJudge
from dialogue_gym.scenarios.tracer.parsing import parse_user_output, render_user_output
from dialogue_gym.scenarios.tracer.prompts import USER_EXAMPLE, USER_EXAMPLE_ASSISTANT


def user_health(replies, steps=1):
    """The LLM-played user's health records in DM-Bench (the assistant learns) over ``steps`` assistant turns."""
    env = gym.make("DMBench-Assistant-v0", user="llm", user_backend=CannedBackend(replies), max_user_turns=15)
    env.reset(seed=0)
    for _ in range(steps):
        _, _, terminated, _, _ = env.step("We have a free trial lesson. What would you like to know?")
        if terminated:
            break
    return [turn.parsed["health"] for turn in env.unwrapped.trajectory().turns_of("user")]


def test_the_few_shot_turn_is_the_exact_format_and_a_reply_a_person_writes():
    env = gym.make("DMBench-Assistant-v0", user="llm", user_backend=CannedBackend([USER_EXAMPLE]))
    env.reset(seed=0)
    prompt = env.unwrapped.game.observe("user")["messages"][0]["content"]
    assert USER_EXAMPLE in prompt and USER_EXAMPLE_ASSISTANT in prompt
    move = parse_user_output(USER_EXAMPLE, 2)
    assert move.format_ok and move.repairs == () and reply_problem(move.reply, USER_EXAMPLE_ASSISTANT) is None
    (health,) = [turn.parsed["health"] for turn in env.unwrapped.trajectory().turns_of("user")]
    assert health == {"format_ok": True, "repaired": [], "role_reversal": [], "rule_violations": []}


@pytest.mark.parametrize(
    "output, violation",
    [
        (render_user_output("sure, call me at 13812345678", 3), "contact details in the reply at intent level 3 (level 5 gives contact information)"),
        (render_user_output("ok sounds good to me", 5), "intent level 5 without contact information in the reply"),
        (render_user_output("", 3), "empty reply with intent level 3 (only a level-0 reply may be empty)"),
    ],
)
def test_an_intent_level_the_reply_contradicts_breaks_the_rules(output, violation):
    health = user_health(["<think></think><intent_level>2</intent_level><reply>what does it cost</reply>", output], steps=1)
    assert health[-1]["format_ok"] and violation in health[-1]["rule_violations"]


def test_a_user_speaking_as_the_merchant_is_reversed_and_a_lenient_read_is_a_repair():
    health = user_health(["Welcome to our store! How can I help you? Please leave your phone number."])
    assert health[0]["role_reversal"] == ["How can I help you", "our store", "leave your phone", "Welcome to"]
    assert not health[0]["format_ok"] and health[0]["repaired"][0].startswith("output does not match")


def test_the_scripted_user_is_the_checks_control():
    user = counterpart_health(evaluate("DMBench-Assistant-v0", "sop", 200, 0, learner="assistant"))["user"]
    assert user["format_rate"] == 1.0 and user["role_reversal_rate"] == 0.0 and user["failure_rate"] < 0.02


def test_an_llm_assistant_speaking_as_the_user_is_reversed():
    env = gym.make("TRACER-UserSim-v0", assistant="llm", assistant_backend=CannedBackend(["I'm not interested, my phone number is private."]))
    env.reset(seed=0)
    env.step(render_user_output("how much is it", 2))
    (assistant,) = [turn.parsed["health"] for turn in env.unwrapped.trajectory().turns_of("assistant")]
    assert assistant["format_ok"] and assistant["role_reversal"] == ["my phone number is", "I'm not interested"]


def test_the_llm_judge_answer_has_its_health():
    assert LLMJudge.parse('{"accuracy": 4, "helpfulness": 5, "informativeness": 3, "empathy": 4}')["health"]["judge"]["format_ok"]
    chatter = LLMJudge.parse('Sure! {"accuracy": 4, "helpfulness": 5, "informativeness": 3, "empathy": 4} done')["health"]["judge"]
    assert not chatter["format_ok"] and chatter["repaired"] == ["JSON read from inside other text"]
    outside = LLMJudge.parse('{"accuracy": 7, "helpfulness": 5, "informativeness": 3, "empathy": 4}')["health"]["judge"]
    assert outside["rule_violations"] == ["accuracy 7 outside the rubric's 1-5"]
    env = gym.make("DMBench-Assistant-v0", judge="llm", judge_backend=CannedBackend(["no idea"]), max_user_turns=2)
    env.reset(seed=0)
    terminated = False
    while not terminated:
        _, _, terminated, _, _ = env.step("We have a free trial lesson. What would you like to know?")
    records = dict(health_records(env.unwrapped.trajectory()))
    assert records["judge"].format_ok is False
