"""``dialogue-gym serve`` as a public server: options checked before start, a start-up line, one log
line per session event through a queue that never blocks, a token beyond loopback, HTTP errors as
4xx with the env's message, and text that cannot be sent back refused before the move is applied."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
import threading
import time
import urllib.error
import urllib.request

import pytest

pytest.importorskip("openenv")
pytest.importorskip("uvicorn")

from dialogue_gym.cli import main  # noqa: E402
from dialogue_gym.errors import ConfigError  # noqa: E402
from dialogue_gym.integrations import openenv_server as served  # noqa: E402
from dialogue_gym.integrations.openenv import DialogueAction, DialogueGymClient  # noqa: E402
from dialogue_gym.integrations.openenv_server import make_server  # noqa: E402
from server_thread import in_thread  # noqa: E402

TOKEN = "test-token-0123456789"


@contextlib.contextmanager
def serving(env_id="SEAD-Outbound-v0", **kwargs):
    """:func:`make_server` on a free local port, run in a thread; yields (url, what it printed)."""
    output = kwargs.pop("output", None) or io.StringIO()
    try:
        with in_thread(*make_server(env_id, port=0, output=output, **kwargs)) as port:
            yield f"http://127.0.0.1:{port}", output
    finally:
        served._stop_log()


def post(url, path, body, token=None):
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(), headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.mark.parametrize("flags, message", [
    (["--port", "99999"], r"--port must be a TCP port in \[0, 65535\] \(0: any free port\), got 99999\."),
    (["--port", "-1"], r"--port must be a TCP port in \[0, 65535\]"),
    (["--max-sessions", "0"], r"--max-sessions must be an int >= 1 \(concurrent sessions at most\), got 0\."),
    (["--idle-timeout", "nan"], r"--idle-timeout must be a finite number of seconds > 0, got nan; e\.g\. --idle-timeout 300\."),
    (["--idle-timeout", "inf"], "--idle-timeout must be a finite number"),
    (["--idle-timeout", "0"], "--idle-timeout must be a finite number of seconds > 0"),
    (["--host", "0.0.0.0"], r"--host 0\.0\.0\.0 serves beyond this machine.*pass --token \(or set DIALOGUE_GYM_TOKEN\)"),
    (["--host", "::"], "--host :: serves beyond this machine"),
    (["--token", "short"], r"the token \(--token or DIALOGUE_GYM_TOKEN\) must be at least 16 printable ASCII characters without spaces"),
    (["--token", "a" * 15 + " "], "must be at least 16 printable ASCII"),
])
def test_options_are_checked_before_start_and_exit_2_with_one_line(capsys, monkeypatch, flags, message):
    monkeypatch.delenv(served.TOKEN_ENV, raising=False)
    err = _one_line(capsys, ["serve", "SEAD-Outbound-v0", *flags])
    assert re.search(message, err), err


def _one_line(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("dialogue-gym: error: "), err
    return err


def test_a_port_in_use_is_a_one_line_error():
    with serving() as (url, _):
        port = int(url.rsplit(":", 1)[1])
        with pytest.raises(ConfigError, match=rf"cannot listen on --host 127\.0\.0\.1 --port {port} .*pick another --port"):
            make_server("SEAD-Outbound-v0", port=port)


def test_the_token_may_come_from_the_environment_for_a_public_host(monkeypatch):
    monkeypatch.setenv(served.TOKEN_ENV, TOKEN)
    output = io.StringIO()
    _, sockets = make_server("SEAD-Outbound-v0", host="0.0.0.0", port=0, output=output)
    sockets[0].close()
    served._stop_log()
    assert "SEAD-Outbound-v0 at http://0.0.0.0:" in output.getvalue()
    assert "at most 64 sessions, idle sessions closed after 300 s, token required" in output.getvalue()


def test_start_up_line_session_log_lines_and_the_token():
    with serving(max_sessions=3, idle_timeout=60, token=TOKEN) as (url, output):
        with DialogueGymClient(base_url=url, token=TOKEN).sync() as environment:
            environment.reset(seed=0)
            environment.step(DialogueAction(text="Hello, is this the owner?"))
        # The server notices the close on its own time (under load, after the next request was refused):
        # wait for its line, so the log's order below is the order of the requests.
        deadline = time.monotonic() + 10
        while "closed (0 open)" not in output.getvalue() and time.monotonic() < deadline:
            time.sleep(0.02)
        with pytest.raises(ConnectionError, match="HTTP 403"):
            with DialogueGymClient(base_url=url).sync() as environment:
                environment.reset(seed=0)
        with pytest.raises(ConnectionError, match="HTTP 403"):
            with DialogueGymClient(base_url=url, token=TOKEN + "x").sync() as environment:
                environment.reset(seed=0)
        status, body = post(url, "/reset", {"seed": 0})
        assert status == 401 and "Authorization: Bearer <token>" in body["detail"]
        time.sleep(0.3)  # the log thread writes behind
    lines = output.getvalue().splitlines()
    port = url.rsplit(":", 1)[1]
    assert lines[0] == (
        f"dialogue-gym serve: SEAD-Outbound-v0 at {url} (WebSocket sessions at ws://127.0.0.1:{port}/ws), "
        "at most 3 sessions, idle sessions closed after 60 s, token required"
    )
    events = [line.split("dialogue-gym serve: ", 1)[1] for line in lines[1:]]
    assert events[0].endswith("opened (1 of at most 3 open)") and events[1].endswith("closed (0 open)")
    assert events[2:] == ["refused a websocket request to /ws without the token"] * 2 + ["refused a http request to /reset without the token"]
    assert "Traceback" not in output.getvalue()


def test_http_errors_are_4xx_with_the_env_message_and_step_points_at_the_websocket_api():
    with serving() as (url, _):
        status, body = post(url, "/step", {"action": {"text": "Hello"}})
        assert status == 409 and "stateless" in body["detail"] and "/ws" in body["detail"]
        status, body = post(url, "/reset", {"seed": 0, "options": {"profile": {"state": "x"}}})
        assert status == 422 and body["error"] == "ScenarioError" and "must be three ints" in body["detail"]
        status, body = post(url, "/reset", {"seed": 0})
        assert status == 200 and body["observation"]["messages"][0]["role"] == "system"


def test_a_lone_surrogate_is_refused_before_the_move_is_applied():
    with serving() as (url, _):
        with DialogueGymClient(base_url=url).sync() as environment:
            environment.reset(seed=0)
            with pytest.raises(RuntimeError, match=r"the message's data\.text holds '\\ud800', which is not UTF-8 text"):
                environment.step(DialogueAction(text="Hello \ud800 owner"))
            with pytest.raises(RuntimeError, match=r"the message's data\.options\.profile\.name holds '\\udfff'"):
                environment.reset(seed=0, options={"profile": {"name": "\udfff"}})
            environment.reset(seed=0)
            assert environment.state().step_count == 0
            result = environment.step(DialogueAction(text="Hello, is this the owner?"))
            assert environment.state().step_count == 1 and not result.done


class _StuckOutput(io.TextIOBase):
    """An output nobody reads: every write waits until the test ends."""

    def __init__(self):
        self.release = threading.Event()
        self.writes = 0

    def write(self, text):
        self.writes += 1
        if self.writes > 1:  # the start-up line gets through; the log thread then hangs
            self.release.wait(30)
        return len(text)


def test_an_unread_output_never_stalls_the_server(monkeypatch):
    monkeypatch.setattr(served, "LOG_QUEUE_LINES", 4)
    stuck = _StuckOutput()
    try:
        with serving(output=stuck) as (url, _):

            async def sessions():
                for seed in range(15):
                    async with DialogueGymClient(base_url=url) as environment:
                        await environment.reset(seed=seed)

            started = time.perf_counter()
            asyncio.run(asyncio.wait_for(sessions(), 20))
            assert time.perf_counter() - started < 20
            assert served._DroppingQueueHandler.dropped > 0
            stuck.release.set()
    finally:
        stuck.release.set()


HOSTILE_BODIES = [
    b"", b"{", b"[]", b"null", b'"x"', b"[" * 100_000, b'{"seed": 1e999}', b'{"seed": NaN}', b'{"seed": 99999999999999999999999999}',
    b'{"seed": -1}', b'{"seed": "x"}', b'{"seed": 0, "options": []}', b'{"seed": 0, "options": {"profile": "\\ud800"}}',
    b'{"seed": 0, "options": {"profile": ' + b"[" * 5000 + b"]" * 5000 + b"}}", b'{"seed": 0, "episode_id": 5}', b"\xff\xfe",
    b'{"action": {"text": "\\ud800"}}', b'{"action": {"text": ' + b"[" * 10_000 + b"}}",
]


def test_hostile_http_bodies_are_answered_4xx_never_500():
    with serving() as (url, output):
        for path in ("/reset", "/step"):
            for body in HOSTILE_BODIES:
                request = urllib.request.Request(url + path, data=body, headers={"Content-Type": "application/json"})
                try:
                    with urllib.request.urlopen(request, timeout=20) as response:
                        status = response.status
                except urllib.error.HTTPError as exc:
                    status = exc.code
                assert status < 500, (path, body[:60], status)
        post(url, "/reset", {"seed": 0, "options": {"\x1b[2J" + "k" * 5000: 1}})
        time.sleep(0.3)
    logged = output.getvalue()
    assert "\x1b" not in logged and "Traceback" not in logged and "Exception in ASGI" not in logged
    assert max(len(line) for line in logged.splitlines()) < 1200


def test_hostile_websocket_messages_and_actions_keep_the_session_alive():
    import random

    from hostile import hostile_action
    from websockets.sync.client import connect

    rng = random.Random(0)
    with serving() as (url, output):
        with connect(url.replace("http", "ws") + "/ws", max_size=None) as socket:
            for message in (
                "not json", '{"type": "step", "data": {"text": 5}}', '{"type": "step"}', '{"type": "nope"}', '{"type": "step", "data": {"text": "\\ud800"}}',
                '{"type": "reset", "data": {"seed": 1e999}}', '{"type": "reset", "data": {"seed": 0, "options": {"profile": []}}}',
                '{"type": "reset", "data": {"seed": 0}}',
            ):
                socket.send(message)
                assert json.loads(socket.recv(timeout=20))["type"] == ("observation" if message.endswith("0}}") else "error"), message
        # A message nested past Python's JSON reader ends that session with an error (openenv-core's
        # handling), and the server goes on.
        with connect(url.replace("http", "ws") + "/ws", max_size=None) as socket:
            socket.send("[" * 100_000)
            assert "maximum recursion depth" in json.loads(socket.recv(timeout=20))["data"]["message"]
        with DialogueGymClient(base_url=url).sync() as environment:
            environment.reset(seed=0)
            for _ in range(40):
                try:
                    result = environment.step(DialogueAction(text=hostile_action(rng)))
                except RuntimeError as exc:  # the env's own error, e.g. after the episode ended
                    assert "Server error" in str(exc)
                    result = None
                if result is None or result.done:
                    environment.reset(seed=rng.randrange(100))
        time.sleep(0.3)
    assert "Traceback" not in output.getvalue() and "Exception in ASGI" not in output.getvalue()


def test_a_short_token_from_the_environment_is_refused_too(monkeypatch, capsys):
    monkeypatch.setenv(served.TOKEN_ENV, "abc")
    err = _one_line(capsys, ["serve", "SEAD-Outbound-v0", "--host", "0.0.0.0"])
    assert "the token (--token or DIALOGUE_GYM_TOKEN) must be at least 16" in err


def test_in_process_sessions_check_text_but_leave_other_values_to_the_env():
    from dialogue_gym.errors import InvalidAction
    from dialogue_gym.integrations.openenv_server import DialogueGymEnvironment

    session = DialogueGymEnvironment("SEAD-Outbound-v0")
    with pytest.raises(ConfigError, match=r"reset options holds '\\udfff', which is not UTF-8 text"):
        session.reset(seed=0, options={"profile": {"name": "\udfff"}})
    session.reset(seed=0)
    with pytest.raises(InvalidAction, match=r"the action's text holds '\\ud800'"):
        session.step(DialogueAction(text="\ud800"))
    assert session.state.step_count == 0
    with pytest.raises(ConfigError, match="options must be a dict"):
        session.reset(seed=0, options=object())
    session.close()


LONE_SURROGATE_MESSAGES = {
    "step metadata": '{"type": "step", "data": {"text": "Hello, is this the owner?", "metadata": {"note": "\\ud800"}}}',
    "step metadata key": '{"type": "step", "data": {"text": "Hello, is this the owner?", "metadata": {"\\udfff": 1}}}',
    "type": '{"type": "\\ud800"}',
    "type of a step": '{"type": "step\\udc00", "data": {"text": "Hello"}}',
    "reset episode_id": '{"type": "reset", "data": {"seed": 0, "episode_id": "run-\\ud83d"}}',
    "an unknown field": '{"type": "state", "extra": ["\\ude00"]}',
    "close": '{"type": "close", "data": {"why": "\\ud800"}}',
}


@pytest.mark.parametrize("message", LONE_SURROGATE_MESSAGES.values(), ids=LONE_SURROGATE_MESSAGES.keys())
def test_a_lone_surrogate_anywhere_in_a_message_is_refused_before_it_is_applied_and_the_session_goes_on(message):
    from websockets.sync.client import connect

    with serving() as (url, output):
        with connect(url.replace("http", "ws") + "/ws", max_size=None) as socket:
            socket.send('{"type": "reset", "data": {"seed": 0, "episode_id": "first"}}')
            assert json.loads(socket.recv(timeout=20))["type"] == "observation"
            socket.send(message)
            refused = json.loads(socket.recv(timeout=20))
            assert refused["type"] == "error" and refused["data"]["code"] == "VALIDATION_ERROR", refused
            assert "which is not UTF-8 text (a lone surrogate); send text without unpaired surrogates" in refused["data"]["message"]
            socket.send('{"type": "state"}')
            state = json.loads(socket.recv(timeout=20))
            assert state["type"] == "state" and state["data"]["step_count"] == 0 and state["data"]["episode_id"] == "first", state
            socket.send('{"type": "step", "data": {"text": "Hello, is this the owner?"}}')
            assert json.loads(socket.recv(timeout=20))["type"] == "observation"
            socket.send('{"type": "state"}')
            assert json.loads(socket.recv(timeout=20))["data"]["step_count"] == 1
    assert "Traceback" not in output.getvalue()


def test_a_refused_message_names_where_the_surrogate_is():
    from websockets.sync.client import connect

    with serving() as (url, _):
        with connect(url.replace("http", "ws") + "/ws", max_size=None) as socket:
            socket.send(LONE_SURROGATE_MESSAGES["step metadata"])
            refused = json.loads(socket.recv(timeout=20))["data"]["message"]
            assert refused.startswith("the message's data.metadata.note holds '\\ud800'"), refused
            socket.send('{"type": "step", "data": {"text": "fine", "metadata": {"a": ["x", "\\udbff"]}}}')
            assert json.loads(socket.recv(timeout=20))["data"]["message"].startswith("the message's data.metadata.a[1] holds '\\udbff'")


def test_lone_surrogate_names_keys_values_and_items_and_passes_pairs():
    assert served.lone_surrogate({"type": "step", "data": {"text": "\U0001F600 fine", "n": [1, None, 2.5]}}) is None
    assert served.lone_surrogate({"data": {"metadata": {"\udfff": 1}}}) == "data.metadata key '\\udfff' holds '\\udfff'"
    assert served.lone_surrogate({"\ud800": 1}) == "key '\\ud800' holds '\\ud800'"
    assert served.lone_surrogate({"a": [[], ["x", "y\udc00"]]}) == "a[1][1] holds '\\udc00'"
    assert served.lone_surrogate("\ud83d") == "text holds '\\ud83d'"
    deep = current = []
    for _ in range(5_000):
        current.append([])
        current = current[0]
    current.append("\ud800")
    assert served.lone_surrogate(deep).endswith("[0] holds '\\ud800'")
