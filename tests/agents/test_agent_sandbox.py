"""Attacks from inside the bubblewrap sandbox (issue 42, items 2 and 8): the agent tries to read the
evaluator's memory and environment, write the package or its bytecode cache, reach the network,
leave a process behind, or stall; it says in its move what it got. The same attacks at the plain
``process`` level show what that weaker level does not stop."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from attackers import Prober

import dialogue_gym
from dialogue_gym.agents import AgentProcess
from dialogue_gym.errors import AgentError
from dialogue_gym.evaluation import evaluate



def sandbox_refusal() -> str | None:
    """Why bubblewrap cannot sandbox here (not installed, or no namespaces in this container), or None."""
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (apt-get install -y bubblewrap)"
    probe = subprocess.run(["bwrap", "--unshare-all", "--ro-bind", "/", "/", "true"], capture_output=True, text=True)
    return f"bwrap cannot create namespaces here: {probe.stderr.strip()}" if probe.returncode else None


needs_bwrap = pytest.mark.skipif(sandbox_refusal() is not None, reason=str(sandbox_refusal()))
OBSERVATION = {"messages": [{"role": "system", "content": "You call restaurant owners."}], "turn": 0}


def attempt(attack: str, target: str = "", level: str = "sandbox", **limits) -> str:
    """What :class:`Prober` got trying ``attack`` from its process at ``level``."""
    agent = AgentProcess("SEAD-Outbound-v0", "agent", {}, Prober(attack, target), level=level, limits=limits or None)
    try:
        (move,) = agent.act_batch([OBSERVATION], [{}], [agent.start({}, 0)])
        return move or agent.problems(0)[0]["problem"]
    finally:
        agent.close()


def survivors(marker: str) -> str:
    """What a test that failed on a survivor prints of it: its state, parent, namespace pids and pending
    signals, then the same a second later (a rare failure under load left a process that ended soon after)."""
    def described() -> list[str]:
        lines = []
        for pid in running(marker):
            try:
                status = (Path("/proc") / str(pid) / "status").read_text().splitlines()
            except OSError as error:
                lines.append(f"{pid}: {error}")
                continue
            fields = ("Name", "State", "PPid", "NSpid", "Uid", "SigPnd", "ShdPnd", "SigBlk")
            lines.append(f"{pid}: " + "; ".join(line for line in status if line.split(":")[0] in fields))
        return lines

    now = described()
    time.sleep(1)
    return f"survivors: {now}; a second later: {described()}"


def running(marker: str) -> list[int]:
    """Processes of this machine whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def left_running(marker: str, seconds: float = 5.0) -> list[int]:
    """``running(marker)`` once it is empty, or after ``seconds``: the kernel ends a PID namespace's
    processes when its init exits, but on a loaded machine the 200 of a fork bomb were still listed 0.2 s
    after the sandbox returned (the full suite at load 4)."""
    deadline = time.monotonic() + seconds
    while (found := running(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


@pytest.fixture(scope="module")
def listener():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    yield f"127.0.0.1:{server.getsockname()[1]}"
    server.close()


@needs_bwrap
def test_the_sandboxed_agent_cannot_see_the_evaluators_memory_environment_files_or_network(listener, monkeypatch):
    monkeypatch.setenv("EVALUATOR_ONLY", "secret-value")
    me = str(os.getpid())
    assert attempt("evaluator_memory", me).startswith("refused: FileNotFoundError")  # no /proc of the evaluator's PID namespace
    assert attempt("evaluator_environ", me).startswith("refused: FileNotFoundError")
    own = attempt("own_environment")
    assert "EVALUATOR_ONLY" not in own and "pytest" not in own and "fds ['0', '1', '2', '3', '4', '5']" in own
    assert attempt("write_package", "stale.pyc") == "refused: OSError: Read-only file system; OSError: Read-only file system"
    package = Path(dialogue_gym.__file__).parent
    assert not (package / "stale.pyc").exists() and not (package / "__pycache__" / "stale.pyc").exists()
    assert attempt("network", listener).startswith("refused: ConnectionRefusedError")  # its own loopback, not the evaluator's
    assert attempt("network", "192.0.2.1:80").startswith("refused: OSError: [Errno 101] Network is unreachable")


@needs_bwrap
def test_what_the_sandboxed_agent_starts_ends_with_it_and_a_stalled_one_is_ended_in_time():
    marker = f"{time.time_ns() % 10**9}.5"
    assert attempt("forks", marker) == "forked"
    assert left_running(marker) == []  # its PID namespace ended with it, setsid or not
    started = time.monotonic()
    assert "no answer within the time limit of a call" in attempt("sleeps_forever", call_seconds=1.0)
    assert time.monotonic() - started < 10


@needs_bwrap
def test_the_sandboxed_agent_is_held_to_its_memory_cpu_and_process_limits():
    assert attempt("hogs_memory", "1024", memory_mb=512) == "refused: MemoryError: "
    assert attempt("hogs_memory", "64", memory_mb=512) == "allocated 67,108,864 bytes"
    assert attempt("spins", cpu_seconds=1, call_seconds=20) == "the agent's process was ended: its process ended"
    marker = f"{time.time_ns() % 10**9}.75"
    bomb = attempt("fork_bomb", marker, processes=16)
    if os.geteuid() == 0:  # the kernel exempts uid 0 from RLIMIT_NPROC, and a root evaluator's sandbox maps to uid 0
        assert bomb == "forked 200"
    else:
        assert bomb.startswith("refused: BlockingIOError: [Errno 11] Resource temporarily unavailable")
    assert left_running(marker) == []  # whatever it forked ended with its sandbox


EVALUATOR = """
import sys, time
sys.path.insert(0, {folder!r})
from attackers import Prober
from dialogue_gym.agents import AgentProcess
agent = AgentProcess("SEAD-Outbound-v0", "agent", {{}}, Prober({attack!r}, {marker!r}), level={level!r})
print(agent.act_batch([{observation!r}], [{{}}], [agent.start({{}}, 0)])[0], flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("level, attack", [pytest.param("sandbox", "forks", marks=needs_bwrap), ("process", "forks_in_group")])
@pytest.mark.parametrize("signal", [signal.SIGKILL, signal.SIGTERM])
def test_the_agents_processes_end_with_the_evaluator_however_it_ends(level, attack, signal):
    marker = f"{time.time_ns() % 10**9}.25"
    script = EVALUATOR.format(folder=str(Path(__file__).parent), attack=attack, marker=marker, level=level, observation=OBSERVATION)
    evaluator = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    assert evaluator.stdout.readline() == b"forked\n" and running(marker)
    evaluator.send_signal(signal)
    evaluator.wait()
    deadline = time.monotonic() + 5
    while running(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert running(marker) == [], survivors(marker)


@needs_bwrap
@needs_bwrap
def test_a_sandboxed_agent_plays_the_same_episodes_and_a_later_run_in_this_interpreter_is_unchanged_by_the_attacks():
    def played(level):
        trajectories = evaluate("SEAD-Outbound-v0", "adaptive", 6, unseal="cd" * 16, isolate=level)
        return [trajectory.to_dict()["turns"] for trajectory in trajectories], {t.meta.get("isolation") for t in trajectories}

    sandboxed, levels = played("sandbox")
    assert levels == {"sandbox"} and sandboxed == played("none")[0]


def test_the_plain_process_level_is_weaker_as_labelled(listener):
    """What ``process`` does not stop (why it is labelled weaker): same-user reads of the evaluator's
    ``/proc`` entries, and the network."""
    assert attempt("evaluator_environ", str(os.getpid()), level="process").startswith("environ:")
    assert attempt("network", listener, level="process") == "connected"


def test_without_bubblewrap_the_sandbox_is_refused_with_the_install_command(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(AgentError, match=r"`bwrap` is not on PATH. Install it \(apt-get install -y bubblewrap\), or .*isolate='process'"):
        evaluate("SEAD-Outbound-v0", "sop", 1, isolate="sandbox")


@pytest.mark.parametrize("level", [pytest.param("sandbox", marks=needs_bwrap), "process"])
def test_the_agent_imports_the_evaluators_own_copy_of_the_package(level, tmp_path):
    """An evaluator run from a source tree that is not the installed one (a clean worktree, a checkout on
    $PYTHONPATH) plays its agent with that tree's code: the agent's isolated interpreter is handed the
    evaluator's package folders, never left to find another installed copy (or none, in the sandbox)."""
    tree = tmp_path / "tree"
    for package in ("dialogue_gym", "envs_registry"):
        shutil.copytree(Path(dialogue_gym.__file__).parents[1] / package, tree / package, ignore=shutil.ignore_patterns("__pycache__"))
    script = EVALUATOR.format(folder=str(Path(__file__).parent), attack="package_file", marker="", level=level, observation=OBSERVATION)
    script = script.replace("time.sleep(60)", "agent.close()")
    environment = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == str(tree / "dialogue_gym" / "__init__.py")


@needs_bwrap
def test_the_sandboxed_agent_loads_the_packages_compiled_code_from_the_evaluators_cache_and_compiles_nothing():
    """The package folder is read-only in the sandbox, where numba will not use its in-tree cache: the
    launcher copies that cache into the agent's scratch folder. Without the copy every sandboxed process
    compiled DTW again (cache misses; 16-17 s against 3.3-3.6 s for its first alignment at load 18)."""
    from numba.core.caching import _CacheLocator

    from dialogue_gym.agents.launch import NUMBA_CACHE_DIR, numba_cache_subpath
    from dialogue_gym.metrics.dtw import align

    dtw = sys.modules["dialogue_gym.metrics.dtw"]  # the package's `dtw` is the function of that name
    align((1, 2, 3), (1, 2))  # the evaluator's own cache, written in the package's __pycache__ if it was not there
    folder = os.path.dirname(dtw.__file__)
    assert numba_cache_subpath(folder) == _CacheLocator.get_suitable_cache_subpath(dtw.__file__)
    assert attempt("compiled_code") == f"cache {NUMBA_CACHE_DIR}/{numba_cache_subpath(folder)} misses {{}}"
