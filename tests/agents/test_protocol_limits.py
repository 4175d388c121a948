"""The agent protocol's bounds at their edges (issue 43, item 6): a line of exactly the limit is read and
one byte more is not (whether its newline came or not), a skipped line's newline goes with it, a move of
exactly the move limit is kept, error texts are cut at their limit, and what the evaluator sends is strict
JSON (no NaN)."""

from __future__ import annotations

import json
import math
import os
import time

import pytest

from dialogue_gym.agents.protocol import MAX_ERROR_CHARS, MAX_MOVE_CHARS, Broken, LineReader, encode, error_text, read_moves


@pytest.fixture
def pipe():
    read, write = os.pipe()
    yield read, write
    os.close(read)
    os.close(write)


def test_a_line_of_exactly_the_limit_is_read_and_one_byte_more_is_refused(pipe):
    read, write = pipe
    reader = LineReader(read)
    os.write(write, b"a" * 10 + b"\n" + b"b" * 11 + b"\n" + b"next\n")
    deadline = time.monotonic() + 2
    assert reader.line(10, deadline) == b"a" * 10
    assert reader.line(10, deadline) == Broken("an answer over 10 bytes")
    assert reader.line(10, deadline) == b"next"  # the refused line went with its newline: no empty answer


def test_a_line_over_the_limit_without_its_newline_is_refused_at_once_and_skipped_to_its_end(pipe):
    read, write = pipe
    reader = LineReader(read)
    os.write(write, b"c" * 50)
    assert reader.line(10, time.monotonic() + 2) == Broken("an answer over 10 bytes")
    os.write(write, b"c" * 50 + b"\nok\n")
    assert reader.line(10, time.monotonic() + 2) == b"ok"


def test_a_move_of_exactly_the_limit_is_kept_and_one_character_more_is_refused():
    line = json.dumps({"id": 4, "texts": ["x" * MAX_MOVE_CHARS, "y" * (MAX_MOVE_CHARS + 1)]}).encode()
    texts, problems = read_moves(line, 4, 2)
    assert texts == ["x" * MAX_MOVE_CHARS, None]
    assert problems == [None, f"a move of {MAX_MOVE_CHARS + 1:,} characters (at most {MAX_MOVE_CHARS:,})"]


def test_an_answer_to_another_request_or_without_an_id_is_broken():
    assert read_moves(b'{"id": 3, "texts": ["a"]}', 4, 1) == Broken("an answer to request 3 while 4 was asked")
    assert read_moves(b'{"texts": ["a"]}', 4, 1) == Broken("an answer to request None while 4 was asked")


def test_error_texts_are_cut_at_their_limit_and_non_strings_are_named():
    assert error_text("e" * MAX_ERROR_CHARS) == "e" * MAX_ERROR_CHARS
    assert error_text("e" * (MAX_ERROR_CHARS + 1)) == "e" * MAX_ERROR_CHARS + "..."
    assert error_text({"__class__": "SystemExit"}) == "(not a string: a JSON object)"


def test_what_the_evaluator_sends_is_one_line_of_strict_json():
    assert encode({"text": "caf\u00e9\nline"}) == '{"text":"caf\u00e9\\nline"}\n'.encode()
    with pytest.raises(ValueError):
        encode({"observation": {"score": math.nan}})
