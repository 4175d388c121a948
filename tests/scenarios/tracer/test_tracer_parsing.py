import pytest

from dialogue_gym.scenarios.tracer.acts import analyze
from dialogue_gym.scenarios.tracer.parsing import (
    parse_assistant_output,
    parse_user_output,
    render_user_output,
)


def test_canonical_output_round_trips():
    text = render_user_output("Where is  your store?", 4, "close to buying")
    move = parse_user_output(text, 2)
    assert (move.reply, move.intent_level, move.think, move.format_ok, move.problem) == (
        "Where is your store?", 4, "close to buying", True, None,
    )
    spaced = " <think>x</think>\n<intent_level> 3 </intent_level>\n<reply>Ok?</reply> "
    assert parse_user_output(spaced, 2).format_ok


def test_field_consistency_is_part_of_the_format():
    assert parse_user_output(render_user_output("", 0), 3).format_ok
    empty = parse_user_output(render_user_output("", 3), 3)
    assert not empty.format_ok and "empty reply with intent level 3" in empty.problem
    no_contact = parse_user_output(render_user_output("Sure, call me.", 5), 3)
    assert no_contact.intent_level == 5 and not no_contact.format_ok
    assert "intent level 5 without contact information" in no_contact.problem
    for contact in ("138xxxx1234", "My number is 13800001234", "Add my WeChat: abc"):
        assert parse_user_output(render_user_output(contact, 5), 3).format_ok


@pytest.mark.parametrize(
    "text, level, reply, problem",
    [
        ("<intent_level>4</intent_level><reply>Where?</reply>", 4, "Where?", "does not match"),
        ("<reply>Where?</reply><think>t</think><intent_level>4</intent_level>", 4, "Where?", "does not match"),
        ('{"think": "t", "intent_level": 3, "reply": "Ok?"}', 3, "Ok?", "does not match"),
        ("<think>t</think><intent_level>9</intent_level><reply>Ok</reply>", 2, "Ok", "intent_level '9' is not an int 0-5; kept 2"),
        ("just words", 2, "just words", "no reply field; the text outside tags is used"),
        ("<think>t</think><intent_level>high</intent_level>", 2, "t high", "intent_level 'high' is not an int 0-5; kept 2"),
    ],
)
def test_lenient_reads_are_flagged_and_score_zero_format(text, level, reply, problem):
    move = parse_user_output(text, 2)
    assert (move.intent_level, move.reply, move.format_ok) == (level, reply, False)
    assert problem in move.problem


def test_assistant_output():
    assert parse_assistant_output("  Hello   there ").utterance == "Hello there"
    assert parse_assistant_output("<response>Hi</response><note>x</note>").utterance == "Hi"
    assert parse_assistant_output('{"response": "Hi"}').utterance == "Hi"
    assert parse_assistant_output("").problem == "empty utterance"
    long = parse_assistant_output("a" * 30, max_chars=10)
    assert long.utterance == "a" * 10 and "exceeds max_utterance_chars=10; truncated" in long.problem


def test_acts():
    assert analyze("Hello! Leave your phone number please.") == {"greeting", "contact_request"}
    assert analyze("What budget do you have?") == {"probe"}
    assert analyze("Could you share your WeChat?") == {"contact_request"}
    # "offer" alone promises nothing: pressure, not a benefit (the keyword reader counted both).
    assert analyze("This offer ends today, hurry!") == {"urgency"}
    # An answer states a merchant fact; without the fact the same words answer nothing.
    assert analyze("I understand. We have SUVs in stock.", ["we have sedans, SUVs and new-energy models in stock"]) == {"empathy", "answer"}
    assert analyze("I understand. We have SUVs in stock.") == {"empathy"}
    assert analyze("(silence)") == {"none"}
