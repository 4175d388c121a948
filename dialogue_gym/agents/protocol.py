"""The agent boundary's wire format: one JSON object per line over the agent process's stdin/stdout.

The evaluator writes (``→``) and the agent's process answers (``←``)::

    → {"type": "hello", "env_id", "learner", "env_kwargs", "agent", "agent_backend", "path"}
    ← {"type": "ready", "privileged": false}    or    {"type": "error", "message": "..."}
    → {"type": "start", "episode": 7, "profile": {...}, "seed": 123}      (no answer)
    → {"type": "act", "id": 3, "episodes": [7, 9], "observations": [...], "infos": [...]}
    ← {"id": 3, "texts": ["...", "..."], "errors": [null, "ValueError: ..."]}    or    {"id": 3, "error": "..."}
    → {"type": "end", "episode": 7}                                         (no answer)
    → {"type": "close"}

Nothing the agent sends is executed or unpickled: the evaluator reads at most a bounded number of
bytes per line, parses them with :func:`json.loads` and keeps only strings of bounded length
(:func:`read_moves`). An agent's error is a message (a string), never an exception object.
``start`` has no answer, so an episode costs no extra round trip; an agent whose ``start`` failed
says so in its answer to that episode's first ``act``.
"""

from __future__ import annotations

import json
import os
import select
import time
from dataclasses import dataclass
from typing import Any

from dialogue_gym.scenarios.common import MAX_ACTION_CHARS

MAX_MOVE_CHARS = MAX_ACTION_CHARS
"""The longest move the boundary accepts: every game reads no more of an action than this."""
MAX_ERROR_CHARS = 2_000
"""An agent's error message is cut to this many characters before it is recorded."""
LINE_OVERHEAD_BYTES = 4_096
"""Bytes of an answer beside its moves (keys, ids, punctuation)."""
MOVE_BYTES = 12 * MAX_MOVE_CHARS + 2 * MAX_ERROR_CHARS * 12
"""Bytes one move (and its error) may take on the wire: 12 bytes per character is the longest JSON
escape (a surrogate pair written as two ``\\uXXXX``)."""


def answer_limit(moves: int) -> int:
    """The most bytes the answer to an ``act`` of ``moves`` moves may hold: a longer line is invalid."""
    return LINE_OVERHEAD_BYTES + moves * MOVE_BYTES


def encode(message: dict[str, Any]) -> bytes:
    """``message`` as one line of strict JSON (no NaN, one line whatever its strings hold)."""
    return (json.dumps(message, ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n").encode("utf-8")


@dataclass(frozen=True)
class Broken:
    """Why no valid line came: ``ended`` when the agent can answer no more (silent past the limit, or
    its process gone), so the evaluator stops asking it."""

    problem: str
    ended: bool = False


class LineReader:
    """Reads lines of at most a given size from a file descriptor, each before a deadline.

    A line over the limit is reported as soon as the limit is passed (an agent need never send its
    newline) and the rest of it is skipped up to its newline, so it is never taken for the next answer."""

    def __init__(self, fd: int):
        self.fd = fd
        self._buffer = bytearray()
        self._skipping = False

    def line(self, limit: int, deadline: float) -> bytes | Broken:
        while True:
            end = self._buffer.find(b"\n")
            if self._skipping:
                if end < 0:
                    self._buffer.clear()
                else:
                    del self._buffer[: end + 1]
                    self._skipping = False
                    continue
            elif end >= 0:
                if end > limit:
                    del self._buffer[: end + 1]
                    return Broken(f"an answer over {limit:,} bytes")
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                return line
            elif len(self._buffer) > limit:
                self._buffer.clear()
                self._skipping = True
                return Broken(f"an answer over {limit:,} bytes")
            chunk = self._read(deadline)
            if isinstance(chunk, Broken):
                return chunk
            self._buffer += chunk

    def _read(self, deadline: float) -> bytes | Broken:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([self.fd], [], [], remaining)[0]:
            return Broken("no answer within the time limit of a call", ended=True)
        try:
            chunk = os.read(self.fd, 1 << 16)
        except OSError as exc:
            return Broken(f"its output could not be read ({exc.strerror})", ended=True)
        return chunk or Broken("its process ended", ended=True)


def write_all(fd: int, data: bytes, deadline: float) -> Broken | None:
    """Write ``data`` to the non-blocking ``fd`` before ``deadline``: an agent that stops reading its
    input cannot stall the evaluator on a full pipe."""
    view = memoryview(data)
    while view:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([], [fd], [], remaining)[1]:
            return Broken("it stopped reading its input within the time limit of a call", ended=True)
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            continue
        except OSError as exc:  # BrokenPipeError: the process is gone
            return Broken(f"its input is closed ({exc.strerror})", ended=True)
    return None


def read_moves(line: bytes, request: int, count: int) -> tuple[list[str | None], list[str | None]] | Broken:
    """The moves of an answer to ``act`` number ``request`` of ``count`` moves: for each, the text or
    None with the problem that made it invalid. The whole answer is :class:`Broken` when it is not one
    JSON object answering this request with ``count`` texts."""
    try:
        answer = json.loads(line)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return Broken(f"an answer that is not JSON ({type(exc).__name__}; starts {line[:40]!r})")
    if not isinstance(answer, dict):
        return Broken(f"an answer that is a JSON {json_type(answer)}, not an object")
    if answer.get("id") != request:
        return Broken(f"an answer to request {answer.get('id')!r:.40} while {request} was asked")
    if "error" in answer:
        return Broken(f"the agent failed the call: {error_text(answer['error'])}")
    texts, errors = answer.get("texts"), answer.get("errors", [None] * count)
    if not isinstance(texts, list) or len(texts) != count or not isinstance(errors, list) or len(errors) != count:
        return Broken(f"an answer without a list of {count} texts (and errors)")
    problems: list[str | None] = []
    for index, (text, error) in enumerate(zip(texts, errors)):
        if error is not None:
            problems.append(f"the agent failed: {error_text(error)}")
        elif not isinstance(text, str):
            problems.append(f"a move that is a JSON {json_type(text)}, not a string")
        elif len(text) > MAX_MOVE_CHARS:
            problems.append(f"a move of {len(text):,} characters (at most {MAX_MOVE_CHARS:,})")
        else:
            problems.append(None)
        if problems[-1] is not None:
            texts[index] = None
    return texts, problems


def json_type(value: Any) -> str:
    """The JSON name of the type of a parsed ``value``, for messages."""
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")


def error_text(value: Any) -> str:
    """An agent's error as recorded: its text if it sent a string, cut to :data:`MAX_ERROR_CHARS`."""
    text = value if isinstance(value, str) else f"(not a string: a JSON {json_type(value)})"
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS] + "..."
