"""The agent protocol's pieces by hand (issue 43, item 6): the answer size bound, every way an answer
is broken or a move invalid, the JSON type names, and writes to an agent that reads slowly, not at
all, or is gone."""

from __future__ import annotations

import fcntl
import os
import threading
import time

import pytest

from dialogue_gym.agents.protocol import (
    LINE_OVERHEAD_BYTES,
    MAX_ERROR_CHARS,
    MAX_MOVE_CHARS,
    MOVE_BYTES,
    Broken,
    LineReader,
    answer_limit,
    json_type,
    read_moves,
    write_all,
)


def test_the_answer_bound_is_the_overhead_plus_each_moves_longest_escape():
    # 12 bytes a character (a surrogate pair as two \uXXXX escapes) for the move and twice the error text
    assert MOVE_BYTES == 12 * MAX_MOVE_CHARS + 2 * 12 * MAX_ERROR_CHARS
    assert (LINE_OVERHEAD_BYTES, MAX_ERROR_CHARS) == (4_096, 2_000)
    assert answer_limit(1) == 4_096 + MOVE_BYTES and answer_limit(3) == 4_096 + 3 * MOVE_BYTES


@pytest.mark.parametrize(
    ("line", "broken"),
    [
        (b"not json", "an answer that is not JSON (JSONDecodeError; starts b'not json')"),
        (b'"\xff"', "an answer that is not JSON (UnicodeDecodeError; starts b'\"\\xff\"')"),
        (b"[1, 2]", "an answer that is a JSON array, not an object"),
        (b'"text"', "an answer that is a JSON string, not an object"),
        (b'{"id": 7, "error": "out of memory"}', "the agent failed the call: out of memory"),
        (b'{"id": 7, "texts": "a"}', "an answer without a list of 2 texts (and errors)"),
        (b'{"id": 7, "texts": ["a"]}', "an answer without a list of 2 texts (and errors)"),
        (b'{"id": 7, "texts": ["a", "b"], "errors": null}', "an answer without a list of 2 texts (and errors)"),
        (b'{"id": 7, "texts": ["a", "b"], "errors": [null]}', "an answer without a list of 2 texts (and errors)"),
    ],
)
def test_every_broken_answer_is_named(line, broken):
    assert read_moves(line, 7, 2) == Broken(broken)


def test_each_move_is_checked_alone_and_an_invalid_one_is_none():
    line = b'{"id": 1, "texts": ["ok", 3, "x", null], "errors": [null, null, "boom", null]}'
    assert read_moves(line, 1, 4) == (
        ["ok", None, None, None],
        [None, "a move that is a JSON number, not a string", "the agent failed: boom", "a move that is a JSON null, not a string"],
    )
    # no errors key: every move without one
    assert read_moves(b'{"id": 1, "texts": ["a", "b"]}', 1, 2) == (["a", "b"], [None, None])


@pytest.mark.parametrize(
    ("value", "name"), [({}, "object"), ([], "array"), ("", "string"), (True, "boolean"), (None, "null"), (1, "number"), (1.5, "number")]
)
def test_json_type_names(value, name):
    assert json_type(value) == name


@pytest.fixture
def pipe():
    read, write = os.pipe()
    yield read, write
    for fd in (read, write):
        try:
            os.close(fd)
        except OSError:
            pass


def test_a_write_larger_than_the_pipe_arrives_whole_to_a_slow_reader(pipe):
    read, write = pipe
    os.set_blocking(write, False)
    data = bytes(range(256)) * 4096  # 1 MiB: many times a pipe's buffer
    received = bytearray()

    def slow_reader():
        while len(received) < len(data):
            time.sleep(0.001)
            received.extend(os.read(read, 50_000))

    thread = threading.Thread(target=slow_reader)
    thread.start()
    assert write_all(write, data, time.monotonic() + 60) is None
    thread.join(60)
    assert bytes(received) == data


def test_a_write_to_an_agent_that_stops_reading_ends_it_at_the_deadline(pipe):
    _, write = pipe
    os.set_blocking(write, False)
    size = fcntl.fcntl(write, 1032)  # F_GETPIPE_SZ: the buffer fills, then nothing more is taken
    started = time.monotonic()
    assert write_all(write, b"x" * (size + 1), started + 0.2) == Broken("it stopped reading its input within the time limit of a call", ended=True)
    assert time.monotonic() - started >= 0.2


def test_a_write_to_an_agent_whose_input_is_closed_ends_it(pipe):
    read, write = pipe
    os.close(read)
    assert write_all(write, b"hello\n", time.monotonic() + 5) == Broken("its input is closed (Broken pipe)", ended=True)


def test_a_deadline_already_passed_ends_without_waiting(pipe):
    read, write = pipe
    os.write(write, b"ready\n")
    assert LineReader(read).line(100, time.monotonic() - 1) == Broken("no answer within the time limit of a call", ended=True)
    assert write_all(write, b"x", time.monotonic() - 1) == Broken("it stopped reading its input within the time limit of a call", ended=True)
    assert write_all(write, b"", time.monotonic() - 1) is None  # nothing to write: nothing waited for


def test_several_answers_in_one_read_are_taken_one_by_one(pipe):
    read, write = pipe
    os.write(write, b"one\ntwo\n\nthree")
    reader = LineReader(read)
    deadline = time.monotonic() + 2
    assert [reader.line(10, deadline) for _ in range(3)] == [b"one", b"two", b""]
    os.write(write, b"\n")
    assert reader.line(10, deadline) == b"three"
