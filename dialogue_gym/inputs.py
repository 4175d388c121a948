"""What users hand the command lines and loaders, read so that no input becomes a traceback or a hang.

- :func:`json_option`: the JSON value of an option such as ``--env-kwargs``; nesting deeper than
  ``MAX_OPTION_DEPTH`` is refused by a linear scan before ``json.loads`` could recurse.
- :func:`regular_file`: a path that names a regular file; a FIFO, socket or device (which a reader
  would wait on forever, or read without end) is refused before it is opened.
- :func:`read_utf8`: a regular file's text; bytes that are not UTF-8 are one error naming the file,
  the line and the byte.

Every refusal is a :class:`~dialogue_gym.errors.ConfigError` (or the error type the caller names)
whose message is one line: what was wrong, where, and the caller's fix.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

from dialogue_gym.errors import ConfigError
from dialogue_gym.scenarios.common import json_depth_exceeds

MAX_OPTION_DEPTH = 64
"""Deepest nesting of arrays and objects in a JSON option (a backend spec or env keywords nest a few levels)."""
SHOWN_OPTION_CHARS = 80
"""Characters of a refused option's text shown in its error."""


def _shown(text: str) -> str:
    return repr(text) if len(text) <= SHOWN_OPTION_CHARS else f"{text[:SHOWN_OPTION_CHARS]!r}... ({len(text):,} characters)"


def json_option(text: str, flag: str) -> Any:
    """The JSON value of option ``flag`` (any JSON: callers check its shape); ConfigError for text that
    is not JSON or nests deeper than ``MAX_OPTION_DEPTH``."""
    if json_depth_exceeds(text, MAX_OPTION_DEPTH):
        raise ConfigError(f"{flag} nests arrays/objects deeper than {MAX_OPTION_DEPTH} levels, got {_shown(text)}; pass JSON nested less deeply.")
    try:
        return json.loads(text)
    except ValueError as exc:  # JSONDecodeError, or an integer over Python's 4,300 digits
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc).split(";")[0]
        raise ConfigError(f"{flag} must be JSON, got {_shown(text)} ({reason}).") from exc


def regular_file(path: str | Path, fix: str, error: type[Exception] = ConfigError) -> Path:
    """``path`` when it names a regular file (links followed); otherwise ``error`` saying what it is
    (missing, a folder, a FIFO, a device, a socket) and ``fix``. Nothing is opened, so a FIFO with no
    writer cannot block the caller."""
    target = Path(path)
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        raise error(f"{str(path)!r} does not exist; {fix}") from None
    except OSError as exc:
        raise error(f"{str(path)!r} cannot be read ({exc.strerror or exc}); {fix}") from None
    if stat.S_ISREG(mode):
        return target
    raise error(f"{str(path)!r} is {kind_of(mode)}, not a regular file; {fix}")


def kind_of(mode: int) -> str:
    """What a file of ``mode`` (``os.stat``'s ``st_mode``) is, in words: "a regular file", "a folder", "a FIFO (named pipe)", ..."""
    return (
        "a regular file" if stat.S_ISREG(mode) else "a folder" if stat.S_ISDIR(mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(mode)
        else "a socket" if stat.S_ISSOCK(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"
    )


def not_utf8(path: str | Path, data: bytes, exc: UnicodeDecodeError, fix: str) -> str:
    """The one-line message for ``data`` (the bytes of ``path``) that ``exc`` found not UTF-8: file, line, byte."""
    line = data.count(b"\n", 0, exc.start) + 1
    column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
    return f"{path}: line {line}: not UTF-8 text (byte {data[exc.start:exc.start + 1]!r} at column {column}); {fix}"


def read_utf8(path: str | Path, fix: str, error: type[Exception] = ConfigError) -> str:
    """The text of the regular file ``path``; ``error`` naming the file and ``fix`` when it is not one,
    cannot be read, or holds bytes that are not UTF-8 (the message names the line and the byte)."""
    target = regular_file(path, fix, error)
    try:
        data = target.read_bytes()
    except OSError as exc:
        raise error(f"{str(path)!r} cannot be read ({exc.strerror or exc}); {fix}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(not_utf8(path, data, exc, fix)) from None
