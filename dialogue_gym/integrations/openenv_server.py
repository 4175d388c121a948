"""Every registered id as an OpenEnv environment server (``pip install 'dialogue_gym[openenv]'``).

``dialogue-gym serve SEAD-Outbound-v0 --port 8000`` (or :func:`serve`) runs ``openenv-core``'s own
server: each WebSocket client (:class:`dialogue_gym.integrations.openenv.DialogueGymClient`, or OpenEnv's
``GenericEnvClient``) gets its own session, a single-agent env of the id built from ``--env-kwargs``,
so concurrent episodes never share a game or a counterpart's memory; sessions idle longer than
``idle_timeout`` seconds are closed. This is also how environments run as services next to a trainer.

A session is the Gymnasium single-agent view, so ``reset(seed=s)`` then the same learner moves give
the transcript ``gym.make(ENV_ID, **env_kwargs)`` gives in-process:

- ``reset(seed=None, options=None)`` -> :class:`DialogueObservation`: the learner's ``messages``,
  the observation's other keys (``features``), the learner's ``info`` and what it knows of the start
  (``profile``, its role's part of the episode profile).
- ``step(DialogueAction(text=...))`` -> the same, with the step's ``reward`` (the learner's) and ``done``.
- ``state`` -> :class:`DialogueState`: id, learner, seed, turn count, outcome and return; once the
  episode is over, its whole ``trajectory`` (privileged data included, as metrics read it after an
  episode), never while it runs, and never from a sealed server.

Malformed model output is part of the episode as in-process (``info["invalid_action"]``); a call out of
turn (``step`` before ``reset`` or after the end) is answered with the env's error message, and so is
text that cannot be sent back (a lone surrogate such as ``"\\ud800"``) anywhere in a WebSocket message (the
action's text, its ``metadata``, ``type``, ``episode_id``, any key): it is refused before the session sees
it, and the session goes on.

Episodes are played over the WebSocket session API (``/ws``). OpenEnv's plain HTTP ``POST /reset`` and
``POST /step`` are stateless (each request gets a fresh env), so ``POST /step`` is answered 409 with a
pointer to ``/ws``; every env error over HTTP is a 4xx with the env's message, never a bare 500.

:func:`serve` checks its options before it starts (a ``ConfigError`` naming the fix), prints one start-up
line (the URL, the session cap and whether a token is required) and one log line per session event
(opened, closed, refused), through a bounded queue, so a full or unread output pipe never stalls the
server (lines past the queue are dropped and counted). A host beyond loopback needs a token (``token=``,
``--token`` or the ``DIALOGUE_GYM_TOKEN`` environment variable) that every HTTP request and WebSocket
handshake must carry as ``Authorization: Bearer <token>`` (``DialogueGymClient(base_url, token=...)``).

``--sealed`` (``sealed=True``) draws a fresh secret when the server starts (:mod:`dialogue_gym.sealing`),
and every reset plays a fresh episode: the ``n``-th reset of the ``k``-th session the server opened,
with client seed ``s``, plays the episode seed keyed by the secret and ``(k, n, s)``, and the
counterparts' seeds are keyed too. So a client can neither rebuild an episode from its seed nor play
again an episode it has studied (the same seed in another reset or session is another episode);
``state.seed`` is the seed the client asked for. A sealed server refuses the reset options that choose
or reveal the hidden start (a profile, a reference session, an intent: every option the registered ids
read; :attr:`~dialogue_gym.game.Game.public_reset_options` lists those it passes on, none yet), and its
``state`` never holds the trajectory (the hidden profile and states). The secret is logged when the
server stops, and ``--unseal SECRET`` serves the same episodes again to sessions opened in the same
order with the same resets and seeds.

This module is the server side and imports ``openenv-core``'s server (FastAPI, uvicorn and, through
openenv-core's package ``__init__``, its gradio web interface); the client,
:mod:`dialogue_gym.integrations.openenv`, imports none of it. The message types here
(:class:`DialogueAction`, :class:`DialogueObservation`, :class:`DialogueState`) are the server's pydantic
models, the ones OpenEnv validates requests with; the client has plain dataclasses of the same fields.
"""

from __future__ import annotations

import contextlib
import functools
import hmac
import ipaddress
import itertools
import json
import logging
import logging.handlers
import math
import os
import queue
import re
import socket
import sys
import uuid
from typing import Any, Iterator

from dialogue_gym.errors import ConfigError, DependencyNotInstalled, DialogueGymError, EpisodeStateError, InvalidAction

try:
    from openenv.core.env_server.http_server import create_app
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, ConcurrencyConfig, EnvironmentMetadata, Observation, State
    from fastapi.exceptions import RequestValidationError
    from pydantic import Field
    from starlette.responses import JSONResponse
    from starlette.websockets import WebSocketDisconnect
except ImportError as exc:
    raise DependencyNotInstalled("openenv-core", "openenv", "Serving environments with OpenEnv") from exc

import dialogue_gym
from dialogue_gym.evaluation import sealing_of
from dialogue_gym.game import check_seed
from dialogue_gym.integrations.common import check_kwargs, json_kwargs, learner_of, make_learner_env
from dialogue_gym.sealing import Seal
from envs_registry import get


def plain(value: Any) -> Any:
    """``value`` as JSON data: NumPy scalars and arrays as numbers and lists, tuples as lists."""

    def convert(item: Any) -> Any:
        for method in ("tolist", "item"):
            if hasattr(item, method):
                return getattr(item, method)()
        raise TypeError(f"{type(item).__name__} is not JSON data")

    return json.loads(json.dumps(value, default=convert))


class DialogueAction(Action):
    """The learner's turn: its raw text, exactly what a model emitted."""

    text: str = Field(description="The learner's raw output for this turn, in the scenario's output format")


class DialogueObservation(Observation):
    """What the learner sees after ``reset`` or ``step`` (nothing privileged)."""

    messages: list[dict[str, str]] = Field(default_factory=list, description="The learner's chat so far")
    features: dict[str, Any] = Field(default_factory=dict, description="The observation's other keys (turn counter, ...)")
    info: dict[str, Any] = Field(default_factory=dict, description="The learner's info (invalid_action, outcome, ...)")
    profile: dict[str, Any] = Field(default_factory=dict, description="What the learner knows of how the episode started")


class DialogueState(State):
    env_id: str = Field(description="The environment id")
    learner: str = Field(description="The role the client plays")
    seed: int | None = Field(default=None, description="The seed of the episode played")
    done: bool = Field(default=False, description="Whether the episode is over")
    outcome: str | None = Field(default=None, description="How the episode ended, once it has")
    learner_return: float = Field(default=0.0, description="The learner's reward so far")
    trajectory: dict[str, Any] | None = Field(default=None, description="The whole trajectory, once the episode is over")


_SESSION_NUMBERS = itertools.count()
"""Numbers of the sealed sessions built without an app's own counter (:func:`make_app` gives each app one)."""
TOKEN_ENV = "DIALOGUE_GYM_TOKEN"
"""The environment variable :func:`serve` reads its token from when none is passed."""
MIN_TOKEN_CHARS = 16
LOG_QUEUE_LINES = 1000
"""Log lines waiting for a slow output at most; later ones are dropped (and counted) instead of blocking."""
log = logging.getLogger("dialogue_gym.serve")


def check_text(value: Any, what: str, error: type[DialogueGymError] = InvalidAction) -> None:
    """Raise ``error`` naming the character when ``value`` holds text UTF-8 cannot carry (a lone
    surrogate): the reply could not be sent, so the move must not be applied. Values that are not
    JSON data are left to the env to judge."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start : exc.end]
        raise error(f"{what} holds {bad!r}, which is not UTF-8 text (a lone surrogate); send text without unpaired surrogates.") from None
    except (TypeError, ValueError, RecursionError):
        return


class DialogueGymEnvironment(Environment):
    """One session: a single-agent env of ``env_id`` with the ``learner`` role played by the client."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(
        self, env_id: str, learner: str | None = None, env_kwargs: dict[str, Any] | None = None, seal: Seal | None = None,
        session_numbers: Iterator[int] | None = None,
    ):
        super().__init__()
        self.env_id = env_id
        self.learner = learner_of(env_id, learner)
        self._env = make_learner_env(env_id, self.learner, check_kwargs(env_kwargs))
        self._env.driver.seal = seal
        self._seal = seal
        self._session = next(session_numbers if session_numbers is not None else _SESSION_NUMBERS) if seal is not None else None
        """The session's number in the order the server opened them (sealed: it keys every episode)."""
        self._resets = 0
        self._client_seed: int | None = None
        self._episode_id: str | None = None
        self._steps = 0

    def _live_env(self, method: str):
        if self._env is None:
            raise EpisodeStateError(f"{method}() on a closed {self.env_id} session (it was idle too long or closed); open a new session.")
        return self._env

    def _observation(self, observation: dict[str, Any], info: dict[str, Any], reward: float | None, done: bool) -> DialogueObservation:
        return DialogueObservation(
            messages=[dict(m) for m in observation["messages"]],
            features=plain({key: value for key, value in observation.items() if key != "messages"}),
            info=plain(info),
            profile=plain(self._env.game.role_profile(self.learner)),
            reward=reward,
            done=done,
        )

    def reset(self, seed: int | None = None, episode_id: str | None = None, options: dict[str, Any] | None = None, **unknown: Any) -> DialogueObservation:
        if unknown:
            raise ConfigError(f"reset() got unknown argument(s) {sorted(unknown)}; it takes seed, episode_id and options.")
        environment = self._live_env("reset")
        check_text(options, "reset options", ConfigError)
        self._client_seed = check_seed(seed)
        if self._seal is not None:
            refused = sorted(set(options) - set(environment.game.public_reset_options)) if isinstance(options, dict) else []
            if refused:
                public = list(environment.game.public_reset_options)
                raise ConfigError(
                    f"reset options {refused} are refused by a sealed server: they would choose or reveal the episode's hidden start; "
                    f"{self.env_id} takes {public if public else 'no options'} when sealed. Reset with a seed only."
                )
            seed = self._seal.seed("session", self._session, self._resets, "none" if seed is None else seed)
            self._resets += 1
        observation, info = environment.reset(seed=seed, options=options)
        self._episode_id = episode_id or str(uuid.uuid4())
        self._steps = 0
        return self._observation(observation, info, None, False)

    def step(self, action: DialogueAction, timeout_s: float | None = None, **kwargs: Any) -> DialogueObservation:
        environment = self._live_env("step")
        check_text(action.text, "the action's text")
        observation, reward, terminated, truncated, info = environment.step(action.text)
        self._steps += 1
        return self._observation(observation, info, reward, terminated or truncated)

    @property
    def state(self) -> DialogueState:
        environment = self._live_env("state")
        game = environment.game
        state = DialogueState(env_id=self.env_id, learner=self.learner, episode_id=self._episode_id, step_count=self._steps)
        if game.started:
            trajectory = environment.trajectory()
            state.seed = self._client_seed if self._seal is not None else game.seed
            state.done = game.done
            state.learner_return = float(game.returns[self.learner])
            if game.done:
                state.outcome = trajectory.outcome.value
                if self._seal is None:  # sealed: the hidden profile and states stay with the server
                    state.trajectory = json.loads(trajectory.to_json())
        return state

    def get_metadata(self) -> EnvironmentMetadata:
        entry = get(self.env_id)
        return EnvironmentMetadata(
            name=self.env_id,
            description=f"dialogue_gym {self.env_id}: the client plays the {self.learner!r} role (roles: {', '.join(entry.roles)}).",
            version=dialogue_gym.__version__,
        )

    def close(self) -> None:
        """Drop the session's env: later calls on this session raise, naming the fix."""
        if self._env is not None:
            self._env.close()
        self._env = None


def make_app(
    env_id: str,
    *,
    learner: str | None = None,
    env_kwargs: dict[str, Any] | None = None,
    max_sessions: int = 64,
    idle_timeout: float | None = 300.0,
    token: str | None = None,
    seal: Seal | None = None,
):
    """The OpenEnv FastAPI app serving ``env_id`` (see the module docstring); the id, learner and
    env kwargs are checked by building one env first, so a mistake fails here, not in a session. With
    ``token``, every request must carry ``Authorization: Bearer <token>``; with ``seal``, sessions are sealed."""
    env_kwargs = json_kwargs(env_kwargs)
    check_serve_options(max_sessions=max_sessions, idle_timeout=idle_timeout)
    DialogueGymEnvironment(env_id, learner, env_kwargs).close()
    factory = functools.partial(
        DialogueGymEnvironment, env_id=env_id, learner=learner, env_kwargs=env_kwargs, seal=seal, session_numbers=itertools.count()
    )
    concurrency = ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=idle_timeout)
    app = create_app(factory, DialogueAction, DialogueObservation, env_name=env_id, concurrency_config=concurrency)
    _log_sessions(app)
    app.add_exception_handler(DialogueGymError, _env_error)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_middleware(_Guard, token=token)
    return app


STATELESS_STEP = (
    "POST /step is stateless in OpenEnv's HTTP API (each request gets a fresh env, so there is no episode to "
    "step); play episodes over the WebSocket session API at /ws, e.g. DialogueGymClient(base_url).sync()."
)


async def _env_error(request: Any, exc: DialogueGymError) -> JSONResponse:
    """An env error over HTTP: 409 for a call out of turn, 422 for a bad action or argument, with its message."""
    return JSONResponse({"detail": str(exc), "error": type(exc).__name__}, status_code=409 if isinstance(exc, EpisodeStateError) else 422)


async def _invalid_request(request: Any, exc: RequestValidationError) -> JSONResponse:
    """A request body of the wrong shape: 422 naming each field, without echoing its value (a seed of
    1e999 made FastAPI's own answer, which echoes it, fail as a 500)."""
    errors = [{"loc": [str(part) for part in error.get("loc", ())], "msg": str(error.get("msg", "")), "type": str(error.get("type", ""))} for error in exc.errors()]
    return JSONResponse({"detail": errors}, status_code=422)


def _log_sessions(app: Any) -> None:
    """One log line when a WebSocket session opens, closes (by the client or idle) or is refused."""
    server = next(filter(None, (_closure_server(getattr(route, "endpoint", None)) for route in app.router.routes)), None)
    if server is None:
        raise RuntimeError("openenv-core's app has no session server to log: this openenv-core version is not supported")
    create, destroy = server._create_session, server._destroy_session

    async def create_logged() -> tuple[str, Any]:
        try:
            session_id, environment = await create()
        except Exception as exc:
            log.info("session refused: %s", exc)
            raise
        log.info("session %s opened (%d of at most %d open)", session_id[:8], server.active_sessions, server.max_concurrent_envs)
        return session_id, environment

    async def destroy_logged(session_id: str) -> None:
        await destroy(session_id)
        log.info("session %s closed (%d open)", session_id[:8], server.active_sessions)

    server._create_session, server._destroy_session = create_logged, destroy_logged


def _closure_server(function: Any) -> Any:
    for cell in getattr(function, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if hasattr(value, "_create_session") and hasattr(value, "_destroy_session"):
            return value
    return None


_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(value: Any) -> str | None:
    """Where the first lone surrogate in JSON data ``value`` is (in a key or a string), as a message;
    ``None`` when there is none. Parsed JSON holds a pair as one character, so any surrogate left is lone.
    Walks with a stack, so nesting as deep as the JSON reader allows costs no recursion."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            found = _SURROGATE.search(item)
            if found:
                return f"{where or 'text'} holds {found.group()!r}"
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                stack.append((f"{where} key {key!r}" if where else f"key {key!r}", key))
                stack.append((f"{where}.{key}" if where else key, child))
        elif isinstance(item, list):
            stack.extend((f"{where}[{index}]", child) for index, child in reversed(list(enumerate(item))))
    return None


def _refusal(text: str) -> str | None:
    """The error frame for a WebSocket message holding a lone surrogate anywhere (its reply, which may
    echo the field, could not be sent), else ``None``; text that is not JSON is left to openenv-core."""
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):
        return None
    problem = lone_surrogate(message)
    if problem is None:
        return None
    reason = f"the message's {problem}, which is not UTF-8 text (a lone surrogate); send text without unpaired surrogates."
    return json.dumps({"type": "error", "data": {"message": reason, "code": "VALIDATION_ERROR"}})


class _Guard:
    """ASGI middleware: a request without the token is refused (HTTP 401, WebSocket closed with 1008),
    ``POST /step`` is answered 409 with :data:`STATELESS_STEP`, a WebSocket message holding a lone
    surrogate anywhere is answered with an error before the session sees it (the session goes on), and
    a WebSocket client that went away (openenv-core lets its ``WebSocketDisconnect`` escape after a
    clean close) is no server error."""

    def __init__(self, app: Any, token: str | None = None):
        self.app = app
        self.expected = f"Bearer {token}".encode() if token else None

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        if self.expected is not None:
            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                log.info("refused a %s request to %s without the token", scope["type"], scope.get("path"))
                if scope["type"] == "websocket":
                    return await send({"type": "websocket.close", "code": 1008, "reason": "token required"})
                detail = "this server requires a token: send the header 'Authorization: Bearer <token>' (DialogueGymClient(base_url, token=...))."
                return await JSONResponse({"detail": detail}, status_code=401)(scope, receive, send)
        if scope["type"] == "http" and scope.get("method") == "POST" and scope.get("path") == "/step":
            return await JSONResponse({"detail": STATELESS_STEP}, status_code=409)(scope, receive, send)
        if scope["type"] == "websocket":
            receive = self._checked(receive, send)
        try:
            return await self.app(scope, receive, send)
        except WebSocketDisconnect:
            if scope["type"] != "websocket":
                raise

    @staticmethod
    def _checked(receive: Any, send: Any) -> Any:
        """``receive`` that answers a text frame holding a lone surrogate itself and waits for the next."""

        async def checked() -> dict:
            while True:
                event = await receive()
                refusal = _refusal(event["text"]) if event["type"] == "websocket.receive" and event.get("text") else None
                if refusal is None:
                    return event
                await send({"type": "websocket.send", "text": refusal})

        return checked


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_serve_options(
    *, host: str = "127.0.0.1", port: int = 8000, max_sessions: int = 64, idle_timeout: float | None = 300.0, token: str | None = None
) -> None:
    """Raise ``ConfigError`` naming the fix for an option :func:`serve` cannot start with."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigError(f"--port must be a TCP port in [0, 65535] (0: any free port), got {port!r}.")
    if isinstance(max_sessions, bool) or not isinstance(max_sessions, int) or max_sessions < 1:
        raise ConfigError(f"--max-sessions must be an int >= 1 (concurrent sessions at most), got {max_sessions!r}.")
    if idle_timeout is not None and (
        isinstance(idle_timeout, bool) or not isinstance(idle_timeout, (int, float)) or not math.isfinite(idle_timeout) or idle_timeout <= 0
    ):
        raise ConfigError(f"--idle-timeout must be a finite number of seconds > 0, got {idle_timeout!r}; e.g. --idle-timeout 300.")
    if not isinstance(host, str) or not host:
        raise ConfigError(f"--host must be a host name or address, got {host!r}.")
    if token is not None and (not isinstance(token, str) or len(token) < MIN_TOKEN_CHARS or not token.isprintable() or not token.isascii() or " " in token):
        raise ConfigError(
            f"the token (--token or {TOKEN_ENV}) must be at least {MIN_TOKEN_CHARS} printable ASCII characters without spaces (got {len(token) if isinstance(token, str) else type(token).__name__} "
            "characters); e.g. python -c 'import secrets; print(secrets.token_urlsafe(24))'."
        )
    if token is None and not is_loopback(host):
        raise ConfigError(
            f"--host {host} serves beyond this machine, so every session would be open to anyone who can reach it; "
            f"pass --token (or set {TOKEN_ENV}) to require 'Authorization: Bearer <token>' on every request, or bind --host 127.0.0.1."
        )


def serve(env_id: str, **options: Any) -> None:
    """Serve ``env_id`` over OpenEnv's HTTP/WebSocket protocol until interrupted (see the module
    docstring); ``options`` are :func:`make_server`'s (host, port, learner, env_kwargs, max_sessions,
    idle_timeout, token, output) and ``sealed`` or ``unseal``."""
    seal = sealing_of(options.pop("sealed", False), options.pop("unseal", None), 0)
    server, sockets = make_server(env_id, seal=seal, **options)
    try:
        server.run(sockets=sockets)
    except KeyboardInterrupt:  # a second Ctrl-C during shutdown (uvicorn.run swallows it too)
        pass
    finally:
        log.info("stopped")
        if seal is not None:
            log.info("sealed server's secret: %s (`--unseal %s` serves the same episodes for the same seeds)", seal.hex, seal.hex)
        _stop_log()


_listener: logging.handlers.QueueListener | None = None


class _DroppingQueueHandler(logging.handlers.QueueHandler):
    """Never waits: a record that finds the queue full is counted, and the count is logged later."""

    dropped = 0

    def enqueue(self, record: logging.LogRecord) -> None:
        try:
            if self.dropped and self.queue.qsize() < LOG_QUEUE_LINES // 2:
                dropped, type(self).dropped = type(self).dropped, 0
                self.queue.put_nowait(logging.makeLogRecord({"msg": f"{dropped} log line(s) dropped (the output was not read)", "levelno": logging.WARNING, "levelname": "WARNING", "name": log.name}))
            self.queue.put_nowait(record)
        except queue.Full:
            type(self).dropped += 1


def _start_log(output: Any) -> None:
    """Send this server's log lines (its own and uvicorn's) to ``output`` from a thread, through a
    bounded queue, one line each (no tracebacks for a client that went away)."""
    global _listener
    _stop_log()
    stream = logging.StreamHandler(output or sys.stderr)
    stream.setFormatter(logging.Formatter("%(asctime)s dialogue-gym serve: %(message)s", "%Y-%m-%d %H:%M:%S"))
    handler = _DroppingQueueHandler(queue.Queue(LOG_QUEUE_LINES))
    handler.setFormatter(_OneLine())
    logging.captureWarnings(True)  # warnings (an env's unknown reset options) go through the queue, not straight to stderr
    for name, level in (
        (log.name, logging.INFO), ("uvicorn", logging.WARNING), ("uvicorn.error", logging.WARNING), ("uvicorn.access", logging.WARNING),
        ("py.warnings", logging.WARNING),
    ):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(level)
        logger.propagate = False
    _listener = logging.handlers.QueueListener(handler.queue, stream)
    _listener.start()


LOG_LINE_CHARS = 1000
"""Characters of one log line at most (a client's option names or errors can be any length)."""


class _OneLine(logging.Formatter):
    """The message and, for an exception, its type and text: one line of printable characters (a
    client's text cannot move the cursor or clear the operator's terminal), cut to LOG_LINE_CHARS."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            message = f"{message}: {type(exc).__name__}: {exc}"
        message = " ".join(message.split())
        message = "".join(char if char.isprintable() else ascii(char)[1:-1] for char in message[: LOG_LINE_CHARS + 1])
        return message if len(message) <= LOG_LINE_CHARS else message[:LOG_LINE_CHARS] + "..."


def _stop_log(wait: float = 2.0) -> None:
    """Stop the log thread, giving it ``wait`` seconds to write what is queued (an output that is
    not read keeps the rest)."""
    global _listener
    if _listener is None:
        return
    logging.captureWarnings(False)
    listener, _listener = _listener, None
    while True:
        try:
            listener.queue.put_nowait(listener._sentinel)
            break
        except queue.Full:
            with contextlib.suppress(queue.Empty):
                listener.queue.get_nowait()
    if listener._thread is not None:
        listener._thread.join(wait)
        listener._thread = None


def make_server(
    env_id: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    learner: str | None = None,
    env_kwargs: dict[str, Any] | None = None,
    max_sessions: int = 64,
    idle_timeout: float | None = 300.0,
    token: str | None = None,
    output: Any = None,
    seal: Seal | None = None,
) -> tuple[Any, list[socket.socket]]:
    """The uvicorn server of :func:`serve` and its bound socket, every option checked first; prints
    the start-up line to ``output`` (stderr by default). ``token`` defaults to the
    ``DIALOGUE_GYM_TOKEN`` environment variable."""
    import uvicorn

    token = token if token is not None else (os.environ.get(TOKEN_ENV) or None)
    check_serve_options(host=host, port=port, max_sessions=max_sessions, idle_timeout=idle_timeout, token=token)
    app = make_app(env_id, learner=learner, env_kwargs=env_kwargs, max_sessions=max_sessions, idle_timeout=idle_timeout, token=token, seal=seal)
    try:
        family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on --host {host} --port {port} ({exc.strerror or exc}); pick another --port or --host.") from None
    _start_log(output)
    bound = sock.getsockname()[1]
    shown = f"[{host.strip('[]')}]" if family == socket.AF_INET6 else host
    timeout = f"idle sessions closed after {idle_timeout:g} s" if idle_timeout is not None else "no idle timeout"
    stream = output or sys.stderr
    stream.write(
        f"dialogue-gym serve: {env_id} at http://{shown}:{bound} (WebSocket sessions at ws://{shown}:{bound}/ws), "
        f"at most {max_sessions} sessions, {timeout}, token {'required' if token else 'not required (loopback only)'}"
        f"{', sealed (the secret is logged when the server stops)' if seal is not None else ''}\n"
    )
    stream.flush()
    config = uvicorn.Config(app, log_config=None, log_level="warning", access_log=False, ws_max_size=64 * 1024 * 1024)
    return uvicorn.Server(config), [sock]

