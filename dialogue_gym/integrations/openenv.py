"""OpenEnv client of a ``dialogue-gym serve`` server (``pip install 'dialogue_gym[openenv]'``).

``with DialogueGymClient(base_url="http://127.0.0.1:8000").sync() as env: env.reset(seed=0);
env.step(DialogueAction(text=...))``, or ``async with DialogueGymClient(base_url=...) as env`` and
``await env.reset(seed=0)``: each client is one session of the server, an episode played move by move.

This module is the client side only: it imports neither the server
(:mod:`dialogue_gym.integrations.openenv_server`, loaded when serving) nor ``openenv.core``, whose
package ``__init__`` (openenv-core 0.3) imports OpenEnv's FastAPI server and gradio web interface, about
7 s of imports for a client that needs none of it. It needs only ``websockets`` and speaks the
protocol of OpenEnv's own ``EnvClient`` on the server's ``/ws`` endpoint, one JSON text frame per message
and one answer per request:

- ``{"type": "reset", "data": {"seed": ..., "episode_id": ..., "options": ...}}`` and
  ``{"type": "step", "data": {"text": ..., "metadata": {}}}`` are answered
  ``{"type": "observation", "data": {"observation": {...}, "reward": r, "done": d}}``
  (:class:`StepResult` of a :class:`DialogueObservation`);
- ``{"type": "state"}`` is answered ``{"type": "state", "data": {...}}`` (:class:`DialogueState`);
- ``{"type": "close"}`` ends the session (sent by ``close()``);
- any request may be answered ``{"type": "error", "data": {"message": ..., "code": ...}}``, raised as
  :class:`ServerError` (a ``RuntimeError`` whose text is the server's message, e.g. ``step() called before
  reset()``).

OpenEnv's own clients (``GenericEnvClient``) work with the server too. For backward compatibility the
server's names (``serve``, ``make_app``, ``make_server``, ``DialogueGymEnvironment``, ...) can still be
imported from this module: each loads :mod:`dialogue_gym.integrations.openenv_server` on first use.
"""

from __future__ import annotations

import asyncio
import inspect
import ipaddress
import json
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from dialogue_gym.errors import DependencyNotInstalled

try:
    import websockets.asyncio.client as _async_ws
    import websockets.exceptions as _ws_errors
    import websockets.sync.client as _sync_ws
except ImportError as exc:
    raise DependencyNotInstalled("websockets", "openenv", "The OpenEnv client") from exc

_SYNC_CONNECT = {"legacy": True} if "legacy" in inspect.signature(_sync_ws.connect).parameters else {}
"""websockets >= 17.1 asks for ``legacy=True`` to return a connection that is not used as a context manager."""
_HAS_PROXY = "proxy" in inspect.signature(_sync_ws.connect).parameters  # websockets >= 15 reads proxies from the environment

__all__ = ["DialogueAction", "DialogueObservation", "DialogueState", "StepResult", "ServerError", "DialogueGymClient", "SyncDialogueGymClient"]


@dataclass
class DialogueAction:
    """The learner's turn: its raw text, exactly what a model emitted (``metadata`` is sent along, as
    OpenEnv's actions carry it, and ignored by the server)."""

    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class DialogueObservation:
    """What the learner sees after ``reset`` or ``step`` (nothing privileged): its chat so far
    (``messages``), the observation's other keys (``features``: turn counter, ...), its ``info``
    (``invalid_action``, ``outcome``, ...) and what it knows of how the episode started (``profile``)."""

    messages: list[dict[str, str]] = field(default_factory=list)
    features: dict[str, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    profile: dict[str, Any] = field(default_factory=dict)
    reward: float | None = None
    done: bool = False


@dataclass
class DialogueState:
    """The session's ``state()``: id, learner role, seed asked for, turns played, outcome and return;
    the whole ``trajectory`` (privileged data included) once the episode is over, never while it runs.
    Fields a newer server sends that this client does not know are kept in ``extra``."""

    env_id: str = ""
    learner: str = ""
    episode_id: str | None = None
    step_count: int = 0
    seed: int | None = None
    done: bool = False
    outcome: str | None = None
    learner_return: float = 0.0
    trajectory: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class StepResult:
    """What ``reset`` and ``step`` return, as OpenEnv's ``StepResult``: the observation, the step's
    reward (the learner's; ``None`` after ``reset``) and whether the episode is over."""

    observation: DialogueObservation
    reward: float | None = None
    done: bool = False


class ServerError(RuntimeError):
    """The server answered a request with an error (a call out of turn, an unknown argument, a closed
    or refused session, ...): ``message`` and ``code`` are the server's (``EXECUTION_ERROR``,
    ``VALIDATION_ERROR``, ``CAPACITY_REACHED``, ...), ``data`` the whole error object."""

    def __init__(self, data: dict[str, Any]):
        self.data = data
        self.message = str(data.get("message", "unknown error"))
        self.code = str(data.get("code", "UNKNOWN"))
        super().__init__(f"Server error: {self.message} (code: {self.code})")


def ws_url(base_url: str) -> str:
    """The session endpoint of ``base_url``: ``http(s)://`` becomes ``ws(s)://`` (no scheme: ``ws://``),
    then ``/ws``."""
    url = base_url.rstrip("/")
    for http, ws in (("http://", "ws://"), ("https://", "wss://")):
        if url.startswith(http):
            return ws + url[len(http) :] + "/ws"
    return (url if url.startswith(("ws://", "wss://")) else "ws://" + url) + "/ws"


def _is_local(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _step_data(action: DialogueAction | str) -> dict[str, Any]:
    if isinstance(action, str):
        return {"text": action, "metadata": {}}
    if isinstance(action, DialogueAction):
        return {"text": action.text, "metadata": action.metadata}
    raise TypeError(f"step() takes a DialogueAction (or the move's text as a str), got {type(action).__name__}.")


def _answer(raw: str | bytes, expected: str) -> dict[str, Any]:
    """The ``data`` of an answer of type ``expected``; an error answer raises :class:`ServerError`."""
    answer = json.loads(raw)
    if not isinstance(answer, dict):
        raise ServerError({"message": f"the server's answer is not a JSON object: {str(raw)[:200]!r}", "code": "PROTOCOL"})
    data = answer.get("data") or {}
    if answer.get("type") == "error":
        raise ServerError(data if isinstance(data, dict) else {"message": str(data)})
    if answer.get("type") != expected:
        raise ServerError({"message": f"expected a {expected!r} answer, got {str(answer.get('type'))[:100]!r}", "code": "PROTOCOL"})
    return data


def _result(data: dict[str, Any]) -> StepResult:
    seen = dict(data.get("observation") or {})
    known = {name: seen[name] for name in ("messages", "features", "info", "profile") if name in seen}
    reward, done = data.get("reward"), bool(data.get("done", False))
    return StepResult(observation=DialogueObservation(**known, reward=reward, done=done), reward=reward, done=done)


_STATE_FIELDS = frozenset(DialogueState.__dataclass_fields__) - {"extra"}


def _state(data: dict[str, Any]) -> DialogueState:
    return DialogueState(**{k: v for k, v in data.items() if k in _STATE_FIELDS}, extra={k: v for k, v in data.items() if k not in _STATE_FIELDS})


class _Options:
    """What both clients share: where to connect and how long to wait."""

    def __init__(self, base_url: str, connect_timeout_s: float = 10.0, message_timeout_s: float = 60.0, max_message_size_mb: float = 100.0, token: str | None = None):
        self.base_url = base_url
        self._ws_url = ws_url(base_url)
        self._connect_timeout = connect_timeout_s
        self._message_timeout = message_timeout_s
        self._max_message_size_mb = max_message_size_mb
        self._token = token

    def _connect_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"open_timeout": self._connect_timeout, "max_size": int(self._max_message_size_mb * 1024 * 1024)}
        if self._token is not None:
            kwargs["additional_headers"] = {"Authorization": f"Bearer {self._token}"}
        if _HAS_PROXY and _is_local(self._ws_url):
            kwargs["proxy"] = None  # a loopback server is never reached through a proxy set in the environment
        return kwargs

    def _no_answer(self, what: str) -> TimeoutError:
        return TimeoutError(f"no answer to {what} from {self._ws_url} within {self._message_timeout:g} s (message_timeout_s); the session was closed.")

    def _closed(self, exc: Exception) -> ConnectionError:
        return ConnectionError(f"the connection to {self._ws_url} closed ({exc}); open a new client to start a new session.")


class DialogueGymClient(_Options):
    """Async client of one session of a ``dialogue-gym serve`` server (see the module docstring).

    ``base_url``: the server's URL (``http://``, ``https://``, ``ws://`` or ``wss://``); ``token``: the
    server's token, sent as ``Authorization: Bearer <token>`` in the WebSocket handshake;
    ``connect_timeout_s`` and ``message_timeout_s``: how long to wait for the handshake and for each
    answer (a request left unanswered closes the session: a late answer must not be read as the next
    one's); ``max_message_size_mb``: the largest answer accepted (a finished episode's state holds
    its whole trajectory). ``sync()`` gives the blocking :class:`SyncDialogueGymClient` with the same options.
    """

    def __init__(self, base_url: str, connect_timeout_s: float = 10.0, message_timeout_s: float = 60.0, max_message_size_mb: float = 100.0, token: str | None = None):
        super().__init__(base_url, connect_timeout_s, message_timeout_s, max_message_size_mb, token)
        self._ws: Any = None
        self._lock: asyncio.Lock | None = None

    def sync(self) -> SyncDialogueGymClient:
        """A blocking client of the same server with the same options (a session of its own)."""
        return SyncDialogueGymClient(self.base_url, self._connect_timeout, self._message_timeout, self._max_message_size_mb, self._token)

    async def connect(self) -> DialogueGymClient:
        """Open the session (``reset`` and the others do it when needed); raises ``ConnectionError``."""
        if self._ws is None:
            try:
                self._ws = await _async_ws.connect(self._ws_url, **self._connect_kwargs())
            except Exception as exc:
                raise ConnectionError(f"Failed to connect to {self._ws_url}: {exc}") from exc
            self._lock = asyncio.Lock()
        return self

    async def _ask(self, kind: str, data: dict[str, Any] | None, expected: str) -> dict[str, Any]:
        await self.connect()
        message = json.dumps({"type": kind, "data": data} if data is not None else {"type": kind})
        async with self._lock:
            try:
                await self._ws.send(message)
                raw = await asyncio.wait_for(self._ws.recv(), timeout=self._message_timeout)
            except asyncio.TimeoutError:
                await self.disconnect(say_close=False)
                raise self._no_answer(f"{kind}()") from None
            except _ws_errors.ConnectionClosed as exc:
                self._ws = None
                raise self._closed(exc) from None
        return _answer(raw, expected)

    async def reset(self, **kwargs: Any) -> StepResult:
        """Start an episode: ``seed``, ``episode_id`` and ``options`` as the env's ``reset``."""
        return _result(await self._ask("reset", kwargs, "observation"))

    async def step(self, action: DialogueAction | str) -> StepResult:
        """Play the learner's move (a :class:`DialogueAction` or its text)."""
        return _result(await self._ask("step", _step_data(action), "observation"))

    async def state(self) -> DialogueState:
        """The session's :class:`DialogueState`."""
        return _state(await self._ask("state", None, "state"))

    async def disconnect(self, say_close: bool = True) -> None:
        """End the session (best effort: a server that went away is no error)."""
        socket, self._ws = self._ws, None
        if socket is None:
            return
        try:
            if say_close:
                await socket.send(json.dumps({"type": "close"}))
        except Exception:
            pass
        try:
            await socket.close()
        except Exception:
            pass

    async def close(self) -> None:
        """The same as :meth:`disconnect`."""
        await self.disconnect()

    async def __aenter__(self) -> DialogueGymClient:
        return await self.connect()

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def __enter__(self) -> Any:
        raise TypeError("DialogueGymClient is async: use 'async with client:', or 'with client.sync():' for the blocking client.")

    def __exit__(self, *exc: Any) -> None:  # pragma: no cover - __enter__ raises
        pass


class SyncDialogueGymClient(_Options):
    """Blocking client of one session of a ``dialogue-gym serve`` server: the same options and methods
    as :class:`DialogueGymClient`, without ``await``; safe to share between threads (one request at a
    time)."""

    def __init__(self, base_url: str, connect_timeout_s: float = 10.0, message_timeout_s: float = 60.0, max_message_size_mb: float = 100.0, token: str | None = None):
        super().__init__(base_url, connect_timeout_s, message_timeout_s, max_message_size_mb, token)
        self._ws: Any = None
        self._lock = threading.Lock()

    def connect(self) -> SyncDialogueGymClient:
        """Open the session (``reset`` and the others do it when needed); raises ``ConnectionError``."""
        with self._lock:
            self._connect()
        return self

    def _connect(self) -> None:
        if self._ws is None:
            try:
                self._ws = _sync_ws.connect(self._ws_url, **self._connect_kwargs(), **_SYNC_CONNECT)
            except Exception as exc:
                raise ConnectionError(f"Failed to connect to {self._ws_url}: {exc}") from exc

    def _ask(self, kind: str, data: dict[str, Any] | None, expected: str) -> dict[str, Any]:
        message = json.dumps({"type": kind, "data": data} if data is not None else {"type": kind})
        with self._lock:
            self._connect()
            try:
                self._ws.send(message)
                raw = self._ws.recv(timeout=self._message_timeout)
            except TimeoutError:
                self._disconnect(say_close=False)
                raise self._no_answer(f"{kind}()") from None
            except _ws_errors.ConnectionClosed as exc:
                self._ws = None
                raise self._closed(exc) from None
        return _answer(raw, expected)

    def reset(self, **kwargs: Any) -> StepResult:
        """Start an episode: ``seed``, ``episode_id`` and ``options`` as the env's ``reset``."""
        return _result(self._ask("reset", kwargs, "observation"))

    def step(self, action: DialogueAction | str) -> StepResult:
        """Play the learner's move (a :class:`DialogueAction` or its text)."""
        return _result(self._ask("step", _step_data(action), "observation"))

    def state(self) -> DialogueState:
        """The session's :class:`DialogueState`."""
        return _state(self._ask("state", None, "state"))

    def _disconnect(self, say_close: bool = True) -> None:
        socket, self._ws = self._ws, None
        if socket is None:
            return
        try:
            if say_close:
                socket.send(json.dumps({"type": "close"}))
        except Exception:
            pass
        try:
            socket.close()
        except Exception:
            pass

    def disconnect(self) -> None:
        """End the session (best effort: a server that went away is no error)."""
        with self._lock:
            self._disconnect()

    def close(self) -> None:
        """The same as :meth:`disconnect`."""
        self.disconnect()

    def __enter__(self) -> SyncDialogueGymClient:
        return self.connect()

    def __exit__(self, *exc: Any) -> None:
        self.close()


_SERVER_NAMES = frozenset({
    "serve", "make_app", "make_server", "check_serve_options", "is_loopback", "check_text", "plain", "DialogueGymEnvironment",
    "TOKEN_ENV", "MIN_TOKEN_CHARS", "STATELESS_STEP",
})


def __getattr__(name: str) -> Any:
    """The server's names, for code written when client and server were one module: loads the server."""
    if name in _SERVER_NAMES:
        import importlib

        return getattr(importlib.import_module("dialogue_gym.integrations.openenv_server"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
