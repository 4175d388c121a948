"""The evaluator's side of the boundary: an agent played in a process of its own (:class:`AgentProcess`).

The agent is untrusted code. It runs in a fresh interpreter (``python -I -B -m
dialogue_gym.agents.runner``: no inherited ``sys.argv``, environment variables, descriptors beyond
its pipes and log, or bytecode written), is told what to build in a ``hello`` message, and speaks
:mod:`dialogue_gym.agents.protocol`. Whatever breaks the protocol (an answer that is not JSON, not a
string, too long, or late; an error the agent reports) makes that move an *invalid move of its
episode*: the game is handed an empty move, which every game flags as invalid (``info["invalid_action"]``,
the configured penalty), and the problem is kept for the episode's record (:meth:`AgentProcess.problems`).
It is never an exception and never an aborted episode, which the metrics would count apart: an agent
must not be able to choose which of its episodes are scored. An agent that runs past the time limit
of a call, or whose process ends, is ended and plays invalid moves from then on, so a stalled agent
costs one time limit, not one per move.

Levels (:data:`LEVELS`): ``sandbox`` runs it under bubblewrap (:func:`sandbox_command`); ``process``
is a plain process of the same user, which stops stack and garbage-collector walking but not an agent
reading the evaluator's memory through ``/proc`` or writing the package's files. Either way the
agent's process group ends with the evaluator however it ends (see :mod:`dialogue_gym.agents.launch`),
its stdout and stderr go to a log file, and :meth:`AgentProcess.close` kills what is left of it.
"""

from __future__ import annotations

import base64
import fcntl
import importlib
import importlib.machinery
import json
import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import weakref
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Sequence

from dialogue_gym.agents.protocol import Broken, LineReader, answer_limit, encode, error_text, read_moves, write_all
from dialogue_gym.errors import AgentError, ConfigError

LEVELS = ("none", "process", "sandbox")
"""Isolation levels, weakest first: ``none`` plays the agent in the evaluator's process (open-book)."""
BWRAP_INSTALL = "apt-get install -y bubblewrap"
"""How to get bubblewrap on Debian and Ubuntu (the package Flatpak's sandbox comes from)."""
CLOSE_SECONDS = 2.0
"""How long :meth:`AgentProcess.close` waits for the agent to exit when asked before killing its group."""
READY_BYTES = 65_536
"""The longest ``ready`` (or ``error``) line the evaluator reads from a starting agent."""
LAUNCH = Path(__file__).with_name("launch.py")


@dataclass(frozen=True)
class Limits:
    """What one agent process may use. ``None`` leaves a limit off."""

    call_seconds: float = 60.0
    """Wall-clock seconds for one ``act`` call (one batch of moves); past it the agent is ended."""
    start_seconds: float = 120.0
    """Wall-clock seconds for the process to start and build the policy (a model load included)."""
    cpu_seconds: int | None = 3_600
    """CPU seconds of each of the agent's processes over the whole run (``RLIMIT_CPU``)."""
    memory_mb: int | None = 8_192
    """Address space of each of the agent's processes, in MiB (``RLIMIT_AS``)."""
    file_mb: int | None = 64
    """The largest file the agent may write, its log included, in MiB (``RLIMIT_FSIZE``)."""
    processes: int | None = 64
    """Processes the sandboxed agent may run at once (``RLIMIT_NPROC``, counted in its own user namespace).
    The kernel exempts uid 0 from it, so under an evaluator run as root it does not bind; a fork bomb is
    then ended by the time limit of its call, with everything in its PID namespace."""
    scratch_mb: int = 256
    """Size of the sandbox's private scratch folder (a tmpfs at ``/tmp``, also its home and working folder)."""

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            optional = field.name in {"cpu_seconds", "memory_mb", "file_mb", "processes"}
            if (value is None and optional) or (isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0):
                continue
            raise ConfigError(
                f"agent limit {field.name} must be a positive number{' or None (no limit)' if optional else ''}, got {value!r:.60}; "
                f"e.g. --agent-limits '{{\"{field.name}\": {field.default}}}'."
            )

    @classmethod
    def of(cls, value: Limits | dict[str, Any] | None) -> Limits:
        """``value`` as limits: limits, a dict of some fields (the rest default) or None (all default)."""
        if value is None or isinstance(value, Limits):
            return value or cls()
        if not isinstance(value, dict):
            raise ConfigError(f"agent_limits must be a dict of limits or Limits, got {type(value).__name__}: {value!r:.60}.")
        unknown = sorted(set(value) - {field.name for field in fields(cls)})
        if unknown:
            raise ConfigError(f"unknown agent limits {unknown}; the limits are {[field.name for field in fields(cls)]}.")
        return cls(**value)

    def rlimit_flags(self, sandbox: bool) -> list[str]:
        values = {"--cpu": self.cpu_seconds, "--memory": self.memory_mb and self.memory_mb << 20, "--file-size": self.file_mb and self.file_mb << 20}
        if sandbox:
            values["--processes"] = self.processes
        return [part for flag, value in values.items() if value is not None for part in (flag, str(int(value)))]


def check_level(isolate: Any) -> str:
    """The isolation level of ``isolate``: one of :data:`LEVELS`, ``True`` (``sandbox``) or ``False`` (``none``)."""
    if isinstance(isolate, bool):
        return "sandbox" if isolate else "none"
    if isolate not in LEVELS:
        raise ConfigError(
            f"isolate must be one of {', '.join(map(repr, LEVELS))} (or True for 'sandbox', False for 'none'), "
            f"got {type(isolate).__name__}: {isolate!r:.60}."
        )
    return isolate


def bwrap() -> str:
    """The bubblewrap executable, or an :class:`AgentError` naming the install command and the weaker level."""
    found = shutil.which("bwrap")
    if found is None:
        raise AgentError(
            f"isolate='sandbox' (--isolate) runs the agent under bubblewrap, and `bwrap` is not on PATH. Install it "
            f"({BWRAP_INSTALL}), or ask for the weaker plain process with isolate='process' (--isolate process)."
        )
    return found


def agent_message(agent: Any) -> tuple[dict[str, Any], list[Path]]:
    """The ``agent`` field of ``hello`` and the files the agent's process must see to build it (its
    module's file or package, found without importing it). ``agent`` is a registered name, a
    ``module:Class`` spec (``{"class": "module:Class", "kwargs": {...}}`` or the string), or a
    picklable policy object whose class an importable module defines."""
    if isinstance(agent, dict) and set(agent) <= {"class", "kwargs"} and isinstance(agent.get("class"), str):
        kwargs = agent.get("kwargs", {})
        if not isinstance(kwargs, dict):
            raise ConfigError(f"the agent's kwargs (--agent-kwargs) must be a JSON object, got {type(kwargs).__name__}: {kwargs!r:.60}.")
        return {"class": agent["class"], "kwargs": kwargs}, module_files(agent["class"])
    if isinstance(agent, str):
        return ({"class": agent, "kwargs": {}}, module_files(agent)) if ":" in agent else ({"name": agent}, [])
    cls = type(agent)
    if cls.__module__ == "__main__":
        raise ConfigError(
            f"{cls.__name__} is defined in the script being run (__main__), which the agent's process cannot import. Move the class "
            f"into a module (say myagent.py) and pass agent='myagent:{cls.__name__}' (--agent myagent:{cls.__name__}) with "
            "agent kwargs, or an instance of the imported class."
        )
    try:
        data = pickle.dumps(agent)
    except Exception as exc:
        raise ConfigError(
            f"an isolated agent is a policy name, 'module:Class', or a picklable policy object; {cls.__name__} cannot be pickled "
            f"({exc}). Define its class at module level of an importable module, or pass 'module:Class'."
        ) from exc
    return {"pickle": base64.b64encode(data).decode()}, module_files(f"{cls.__module__}:{cls.__name__}")


def agent_class(spec: str) -> type:
    """The class ``module:Class`` names, imported in this process."""
    module, _, name = spec.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"cannot load the agent class {spec!r}: {exc}. Give 'module:Class' of a module on the path (the working folder or $PYTHONPATH).") from exc


def in_process(agent: Any) -> Any:
    """``agent`` as ``make_role_policy`` takes it in the evaluator's own process (isolation ``none``):
    a ``module:Class`` spec is imported here and built with its kwargs; names and objects are as given."""
    described, _ = agent_message(agent) if isinstance(agent, (str, dict)) else ({}, [])
    if "class" not in described:
        return agent
    sys.path[:0] = [str(path) for path in search_path() if str(path) not in sys.path]  # as the agent's process finds it
    return agent_class(described["class"])(**described["kwargs"])


def module_files(spec: str) -> list[Path]:
    """The file or package folder of the top-level module of ``module:Class``, looked up on the
    agent's search path (:func:`search_path`) without running it; none when it is installed (the
    sandbox sees the interpreter's packages). A spec that is not ``module:Class`` is a ConfigError."""
    module, _, name = spec.partition(":")
    if not module or not name.isidentifier() or not all(part.isidentifier() for part in module.split(".")):
        raise ConfigError(f"an agent class is given as 'module:Class' (e.g. 'myagent:MyAgent'), got {spec!r:.80}.")
    loaded = sys.modules.get(module.split(".")[0])
    found = importlib.machinery.PathFinder.find_spec(module.split(".")[0], [str(path) for path in search_path()])
    origin = getattr(loaded, "__file__", None) or (found.origin if found is not None and found.has_location else None)
    locations = list(getattr(loaded, "__path__", None) or (found.submodule_search_locations or [] if found else []))
    if locations:
        return [Path(location) for location in locations]
    return [Path(origin)] if origin else []


def search_path() -> list[Path]:
    """Where the agent's process looks for an agent's module before its installed packages: the
    evaluator's working folder and ``$PYTHONPATH`` (as ``python -m`` would)."""
    return [Path.cwd(), *(Path(part).absolute() for part in os.environ.get("PYTHONPATH", "").split(os.pathsep) if part)]


RUNNER = (
    "import runpy, sys; sys.path[:0] = dict.fromkeys(sys.argv[1:]); del sys.argv[1:]; "
    "runpy.run_module('dialogue_gym.agents.runner', run_name='__main__', alter_sys=True)"
)
"""How the agent's interpreter (isolated mode: no ``$PYTHONPATH``, no working folder on the path) starts
the runner: from the folders of the very packages the evaluator imported, given as arguments, so a
checkout that is run rather than installed (a clean worktree, a source tree on ``$PYTHONPATH``) plays
its agent with its own code and never with another installed copy."""


def package_roots() -> list[Path]:
    """The folders of the packages the agent's process imports (``dialogue_gym``, ``envs_registry``)."""
    import dialogue_gym
    import envs_registry

    return [Path(next(iter(package.__path__))) for package in (dialogue_gym, envs_registry)]


def numba_caches() -> list[Path]:
    """The package's in-tree numba cache folders (a ``__pycache__`` holding ``.nbi`` index files), which
    the sandboxed agent's launcher copies where its numba can use them (:mod:`~dialogue_gym.agents.launch`)."""
    return sorted({index.parent for root in package_roots() for index in root.rglob("__pycache__/*.nbi")})


def sandbox_command(limits: Limits, visible: Sequence[Path]) -> list[str]:
    """The bubblewrap command line that runs the agent: its own user (uid 65534), PID, IPC, network,
    UTS and cgroup namespaces; a new root holding, read-only, only the system folders, the
    interpreter, the packages and ``visible``; a fresh ``/proc`` of its own PID namespace (nothing of the
    evaluator), a minimal ``/dev``, a private tmpfs scratch folder; a cleared environment; a new
    session (no terminal to inject into); every capability dropped; it dies with the evaluator."""
    command = [
        bwrap(), "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--uid", "65534", "--gid", "65534",
        "--proc", "/proc", "--dev", "/dev", "--size", str(limits.scratch_mb << 20), "--tmpfs", "/tmp",
        "--clearenv", "--setenv", "HOME", "/tmp", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "LANG", "C.UTF-8", "--chdir", "/tmp",
    ]
    for name in ("bin", "lib", "lib64", "sbin"):
        root = Path("/") / name
        if root.is_symlink():
            command += ["--symlink", os.readlink(root), str(root)]
        elif root.is_dir():
            command += ["--ro-bind", str(root), str(root)]
    shown = {Path("/usr"), Path("/etc"), Path(sys.base_prefix), Path(sys.prefix), *package_roots(), *visible, LAUNCH.parent}
    for path in sorted({path.resolve() for path in shown if path.exists()}):
        command += ["--ro-bind", str(path), str(path)]
    return command


class AgentProcess:
    """The ``learner`` role's policy ``agent`` played in a process of its own at ``level``
    (``process`` or ``sandbox``): a role policy here (``start``, ``act_batch``) whose memories are
    episode numbers in that process. :meth:`close` ends it (and so does the evaluator's exit)."""

    def __init__(
        self,
        env_id: str,
        learner: str,
        env_kwargs: dict[str, Any],
        agent: Any,
        agent_backend: Any = None,
        *,
        level: str = "sandbox",
        limits: Limits | dict[str, Any] | None = None,
        log: str | Path | None = None,
    ):
        self.level = check_level(level)
        if self.level == "none":
            raise ConfigError("AgentProcess plays an agent in a process of its own; level 'none' is the evaluator's own process.")
        self.limits = Limits.of(limits)
        described, files = agent_message(agent)
        self.log = Path(log) if log is not None else temporary_log(env_id, learner, described)
        """The agent's stdout and stderr (what it prints, its tracebacks). One this process chose (no
        ``log`` given) is removed when the agent ends if it is empty, so that evaluations run for days do
        not fill the temporary folder; one with something in it is kept, since errors name it."""
        runner = [sys.executable, "-I", "-B", "-c", RUNNER, *(str(root.parent) for root in package_roots())]
        flags = self.limits.rlimit_flags(sandbox=self.level == "sandbox")
        launch = [sys.executable, "-I", "-B", str(LAUNCH)]
        if self.level == "sandbox":
            caches = [part for cache in numba_caches() for part in ("--numba-cache", str(cache))]
            command = [*sandbox_command(self.limits, files), "--", *launch, *flags, *caches, "--", *runner]
            environment = {}
        else:
            command = [*launch, "--guard", str(os.getpid()), *flags, "--", *runner]
            environment = {"PATH": os.defpath, "LANG": "C.UTF-8", "HOME": tempfile.gettempdir()}
        with open(self.log, "wb") as log_file:
            self._process = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log_file, env=environment,
                close_fds=True, start_new_session=True, cwd=tempfile.gettempdir(),
            )
        self._finalizer = weakref.finalize(self, _end_agent, self._process, None if log is not None else self.log)
        self._input = self._process.stdin.fileno()
        fcntl.fcntl(self._input, fcntl.F_SETFL, fcntl.fcntl(self._input, fcntl.F_GETFL) | os.O_NONBLOCK)
        self._reader = LineReader(self._process.stdout.fileno())
        self._requests = 0
        self._episodes = 0
        self._problems: dict[int, list[dict[str, Any]]] = {}
        self._turns: dict[int, int] = {}
        self.ended: str | None = None
        """Why the agent can answer no more (it ran past a time limit, or its process ended), or None."""
        hello = {
            "type": "hello", "env_id": env_id, "learner": learner, "env_kwargs": env_kwargs, "agent": described,
            "agent_backend": agent_backend, "path": [str(path.parent) for path in files] + [str(path) for path in search_path()],
        }
        self.privileged = self._ready(hello, described.get("class") or described.get("name") or type(agent).__name__)
        """Whether the agent said it reads the privileged channel: it is then sent, and its rows are marked."""

    def _ready(self, hello: dict[str, Any], agent: str) -> bool:
        deadline = time.monotonic() + self.limits.start_seconds
        line = write_all(self._input, encode(hello), deadline) or self._reader.line(READY_BYTES, deadline)
        if isinstance(line, Broken):
            raise self._failed_start(AgentError(
                f"the agent {agent!r} did not start in its process ({line.problem}, start limit {self.limits.start_seconds:g} s); "
                f"read its log {self.log} for why."
            ))
        try:
            ready = json.loads(line)
        except (UnicodeDecodeError, ValueError, RecursionError):
            ready = None
        ready = ready if isinstance(ready, dict) else {}
        if ready.get("type") == "error":
            raise self._failed_start(ConfigError(f"the agent {agent!r} could not be built in its process: {error_text(ready.get('message'))} (its log: {self.log})"))
        if ready.get("type") != "ready" or not isinstance(ready.get("privileged"), bool):
            raise self._failed_start(AgentError(f"the agent {agent!r} answered its start with {line[:80]!r}, not the runner's ready message; its log: {self.log}"))
        return ready["privileged"]

    def _failed_start(self, error: Exception) -> Exception:
        """End the agent and add ``error`` to the end of its log, which the error names (so a log the
        agent left empty says why, and is kept)."""
        self.close()
        with open(self.log, "a", encoding="utf-8") as log:
            log.write(f"[dialogue_gym] {error}\n")
        return error

    def _send(self, message: dict[str, Any], seconds: float) -> Broken | None:
        if self.ended is not None:
            return Broken(self.ended, ended=True)
        broken = write_all(self._input, encode(message), time.monotonic() + seconds)
        if broken is not None:
            self._end(broken.problem)
        return broken

    def _end(self, problem: str) -> None:
        self.ended = f"the agent's process was ended: {problem}"
        self._finalizer()

    def start(self, profile: dict[str, Any], seed: int) -> int:
        episode, self._episodes = self._episodes, self._episodes + 1
        self._problems[episode], self._turns[episode] = [], 0
        self._send({"type": "start", "episode": episode, "profile": profile, "seed": seed}, self.limits.call_seconds)
        return episode

    def act_batch(self, observations: Sequence[dict[str, Any]], infos: Sequence[dict[str, Any]], memories: Sequence[int]) -> list[str]:
        """One text per observation; a move the protocol refuses is the empty move, its problem recorded."""
        self._requests += 1
        request = {"type": "act", "id": self._requests, "episodes": list(memories), "observations": list(observations), "infos": list(infos)}
        started = time.monotonic()
        answer: Any = self._send(request, self.limits.call_seconds)
        if answer is None:
            line = self._reader.line(answer_limit(len(memories)), started + self.limits.call_seconds)
            answer = read_moves(line, self._requests, len(memories)) if isinstance(line, bytes) else line
        if isinstance(answer, Broken):
            if answer.ended and self.ended is None:
                self._end(f"{answer.problem} ({self.limits.call_seconds:g} s)" if "time limit" in answer.problem else answer.problem)
            texts, problems = [None] * len(memories), [self.ended or answer.problem] * len(memories)
        else:
            texts, problems = answer
        for episode, problem in zip(memories, problems):
            if problem is not None:
                self._problems[episode].append({"turn": self._turns[episode], "problem": problem})
            self._turns[episode] += 1
        return [text if text is not None else "" for text in texts]

    def problems(self, episode: int) -> list[dict[str, Any]]:
        """The moves of ``episode`` the boundary made invalid: ``{"turn": the agent's move number, "problem"}``."""
        return list(self._problems.get(episode, []))

    def end(self, episode: int) -> None:
        """Forget ``episode`` here and in the agent's process (its memory is freed)."""
        self._problems.pop(episode, None)
        self._turns.pop(episode, None)
        if self.ended is None:
            self._send({"type": "end", "episode": episode}, self.limits.call_seconds)

    def close(self) -> None:
        """Ask the agent to exit, wait :data:`CLOSE_SECONDS`, then kill its whole process group."""
        if self._process.poll() is None and self.ended is None:
            write_all(self._input, encode({"type": "close"}), time.monotonic() + CLOSE_SECONDS)
            try:
                self._process.wait(CLOSE_SECONDS)
            except subprocess.TimeoutExpired:
                pass
        self._finalizer()
        for stream in (self._process.stdin, self._process.stdout):
            stream.close()


def temporary_log(env_id: str, learner: str, described: dict[str, Any]) -> Path:
    """A new empty log file in the temporary folder, named after the game, the role and the agent."""
    name = described.get("class") or described.get("name") or "agent"
    handle, path = tempfile.mkstemp(prefix=f"dialogue-gym-agent-{safe_file_part(f'{env_id}.{learner}.{name}')}.", suffix=".log")
    os.close(handle)
    return Path(path)


def safe_file_part(text: str) -> str:
    """``text`` with every character that is not a letter, digit, ``_``, ``.`` or ``-`` replaced by ``_``
    (agent names are user text; a file name must not reach into other folders), at most 80 characters."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)[:80]


def _end_agent(process: subprocess.Popen, temporary_log: Path | None) -> None:
    """Kill every process left in the agent's process group (its own session), reap the agent, and
    remove its log if this process chose it and the agent wrote nothing to it."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()
    if temporary_log is not None:
        try:
            if temporary_log.stat().st_size == 0:
                temporary_log.unlink()
        except FileNotFoundError:
            pass
