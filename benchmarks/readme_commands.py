"""How long the README's two commands take, on a fresh clone of the current revision.

    python benchmarks/readme_commands.py [--skip-tests]

The commands are read from the README's "The two commands" section, so what is timed is what a reader
runs: the part of each command after its ``pip install ... &&`` (the main job, then the test command).
The installs are not timed; they depend on the network and on what is cached. The repository's HEAD is
cloned into a temporary folder and each command runs there, with the clone put first on ``PYTHONPATH``
(checked before timing: ``dialogue_gym`` must import from the clone), so neither a dirty working tree
nor its bytecode caches take part. Printed per command: the wall time, the CPU time of the command's
processes, the load average before and after, and for the tests pytest's own summary line.
``--skip-tests`` times the main job only (seconds instead of minutes).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECTION = "## The two commands"


def readme_commands(readme: str) -> list[str]:
    """The README's main job and test command, each without its ``pip install ... &&`` prefix."""
    if SECTION not in readme:
        raise SystemExit(f"the README has no {SECTION!r} section; its commands are what this benchmark times.")
    body = readme.split(SECTION, 1)[1].split("\n## ", 1)[0]
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", body, re.S):
        for line in block.splitlines():
            if line.startswith("pip install -e") and " && " in line:
                commands.append(line.split(" && ", 1)[1].strip())
    if len(commands) != 2:
        raise SystemExit(f"expected two `pip install -e ... && COMMAND` lines in the README's {SECTION!r}, found {commands}.")
    return commands


def as_module_call(command: str) -> list[str]:
    """``dialogue-gym ARGS`` becomes ``python -m dialogue_gym.cli ARGS``: the console script belongs to the
    installed package, while the timed run must use the clone's code."""
    words = shlex.split(command)
    if words[0] == "dialogue-gym":
        return [sys.executable, "-m", "dialogue_gym.cli", *words[1:]]
    if words[0] == "python":
        return [sys.executable, *words[1:]]
    raise SystemExit(f"cannot time {command!r}: expected a dialogue-gym or python command.")


def loads() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def timed(command: list[str], cwd: Path, environment: dict[str, str]) -> tuple[float, float, int, str]:
    """Wall seconds, CPU seconds of the command's processes, exit code and output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return wall, cpu, done.returncode, done.stdout + done.stderr


def pytest_summary(output: str) -> str:
    """Pytest's last line, e.g. ``2757 passed, 1 skipped in 731.90s (0:12:11)``, without its ``=`` rule."""
    lines = [line.strip("= ") for line in output.splitlines() if re.match(r"^=+ .* in [0-9.]+s", line)]
    return lines[-1] if lines else "no pytest summary line"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-tests", action="store_true", help="time the main job only")
    args = parser.parse_args(argv)
    commands = readme_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    if args.skip_tests:
        commands = commands[:1]
    print(f"{os.cpu_count()} CPUs; each command on a fresh clone of HEAD, its install not timed")
    with tempfile.TemporaryDirectory(prefix="readme-commands-") as scratch:
        clone = Path(scratch) / "clone"
        subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)], check=True)
        environment = {**os.environ, "PYTHONPATH": str(clone)}
        where = subprocess.run([sys.executable, "-c", "import dialogue_gym; print(dialogue_gym.__file__)"], cwd=clone, env=environment,
                               capture_output=True, text=True, check=True).stdout.strip()
        if not Path(where).resolve().is_relative_to(clone.resolve()):
            raise SystemExit(f"dialogue_gym imports from {where}, not from the clone; nothing was timed.")
        for command in commands:
            load_before = loads()
            wall, cpu, code, output = timed(as_module_call(command), clone, environment)
            print(f"\n$ {command}")
            print(f"wall {wall:.1f} s ({wall / 60:.1f} min), CPU {cpu:.1f} s, exit code {code}")
            print(f"load average (1, 5, 15 min) {load_before} before, {loads()} after")
            if "pytest" in command:
                print(f"pytest: {pytest_summary(output)}")
            if code:
                print(output[-3000:], file=sys.stderr)
                return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
