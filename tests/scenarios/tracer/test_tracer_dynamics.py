"""The intent-dynamics features: the fast paths of FeatureMap.features equal what they replace."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dialogue_gym.scenarios.tracer import dynamics
from dialogue_gym.scenarios.tracer.acts import carries
from dialogue_gym.scenarios.tracer.data import load_phrases

FACTS = (
    "down payments start from 15% on most models",
    "test drives can be booked any day of the week",
)
_PHRASES = load_phrases()["phrases"]
LINES = (
    *_PHRASES["contact"],  # each asks for contact
    *_PHRASES["answer"],
    *_PHRASES["empathy"],
    "Call me. Call me. Call me.",
    "",
    "phone wechat number contact",
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(LINES), max_size=12), st.integers(0, 5), st.booleans())
def test_asked_for_contact_is_the_full_count_compared(utterances, times, with_facts):
    facts = FACTS if with_facts else ()
    count = sum(carries(u, dynamics.CONTACT_ACT, facts) for u in utterances)
    assert dynamics._asked_for_contact(utterances, facts, times) == (count >= times)


def test_the_lines_include_both_kinds():
    """The drawn lines hold requests and non-requests, so the equality above is tested on both."""
    asked = [carries(line, dynamics.CONTACT_ACT, FACTS) for line in LINES]
    assert any(asked) and not all(asked)
