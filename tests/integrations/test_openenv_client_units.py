"""The OpenEnv client's pieces pinned by hand (issue 43, item 6: integrations/openenv.py's mutants):
the session URL, loopback hosts, step payloads, answers and errors, results and state, and the
connection options (no server needed)."""

from __future__ import annotations

import inspect
import json

import pytest

websockets = pytest.importorskip("websockets")
import websockets.sync.client  # noqa: E402

from dialogue_gym.integrations import openenv  # noqa: E402
from dialogue_gym.integrations.openenv import DialogueAction, ServerError, _answer, _is_local, _Options, _result, _state, _step_data, ws_url  # noqa: E402


@pytest.mark.parametrize(
    ("base", "url"),
    [
        ("http://h:1", "ws://h:1/ws"),
        ("https://h/", "wss://h/ws"),
        ("ws://h", "ws://h/ws"),
        ("wss://h//", "wss://h/ws"),
        ("h:8000", "ws://h:8000/ws"),
    ],
)
def test_ws_url(base, url):
    assert ws_url(base) == url


@pytest.mark.parametrize(
    ("url", "local"),
    [("ws://localhost:1/ws", True), ("ws://127.0.0.1/ws", True), ("ws://127.9.9.9/ws", True), ("ws://[::1]:5/ws", True),
     ("ws://10.0.0.1/ws", False), ("ws://example.org/ws", False), ("ws:///ws", False)],
)
def test_only_loopback_hosts_are_local(url, local):
    assert _is_local(url) is local


def test_step_data_of_text_or_an_action():
    assert _step_data("hi") == {"text": "hi", "metadata": {}}
    assert _step_data(DialogueAction(text="x", metadata={"k": 1})) == {"text": "x", "metadata": {"k": 1}}
    with pytest.raises(TypeError, match="step\\(\\) takes a DialogueAction \\(or the move's text as a str\\), got int"):
        _step_data(3)


def test_answers_and_server_errors():
    assert _answer(json.dumps({"type": "state", "data": {"a": 1}}), "state") == {"a": 1}
    assert _answer(json.dumps({"type": "state"}), "state") == {}
    with pytest.raises(ServerError) as error:
        _answer(json.dumps({"type": "error", "data": {"message": "out of turn", "code": "EXECUTION_ERROR"}}), "step")
    assert (error.value.message, error.value.code, str(error.value)) == ("out of turn", "EXECUTION_ERROR", "Server error: out of turn (code: EXECUTION_ERROR)")
    with pytest.raises(ServerError) as error:
        _answer(json.dumps({"type": "error", "data": "boom"}), "step")
    assert (error.value.message, error.value.code) == ("boom", "UNKNOWN")
    with pytest.raises(ServerError, match=r"expected a 'step' answer, got 'state' \(code: PROTOCOL\)"):
        _answer(json.dumps({"type": "state", "data": {}}), "step")
    with pytest.raises(ServerError, match=r"the server's answer is not a JSON object: '\[1\]' \(code: PROTOCOL\)"):
        _answer("[1]", "step")


def test_a_step_result_keeps_the_known_observation_fields():
    result = _result({"observation": {"messages": [1], "profile": {"p": 2}, "secret": 3}, "reward": 0.5, "done": 1})
    assert result.reward == 0.5 and result.done is True
    assert result.observation.messages == [1] and result.observation.profile == {"p": 2} and result.observation.done is True
    assert not hasattr(result.observation, "secret")
    empty = _result({})
    assert empty.reward is None and empty.done is False


def test_state_splits_known_fields_from_extra():
    known = sorted(openenv._STATE_FIELDS)
    assert "extra" not in known and known
    state = _state({known[0]: "v", "other": 1})
    assert getattr(state, known[0]) == "v" and state.extra == {"other": 1}


def test_connection_options():
    options = _Options("http://127.0.0.1:9", connect_timeout_s=2.5, max_message_size_mb=1.5, token="t")
    kwargs = options._connect_kwargs()
    assert kwargs["open_timeout"] == 2.5 and kwargs["max_size"] == 1_572_864
    assert kwargs["additional_headers"] == {"Authorization": "Bearer t"}
    # websockets >= 15 reads proxies from the environment: a loopback server is reached with proxy=None, exactly
    # when connect() takes that argument (an older one would refuse it)
    takes_proxy = "proxy" in inspect.signature(websockets.sync.client.connect).parameters
    assert ("proxy" in kwargs) is takes_proxy and kwargs.get("proxy") is None
    assert "proxy" not in _Options("http://example.org")._connect_kwargs()
    plain = _Options("http://h")._connect_kwargs()
    assert plain["open_timeout"] == 10.0 and plain["max_size"] == 100 * 1024 * 1024 and "additional_headers" not in plain
    assert str(_Options("http://h", message_timeout_s=1.5)._no_answer("reset")) == (
        "no answer to reset from ws://h/ws within 1.5 s (message_timeout_s); the session was closed."
    )
    assert str(_Options("http://h")._no_answer("step")).endswith("within 60 s (message_timeout_s); the session was closed.")


def test_a_state_the_server_leaves_empty_reads_as_a_fresh_episode():
    state = _state({})
    fields = (state.env_id, state.learner, state.episode_id, state.step_count, state.seed, state.done, state.outcome,
              state.learner_return, state.trajectory, state.extra)
    assert fields == ("", "", None, 0, None, False, None, 0.0, None, {})


@pytest.mark.parametrize("client", [openenv.DialogueGymClient, openenv.SyncDialogueGymClient])
def test_both_clients_wait_ten_seconds_to_connect_a_minute_for_an_answer_and_take_100_mb(client):
    made = client("http://h:1")
    assert (made._connect_timeout, made._message_timeout, made._max_message_size_mb, made._token) == (10.0, 60.0, 100.0, None)
    assert made._ws_url == "ws://h:1/ws"


def test_disconnecting_says_close_once_and_closes_the_socket_even_when_the_server_is_gone():
    class Socket:
        def __init__(self, fail=False):
            self.sent, self.closed, self.fail = [], 0, fail

        def send(self, text):
            if self.fail:
                raise ConnectionError("gone")
            self.sent.append(json.loads(text))

        def close(self):
            self.closed += 1

    client = openenv.SyncDialogueGymClient("http://h:1")
    client.disconnect()  # never connected: nothing to do
    client._ws = socket = Socket()
    client.close()
    client.close()  # a second close is no error and sends nothing
    assert socket.sent == [{"type": "close"}] and socket.closed == 1 and client._ws is None
    client._ws = gone = Socket(fail=True)
    client.disconnect()
    assert gone.closed == 1 and client._ws is None
