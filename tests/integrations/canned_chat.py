"""A canned OpenAI-compatible chat server on 127.0.0.1 that also streams (helper module, not a test):
``verifiers`` agents stream their completions. ``reply(messages) -> str`` picks each answer."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


class CannedChat:
    def __init__(self, reply: Callable[[list[dict[str, Any]]], str], model: str = "canned"):
        self.reply = reply
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> CannedChat:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _chunks(self, text: str) -> list[dict[str, Any]]:
        base = {"id": "chatcmpl-canned", "object": "chat.completion.chunk", "created": int(time.time()), "model": self.model}
        return [
            {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]},
            {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
             "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}},
        ]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                with server._lock:
                    server.requests.append(body)
                text = server.reply(body.get("messages", []))
                if body.get("stream"):
                    payload = b"".join(f"data: {json.dumps(chunk)}\n\n".encode() for chunk in server._chunks(text)) + b"data: [DONE]\n\n"
                    content_type = "text/event-stream"
                else:
                    payload = json.dumps({
                        "id": "chatcmpl-canned", "object": "chat.completion", "created": int(time.time()), "model": server.model,
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    }).encode()
                    content_type = "application/json"
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        return Handler
