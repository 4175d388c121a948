"""Hostile model output for the fuzz suite: what a badly trained or adversarial policy can emit.

``hostile_actions(rng, count)`` mixes families that crashed or stalled parsers before (huge JSON
numbers, deep nesting, NaN/Infinity, wrong types inside valid JSON, tags inside tags, control
characters, lone surrogates, long text) with well-formed-looking actions of every role, so that the
hostile ones also arrive in the middle of live episodes. ``hostile_text()`` is the same as a
hypothesis strategy.
"""

from __future__ import annotations

import json
import random

from hypothesis import strategies as st

TOOL_NAMES = (
    "lookup_account", "get_transactions", "dispute_charge", "transfer_funds", "block_card",
    "transfer_to_human", "end_call", "", "lookup_account\x00", "x" * 300,
)
TAGS = (
    "response", "cooperation_score", "emotion_score", "trust_score", "stage", "status", "think", "reply",
    "cooperation", "emotion", "trust", "intent_level",
)
WEIRD_VALUES = (
    "NaN", "Infinity", "-Infinity", "1e999", "-1e999", "9" * 5000, "-" + "9" * 4400, "1.5", "-1", "[1]", "{}",
    "null", "true", '"3"', '"abc"', "0.001", "1e-9", "4.999999999", '"\\ud800"', "[" * 60 + "]" * 60,
)
FRIENDLY = (
    "Hello, this is Alex from FoodMap. Am I speaking with the owner?",
    "<response>Could I ask how your online orders are going?</response><cooperation_score>2</cooperation_score>"
    "<emotion_score>2</emotion_score><trust_score>3</trust_score>",
    "<think>fine</think><reply>Yes, speaking.</reply><cooperation>2</cooperation><emotion>2</emotion>"
    "<trust>3</trust><status>0</status>",
    "<think>ok</think><intent_level>3</intent_level><reply>Tell me more about it.</reply>",
    '{"thinking": "", "action_type": "speak", "content": "How can I help you today?", "tool_args": {}}',
    '{"thinking": "", "action_type": "tool_call", "content": "lookup_account", "tool_args": {"account_id": "ACC-000001"}}',
    '{"thinking": "", "action_type": "tool_call", "content": "transfer_funds", "tool_args": '
    '{"account_id": "ACC-000001", "amount": 25.0, "from_account": "checking", "to_account": "savings"}}',
    "My card was charged twice and I want it fixed.",
    "[hang up]",
    "",
)


def _nested(rng: random.Random) -> str:
    depth = rng.choice((50, 999, 1000, 5000, 100_000))
    opener = rng.choice(("[", "{\"a\":", "<response>", "<think>"))
    closer = {"[": "]", "{\"a\":": "}", "<response>": "</response>", "<think>": "</think>"}[opener]
    return opener * depth + rng.choice(("1", "", "NaN")) + closer * rng.choice((0, depth // 2, depth))


def _wrong_types(rng: random.Random) -> str:
    value = rng.choice(WEIRD_VALUES)
    template = rng.choice((
        '{"response": %s, "cooperation_score": %s}',
        '{"thinking": %s, "action_type": "tool_call", "content": "transfer_funds", "tool_args": {"account_id": "ACC-000001", "amount": %s, "from_account": "checking", "to_account": "savings"}}',
        '{"action_type": %s, "content": %s}',
        '{"action_type": "tool_call", "content": "get_transactions", "tool_args": %s, "x": %s}',
        '{"action_type": "tool_call", "tool": %s, "arguments": %s}',
        '{"intent_level": %s, "reply": %s, "think": "x"}',
        '{"reply": %s, "cooperation": %s, "emotion": 2, "trust": 3, "status": 0}',
        "[%s, %s]",
        "%s%s",
    ))
    return template % (value, rng.choice(WEIRD_VALUES)) if template.count("%s") == 2 else template % value


def _tags(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(1, 8)):
        tag = rng.choice(TAGS)
        inner = rng.choice(WEIRD_VALUES + ("<%s>" % rng.choice(TAGS), "", "x" * rng.randint(0, 3000)))
        closing = rng.choice((f"</{tag}>", "", f"</{rng.choice(TAGS)}>", f"<{tag}>"))
        parts.append(f"<{tag}>{inner}{closing}")
    return "".join(parts)


def _unicode(rng: random.Random) -> str:
    pools = (
        (0, 0x20), (0x7F, 0xA0), (0x300, 0x370), (0x590, 0x700), (0x2000, 0x2070), (0xD800, 0xE000),
        (0xFFF0, 0x10000), (0x1F300, 0x1F700), (0x20, 0x7F),
    )
    chars = []
    for _ in range(rng.randint(0, 400)):
        low, high = rng.choice(pools)
        chars.append(chr(rng.randrange(low, high)))
    return "".join(chars)


def _long(rng: random.Random) -> str:
    unit = rng.choice(("a", "<", "<response>", "{", "[hang up]", "?", "refund ", "é", "\n", "ACC-000001 $5 "))
    return unit * (rng.choice((20_000, 100_000)) // len(unit))


def _mutated(rng: random.Random) -> str:
    text = list(rng.choice(FRIENDLY))
    for _ in range(rng.randint(1, 6)):
        position = rng.randint(0, len(text))
        text.insert(position, rng.choice(("\x00", "\x1b[2J", "\ud800", "\u202e", "}", "{", "<", ">", '"', "\\", "NaN", "\r")))
    return "".join(text)


FAMILIES = (_nested, _wrong_types, _tags, _unicode, _long, _mutated)


def hostile_action(rng: random.Random) -> str:
    """One action: a hostile family 5 times in 6, else a well-formed-looking one."""
    if rng.random() < 1 / 6:
        return rng.choice(FRIENDLY)
    return rng.choice(FAMILIES)(rng)


def hostile_text() -> st.SearchStrategy[str]:
    """The families above plus arbitrary text and JSON values, as a hypothesis strategy."""
    json_values = st.recursive(
        st.none() | st.booleans() | st.floats(allow_nan=True, allow_infinity=True) | st.integers() | st.text(max_size=20),
        lambda children: st.lists(children, max_size=4) | st.dictionaries(st.sampled_from(("response", "action_type", "content", "tool_args", "amount", "intent_level", "reply", "tool")) | st.text(max_size=8), children, max_size=4),
        max_leaves=12,
    )
    return st.one_of(
        st.text(max_size=300),
        json_values.map(lambda value: json.dumps(value)),
        st.sampled_from(FRIENDLY),
        st.randoms(use_true_random=False).map(hostile_action),
    )
