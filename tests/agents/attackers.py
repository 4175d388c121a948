"""Agents written to break the agent boundary (issue 42), used by tests/agents/.

:class:`Saboteur` plays ``keyword`` on RLADA-Banking but answers its first ``act`` call with one
kind of broken answer (``mode``): it replaces the runner's encoder, or writes the protocol pipe
itself, as any code in the agent's process can. :class:`Prober` tries one escape from inside its
process and says in its move what it got, so a test reads the result from the evaluator's side.
"""

from __future__ import annotations

import os
import pickle
import socket
import sys
import time
import warnings
from typing import Any, Sequence

from dialogue_gym.evaluation import make_learner_env


class Boom:
    """Unpickled, it would create ``path``: the evaluator must never unpickle what an agent sends."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


def answers_fd() -> int:
    """The runner's private copy of the protocol pipe (a pipe this process may write)."""
    import fcntl

    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if fd > 2 and os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:") and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_WRONLY:
                return fd
        except OSError:
            continue
    raise RuntimeError("no protocol pipe found")


class Saboteur:
    """``keyword``, except that its first answer is broken as ``mode`` says."""

    def __init__(self, mode: str, marker: str = ""):
        self.mode, self.marker, self.calls = mode, marker, 0
        self._fair = None

    @property
    def fair(self) -> Any:
        if self._fair is None:  # built in the agent's process, not pickled with the agent
            with warnings.catch_warnings():  # v0's "out of date" warning would be all its log holds
                warnings.simplefilter("ignore", DeprecationWarning)
                self._fair = make_learner_env("RLADA-Banking-v0", "agent", {}).make_role_policy("agent", "keyword")
        return self._fair

    def start(self, profile: dict[str, Any], seed: int) -> Any:
        return self.fair.start(profile, seed)

    def act_batch(self, observations: Sequence[dict], infos: Sequence[dict], memories: Sequence[Any]) -> list:
        texts = self.fair.act_batch(observations, infos, memories)
        self.calls += 1
        if self.calls > 1:
            return texts
        mode, count = self.mode, len(texts)
        if mode == "non_strings":
            return [[1, 2]] * count
        if mode == "long_move":
            return ["x" * 20_001] * count
        if mode == "raises":
            raise ValueError("the agent gave up")
        if mode == "sleeps":
            time.sleep(3_600)
        if mode == "exits":
            os._exit(3)
        if mode == "prints":
            print("this is not an answer", flush=True)
            os.write(1, b'{"id": 1, "texts": []}\n')  # fd 1 is the log, not the protocol
            return texts
        raw = {
            "pickle": pickle.dumps(Boom(self.marker)) + b"\n",
            "not_json": b"ok ok ok\n",
            "json_list": b"[1, 2, 3]\n",
            "wrong_id": b'{"id": 99, "texts": []}\n',
            "deep": b"[" * 200_000 + b"\n",
            "nan": b'{"id": 1, "texts": [%s]}\n' % b",".join([b"NaN"] * count),
            "error_object": b'{"id": 1, "error": {"__class__": "SystemExit"}}\n',
            "huge": b"x" * 40_000_000 + b"\n",
        }[mode]
        runner = sys.modules["__main__"]  # python -m dialogue_gym.agents.runner
        encode = runner.encode
        runner.encode = lambda message: (setattr(runner, "encode", encode), raw)[1]  # once, then answers honestly
        return texts


class Prober:
    """Tries ``attack`` from inside its process at its first move and says what it got."""

    def __init__(self, attack: str, target: str = ""):
        self.attack, self.target = attack, target

    def start(self, profile: dict[str, Any], seed: int) -> Any:
        return None

    def act_batch(self, observations: Sequence[dict], infos: Sequence[dict], memories: Sequence[Any]) -> list[str]:
        try:
            result = getattr(self, self.attack)()
        except (OSError, MemoryError) as exc:
            result = f"refused: {type(exc).__name__}: {exc}"
        return [result] * len(observations)

    def evaluator_memory(self) -> str:
        """Read the evaluator's memory (``target``: its pid; the parent as well)."""
        for pid in (self.target, str(os.getppid())):
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if b"pytest" in handle.read() or pid == self.target:
                    with open(f"/proc/{pid}/mem", "rb") as memory:
                        memory.read(1)
                    return f"read /proc/{pid}/mem"
        return "no evaluator found"

    def evaluator_environ(self) -> str:
        with open(f"/proc/{self.target}/environ", "rb") as handle:
            return f"environ: {handle.read()[:10_000]!r}"

    def package_file(self) -> str:
        """Which dialogue_gym this process imported."""
        import dialogue_gym

        return dialogue_gym.__file__

    def own_environment(self) -> str:
        return f"argv {sys.argv!r} environ {sorted(os.environ)!r} fds {sorted(os.listdir('/proc/self/fd'))!r}"

    def write_package(self) -> str:
        """Write ``target`` into the package folder, then into its bytecode cache (made if missing)."""
        import dialogue_gym

        package = os.path.dirname(dialogue_gym.__file__)
        refused = []
        for folder in (package, os.path.join(package, "__pycache__")):
            try:
                os.makedirs(folder, exist_ok=True)
                with open(os.path.join(folder, self.target), "wb") as handle:
                    handle.write(b"stale")
            except OSError as exc:
                refused.append(f"{type(exc).__name__}: {exc.strerror}")
        return f"refused: {'; '.join(refused)}" if refused else f"wrote {package}"

    def network(self) -> str:
        host, port = self.target.split(":")
        with socket.create_connection((host, int(port)), timeout=2):
            return "connected"

    def sleeps_forever(self) -> str:
        time.sleep(3_600)
        return "woke"

    def forks(self) -> str:
        """Leave a process behind that has left the agent's session (``target``: its marker)."""
        if os.fork() == 0:
            os.setsid()
            os.execv("/bin/sleep", ["sleep", self.target])
        return "forked"

    def hogs_memory(self) -> str:
        block = bytearray(int(self.target) << 20)
        return f"allocated {len(block):,} bytes"

    def spins(self) -> str:
        while True:
            pass

    def fork_bomb(self) -> str:
        children = 0
        while children < 200:
            if os.fork() == 0:
                os.execv("/bin/sleep", ["sleep", self.target])
            children += 1
        return f"forked {children}"

    def compiled_code(self) -> str:
        """Align by DTW, the package's numba-compiled code (what a TRACER replay runs), and say where
        numba looked for its cache and which signatures it missed there (compiled again)."""
        from dialogue_gym.metrics.dtw import _accumulate, align

        align((1, 2, 3), (1, 2))
        return f"cache {_accumulate.stats.cache_path} misses {dict(_accumulate.stats.cache_misses)}"

    def forks_in_group(self) -> str:
        """Leave a process behind in the agent's process group (``target``: its marker)."""
        if os.fork() == 0:
            os.execv("/bin/sleep", ["sleep", self.target])
        return "forked"
