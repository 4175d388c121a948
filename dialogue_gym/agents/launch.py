"""Sets the agent process's limits, then runs it: ``python -I launch.py [--guard PPID] LIMITS -- COMMAND``.

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
"""

import ctypes
import os
import resource
import signal
import sys

PR_SET_PDEATHSIG = 1
LIMITS = {"--cpu": resource.RLIMIT_CPU, "--memory": resource.RLIMIT_AS, "--file-size": resource.RLIMIT_FSIZE, "--processes": resource.RLIMIT_NPROC}


def end_group(*_):
    os.killpg(0, signal.SIGKILL)


def main(argv):
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1:]
    guard = None
    for flag, value in zip(options[::2], options[1::2]):
        if flag == "--guard":
            guard = int(value)
        else:
            resource.setrlimit(LIMITS[flag], (int(value), int(value)))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
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
