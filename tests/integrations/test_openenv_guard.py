"""The server's ASGI guard called in-process (issue 43, item 6): a request with no token header at all is
refused like one with a wrong token, and a WebSocket frame holding a lone surrogate is answered by the
guard while the session only ever receives the next clean frame. No server or network needed."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("openenv")

from dialogue_gym.integrations.openenv_server import _Guard  # noqa: E402


def call(guard, scope, events=()):
    """What ``guard`` sends for ``scope`` and whether it passed the request on to the app."""
    sent, passed = [], []
    queued = list(events)

    async def receive():
        return queued.pop(0) if queued else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    async def app(scope, receive, send):
        passed.append(await receive())

    guard.app = app
    asyncio.run(guard(scope, receive, send))
    return sent, passed


HTTP = {"type": "http", "method": "GET", "path": "/health", "headers": []}


@pytest.mark.parametrize("headers", [[], [(b"authorization", b"Bearer wrong")], [(b"authorization", b"secret-token")]])
def test_a_request_without_the_exact_bearer_token_is_refused_401_and_never_reaches_the_app(headers):
    sent, passed = call(_Guard(None, token="secret-token"), {**HTTP, "headers": headers})
    assert passed == [] and sent[0]["type"] == "http.response.start" and sent[0]["status"] == 401
    body = json.loads(sent[1]["body"])
    assert body["detail"].startswith("this server requires a token: send the header 'Authorization: Bearer <token>'")


def test_a_websocket_handshake_without_the_token_is_closed_with_1008():
    sent, passed = call(_Guard(None, token="secret-token"), {"type": "websocket", "path": "/ws", "headers": []})
    assert passed == [] and sent == [{"type": "websocket.close", "code": 1008, "reason": "token required"}]


def test_the_right_token_passes():
    sent, passed = call(_Guard(None, token="secret-token"), {**HTTP, "headers": [(b"authorization", b"Bearer secret-token")]})
    assert passed == [{"type": "http.disconnect"}] and sent == []


def test_a_frame_with_a_lone_surrogate_is_answered_by_the_guard_and_the_session_gets_the_next_frame():
    bad = {"type": "websocket.receive", "text": json.dumps({"type": "step", "data": {"metadata": {"note": "\ud800"}}}, ensure_ascii=True)}
    good = {"type": "websocket.receive", "text": json.dumps({"type": "state"})}
    sent, passed = call(_Guard(None), {"type": "websocket", "path": "/ws", "headers": []}, [bad, good])
    assert passed == [good]
    (answer,) = sent
    error = json.loads(answer["text"])
    assert error["type"] == "error" and error["data"]["code"] == "VALIDATION_ERROR"
    assert "data.metadata.note holds '\\ud800'" in error["data"]["message"]
