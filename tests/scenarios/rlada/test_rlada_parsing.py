"""Parsing the support agent's JSON actions and the customer's speech, never raising on model output."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from dialogue_gym.scenarios.rlada.data import load_domain
from dialogue_gym.scenarios.rlada.parsing import (
    count_sentences,
    parse_agent_action,
    parse_customer_output,
    render_agent_action,
)

DOMAIN = load_domain()


def customer(text):
    return parse_customer_output(text, DOMAIN.hangup_markers, DOMAIN.role_reversal, DOMAIN.meta_talk)


def test_round_trip_of_every_action_type():
    for kind, content, args in (("speak", "How can I help?", {}), ("tool_call", "lookup_account", {"account_id": "ACC-123456"}), ("end_call", "Bye.", {})):
        action = parse_agent_action(render_agent_action(kind, content, args, "think"))
        assert (action.action_type, action.content, action.args, action.thinking, action.problem) == (kind, content, args, "think", None)
    assert parse_agent_action(render_agent_action("tool_call", "get_transactions", {"account_id": "ACC-1"})).tool == "get_transactions"


def test_lenient_where_the_meaning_is_clear():
    fenced = parse_agent_action('```json\n{"action_type": "Say", "content": "Hi"}\n```')
    assert fenced.action_type == "speak" and fenced.format == "json_fenced" and fenced.problem is None
    embedded = parse_agent_action('Sure! {"action_type": "tool", "tool": "lookup_account", "tool_args": {"account_id": "ACC-123456"}} done')
    assert embedded.action_type == "tool_call" and embedded.tool == "lookup_account" and embedded.format == "json_embedded"


def test_malformed_output_is_flagged_not_raised():
    assert parse_agent_action("hello there").problem.startswith("malformed JSON")
    assert "expected a JSON object, got list" in parse_agent_action("[1, 2]").problem
    assert "action_type must be one of ['speak', 'tool_call', 'end_call'], got 'dance'" in parse_agent_action('{"action_type": "dance"}').problem
    assert "tool_call without a tool name" in parse_agent_action('{"action_type": "tool_call", "content": ""}').problem
    assert "speak with empty content" in parse_agent_action('{"action_type": "speak", "content": "  "}').problem
    long = parse_agent_action(json.dumps({"action_type": "speak", "content": "x" * 50}), max_chars=10)
    assert long.content == "x" * 10 and "exceeds max_utterance_chars=10" in long.problem


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_agent_parser_never_raises(text):
    action = parse_agent_action(text)
    assert action.action_type in (None, "speak", "tool_call", "end_call")
    assert action.problem is None or isinstance(action.problem, str)


def test_customer_speech_checks():
    move = customer('Customer: "I was charged twice at Target. Can you fix it?"')
    assert move.utterance == "I was charged twice at Target. Can you fix it?" and move.sentences == 2 and move.format_ok
    long = customer("One. Two. Three.")
    assert long.sentences == 3 and not long.format_ok and "3 sentences" in long.notes[0]
    hang = customer("Forget it. [hang up]")
    assert hang.hangup and hang.utterance == "Forget it." and hang.problem is None
    assert customer("").problem == "empty utterance" and customer("*hangs up*").hangup
    reversal = customer("Thank you for calling, how can I help you today?")
    assert len(reversal.role_reversal) == 2 and reversal.format_ok
    assert customer("As an AI language model I cannot say.").meta_talk
    assert not customer("<reply>hi</reply>").format_ok


def test_sentence_count_ignores_decimal_points():
    assert count_sentences("Hi... what? Okay!") == 3
    assert count_sentences("I paid $42.80 on Tuesday.") == 1
    assert count_sentences("It was $4.75, then $4.75 again. Weird") == 2
    assert count_sentences("   ") == 0
