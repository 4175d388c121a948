"""A file the system will not let us stat or read is named with the system's reason, in words
(``strerror``), or the error itself where the system gave no words; never ``None``."""

from __future__ import annotations

from pathlib import Path

import pytest

from dialogue_gym.errors import ConfigError
from dialogue_gym.inputs import read_utf8, regular_file


def test_a_path_through_a_file_cannot_be_read_and_says_why_in_words(tmp_path):
    """stat() of ``file/child`` fails with ENOTDIR: the message holds its strerror, not the whole OSError."""
    (tmp_path / "file").write_text("x", encoding="utf-8")
    path = tmp_path / "file" / "child"
    with pytest.raises(ConfigError) as raised:
        regular_file(path, "give a file.")
    assert str(raised.value) == f"{str(path)!r} cannot be read (Not a directory); give a file."


def test_a_stat_error_without_words_is_named_by_the_error_itself(tmp_path, monkeypatch):
    path = tmp_path / "data.json"
    path.write_text("{}", encoding="utf-8")

    def broken_stat(self, **kwargs):
        raise OSError("stat went wrong")

    monkeypatch.setattr(Path, "stat", broken_stat)
    with pytest.raises(ConfigError) as raised:
        regular_file(path, "fix it.")
    assert str(raised.value) == f"{str(path)!r} cannot be read (stat went wrong); fix it."


@pytest.mark.parametrize(("error", "shown"), [(PermissionError(13, "Permission denied"), "Permission denied"), (OSError("read went wrong"), "read went wrong")])
def test_a_file_that_stats_but_cannot_be_read_says_why(tmp_path, monkeypatch, error, shown):
    """A regular file whose read fails (no permission, an I/O error): words where the system gave them, else the error."""
    path = tmp_path / "data.json"
    path.write_text("{}", encoding="utf-8")

    def broken_read(self):
        raise error

    monkeypatch.setattr(Path, "read_bytes", broken_read)
    with pytest.raises(ConfigError) as raised:
        read_utf8(path, "fix it.")
    assert str(raised.value) == f"{str(path)!r} cannot be read ({shown}); fix it."
