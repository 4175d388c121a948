"""How much of a bad option an error quotes (issue 43, item 6): up to SHOWN_OPTION_CHARS characters
whole, anything longer cut there with its length, so a pasted file never floods the one-line error; and
where a bad byte is, counted from the first byte."""

from __future__ import annotations

import pytest

from dialogue_gym.errors import ConfigError
from dialogue_gym.inputs import SHOWN_OPTION_CHARS, json_option


def test_a_bad_option_of_exactly_the_shown_length_is_quoted_whole_and_one_character_more_is_cut_with_its_length():
    whole = "x" * SHOWN_OPTION_CHARS
    with pytest.raises(ConfigError) as raised:
        json_option(whole, "--env-kwargs")
    assert f"got {whole!r} (" in str(raised.value)
    longer = "y" * 200
    with pytest.raises(ConfigError) as raised:
        json_option(longer, "--env-kwargs")
    assert f"got {longer[:SHOWN_OPTION_CHARS]!r}... (200 characters) (" in str(raised.value)


def test_a_bad_byte_right_after_a_leading_newline_is_on_line_2_column_1(tmp_path):
    """The line and column count from the file's first byte (a newline at offset 0 counts)."""
    from dialogue_gym.inputs import read_utf8

    path = tmp_path / "data.jsonl"
    path.write_bytes(b"\n\xff")
    with pytest.raises(ConfigError, match=r"data\.jsonl: line 2: not UTF-8 text \(byte b'\\xff' at column 1\); fix it\.$"):
        read_utf8(path, "fix it.")
