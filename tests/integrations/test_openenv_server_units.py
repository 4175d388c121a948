"""The OpenEnv server's checks pinned by hand (issue 43, item 6: integrations/openenv_server.py's
mutants): serve's options at their bounds, loopback hosts, the one-line log format, JSON-plain values,
the refusal frame of a lone surrogate and a log stop that returns past a stuck output (no server started)."""

from __future__ import annotations

import inspect
import io
import json
import logging
import math
import queue
import threading

import numpy as np
import pytest

pytest.importorskip("openenv")

from dialogue_gym.errors import ConfigError  # noqa: E402
from dialogue_gym.integrations import openenv_server as served  # noqa: E402

TOKEN = "a" * 16


@pytest.mark.parametrize(
    "options",
    [{}, {"port": 0}, {"port": 65535}, {"max_sessions": 1}, {"idle_timeout": None}, {"idle_timeout": 0.5},
     {"host": "0.0.0.0", "token": TOKEN}, {"host": "::1"}, {"host": "localhost"}, {"token": "b" * 40}],
)
def test_serve_options_that_start(options):
    served.check_serve_options(**options)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"port": -1}, r"--port must be a TCP port in \[0, 65535\]"),
        ({"port": 65536}, r"--port must be a TCP port"),
        ({"port": True}, r"--port must be a TCP port"),
        ({"port": 80.0}, r"--port must be a TCP port"),
        ({"max_sessions": 0}, r"--max-sessions must be an int >= 1"),
        ({"max_sessions": True}, r"--max-sessions must be an int >= 1"),
        ({"max_sessions": 2.0}, r"--max-sessions must be an int >= 1"),
        ({"idle_timeout": 0}, r"--idle-timeout must be a finite number of seconds > 0"),
        ({"idle_timeout": math.inf}, r"--idle-timeout must be a finite number"),
        ({"idle_timeout": True}, r"--idle-timeout must be a finite number"),
        ({"idle_timeout": "300"}, r"--idle-timeout must be a finite number"),
        ({"host": ""}, r"--host must be a host name or address, got ''"),
        ({"host": None}, r"--host must be a host name or address"),
        ({"token": "a" * 15}, r"at least 16 printable ASCII characters without spaces \(got 15 characters\)"),
        ({"token": "a" * 15 + " "}, r"\(got 16 characters\)"),
        ({"token": "a" * 15 + "\n"}, r"\(got 16 characters\)"),
        ({"token": "a" * 15 + "é"}, r"\(got 16 characters\)"),
        ({"token": 1234567890123456}, r"\(got int characters\)"),
        ({"host": "0.0.0.0"}, r"--host 0.0.0.0 serves beyond this machine"),
        ({"host": "10.1.2.3"}, r"serves beyond this machine"),
    ],
)
def test_serve_options_that_are_refused(options, message):
    with pytest.raises(ConfigError, match=message):
        served.check_serve_options(**options)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("localhost", True), ("127.0.0.1", True), ("127.200.0.1", True), ("::1", True), ("[::1]", True),
     ("0.0.0.0", False), ("::", False), ("example.org", False), ("LOCALHOST.example", False)],
)
def test_is_loopback(host, loopback):
    assert served.is_loopback(host) is loopback


def _formatted(message, exc=None):
    record = logging.LogRecord("x", logging.INFO, "f", 1, message, None, (type(exc), exc, None) if exc else None)
    return served._OneLine().format(record)


def test_log_lines_are_one_line_printable_and_cut():
    assert _formatted("a\nb\t c") == "a b c"
    assert _formatted("bell\x07 esc\x1b[2J") == "bell\\x07 esc\\x1b[2J"
    assert _formatted("failed", ValueError("bad\nvalue")) == "failed: ValueError: bad value"
    assert served.LOG_LINE_CHARS == 1000
    assert _formatted("x" * 1000) == "x" * 1000
    assert _formatted("x" * 1001) == "x" * 1000 + "..."


def test_plain_turns_numpy_and_tuples_into_json_data():
    assert served.plain({"a": np.int64(3), "b": np.arange(2), "c": (1, 2.5), "d": np.float32(0.5)}) == {"a": 3, "b": [0, 1], "c": [1, 2.5], "d": 0.5}
    with pytest.raises(TypeError, match="object is not JSON data"):
        served.plain({"x": object()})


def test_the_refusal_frame_of_a_lone_surrogate():
    frame = json.loads(served._refusal(json.dumps({"type": "step", "data": {"text": "a\ud800"}})))
    assert frame == {"type": "error", "data": {"code": "VALIDATION_ERROR", "message": (
        "the message's data.text holds '\\ud800', which is not UTF-8 text (a lone surrogate); send text without unpaired surrogates.")}}
    assert served._refusal(json.dumps({"type": "step", "data": {"text": "\U0001F600"}})) is None
    assert served._refusal("not json {") is None


def test_an_app_serves_64_sessions_closed_after_300_idle_seconds_by_default_as_documented():
    """docs/integrations.md: ``serve ... [--port 8000] [--max-sessions 64] [--idle-timeout 300]``; the
    library's entry points take the same defaults as the command."""
    def session_server(app):
        return next(filter(None, (served._closure_server(getattr(route, "endpoint", None)) for route in app.router.routes)))

    default = session_server(served.make_app("SEAD-Outbound-v0"))
    assert (default.max_concurrent_envs, default._session_idle_timeout_s) == (64, 300.0)
    chosen = session_server(served.make_app("SEAD-Outbound-v0", max_sessions=3, idle_timeout=None))
    assert (chosen.max_concurrent_envs, chosen._session_idle_timeout_s) == (3, None)
    for function in (served.make_server, served.check_serve_options):
        defaults = {name: parameter.default for name, parameter in inspect.signature(function).parameters.items()}
        assert (defaults["port"], defaults["max_sessions"], defaults["idle_timeout"]) == (8000, 64, 300.0), function.__name__


def test_a_full_log_queue_counts_what_it_drops_and_says_so_once_it_is_below_half_full(monkeypatch):
    monkeypatch.setattr(served._DroppingQueueHandler, "dropped", 0)  # a server of another test may have dropped lines
    lines = served.LOG_QUEUE_LINES
    waiting = queue.Queue(lines)
    handler = served._DroppingQueueHandler(waiting)

    def record(text):
        return logging.makeLogRecord({"msg": text})

    for number in range(lines):
        handler.enqueue(record(str(number)))
    handler.enqueue(record("lost 1"))
    handler.enqueue(record("lost 2"))
    assert waiting.qsize() == lines and served._DroppingQueueHandler.dropped == 2
    while waiting.qsize() > lines // 2:
        waiting.get_nowait()
    handler.enqueue(record("at half"))  # exactly half full: not yet below it, the count waits
    assert served._DroppingQueueHandler.dropped == 2 and waiting.qsize() == lines // 2 + 1
    while waiting.qsize() > lines // 2 - 1:
        waiting.get_nowait()
    handler.enqueue(record("below half"))
    assert served._DroppingQueueHandler.dropped == 0
    *_, said, last = [waiting.get_nowait() for _ in range(waiting.qsize())]
    assert (said.getMessage(), said.levelname) == ("2 log line(s) dropped (the output was not read)", "WARNING")
    assert last.getMessage() == "below half"


def test_stopping_the_log_with_an_output_nobody_reads_returns_after_a_bounded_wait():
    # `serve` stops its log thread on exit. With an output nobody reads (a pipe whose reader went away) the
    # thread hangs in a write: the stop gives it a short wait and returns, the rest staying queued, so the
    # server's exit never hangs on its own log. How short (the default `wait`) is a tuning constant, recorded
    # as equivalent in tools/mutation_equivalent.json: only a timing test could tell one short wait from another.
    release = threading.Event()

    class StuckOutput(io.TextIOBase):
        def write(self, text):
            release.wait(60)
            return len(text)

    served._start_log(StuckOutput())
    try:
        served.log.info("a line the output never takes")
        stopper = threading.Thread(target=served._stop_log, daemon=True)
        stopper.start()
        stopper.join(20)
        assert not stopper.is_alive(), "_stop_log waited on an output nobody reads without a limit"
        assert served._listener is None
    finally:
        release.set()
