"""A records file whose last line has no newline (a process stopped mid-write) is cut back to its last
whole line, by hand at the edges: no newline at all, a whole file, an empty one, and a torn line longer
than the 64 KiB the search reads at a time (issue 43, item 6)."""

from __future__ import annotations

import pytest

from trainers.common.rundir import truncate_torn_tail


@pytest.mark.parametrize(
    ("content", "kept"),
    [
        (b"", None),
        (b'{"a": 1}\n', None),
        (b'{"a": 1}\n{"b": 2}\n', None),
        (b'{"a": 1}\n{"b"', 9),
        (b'{"a": 1}\n\n{', 10),
        (b'{"torn', 0),
        (b"\n{", 1),
        (b"x" * 10 + b"\n" + b"y" * 65536, 11),  # the newline just before the last 64 KiB chunk
        (b"x" * 10 + b"\n" + b"y" * 65535, 11),
        (b"x" * 10 + b"\n" + b"y" * 200_000, 11),  # found four chunks back
        (b"y" * 65537, 0),
        (b"\n" + b"y" * 65536, 1),  # the search's last chunk is the file's first byte alone
    ],
)
def test_a_torn_tail_is_cut_back_to_the_last_whole_line(tmp_path, content, kept):
    path = tmp_path / "trajectories.jsonl"
    path.write_bytes(content)
    assert truncate_torn_tail(path) == kept
    assert path.read_bytes() == (content if kept is None else content[:kept])


def test_a_missing_file_has_no_torn_tail(tmp_path):
    assert truncate_torn_tail(tmp_path / "missing.jsonl") is None
