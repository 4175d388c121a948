"""Record / replay cache around any backend, in one SQLite file.

:class:`CachedBackend` keys every request on (inner backend identity, model, sampling params
including the seed, messages, and ``prompt_ids`` where a request gives them): the SHA-256 of their
canonical JSON. The identity is the inner backend's JSON spec without its operational settings
(device, batch size, URL, timeouts, retries, concurrency, ...), so the same model and defaults
served differently share recordings.

Modes:

* ``off``: pass every request through; the file is never opened.
* ``record``: call the inner backend for every request and store (overwrite) the outputs.
* ``replay``: answer from the file only; the inner backend is never built (the model need not be
  installed) and a request without a recording raises :class:`~dialogue_gym.errors.BackendError`.
* ``read-through``: answer from the file where it can, call the inner backend for the rest (as ONE
  batch) and store their outputs.

Outputs are stored whole (text, token ids, log-probabilities, finish reason, meta, error) as JSON,
which round-trips Python floats exactly, so a replayed evaluation reproduces the recorded
transcripts byte for byte. Outputs that failed (``error`` set) are stored too, so replay reproduces
the failure; ``read-through`` treats them as misses and asks again.

The file uses SQLite's write-ahead log, so any number of threads or processes can read it at once
(replay opens it read-only) while one writer appends; writers wait for each other (``busy_timeout``).

A file that is not a cache (not SQLite, truncated or otherwise corrupt, or another program's
database) raises :class:`~dialogue_gym.errors.ConfigError` naming the path and the fix: when the
backend is built if the file is already there, else when it is first used. The cache never writes
into such a file.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Sequence

from ..errors import BackendError, ConfigError
from .base import GenerationOutput, GenerationRequest

MODES = ("off", "record", "replay", "read-through")
OPERATIONAL_KEYS = frozenset(
    {
        "device", "batch_size", "base_url", "api_key_env", "max_concurrency", "timeout",
        "max_response_bytes", "max_retries", "backoff_base", "backoff_max", "on_failure", "price_per_million_prompt_tokens",
        "price_per_million_completion_tokens", "gpu_memory_utilization", "tensor_parallel_size",
        "prefix_cache", "prefix_cache_tokens",
    }
)
"""Spec keys that change how a backend runs, not what it generates: left out of the cache key."""
KEY_VERSION = 1
_COLUMNS = ("key", "request", "output", "failed", "created")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS generations (
    key TEXT PRIMARY KEY,
    request TEXT NOT NULL,
    output TEXT NOT NULL,
    failed INTEGER NOT NULL,
    created REAL NOT NULL
)
"""
_WHERE = "CachedBackend"


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _storable(document: str) -> str:
    """``document`` (canonical JSON) as SQLite can store it: text holding a lone surrogate, which UTF-8
    cannot encode, is rewritten with ``\\u`` escapes, which ``json.loads`` reads back identically."""
    try:
        document.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(json.loads(document), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return document


def backend_identity(spec: dict[str, Any]) -> dict[str, Any]:
    """The part of a backend spec that determines its outputs (see :data:`OPERATIONAL_KEYS`)."""
    return {key: value for key, value in spec.items() if key not in OPERATIONAL_KEYS}


class CachedBackend:
    """Wraps a backend with a record / replay cache in the SQLite file ``path``.

    Args:
        backend: the inner backend, as a JSON spec (``{"name": "transformers", ...}``; built only when
            a request must actually be generated) or a backend object with a ``spec``.
        path: the SQLite file (created, with its folder, when recording).
        mode: ``"off"``, ``"record"``, ``"replay"`` or ``"read-through"`` (see the module docs).
        identity: what names the inner backend in cache keys; default: its spec without operational
            keys. Set it to share recordings between specs that generate the same thing (e.g. the
            same model under two local paths).

    Attributes:
        stats: ``{"hits", "misses", "writes"}`` counts since construction.
    """

    name = "cached"

    def __init__(self, backend: Any, path: str | os.PathLike[str], mode: str = "read-through", identity: Any = None) -> None:
        if mode not in MODES:
            raise ConfigError(f"{_WHERE}: mode must be one of {list(MODES)}, got {mode!r}.")
        if not isinstance(path, (str, os.PathLike)) or not str(path):
            raise ConfigError(f"{_WHERE}: path must be the SQLite file's path, got {path!r}; pass e.g. path='cache.sqlite'.")
        if isinstance(backend, dict):
            self._inner_spec: dict[str, Any] | None = dict(backend)
            self._inner: Any = None
        elif callable(getattr(backend, "generate", None)):
            self._inner_spec = getattr(backend, "spec", None)
            self._inner = backend
        else:
            raise ConfigError(
                f"{_WHERE}: backend must be a backend spec dict (e.g. {{'name': 'transformers', 'model': 'smollm2'}}) "
                f"or a backend object, got {type(backend).__name__} {backend!r:.100}."
            )
        if identity is None:
            if not isinstance(self._inner_spec, dict):
                raise ConfigError(
                    f"{_WHERE}: cannot tell what {type(backend).__name__} generates (it has no JSON 'spec'); "
                    "pass identity=... (e.g. {'backend': 'mine', 'model': 'v3'}) to name it in cache keys."
                )
            identity = backend_identity(self._inner_spec)
        try:
            self.identity = json.loads(canonical_json(identity))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{_WHERE}: identity must be JSON data, got {identity!r:.200} ({exc}).") from exc
        self.path = Path(path)
        self.mode = mode
        self.stats = {"hits": 0, "misses": 0, "writes": 0}
        self._lock = threading.Lock()
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        if mode == "replay" and not self.path.is_file():
            raise ConfigError(
                f"{_WHERE}: mode='replay' but there is no cache file at {str(self.path)!r}; record one first with "
                "mode='record' (or 'read-through'), or fix the path."
            )
        if mode != "off" and self.path.exists():
            self._check_existing_file()

    def _unusable(self, problem: str) -> ConfigError:
        return ConfigError(
            f"{_WHERE}: the cache file {str(self.path)!r} is not a usable dialogue_gym cache ({problem}). Delete it "
            "(with any -wal / -shm file beside it) to start a new cache there, or point path= at another file."
        )

    def _cannot_open(self, exc: Exception) -> ConfigError:
        if type(exc) is sqlite3.DatabaseError:  # exactly this class: SQLITE_CORRUPT or SQLITE_NOTADB
            return self._unusable(f"sqlite3: {exc}")
        return ConfigError(
            f"{_WHERE}: cannot open the cache file {str(self.path)!r} in mode={self.mode!r} ({type(exc).__name__}: {exc}); "
            "check that its folder exists and is writable (and that no other program holds the file locked), "
            "or point path= at another file."
        )

    def _check_existing_file(self) -> None:
        """Fail now, not mid-run, on a file that cannot be a cache (read-only look; nothing is written)."""
        if not self.path.is_file():
            raise self._unusable("it is not a regular file")
        try:
            connection = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, timeout=30)
        except sqlite3.Error as exc:
            raise self._cannot_open(exc) from exc
        try:
            self._check_schema(connection)
        finally:
            connection.close()

    def _check_schema(self, connection: sqlite3.Connection) -> bool:
        """Whether the file holds the generations table (``False``: an empty database); raises
        :class:`ConfigError` for a corrupt file or any other schema."""
        try:
            objects = connection.execute(
                "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite!_%' ESCAPE '!' ORDER BY name"
            ).fetchall()
            columns = tuple(row[1] for row in connection.execute("PRAGMA table_info(generations)"))
        except sqlite3.Error as exc:
            raise self._cannot_open(exc) from exc
        if not objects:
            if self.mode == "replay":
                raise self._unusable("it is an empty database with no recordings; record into it first with mode='record'")
            return False
        if objects != [("table", "generations")] or columns != _COLUMNS:
            found = ", ".join(f"{kind} {name}" for kind, name in objects)
            raise self._unusable(
                f"it is an SQLite database with another schema: {found}, generations columns {list(columns)}; "
                f"a cache holds only the table generations with columns {list(_COLUMNS)}"
            )
        return True

    @property
    def spec(self) -> dict[str, Any]:
        """The JSON-serialisable spec that :func:`dialogue_gym.backends.make_backend` accepts."""
        return {"name": self.name, "backend": self._inner_spec, "path": str(self.path), "mode": self.mode, "identity": self.identity}

    @property
    def inner(self) -> Any:
        """The inner backend, built from its spec on first use."""
        with self._lock:
            if self._inner is None:
                from . import make_backend

                self._inner = make_backend(self._inner_spec)
            return self._inner

    def key(self, request: GenerationRequest) -> tuple[str, str]:
        """``(key, request_json)``: the cache key of ``request`` and the canonical JSON it hashes."""
        sampling = request.sampling
        content: dict[str, Any] = {
            "version": KEY_VERSION,
            "backend": self.identity,
            "sampling": {f.name: getattr(sampling, f.name) for f in dataclasses.fields(sampling)},
            "messages": [dict(m) for m in request.messages],
        }
        prompt_ids = getattr(request, "prompt_ids", None)
        if prompt_ids is not None:  # token-in requests: the ids decide the output
            content["prompt_ids"] = [int(token) for token in prompt_ids]
        document = canonical_json(content)
        # surrogatepass: identical bytes for any valid text, and defined for a lone surrogate in a message
        return hashlib.sha256(document.encode("utf-8", "surrogatepass")).hexdigest(), document

    # -- storage --------------------------------------------------------------------------------
    def _connection(self) -> sqlite3.Connection:
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            return connection
        connection = None
        try:
            if self.mode == "replay":
                connection = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, timeout=30, check_same_thread=False)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                connection = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
                connection.execute("PRAGMA journal_mode=WAL")
            if not self._check_schema(connection):
                connection.execute(_SCHEMA)
        except (sqlite3.Error, OSError) as exc:
            if connection is not None:
                connection.close()
            raise self._cannot_open(exc) from exc
        except ConfigError:
            if connection is not None:
                connection.close()
            raise
        with self._lock:
            self._connections.append(connection)
        self._local.connection = connection
        return connection

    def _lookup(self, keys: list[str]) -> dict[str, tuple[str, bool]]:
        found: dict[str, tuple[str, bool]] = {}
        unique = sorted(set(keys))
        try:
            connection = self._connection()
            for start in range(0, len(unique), 500):
                chunk = unique[start : start + 500]
                rows = connection.execute(
                    f"SELECT key, output, failed FROM generations WHERE key IN ({','.join('?' * len(chunk))})", chunk
                ).fetchall()
                found.update((key, (output, bool(failed))) for key, output, failed in rows)
        except sqlite3.DatabaseError as exc:
            raise self._database_error("read", exc) from exc
        return found

    def _database_error(self, action: str, exc: sqlite3.DatabaseError) -> Exception:
        """Corruption (exactly ``DatabaseError``: SQLITE_CORRUPT, SQLITE_NOTADB) means the file must go;
        its subclasses (locked, I/O, disk full, ...) are failures of this call."""
        if type(exc) is sqlite3.DatabaseError:
            return self._unusable(f"sqlite3: {exc}")
        return BackendError(f"{_WHERE}: cannot {action} the cache file {str(self.path)!r}: {exc}")

    def _decode(self, key: str, stored: str) -> GenerationOutput:
        try:
            return GenerationOutput(**json.loads(stored))
        except (ValueError, TypeError, RecursionError) as exc:
            raise self._unusable(f"the row with key {key[:12]} is not a recorded output: {type(exc).__name__}: {exc}") from exc

    def _store(self, rows: list[tuple[str, str, GenerationOutput]]) -> None:
        now = time.time()
        records = [
            (key, _storable(document), _storable(canonical_json(dataclasses.asdict(output))), int(output.error is not None), now)
            for key, document, output in rows
        ]
        connection = self._connection()
        try:
            connection.execute("BEGIN IMMEDIATE")
            connection.executemany("INSERT OR REPLACE INTO generations VALUES (?, ?, ?, ?, ?)", records)
            connection.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            if connection.in_transaction:
                try:
                    connection.execute("ROLLBACK")
                except sqlite3.Error:
                    pass  # a corrupt file may refuse the rollback too; the error below says what to do
            raise self._database_error("write to", exc) from exc
        with self._lock:
            self.stats["writes"] += len(records)

    # -- generation -----------------------------------------------------------------------------
    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationOutput]:
        requests = list(requests)
        if self.mode == "off":
            return self.inner.generate(requests)
        for index, request in enumerate(requests):
            if not isinstance(request, GenerationRequest):
                raise ConfigError(f"{_WHERE}.generate: request {index} must be a GenerationRequest, got {request!r:.200}.")
        keyed = [self.key(request) for request in requests]
        found = {} if self.mode == "record" else self._lookup([key for key, _ in keyed])
        outputs: list[GenerationOutput | None] = [None] * len(requests)
        misses = []
        for index, (key, _) in enumerate(keyed):
            hit = found.get(key)
            if hit is not None and (self.mode == "replay" or not hit[1]):
                outputs[index] = self._decode(key, hit[0])
            else:
                misses.append(index)
        if misses and self.mode == "replay":
            index = misses[0]
            last = requests[index].messages[-1]["content"] if requests[index].messages else ""
            raise BackendError(
                f"{_WHERE}: mode='replay' and {len(misses)} of {len(requests)} requests have no recording in "
                f"{str(self.path)!r} (first: request {index}, key {keyed[index][0][:12]}, last message {last[:60]!r}). "
                "Record them first (mode='record' or 'read-through'), and check that the inner backend spec, "
                "sampling params and seeds match the recorded run."
            )
        if misses:
            generated = self.inner.generate([requests[i] for i in misses])
            if len(generated) != len(misses):
                raise BackendError(
                    f"{_WHERE}: the inner backend returned {len(generated)} outputs for {len(misses)} requests."
                )
            for index, output in zip(misses, generated):
                outputs[index] = output
            self._store([(keyed[i][0], keyed[i][1], outputs[i]) for i in misses])
        with self._lock:
            self.stats["hits"] += len(requests) - len(misses)
            self.stats["misses"] += len(misses)
        return [output for output in outputs if output is not None]

    def close(self) -> None:
        """Close the file (every thread's connection); the cache reopens it on next use."""
        with self._lock:
            connections, self._connections = self._connections, []
        for connection in connections:
            connection.close()
        self._local = threading.local()

    def __repr__(self) -> str:
        inner = (self._inner_spec or {}).get("name", type(self._inner).__name__)
        return f"CachedBackend(backend={inner!r}, path={str(self.path)!r}, mode={self.mode!r})"
