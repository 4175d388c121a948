"""A real OpenAI-compatible chat-completions server on 127.0.0.1, for tests (helper module, not a test).

It speaks ``POST /v1/chat/completions`` (non-streaming JSON with ``usage`` and optional ``logprobs``),
answers from canned replies, and can fail a deterministic fraction of requests with 5xx / 429 or by
stalling past the client's timeout. Which attempt fails is a pure function of the request body and
how many times that body was seen, so runs do not depend on thread scheduling. A script forces the
next answers (hostile ones included: any 200 body, a trickle, an endless body). Everything is
bounded: a stall sleeps ``stall_s`` once, a trickle sends one answer, an endless body stops at its
byte count or when the client hangs up, and threads are daemons closed with the server.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import pytest


class ChatServer:
    def __init__(
        self,
        replies: list[str] | Callable[[dict[str, Any]], str] = ("Hello from the test server.",),
        *,
        model: str = "test-model",
        fail_rate: float = 0.0,
        stall_share: float = 0.5,
        fail_statuses: tuple[int, ...] = (500, 503, 429),
        stall_s: float = 1.0,
        delay_s: float = 0.0,
        required_key: str | None = None,
    ):
        self.replies = replies
        self.model = model
        self.fail_rate = fail_rate
        self.stall_share = stall_share
        self.fail_statuses = fail_statuses
        self.stall_s = stall_s
        self.delay_s = delay_s
        self.in_flight = 0
        self.max_in_flight = 0
        self.required_key = required_key
        self.script: list[tuple[str, Any]] = []
        """Forced answers for the next requests, consumed in order: ("status", 500), ("stall", None),
        ("raw", b"any 200 body"), ("retry_after", seconds), ("trickle_head", seconds_per_byte) and
        ("trickle_body", seconds_per_byte) (a good answer, one byte at a time from the status line or
        from the body on), ("huge", (n_bytes, declared)) (a 200 body of n_bytes spaces, with its
        Content-Length when declared, else delimited by closing the connection), ("hang_up", b"body")
        (a 200 whose Content-Length promises 100 bytes more than the body it sends before hanging up),
        ("echo", (status, prefix)) (that status with a body of ``prefix`` and then the request's headers, as
        a careless server echoes them in an error)."""
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.outcomes: list[str] = []
        self._seen: dict[bytes, int] = {}
        self._next_reply = 0
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._httpd.handle_error = lambda request, address: None  # stalled replies hit closed sockets
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> ChatServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    # -- decisions ------------------------------------------------------------------------------
    def _decide(self, raw: bytes) -> tuple[str, Any]:
        with self._lock:
            if self.script:
                return self.script.pop(0)
            seen = self._seen.get(raw, 0)
            self._seen[raw] = seen + 1
        digest = hashlib.sha256(raw + b"#%d" % seen).digest()
        u = int.from_bytes(digest[:8], "little") / 2**64
        if u < self.fail_rate * self.stall_share:
            return ("stall", None)
        if u < self.fail_rate:
            return ("status", self.fail_statuses[digest[8] % len(self.fail_statuses)])
        return ("ok", None)

    def _reply(self, body: dict[str, Any]) -> str:
        if callable(self.replies):
            return self.replies(body)
        with self._lock:
            text = self.replies[self._next_reply % len(self.replies)]
            self._next_reply += 1
        return text

    def _completion(self, body: dict[str, Any]) -> dict[str, Any]:
        text = self._reply(body)
        words = text.split()
        choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        if body.get("logprobs"):
            as_ids = body.get("return_tokens_as_token_ids")
            choice["logprobs"] = {
                "content": [
                    {"token": f"token_id:{100 + i}" if as_ids else word, "logprob": -0.25 * (i + 1), "top_logprobs": []}
                    for i, word in enumerate(words)
                ]
            }
        prompt_tokens = sum(len(m["content"].split()) for m in body["messages"])
        response = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": self.model,
            "choices": [choice],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(words), "total_tokens": prompt_tokens + len(words)},
        }
        if body.get("return_token_ids"):
            choice["token_ids"] = list(range(100, 100 + len(words)))
            response["prompt_token_ids"] = list(range(prompt_tokens))
        return response

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, payload: bytes, extra: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for key, value in (extra or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

            def _trickle(self, payload: bytes, seconds_per_byte: float, from_status_line: bool) -> None:
                head = (
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n" % len(payload)
                )
                if not from_status_line:
                    self.wfile.write(head)
                    self.wfile.flush()
                for byte in (head if from_status_line else b"") + payload:
                    time.sleep(seconds_per_byte)
                    self.wfile.write(bytes([byte]))  # raises once the client has hung up: the handler ends
                    self.wfile.flush()

            def _huge(self, n_bytes: int, declared: bool) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if declared:
                    self.send_header("Content-Length", str(n_bytes))
                else:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                block = b" " * 65536
                for start in range(0, n_bytes, len(block)):
                    self.wfile.write(block[: n_bytes - start])

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with server._lock:
                    server.headers.append(dict(self.headers))
                if self.path != "/v1/chat/completions":
                    return self._send(404, b'{"error": "not found"}')
                if server.required_key is not None and self.headers.get("Authorization") != f"Bearer {server.required_key}":
                    return self._send(401, b'{"error": "bad key"}')
                body = json.loads(raw)
                if body.get("model") != server.model:
                    return self._send(404, json.dumps({"error": f"model {body.get('model')!r} not served"}).encode())
                if body.get("stream") is not False:
                    return self._send(400, b'{"error": "this test server only answers stream=false"}')
                kind, value = server._decide(raw)
                with server._lock:
                    server.requests.append(body)
                    server.outcomes.append(kind if kind != "status" else str(value))
                if kind == "stall":
                    time.sleep(server.stall_s)
                elif kind == "status":
                    return self._send(value, json.dumps({"error": f"injected {value}"}).encode())
                elif kind == "retry_after":
                    return self._send(429, b'{"error": "slow down"}', {"Retry-After": str(value)})
                elif kind == "raw":
                    return self._send(200, value)
                elif kind == "echo":
                    status, prefix = value
                    return self._send(status, prefix + json.dumps({"error": "echo", "headers": dict(self.headers)}).encode())
                elif kind in ("trickle_head", "trickle_body"):
                    return self._trickle(json.dumps(server._completion(body)).encode(), value, kind == "trickle_head")
                elif kind == "huge":
                    return self._huge(*value)
                elif kind == "hang_up":
                    self.close_connection = True
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(value) + 100))
                    self.end_headers()
                    return self.wfile.write(value)
                with server._lock:
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                time.sleep(server.delay_s)
                with server._lock:
                    server.in_flight -= 1
                self._send(200, json.dumps(server._completion(body)).encode())

        return Handler


@pytest.fixture
def chat_server():
    """Factory fixture: ``chat_server(**kwargs)`` starts a ChatServer; all are stopped at teardown."""
    servers: list[ChatServer] = []

    def start(*args: Any, **kwargs: Any) -> ChatServer:
        servers.append(ChatServer(*args, **kwargs).start())
        return servers[-1]

    yield start
    for server in servers:
        server.stop()
