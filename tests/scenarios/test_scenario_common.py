"""The shared bounded readers of model output: total, bounded and linear-time on the nastiest input."""

from __future__ import annotations

import json
import math
import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dialogue_gym.errors import ConfigError
from dialogue_gym.scenarios.common import (
    MAX_ACTION_CHARS,
    MAX_CACHED_TEXT_CHARS,
    MAX_JSON_DEPTH,
    MAX_JSON_INT_DIGITS,
    _required_literal,
    any_pattern_matches,
    bound_text,
    check_max_utterance_chars,
    config_number,
    json_depth_exceeds,
    matching_patterns,
    memoise_short_texts,
    safe_json_loads,
    scan_tags,
    short_repr,
    tag_fields,
)

LAZY_TAG = re.compile(r"<(\w+)>(.*?)</\1>", re.DOTALL)
"""The quadratic pattern :func:`scan_tags` replaces; on short text it is the reference."""


def test_bound_text_cuts_at_the_documented_limit_and_says_so():
    assert bound_text("hello") == ("hello", False)
    assert bound_text("x" * MAX_ACTION_CHARS) == ("x" * MAX_ACTION_CHARS, False)
    head, truncated = bound_text("y" * (10 * MAX_ACTION_CHARS))
    assert truncated and head == "y" * MAX_ACTION_CHARS


@pytest.mark.parametrize(
    "text, problem",
    [
        ("9" * 5000, f"integer of 5000 digits exceeds MAX_JSON_INT_DIGITS={MAX_JSON_INT_DIGITS}"),
        ('{"amount": -' + "9" * 101 + "}", "integer of 101 digits"),
        ("[" * 1000, f"nested deeper than MAX_JSON_DEPTH={MAX_JSON_DEPTH}"),
        ('{"a":' * 1000, "nested deeper than MAX_JSON_DEPTH"),
        ("NaN", "non-finite number NaN"),
        ('{"x": [Infinity]}', "non-finite number Infinity"),
        ('{"x": -Infinity}', "non-finite number -Infinity"),
        ("1e999", "number '1e999' is not finite"),
        ('{"response": "a\x00b"}', "malformed JSON \\(Invalid control character"),
        ('{"response": ', "malformed JSON \\(Expecting value: line 1 column 14\\)"),
        ('"' + "a" * (MAX_ACTION_CHARS + 1), f"exceeds MAX_ACTION_CHARS={MAX_ACTION_CHARS}"),
        ("", "malformed JSON"),
    ],
    ids=lambda value: repr(value)[:30],
)
def test_safe_json_loads_rejects_what_json_loads_crashes_on_or_lets_through(text, problem):
    value, found = safe_json_loads(text)
    assert value is None and re.search(problem, found), found


def test_safe_json_loads_reads_bounded_finite_json():
    assert safe_json_loads('{"response": "hi", "n": [1, 2.5, -3], "ok": true}') == (
        {"response": "hi", "n": [1, 2.5, -3], "ok": True},
        None,
    )
    at_limit = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert safe_json_loads(at_limit)[1] is None
    assert safe_json_loads("-" + "9" * MAX_JSON_INT_DIGITS) == (-int("9" * MAX_JSON_INT_DIGITS), None)


def test_brackets_inside_strings_do_not_count_as_nesting():
    text = '{"response": "' + "[{" * 1000 + '\\" ]]"}'
    assert not json_depth_exceeds(text)
    assert safe_json_loads(text) == ({"response": "[{" * 1000 + '" ]]'}, None)
    assert json_depth_exceeds('["\\\\"' + ", [" * 40)


def test_safe_json_loads_never_raises_on_non_text():
    assert safe_json_loads(5) == (None, "JSON input must be a str, got int")  # type: ignore[arg-type]


json_values = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=10),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=200), json_values.map(repr), st.from_regex(r"[\[\]{}\",:0-9eE.\-NaInfity ]{0,80}", fullmatch=True)))
def test_safe_json_loads_is_total_and_returns_only_finite_numbers(text):
    value, problem = safe_json_loads(text)
    assert (value is None) or problem is None

    def finite(item) -> bool:
        if isinstance(item, float):
            return math.isfinite(item)
        if isinstance(item, list):
            return all(finite(x) for x in item)
        if isinstance(item, dict):
            return all(finite(x) for x in item.values())
        return True

    assert finite(value)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["<a>", "</a>", "<b>", "</b>", "<ab>", "</ab>", "x", "<", ">", "/", " ", "\n"]), max_size=20).map("".join))
def test_scan_tags_finds_what_the_lazy_regex_finds(text):
    assert [(span.name, span.content) for span in scan_tags(text)] == LAZY_TAG.findall(text)
    for span in scan_tags(text):
        assert text[span.start : span.end] == f"<{span.name}>{span.content}</{span.name}>"


def test_scan_tags_keeps_tags_inside_tags_verbatim_and_ignores_overlong_names():
    spans = scan_tags("<response><response>hi</response></response><x>1</x>")
    assert [(s.name, s.content) for s in spans] == [("response", "<response>hi"), ("x", "1")]
    long_name = "n" * 65
    assert scan_tags(f"<{long_name}>v</{long_name}>") == []
    assert tag_fields(scan_tags("<a> 1 </a><a>2</a>")) == {"a": "2"}


@pytest.mark.parametrize("unit", ["<a>", "<response>", "</a><a>", "<a></b>", "<" + "w" * 64 + ">"])
def test_scan_tags_on_a_megabyte_of_unclosed_tags_completes(unit):
    text = unit * (1_000_000 // len(unit))
    assert isinstance(scan_tags(text), list)


def test_memoised_parsers_do_not_keep_long_texts():
    calls = []

    @memoise_short_texts(maxsize=8)
    def parse(text: str, flag: int) -> int:
        calls.append(text)
        return len(text) + flag

    assert parse("short", 1) == parse("short", 1) == 6 and calls == ["short"]
    long_text = "z" * (MAX_CACHED_TEXT_CHARS + 1)
    parse(long_text, 0)
    assert parse.cache_info().currsize == 1 and len(calls) == 2


def test_short_repr_bounds_quoted_model_output():
    assert short_repr("x" * 1000) == repr("x" * 1000)[:57] + "..."
    assert short_repr(5) == "5"


@pytest.mark.parametrize(
    "value, message",
    [
        (float("nan"), "rho must be a finite number, got nan"),
        (10**400, r"rho must be a finite number, got 1000\d+\.\.\."),
        (True, "rho must be a finite number, got True"),
        (1.5, r"rho must be in \[0.0, 1.0\], got 1.5"),
    ],
)
def test_config_number_refuses_non_finite_out_of_range_and_huge_values(value, message):
    with pytest.raises(ConfigError, match=message):
        config_number("rho", value, 0.0, 1.0)


def test_check_max_utterance_chars():
    assert check_max_utterance_chars(MAX_ACTION_CHARS) == MAX_ACTION_CHARS
    for value in (0, MAX_ACTION_CHARS + 1, True, 5.0):
        with pytest.raises(ConfigError, match=f"max_utterance_chars must be an int 1-{MAX_ACTION_CHARS}"):
            check_max_utterance_chars(value)


GATED_PATTERNS = tuple(
    [re.compile(p, re.IGNORECASE) for p in (r"\bpending\b", r"how much (money )?(do )?i have", r"moved house|my address",
                                             r"(\$[0-9][0-9,.]{0,12}[0-9]).{0,40}\1", r"kelvin", r"sign[s]? up", r"\bup\b")]
    + [re.compile(p) for p in (r"Card-\d+", r"exact CASE")]
)
"""Gated and ungated patterns: ignoring case or not, with branches, optional groups and a backreference."""


def test_required_literal_is_the_longest_top_level_run():
    assert _required_literal(re.compile(r"\bpending\b", re.IGNORECASE)) == ("pending", True)
    assert _required_literal(re.compile(r"how much (money )?(do )?i have", re.IGNORECASE)) == ("how much ", True)
    assert _required_literal(re.compile(r"exact CASE")) == ("exact CASE", False)
    # Too short to rule anything out, or no literal run at all: always searched.
    assert _required_literal(re.compile(r"\bup\b", re.IGNORECASE)) == (None, False)
    assert _required_literal(re.compile(r"(\$[0-9]+).{0,9}\1")) == (None, False)


def test_gates_never_skip_a_pattern_that_matches_under_unicode_case_folding():
    # re's IGNORECASE matches the Kelvin sign to "k" and the long s to "s": a lower-cased substring
    # check would miss both, so non-ASCII text is always searched.
    for text in ("\u212aelvin", "ſign up", "KELVIN", "Pending!"):
        assert matching_patterns(GATED_PATTERNS, text) == [p for p in GATED_PATTERNS if p.search(text)] != []
    assert matching_patterns(GATED_PATTERNS, "nothing to see") == []
    assert not any_pattern_matches(GATED_PATTERNS[:1], "expending")


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["pending", "PENDING", "how much", " do ", "i have", "moved house", "my address", "$12.50",
                                 "kelvin", "\u212aelvin", "ſign", "sign", " up ", "Card-42", "card-42", "exact CASE", "exact case",
                                 " ", ".", "x"]), max_size=12).map("".join))
def test_matching_patterns_is_exactly_searching_each_pattern(text):
    expected = [pattern for pattern in GATED_PATTERNS if pattern.search(text)]
    assert matching_patterns(GATED_PATTERNS, text) == expected
    assert matching_patterns(list(GATED_PATTERNS), text) == expected
    assert any_pattern_matches(GATED_PATTERNS, text) is bool(expected)


@pytest.mark.parametrize(
    "make, says",
    [
        (lambda path: path.write_bytes(b'{"categories":\n {"\xff": 1}}'), "behaviors.json: line 2: not UTF-8 text (byte b'\\xff' at column 4)"),
        (lambda path: os.mkfifo(path), "behaviors.json' is a FIFO (named pipe), not a regular file"),
        (lambda path: path.mkdir(), "behaviors.json' is a folder, not a regular file"),
        (lambda path: None, "behaviors.json' does not exist"),
    ],
)
def test_a_scenario_file_that_is_not_utf8_or_not_a_file_is_one_line_exit_2(tmp_path, capsys, make, says):
    """A data file given to an env (here SEAD's behaviors_file) with invalid UTF-8, or a FIFO (read
    unopened: reading one would wait for a writer), is one line and exit 2 from the CLI."""
    from dialogue_gym.cli import main
    from dialogue_gym.errors import ScenarioError
    from dialogue_gym.scenarios.common import read_json

    path = tmp_path / "behaviors.json"
    make(path)
    with pytest.raises(ScenarioError, match="pass an existing UTF-8 JSON file"):
        read_json(path)
    code = main(["eval", "SEAD-Outbound-v0", "--agent", "sop", "--episodes", "1", "--env-kwargs", json.dumps({"behaviors_file": str(path)})])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and says in err[0] and "Traceback" not in err[0], err
