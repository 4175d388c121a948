"""What users hand the loaders (:mod:`dialogue_gym.inputs`): deep JSON options, special files and
bytes that are not UTF-8 are one error naming the value, the file and the fix."""

from __future__ import annotations

import os
import socket

import pytest

from dialogue_gym.errors import ConfigError, ScenarioError
from dialogue_gym.inputs import MAX_OPTION_DEPTH, json_option, read_utf8, regular_file


def test_json_option_bounds_nesting_before_parsing():
    assert json_option("[" * MAX_OPTION_DEPTH + "]" * MAX_OPTION_DEPTH, "--x") == eval("[" * MAX_OPTION_DEPTH + "]" * MAX_OPTION_DEPTH)
    assert json_option('{"a": "' + "[" * 10_000 + '"}', "--x") == {"a": "[" * 10_000}  # brackets in strings are text
    with pytest.raises(ConfigError, match=rf"got '\[{{{MAX_OPTION_DEPTH + 1}}}'; pass JSON nested less deeply\.$"):
        json_option("[" * (MAX_OPTION_DEPTH + 1), "--x")
    for deep in ('{"a": ' * 20_000, "[" * 1_000_000):
        with pytest.raises(ConfigError, match=rf"--x nests arrays/objects deeper than {MAX_OPTION_DEPTH} levels, got '.{{80}}'\.\.\. \([\d,]+ characters\); pass JSON"):
            json_option(deep, "--x")


@pytest.mark.parametrize("text, reason", [("{oops", "Expecting property name"), ("9" * 5000, "Exceeds the limit (4300 digits)"), ("", "Expecting value")])
def test_json_option_names_the_flag_and_the_reason(text, reason):
    with pytest.raises(ConfigError, match=r"^--env-kwargs must be JSON, got ") as raised:
        json_option(text, "--env-kwargs")
    assert reason in str(raised.value) and len(str(raised.value)) < 250


def test_regular_file_names_what_a_path_is_without_opening_it(tmp_path):
    fix = "pass a run file."
    plain = tmp_path / "plain"
    plain.write_text("x")
    assert regular_file(plain, fix) == plain
    with pytest.raises(ConfigError, match=r"'.*missing' does not exist; pass a run file\.$"):
        regular_file(tmp_path / "missing", fix)
    with pytest.raises(ScenarioError, match=r"is a folder, not a regular file; pass a run file\.$"):
        regular_file(tmp_path, fix, ScenarioError)
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(ConfigError, match=r"is a FIFO \(named pipe\), not a regular file"):
        regular_file(tmp_path / "fifo", fix)
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tmp_path / "sock"))
        with pytest.raises(ConfigError, match=r"is a socket, not a regular file"):
            regular_file(tmp_path / "sock", fix)
    with pytest.raises(ConfigError, match=r"'/dev/null' is a device, not a regular file"):
        regular_file("/dev/null", fix)


def test_read_utf8_names_the_line_column_and_byte(tmp_path):
    path = tmp_path / "data.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": "caf\xc3\xa9"}\n{"c": "\xe9t\xc3\xa9"}\n')
    with pytest.raises(ScenarioError, match=r"data\.jsonl: line 3: not UTF-8 text \(byte b'\\xe9' at column 8\); fix it\.$"):
        read_utf8(path, "fix it.", ScenarioError)
    path.write_bytes('{"b": "café"}\n'.encode())
    assert read_utf8(path, "fix it.") == '{"b": "café"}\n'
