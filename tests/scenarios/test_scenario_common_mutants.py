"""Boundaries and rules of the shared parsing helpers that the other tests leave open: the digit limit
of a JSON integer, how tags pair up, which end of an over-long action is read, the regex gates' cache
and case folding, integral model numbers, and a lower bound of 0."""

import re

import pytest

from dialogue_gym.errors import ConfigError
from dialogue_gym.scenarios import common
from dialogue_gym.scenarios.common import (
    MAX_ACTION_CHARS,
    MAX_JSON_INT_DIGITS,
    TagSpan,
    any_pattern_matches,
    bound_text,
    config_number,
    matching_patterns,
    safe_json_loads,
    scan_tags,
    to_int,
)


def test_a_json_integer_of_exactly_the_digit_limit_is_read_and_one_digit_more_is_refused():
    assert MAX_JSON_INT_DIGITS == 100
    assert safe_json_loads("9" * 100) == (int("9" * 100), None)
    assert safe_json_loads("-" + "9" * 100) == (-int("9" * 100), None)  # the sign is not a digit
    value, problem = safe_json_loads("9" * 101)
    assert value is None and problem == "JSON rejected: integer of 101 digits exceeds MAX_JSON_INT_DIGITS=100"


def test_scan_tags_pairs_each_opening_with_its_own_first_closing_tag():
    text = "<a>x</a> <b>y</b> <a>z</a>"
    assert scan_tags(text) == [TagSpan("a", "x", 0, 8), TagSpan("b", "y", 9, 17), TagSpan("a", "z", 18, 26)]


def test_a_tag_inside_another_tags_content_is_content_not_a_span():
    assert scan_tags("<a><b>1</b></a><b>2</b>") == [TagSpan("a", "<b>1</b>", 0, 15), TagSpan("b", "2", 15, 23)]


def test_an_over_long_action_keeps_its_head():
    text = "H" * MAX_ACTION_CHARS + "TAIL"
    kept, cut = bound_text(text)
    assert cut is True and kept == "H" * MAX_ACTION_CHARS


def test_the_gate_cache_never_holds_more_than_its_bound():
    patterns = [re.compile(f"word{i}") for i in range(300)]
    kept = [(pattern,) for pattern in patterns]  # alive, so each tuple keeps its own id
    for group in kept:
        matching_patterns(group, "no match here")
        assert len(common._GATES) <= common._MAX_GATE_SETS == 256


def test_a_case_insensitive_pattern_finds_upper_case_text_past_its_gate():
    patterns = (re.compile(r"hello there", re.IGNORECASE), re.compile(r"hello there"))
    assert matching_patterns(patterns, "HELLO THERE, friend") == [patterns[0]]
    assert any_pattern_matches(patterns, "Say HELLO THERE") is True


@pytest.mark.parametrize("value, expected", [(7, 7), ("12", 12), (3.0, 3), (2.5, None), ("2.5", None), (True, None)])
def test_to_int_reads_only_integral_numbers(value, expected):
    assert to_int(value) == expected


def test_a_lower_bound_of_zero_is_checked():
    assert config_number("weight", 0, low=0.0, high=1.0) == 0.0
    with pytest.raises(ConfigError, match=r"weight must be in \[0.0, 1.0\], got -0.5"):
        config_number("weight", -0.5, low=0.0, high=1.0)


def test_json_of_exactly_max_action_chars_is_parsed_and_one_more_is_refused():
    longest = '"' + "a" * (MAX_ACTION_CHARS - 2) + '"'
    assert safe_json_loads(longest) == ("a" * (MAX_ACTION_CHARS - 2), None)
    value, problem = safe_json_loads(longest + " ")
    assert value is None and problem == f"JSON of {MAX_ACTION_CHARS + 1} characters exceeds MAX_ACTION_CHARS={MAX_ACTION_CHARS}"
