"""RL-ADA health checks: the customer's and the agent's format and voice, the LLM judge's answer."""

import json

import gymnasium as gym
import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.backends import CannedBackend
from dialogue_gym.evaluation import evaluate
from dialogue_gym.health import counterpart_health, health_records
from dialogue_gym.scenarios.rlada.data import load_domain
from dialogue_gym.scenarios.rlada.judge import LLMJudge, judge_answer_health
from dialogue_gym.scenarios.rlada.parsing import parse_agent_action, parse_customer_output

DOMAIN = load_domain()


def customer(text):
    return parse_customer_output(text, DOMAIN.hangup_markers, DOMAIN.role_reversal, DOMAIN.meta_talk).parsed()["health"]


def test_the_prompts_carry_a_few_shot_turn_that_passes_the_checks():
    env = gym.make("RLADA-Banking-v0").unwrapped
    env.reset(seed=0)
    agent_prompt = env.game.observe("agent")["messages"][0]["content"]
    customer_prompt = env.game.observe("customer")["messages"][0]["content"]
    example = agent_prompt.split("Example of a first action:\n", 1)[1]
    assert parse_agent_action(example).health.to_dict() == {"format_ok": True, "repaired": [], "role_reversal": [], "rule_violations": []}
    said = customer_prompt.split("Example of a turn (another caller): ", 1)[1]
    assert customer(said) == {"format_ok": True, "repaired": [], "role_reversal": [], "rule_violations": []}


def test_a_customer_speaking_as_the_bank_or_as_a_model_is_reversed():
    health = customer('Customer: "Thank you for calling, how can I help you? As an AI I can check your account."')
    assert health["repaired"] == ["speaker label removed", "quotes removed"]
    assert health["role_reversal"] == ["how can I help you", "Thank you for calling", "As an AI"]
    assert customer("My card was declined. It happened twice. Now I am worried.")["rule_violations"] == ["3 sentences (the customer speaks 1-2)"]
    assert not customer("<reply>my card</reply>")["format_ok"]


@pytest.mark.parametrize(
    "text, repaired",
    [
        ('```json\n{"thinking": "", "action_type": "speak", "content": "Hello.", "tool_args": {}}\n```', ["JSON read from inside a code fence"]),
        ('{"thinking": "", "action_type": "say", "content": "Hello.", "tool_args": {}}', ["action_type 'say' read as 'speak'"]),
        ('{"action_type": "speak", "content": "Hello."}', ["no thinking, tool_args field(s); read with defaults"]),
    ],
)
def test_lenient_agent_reads_are_repairs(text, repaired):
    health = parse_agent_action(text).health
    assert not health.format_ok and list(health.repaired) == repaired


def test_an_agent_speaking_as_the_customer_is_reversed():
    text = json.dumps({"thinking": "", "action_type": "speak", "content": "I'm calling because my card was declined.", "tool_args": {}})
    assert parse_agent_action(text).health.role_reversal == ("my card was", "I'm calling because")
    assert not parse_agent_action("not json").health.format_ok


def test_the_scripted_roles_are_the_checks_control():
    block = counterpart_health(evaluate("RLADA-Banking-v0", "keyword", 78, 0))
    assert block["customer"]["format_rate"] == 1.0 and block["customer"]["failure_rate"] == 0.0


@pytest.mark.parametrize(
    "answer, format_ok, repaired, violations",
    [
        ('{"score": 2.5, "resolved": true, "hallucination": false, "reason": "ok"}', True, [], []),
        ('{"score": 2.5}', False, [], []),
        ('Verdict: {"score": 2, "resolved": true, "hallucination": false, "reason": "ok"}', False, ["JSON read from inside other text"], []),
        ("Score: 2/3", False, ["score read from text, not from the JSON 'score' number"], []),
        ('{"score": 5, "resolved": true, "hallucination": false, "reason": "great"}', False, [], ["score 5.0 outside 0-3.0; clamped"]),
        ("I liked it", False, ["no score found in the judge's answer 'I liked it'; the rule judge's score used"], []),
        ('Verdict: {"score": 2, "resolved": true, "hallucination": false, "reason": "ok"}.', False, ["JSON read from inside other text"], []),
        ('{"score": 2, "resolved": true, "hallucination": false, "reason": "ok"} thanks', False, ["JSON read from inside other text"], []),
    ],
)
def test_judge_answer_health(answer, format_ok, repaired, violations):
    """The default top score is the rubric's 3.0 (the sum of the rule judge's weights)."""
    health = judge_answer_health(answer)
    assert (health.format_ok, list(health.repaired), list(health.rule_violations)) == (format_ok, repaired, violations)


def test_the_llm_judge_health_is_in_the_trajectory():
    env = gym.make("RLADA-Banking-v0", judge="llm", judge_backend=CannedBackend(['{"score": 9}']))
    env.reset(seed=0)
    env.step(json.dumps({"thinking": "", "action_type": "end_call", "content": "Goodbye.", "tool_args": {}}))
    records = dict(health_records(env.unwrapped.trajectory()))
    assert records["judge"].rule_violations == ("score 9.0 outside 0-3.0; clamped",)
    assert isinstance(env.unwrapped.game.judge, LLMJudge)
