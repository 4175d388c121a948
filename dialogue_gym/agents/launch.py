"""Sets the agent process's limits, then runs it: ``python -I launch.py [--guard PPID] [--numba-cache FOLDER] LIMITS -- COMMAND``.

Run by path with the standard library only, before any of the agent's code, so nothing the agent
does can undo what it sets:

- ``RLIMIT_CPU``, ``RLIMIT_AS``, ``RLIMIT_FSIZE`` (its log and scratch files), ``RLIMIT_CORE`` = 0,
  and in the sandbox ``RLIMIT_NPROC`` (counted in the sandbox's own user namespace);
- with ``--guard PPID`` (the ``process`` level, which has no PID namespace to end it) it stays as the
  process-group leader: it asks the kernel for ``SIGTERM`` when the evaluator dies (``PR_SET_PDEATHSIG``,
  checked against ``PPID`` for a death before the call), runs the agent as its child, and when either
  ends it kills the whole group, itself included (so it always ends by ``SIGKILL``). Without it (the sandbox) it replaces itself with the agent, whose
  bubblewrap sandbox dies with the evaluator (``--die-with-parent``) and takes every process of its
  PID namespace along.

With ``--numba-cache FOLDER`` (the sandbox: the package's files are read-only there) it first copies
the compiled code numba cached in ``FOLDER`` (a ``__pycache__`` beside numba-compiled package modules)
into a private ``NUMBA_CACHE_DIR`` in the scratch folder, where numba finds it (numba uses an in-tree
cache only where it may write): an agent whose code calls the package's compiled functions (a TRACER
replay aligns intents by DTW) loads them as the evaluator does instead of compiling them again in
every process (about 13 s of CPU at load 18 on two shared cores).
"""

import ctypes
import hashlib
import os
import resource
import shutil
import signal
import sys

PR_SET_PDEATHSIG = 1
LIMITS = {"--cpu": resource.RLIMIT_CPU, "--memory": resource.RLIMIT_AS, "--file-size": resource.RLIMIT_FSIZE, "--processes": resource.RLIMIT_NPROC}


NUMBA_CACHE_DIR = "/tmp/.numba-cache"
"""Where a sandboxed agent's numba reads (and writes) its cache: the scratch folder, private to it."""


def numba_cache_subpath(source_folder: str) -> str:
    """The folder under ``NUMBA_CACHE_DIR`` where numba looks for the cache of modules in
    ``source_folder`` (``numba.core.caching._CacheLocator.get_suitable_cache_subpath``)."""
    folder = os.path.abspath(source_folder)
    return f"{os.path.basename(folder)}_{hashlib.sha1(folder.encode()).hexdigest()}"


def seed_numba_cache(caches: list[str]) -> None:
    """Copy numba's cache files (``.nbi`` index, ``.nbc`` code) of each in-tree cache folder into
    ``NUMBA_CACHE_DIR`` and point numba there."""
    for cache in caches:
        target = os.path.join(NUMBA_CACHE_DIR, numba_cache_subpath(os.path.dirname(cache)))
        os.makedirs(target, exist_ok=True)
        for name in os.listdir(cache):
            if name.endswith((".nbi", ".nbc")):
                shutil.copyfile(os.path.join(cache, name), os.path.join(target, name))
    os.environ["NUMBA_CACHE_DIR"] = NUMBA_CACHE_DIR


def end_group(*_):
    os.killpg(0, signal.SIGKILL)


def main(argv):
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1:]
    guard = None
    caches = []
    for flag, value in zip(options[::2], options[1::2]):
        if flag == "--guard":
            guard = int(value)
        elif flag == "--numba-cache":
            caches.append(value)
        else:
            resource.setrlimit(LIMITS[flag], (int(value), int(value)))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if caches:
        seed_numba_cache(caches)
    if guard is None:
        os.execv(command[0], command)
    signal.signal(signal.SIGTERM, end_group)
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0 or os.getppid() != guard:
        end_group()  # no death signal, or the evaluator is already gone
    child = os.fork()
    if child == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.execv(command[0], command)
    os.waitpid(child, 0)
    end_group()


if __name__ == "__main__":
    main(sys.argv[1:])
