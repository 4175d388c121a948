"""A backend for any OpenAI-compatible chat-completions server: ``vllm serve``, SGLang, Ollama, hosted APIs.

:class:`OpenAIBackend` sends each request of a batch as one ``POST {base_url}/chat/completions``
(non-streaming), at most ``max_concurrency`` at a time from a thread pool, over persistent
per-thread HTTP connections (standard library only). Outputs come back in request order.

Failures are bounded and never silent:

* HTTP 429, 408, 409 and 5xx, attempts past their deadline (``timeout`` bounds the whole attempt,
  from connecting to the last byte, so a server that trickles its answer is cut off), dropped
  connections and unreadable responses are retried up to ``max_retries`` times with jittered
  exponential backoff (honouring ``Retry-After``);
* a 200 answer is unreadable unless it is a chat completion with well-typed fields: a JSON object
  with a non-empty ``choices`` list whose first ``message.content`` is a string (``null`` reads as
  ``""``, an empty move the env flags as the model's own), non-negative integer token counts in
  ``usage``, finite log-probabilities, token-id lists as long as the log-probabilities, and at most
  ``max_response_bytes`` bytes; no field of a server's answer can raise out of ``generate``;
* other 4xx answers (e.g. a prompt longer than the context) are not retried;
* a request that still failed is reported on its own output (``GenerationOutput.error`` names the
  cause and the number of attempts; ``text`` is ``""``), so one bad request does not sink the batch
  and the env driver ends that episode as a ``backend_failure`` (``on_failure="raise"`` raises
  :class:`~dialogue_gym.errors.BackendError` instead);
* 401 / 403 / 404 mean the configuration is wrong (key, URL, model) and raise ``BackendError`` at once.

The API key is read from the environment variable named by ``api_key_env`` (never passed as an
argument, never stored in :attr:`OpenAIBackend.spec`, and never written to ``repr``, errors or logs):
every error and log text passes through :meth:`OpenAIBackend.redact`, which replaces the key (also where
a server echoes it in an error body, whole or cut), ``Bearer``/``Basic`` credentials and ``sk-`` keys by
``[redacted]``; ``base_url`` may not carry a ``user:password@`` part, and its query is never shown.
Token usage and cost are accumulated in :attr:`OpenAIBackend.usage`. Streaming is off (one JSON
answer per request). The chat API takes messages, not token ids, so a request's ``prompt_ids`` is
not sent: the server renders the messages with its own chat template.
"""

from __future__ import annotations

import http.client
import json
import logging
import math
import os
import random
import re
import reprlib
import socket
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any, Sequence

from ..errors import BackendError, ConfigError
from ..types import finite_number
from .base import GenerationOutput, GenerationRequest
from .sampling import SamplingDefaults, check_int, check_number

logger = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({408, 409, 429})
"""Client-error statuses worth retrying (besides every 5xx)."""
FATAL_STATUSES = {
    401: "the server refused the credentials",
    403: "the server refused the credentials",
    404: "no such endpoint or model",
}
ON_FAILURE = ("report", "raise")
MAX_TOKEN_COUNT = 2**53
"""Largest token count or token id read from an answer (exact as a float; anything above is garbage)."""
_READ_CHUNK = 1 << 16
_TOKEN_ID = re.compile(r"token_id:([0-9]{1,16})")
_WHERE = "OpenAIBackend"


@dataclass
class Usage:
    """Running totals of an :class:`OpenAIBackend` (thread-safe updates; read any time)."""

    requests: int = 0
    """Requests handed to ``generate``."""
    succeeded: int = 0
    failed: int = 0
    """Requests given up on (reported in ``GenerationOutput.error`` or raised)."""
    attempts: int = 0
    """HTTP attempts, retries included."""
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    """From the ``price_per_million_*`` arguments, in their currency."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Attempt(Exception):
    """One failed HTTP attempt; ``retry`` says whether another attempt may help."""

    def __init__(self, cause: str, retry: bool, wait: float | None = None):
        super().__init__(cause)
        self.cause, self.retry, self.wait = cause, retry, wait


class _Malformed(Exception):
    """A 200 body that is not a well-typed chat completion; the message names the field and its value."""


class _Deadline:
    """Cuts an attempt off at its deadline: a timer shuts the connection's socket down, which wakes
    whichever blocking call (send, status line, headers, body) the attempt is in.

    A socket timeout alone bounds each read, not the attempt: a server sending one byte per read
    would hold it for as long as it likes."""

    def __init__(self, connection: http.client.HTTPConnection, seconds: float) -> None:
        self._connection = connection
        self._lock = threading.Lock()
        self._stopped = False
        self.expired = False
        self._timer = threading.Timer(max(seconds, 0.0), self._expire)
        self._timer.daemon = True
        self._timer.start()

    def _expire(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self.expired = True
            sock = self._connection.sock
            if sock is not None:
                try:  # the plain-socket shutdown also works under TLS, where SSLSocket.shutdown would unwrap
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)
                except OSError:
                    pass  # already closed: nothing left to wake

    def stop(self) -> bool:
        """Disarm the timer (after this returns, it never touches the socket); whether it had fired."""
        with self._lock:
            self._stopped = True
        self._timer.cancel()
        return self.expired


class OpenAIBackend:
    """Batched chat generation through an OpenAI-compatible ``/chat/completions`` endpoint.

    Args:
        model: the model name the server serves (``vllm serve MODEL`` serves it as ``MODEL``).
        base_url: the API root, e.g. ``http://127.0.0.1:8000/v1`` (``vllm serve``'s default),
            ``http://127.0.0.1:11434/v1`` (Ollama) or ``https://api.openai.com/v1``.
        api_key_env: name of the environment variable holding the API key, read once at
            construction; if it is unset no ``Authorization`` header is sent (local servers need
            none). ``None``: never send a key.
        max_new_tokens, temperature, top_p: default sampling settings; each request's
            :class:`SamplingParams` overrides them field by field. ``seed`` (from the request, else
            this default) is sent as the request's ``seed``.
        logprobs: ask for per-token log-probabilities (``GenerationOutput.logprobs``).
        return_token_ids: ask a vLLM server for prompt and generated token ids (vLLM's
            ``return_token_ids`` extension); other servers ignore or reject it.
        extra_body: more JSON fields merged into every request body (server-specific options).
        max_concurrency: the most requests in flight at once.
        timeout: the deadline in seconds of one attempt, from connecting to the last byte of the
            answer; an attempt past it is cut off and counts as a retryable failure.
        max_response_bytes: the largest answer read, in bytes; a longer one is cut off and counts
            as an unreadable answer (raise it for long generations with many ``top_logprobs``).
        max_retries: retries after a failed attempt (so at most ``max_retries + 1`` attempts).
        backoff_base, backoff_max: the wait before retry ``k`` is
            ``min(backoff_max, backoff_base * 2**(k-1))`` times a random factor in [0.5, 1], or the
            server's ``Retry-After`` when longer (capped at ``backoff_max``).
        on_failure: ``"report"`` (a request that failed after its retries gets an output with
            ``error`` set) or ``"raise"`` (:class:`BackendError` for the whole batch).
        price_per_million_prompt_tokens, price_per_million_completion_tokens: for :attr:`usage`'s cost.
    """

    name = "openai"

    def __init__(
        self,
        model: str,
        base_url: str = "http://127.0.0.1:8000/v1",
        *,
        api_key_env: str | None = "OPENAI_API_KEY",
        api_key: None = None,
        max_new_tokens: int = 256,
        temperature: float = 0.7,
        top_p: float = 1.0,
        seed: int | None = None,
        logprobs: bool = False,
        return_token_ids: bool = False,
        extra_body: dict[str, Any] | None = None,
        max_concurrency: int = 8,
        timeout: float = 60.0,
        max_response_bytes: int = 64 * 2**20,
        max_retries: int = 3,
        backoff_base: float = 0.5,
        backoff_max: float = 20.0,
        on_failure: str = "report",
        price_per_million_prompt_tokens: float = 0.0,
        price_per_million_completion_tokens: float = 0.0,
    ) -> None:
        if api_key is not None:
            raise ConfigError(
                f"{_WHERE}: the API key is never passed as an argument (it would end up in configs and logs); "
                "put it in an environment variable and pass that variable's name, e.g. api_key_env='OPENAI_API_KEY'."
            )
        if not isinstance(model, str) or not model:
            raise ConfigError(f"{_WHERE}: model must be the served model's name (a non-empty str), got {model!r}.")
        parsed = urllib.parse.urlsplit(base_url) if isinstance(base_url, str) else None
        if parsed is None or parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ConfigError(
                f"{_WHERE}: base_url must be an http(s) URL of the API root, got {base_url!r}; "
                "pass e.g. base_url='http://127.0.0.1:8000/v1'."
            )
        if parsed.username is not None or parsed.password is not None:
            raise ConfigError(
                f"{_WHERE}: base_url must not carry credentials (a 'user:password@' part), got "
                f"{_shown_url(parsed)!r} with them removed; put the key in an environment variable named by api_key_env."
            )
        if api_key_env is not None and (not isinstance(api_key_env, str) or not api_key_env):
            raise ConfigError(f"{_WHERE}: api_key_env must be an environment variable name or None, got {api_key_env!r}.")
        if on_failure not in ON_FAILURE:
            raise ConfigError(f"{_WHERE}: on_failure must be one of {list(ON_FAILURE)}, got {on_failure!r}.")
        try:
            if extra_body is not None and not isinstance(extra_body, dict):
                raise TypeError("not a dict")
            json.dumps(extra_body)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{_WHERE}: extra_body must be a dict of JSON fields or None, got {extra_body!r:.200} ({exc}).") from exc
        for flag, value in (("logprobs", logprobs), ("return_token_ids", return_token_ids)):
            if not isinstance(value, bool):
                raise ConfigError(f"{_WHERE}: {flag} must be True or False, got {value!r}.")
        self.defaults = SamplingDefaults(max_new_tokens, temperature, top_p, _WHERE)
        if seed is not None:
            check_int(seed, "seed", _WHERE, 0)
        self.max_concurrency = check_int(max_concurrency, "max_concurrency", _WHERE, 1)
        self.max_retries = check_int(max_retries, "max_retries", _WHERE, 0)
        self.timeout = check_number(timeout, "timeout", _WHERE, 0.0, strict=True)
        if not math.isfinite(self.timeout):
            raise ConfigError(f"{_WHERE}: timeout must be a finite number of seconds, got {timeout!r}; pass e.g. timeout=60.")
        self.max_response_bytes = check_int(max_response_bytes, "max_response_bytes", _WHERE, 1)
        self.backoff_base = check_number(backoff_base, "backoff_base", _WHERE, 0.0)
        self.backoff_max = check_number(backoff_max, "backoff_max", _WHERE, 0.0)
        prices = [
            check_number(price_per_million_prompt_tokens, "price_per_million_prompt_tokens", _WHERE, 0.0),
            check_number(price_per_million_completion_tokens, "price_per_million_completion_tokens", _WHERE, 0.0),
        ]

        self.model = model
        self.base_url = base_url.rstrip("/")
        self._shown_url = _shown_url(parsed)
        self.api_key_env = api_key_env
        self.seed = seed
        self.logprobs = logprobs
        self.return_token_ids = return_token_ids
        self.extra_body = dict(extra_body or {})
        self.on_failure = on_failure
        self._prices = prices
        self._https = parsed.scheme == "https"
        self._host = parsed.hostname
        self._port = parsed.port
        self._path = (parsed.path.rstrip("/") or "") + "/chat/completions"
        read = os.environ.get(api_key_env) if api_key_env else None
        api_key = _header_key(read, api_key_env)
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._has_key = bool(api_key)
        self._secrets = _secret_forms(read) if read and read.strip() else ()
        self.usage = Usage()
        self._lock = threading.Lock()
        self._local = threading.local()
        self._executor: ThreadPoolExecutor | None = None
        self._jitter = random.Random()
        self.spec: dict[str, Any] = {
            "name": self.name,
            "model": model,
            "base_url": base_url,
            "api_key_env": api_key_env,
            "max_new_tokens": max_new_tokens,
            "temperature": temperature,
            "top_p": top_p,
            "seed": seed,
            "logprobs": logprobs,
            "return_token_ids": return_token_ids,
            "extra_body": dict(self.extra_body),
            "max_concurrency": max_concurrency,
            "timeout": timeout,
            "max_response_bytes": max_response_bytes,
            "max_retries": max_retries,
            "backoff_base": backoff_base,
            "backoff_max": backoff_max,
            "on_failure": on_failure,
            "price_per_million_prompt_tokens": price_per_million_prompt_tokens,
            "price_per_million_completion_tokens": price_per_million_completion_tokens,
        }
        """The JSON-serialisable constructor arguments (no key), which ``make_backend`` accepts."""

    # ------------------------------------------------------------------------------------------
    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationOutput]:
        """One chat completion per request, ``max_concurrency`` at a time; outputs in request order."""
        bodies = [self._body(request, i) for i, request in enumerate(requests)]
        with self._lock:
            self.usage.requests += len(bodies)
        if len(bodies) <= 1 or self.max_concurrency == 1:
            outputs = [self._complete(body) for body in bodies]
        else:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self.max_concurrency, thread_name_prefix="dialogue_gym-openai")
            outputs = list(self._executor.map(self._complete, bodies))
        if self.on_failure == "raise":
            failed = [(i, o.error) for i, o in enumerate(outputs) if o.error is not None]
            if failed:
                raise BackendError(
                    f"{_WHERE}: {len(failed)} of {len(outputs)} requests to {self._shown_url} failed after up to "
                    f"{self.max_retries + 1} attempts (first: request {failed[0][0]}: {failed[0][1]}); "
                    "raise max_retries / timeout, or use on_failure='report' to end only the affected episodes."
                )
        return outputs

    def _body(self, request: GenerationRequest, index: int) -> bytes:
        messages, sampling = self.defaults.resolve(request, index)
        seed = sampling.seed if sampling.seed is not None else self.seed
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": sampling.max_new_tokens,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "n": 1,
            "stream": False,
        }
        if seed is not None:
            body["seed"] = seed
        if sampling.stop:
            body["stop"] = list(sampling.stop)
        if self.logprobs:
            body["logprobs"] = True
        if self.return_token_ids:
            body["return_token_ids"] = True
        body.update(self.extra_body)
        return json.dumps(body).encode()

    def _complete(self, body: bytes) -> GenerationOutput:
        cause = ""
        for attempt in range(self.max_retries + 1):
            with self._lock:
                self.usage.attempts += 1
                self.usage.retries += 1 if attempt else 0
            try:
                output = self._parse(*self._post(body))
            except _Attempt as failure:
                cause = self.redact(failure.cause)
                if not failure.retry or attempt == self.max_retries:
                    break
                delay = self._backoff(attempt + 1, failure.wait)
                logger.debug(
                    "%s: attempt %d of %d to %s failed (%s); retrying in %.2fs",
                    _WHERE, attempt + 1, self.max_retries + 1, self._shown_url, cause, delay,
                )
                time.sleep(delay)
                continue
            output.meta["attempts"] = attempt + 1
            return output
        with self._lock:
            self.usage.failed += 1
        attempts = attempt + 1
        logger.warning("%s: request to %s failed after %d attempt(s): %s", _WHERE, self._shown_url, attempts, cause)
        return GenerationOutput(
            text="",
            meta={"backend": self.name, "model": self.model, "attempts": attempts},
            error=f"{cause} (after {attempts} attempt{'s' if attempts > 1 else ''} to {self._shown_url})",
        )

    def _backoff(self, retry: int, server_wait: float | None) -> float:
        delay = min(self.backoff_max, self.backoff_base * 2 ** (retry - 1)) * (0.5 + 0.5 * self._jitter.random())
        if server_wait is not None:
            delay = max(delay, min(server_wait, self.backoff_max))
        return delay

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        """This thread's persistent connection, and whether it has served a request before."""
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            return connection, True
        kind = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        connection = kind(self._host, self._port, timeout=self.timeout)
        self._local.connection = connection
        return connection, False

    def _drop_connection(self) -> None:
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None

    def _post(self, body: bytes) -> tuple[int, Any, bytes]:
        deadline = time.monotonic() + self.timeout
        for _ in range(2):  # a kept-alive connection the server has since closed gets one free reconnect
            connection, reused = self._connection()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _Attempt(f"timed out after {self.timeout:g}s", retry=True)
            watchdog = _Deadline(connection, remaining)
            try:
                if connection.sock is None:
                    connection.timeout = remaining  # the socket timeout bounds the connect itself
                    connection.connect()
                    if watchdog.expired:  # it fired before there was a socket to shut down
                        raise TimeoutError
                connection.request("POST", self._path, body=body, headers=self._headers)
                response = connection.getresponse()
                data = self._read_body(response)
            except _Attempt:
                watchdog.stop()
                self._drop_connection()
                raise
            except (OSError, http.client.HTTPException) as exc:  # TimeoutError is an OSError
                expired = watchdog.stop()
                self._drop_connection()
                if expired or isinstance(exc, TimeoutError):
                    raise _Attempt(f"timed out after {self.timeout:g}s", retry=True) from None
                stale = reused and isinstance(exc, (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError))
                if stale:
                    continue
                raise _Attempt(f"connection failed ({type(exc).__name__}: {exc})", retry=True) from None
            if watchdog.stop():  # the body may look complete (short reads are not errors here), but it was cut off
                self._drop_connection()
                raise _Attempt(f"timed out after {self.timeout:g}s", retry=True)
            if response.will_close:
                self._drop_connection()
            return response.status, response.headers, data
        raise _Attempt("connection closed by the server twice in a row", retry=True)

    def _read_body(self, response: http.client.HTTPResponse) -> bytes:
        """The whole body, or an unreadable-answer failure once it passes ``max_response_bytes``."""
        too_large = f"unreadable response (longer than max_response_bytes={self.max_response_bytes})"
        if response.length is not None and response.length > self.max_response_bytes:
            raise _Attempt(too_large, retry=True)
        chunks, size = [], 0
        while chunk := response.read(_READ_CHUNK):
            size += len(chunk)
            if size > self.max_response_bytes:
                raise _Attempt(too_large, retry=True)
            chunks.append(chunk)
        if response.length:  # the server hung up before its Content-Length (http.client returns the short read)
            raise http.client.IncompleteRead(b"".join(chunks), response.length)
        return b"".join(chunks)

    def _parse(self, status: int, headers: Any, data: bytes) -> GenerationOutput:
        if status != 200:
            detail = self._body_excerpt(data, 300)
            if status in FATAL_STATUSES:
                raise BackendError(self._fatal_message(status, detail))
            retry = status in RETRY_STATUSES or status >= 500
            raise _Attempt(f"HTTP {status}: {detail}", retry=retry, wait=_retry_after(headers))
        try:
            completion = _read_completion(data)
        except _Malformed as exc:
            raise _Attempt(f"unreadable response ({self.redact(str(exc))}): {self._body_excerpt(data, 200)!r}", retry=True) from None
        prompt_tokens, completion_tokens = completion["prompt_tokens"], completion["completion_tokens"]
        cost = (prompt_tokens * self._prices[0] + completion_tokens * self._prices[1]) / 1e6
        with self._lock:
            self.usage.succeeded += 1
            self.usage.prompt_tokens += prompt_tokens
            self.usage.completion_tokens += completion_tokens
            self.usage.cost += cost
        return GenerationOutput(
            text=completion["text"],
            token_ids=completion["token_ids"],
            logprobs=completion["logprobs"],
            prompt_token_ids=completion["prompt_token_ids"],
            finish_reason=completion["finish_reason"],
            meta={
                "backend": self.name,
                "model": completion["model"] or self.model,
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "cost": cost},
            },
        )

    def _fatal_message(self, status: int, detail: str) -> str:
        message = f"{_WHERE}: {self._shown_url} answered HTTP {status} ({FATAL_STATUSES[status]}): {detail!r}. "
        if status == 404:
            return message + (
                f"Check base_url (the API root, usually ending in /v1; requests go to {self._path}) and that the "
                f"server serves model={self.model!r}."
            )
        if self.api_key_env is None:
            return message + "Set api_key_env to the name of an environment variable holding the key."
        state = "is set but was rejected" if self._has_key else "is unset or empty"
        return message + f"Put a valid key in the environment variable {self.api_key_env} (it {state})."

    def redact(self, text: str) -> str:
        """``text`` with the API key (as sent, JSON- or URL-escaped) and anything shaped like a credential
        replaced by ``[redacted]``."""
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return _CREDENTIAL.sub(lambda match: (match.group("lead") or "") + REDACTED, text)

    def _body_excerpt(self, data: bytes, limit: int) -> str:
        """The first ``limit`` characters of a server's body, redacted before it is cut (so a key that
        straddles the cut is not left half shown); ``max_response_bytes`` bounds ``data``."""
        return self.redact(data.decode("utf-8", "replace")).strip()[:limit]

    def close(self) -> None:
        """Stop the worker threads (the backend stays usable; a later call starts new ones)."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        self._drop_connection()

    def __enter__(self) -> OpenAIBackend:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"OpenAIBackend(model={self.model!r}, base_url={self._shown_url!r}, api_key_env={self.api_key_env!r}, "
            f"max_concurrency={self.max_concurrency}, max_retries={self.max_retries})"
        )


REDACTED = "[redacted]"
_CREDENTIAL = re.compile(
    r"(?i)(?P<lead>\b(?:bearer|basic)\s+|\b(?:api[_-]?key|access[_-]?token|secret|password)[\"']?\s{0,3}[:=]\s{0,3}[\"']?)"
    r"[\w.~+/=-]{8,}|(?<![\w-])sk-[\w-]{8,}"
)
"""What a credential looks like in text a server sent back: ``Bearer <token>``, ``Basic <token>``,
``api_key=<token>`` (and JSON forms), an ``sk-...`` key; group ``lead`` (kept) is what stands before it."""


def _header_key(read: str | None, variable: str | None) -> str | None:
    """The key of ``$variable`` as the ``Authorization`` header carries it: without the whitespace a key
    file leaves around it (a trailing newline), ``None`` when nothing is left. A key with a character a
    header cannot carry inside it is a ConfigError that names the variable and the position, never the key."""
    key = read.strip() if read else None
    if not key:
        return None
    for position, char in enumerate(key, start=1):
        if not (char.isascii() and char.isprintable()) or char == " ":
            what = "a space" if char == " " else "a control character" if char.isascii() else "a non-ASCII character"
            raise ConfigError(
                f"{_WHERE}: the API key in the environment variable {variable} holds {what} at position {position} of {len(key)}, "
                "which an HTTP header cannot carry; put the key alone in the variable (e.g. export "
                f"{variable}=\"$(tr -d '[:space:]' < KEY_FILE)\")."
            )
    return key


def _secret_forms(key: str) -> tuple[str, ...]:
    """The key as it may appear in an echoed body or a traceback: as read, as sent (stripped), JSON-escaped
    and URL-quoted, longest first."""
    sent = key.strip()
    forms = {key, sent, json.dumps(sent)[1:-1], urllib.parse.quote(sent, safe=""), urllib.parse.quote_plus(sent)}
    return tuple(sorted((form for form in forms if form), key=len, reverse=True))


def _shown_url(parsed: urllib.parse.SplitResult) -> str:
    """``base_url`` as errors show it: no ``user:password@`` part, no query, no fragment."""
    host = f"[{parsed.hostname}]" if ":" in (parsed.hostname or "") else parsed.hostname
    port = f":{parsed.port}" if parsed.port is not None else ""
    return f"{parsed.scheme}://{host}{port}{parsed.path.rstrip('/')}"


def _retry_after(headers: Any) -> float | None:
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: fall back to the backoff


def _show(value: Any) -> str:
    return f"{type(value).__name__} {reprlib.repr(value)}"


def _count(value: Any, field: str) -> int:
    """A token count or id: a non-negative integer (an integral float such as ``12.0`` passes)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKEN_COUNT:
        raise _Malformed(f"{field} must be an integer in [0, {MAX_TOKEN_COUNT}], got {_show(value)}")
    return value


def _ids(value: Any, field: str) -> list[int] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise _Malformed(f"{field} must be a list of token ids, got {_show(value)}")
    return [_count(token, f"{field}[{i}]") for i, token in enumerate(value)]


def _read_completion(data: bytes) -> dict[str, Any]:
    """The fields of a chat-completion body that the backend uses, each type-checked; raises
    :class:`_Malformed` naming the first field that is wrong."""
    try:
        response = json.loads(data)
    except (ValueError, RecursionError) as exc:  # bad JSON or UTF-8, a 5,000-digit int, deep nesting
        raise _Malformed(f"not JSON: {type(exc).__name__}: {str(exc)[:200]}") from None
    if not isinstance(response, dict):
        raise _Malformed(f"the body must be a JSON object, got {_show(response)}")
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices:
        raise _Malformed(f"'choices' must be a non-empty list, got {_show(choices)}")
    choice = choices[0]
    if not isinstance(choice, dict) or not isinstance(choice.get("message"), dict):
        raise _Malformed(f"choices[0] must be an object with a 'message' object, got {_show(choice)}")
    text = choice["message"].get("content")
    if text is None:
        text = ""  # the model said nothing (e.g. it spent max_tokens on hidden reasoning): its own empty move
    if not isinstance(text, str):
        raise _Malformed(f"message.content must be a string or null, got {_show(text)}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone \ud800-style escape: no tokenizer decodes to that
        raise _Malformed(f"message.content is not valid Unicode ({exc})") from None
    finish_reason = choice.get("finish_reason")
    if finish_reason is not None and not isinstance(finish_reason, str):
        raise _Malformed(f"finish_reason must be a string or null, got {_show(finish_reason)}")
    model = response.get("model")
    if model is not None and not isinstance(model, str):
        raise _Malformed(f"'model' must be a string, got {_show(model)}")
    usage = response.get("usage")
    if usage is None:
        usage = {}
    if not isinstance(usage, dict):
        raise _Malformed(f"'usage' must be an object, got {_show(usage)}")
    counts = {}
    for key in ("prompt_tokens", "completion_tokens"):
        value = usage.get(key)
        counts[key] = 0 if value is None else _count(value, f"usage.{key}")
    token_ids, logprobs = _read_logprobs(choice.get("logprobs"))
    listed_ids = _ids(choice.get("token_ids"), "choices[0].token_ids")
    if listed_ids is not None:
        if logprobs is not None and len(listed_ids) != len(logprobs):
            raise _Malformed(f"choices[0].token_ids has {len(listed_ids)} ids but logprobs has {len(logprobs)} entries")
        token_ids = listed_ids
    return {
        "text": text,
        "finish_reason": finish_reason,
        "model": model,
        "token_ids": token_ids,
        "logprobs": logprobs,
        "prompt_token_ids": _ids(response.get("prompt_token_ids"), "prompt_token_ids"),
        **counts,
    }


def _read_logprobs(logprobs: Any) -> tuple[list[int] | None, list[float] | None]:
    """Per-token log-probabilities of a choice, and token ids where the server encodes tokens as
    ``token_id:N`` (vLLM's ``return_tokens_as_token_ids``)."""
    if logprobs is None:
        return None, None
    if not isinstance(logprobs, dict):
        raise _Malformed(f"choices[0].logprobs must be an object or null, got {_show(logprobs)}")
    content = logprobs.get("content")
    if content is None:
        return None, None
    if not isinstance(content, list):
        raise _Malformed(f"logprobs.content must be a list or null, got {_show(content)}")
    values, tokens = [], []
    for i, item in enumerate(content):
        where = f"logprobs.content[{i}]"
        if not isinstance(item, dict):
            raise _Malformed(f"{where} must be an object, got {_show(item)}")
        value, token = item.get("logprob"), item.get("token", "")
        if not finite_number(value):
            raise _Malformed(f"{where}.logprob must be a finite number, got {_show(value)}")
        if not isinstance(token, str):
            raise _Malformed(f"{where}.token must be a string, got {_show(token)}")
        values.append(float(value))
        tokens.append(token)
    encoded = [_TOKEN_ID.fullmatch(t) for t in tokens]
    if tokens and all(encoded):
        return [_count(int(match[1]), "logprobs token id") for match in encoded], values
    return None, values


__all__ = ["OpenAIBackend", "Usage"]
