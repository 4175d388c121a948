"""Scripted speed of this working tree against a git revision, side by side, and whether both play the same episodes.

    python benchmarks/compare_revisions.py [REV] [--rounds 2] [--episodes 3000] [--quick]
    python benchmarks/compare_revisions.py [REV] --instructions [--episodes 300]

REV (default ``HEAD``) is checked out into a temporary git worktree. Each round then plays every row
of ``scripted_throughput.py``'s engine table and SEAD's ``gym.make`` (unwrapped) and ``gym.make_vec``
rows at K = 1 and 64, each row in a fresh process of the revision and then of this tree (so a drifting
machine load hits both alike, and no row meets the heap earlier rows left), with each tree's own
benchmark module and package, threads pinned to one. It prints learner turns per CPU second of every round and the ratio of the round means
(this tree over REV), with the load average before and after.

First it plays, in each tree, every fair baseline and audit policy of every ID's exploit audits
(``--fingerprint-episodes``, 120 each, seed 7) and prints a SHA-256 of their trajectories (strict
JSON) over the IDs both trees register (an ID only one has, a new version say, is named and left
out): a speed change that keeps the rules must keep it equal. The script exits 1 when it differs.

``--instructions`` counts instead of timing (needs ``valgrind``): CPU instructions per learner turn
of every engine row in each tree under callgrind, the warm-up's count taken away (a run of the
warm-up alone, after one more that fills numba's caches for the emulated CPU). On shared cores the
CPU time of one process varies by a quarter from run to run; the count varies by under 0.1% (same
hash seed; what is left is address layout), so a change of a few percent shows. It takes about a
minute a row per tree for SEAD and five for the others at the default 300 episodes. Its ratio is the
revision's count over this tree's (above 1: fewer instructions now).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
VECTOR_SIZES = (1, 64)


def fingerprints(episodes: int) -> dict[str, str]:
    """``{env id: SHA-256}`` over the trajectories of every audit player of each registered ID (in this
    process's tree), so a tree that registers an ID the other lacks is compared on the IDs both have."""
    from dialogue_gym.evaluation import evaluate
    from envs_registry import REGISTRY, resolve

    digests: dict[str, Any] = {}
    for entry in REGISTRY:
        for audit in resolve(entry.audits)():
            digest = digests.setdefault(audit.env_id, hashlib.sha256())
            players = [(name, name) for name in dict.fromkeys((*audit.fair_order, audit.baseline))]
            players += [(policy.name, policy.make()) for policy in audit.policies]
            for _, agent in players:
                for trajectory in evaluate(audit.env_id, agent, episodes, 7, learner=audit.learner, env_kwargs=audit.env_kwargs):
                    digest.update(trajectory.to_json().encode())
    return {env_id: digest.hexdigest() for env_id, digest in digests.items()}


def compared(prints: dict[str, dict[str, str]]) -> tuple[bool, list[str]]:
    """Whether both trees play the same episodes on every ID they both have, and the lines that say so:
    one SHA-256 per tree over those IDs' fingerprints, then the IDs only one tree has (not compared)."""
    shared = sorted(set.intersection(*(set(found) for found in prints.values())))
    combined = {
        name: hashlib.sha256("".join(f"{env_id} {found[env_id]}\n" for env_id in shared).encode()).hexdigest()
        for name, found in prints.items()
    }
    lines = [f"trajectories of every audit player of the {len(shared)} ids in both trees, {name}: sha256 {value}" for name, value in combined.items()]
    for name, found in prints.items():
        only = sorted(set(found) - set(shared))
        if only:
            lines.append(f"only {name} has {', '.join(only)} (not compared)")
    same = len(set(combined.values())) == 1
    differing = [env_id for env_id in shared if len({found[env_id] for found in prints.values()}) > 1]
    lines.append("the same episodes" if same else f"THE EPISODES DIFFER ({', '.join(differing)})")
    return same, lines


def rows() -> list[str]:
    """The rows compared: every ID with each of its learner roles through the engine, then SEAD's single env and vector env."""
    from envs_registry import REGISTRY

    engine = [f"{entry.id} {role}" for entry in REGISTRY for role in sorted(entry.roles, key=lambda role: role != entry.default_learner)]
    return [*engine, "SEAD gym.make unwrapped", *(f"SEAD gym.make_vec K={size}" for size in VECTOR_SIZES)]


def rate(row: str, episodes: int, warmup: int) -> float:
    """Learner turns per CPU second of one row, with this process's tree's scripted_throughput (each row
    in a fresh process: a row played after others meets their memo caches on the heap and runs slower)."""
    sys.path.insert(0, str(Path.cwd() / "benchmarks"))
    import scripted_throughput as bench

    players = bench.learner_players()
    with bench.pinned_threads():
        if row == "SEAD gym.make unwrapped":
            result = bench.single(episodes, True, warmup, len(players))
        elif row.startswith("SEAD gym.make_vec K="):
            size = int(row.rsplit("=", 1)[1])
            result = bench.vector(size, episodes, warmup, len(players) + 1 + VECTOR_SIZES.index(size))
        else:
            index, player = engine_player(bench, row)
            result = bench.engine(*player, episodes, warmup, index)
    return result["turns"] / result["cpu_seconds"]


def engine_player(bench: Any, row: str) -> tuple[int, tuple[str, str, str]]:
    """``(row number, (env id, learner, agent))`` of the engine row named ``row`` (``"<env id> <learner>"``)."""
    players = bench.learner_players()
    index = [f"{env_id} {learner}" for env_id, learner, _ in players].index(row)
    return index, players[index]


def learner_turns(row: str, episodes: int, warmup: int) -> int:
    """Play ``warmup`` episodes of an engine row, then ``episodes`` more (none: the warm-up alone);
    the learner turns of the latter (what :func:`instructions` divides by). This runs in the revision's
    tree with its own benchmark module, so it uses only what older revisions have too."""
    sys.path.insert(0, str(Path.cwd() / "benchmarks"))
    import scripted_throughput as bench
    from dialogue_gym.evaluation import Evaluator

    index, (env_id, learner, agent) = engine_player(bench, row)
    seed, warmup_seed = bench.row_seeds(index)
    evaluator = Evaluator(env_id, agent, learner=learner)
    evaluator.run(warmup, seed=warmup_seed)
    if not episodes:
        return 0
    return sum(len(trajectory.turns_of(learner)) for trajectory in evaluator.run(episodes, seed=seed))


def child(argv: list[str]) -> None:
    """``--child fingerprint N``, ``--child rows``, ``--child rate ROW EPISODES WARMUP`` or ``--child turns
    ROW EPISODES WARMUP``, run inside one tree: prints JSON."""
    sys.path.insert(0, str(Path.cwd()))
    import dialogue_gym  # noqa: F401  (registers the ids)

    if argv[0] == "fingerprint":
        print(json.dumps(fingerprints(int(argv[1]))))
    elif argv[0] == "rows":
        print(json.dumps(rows()))
    elif argv[0] == "turns":
        print(json.dumps(learner_turns(argv[1], int(argv[2]), int(argv[3]))))
    else:
        print(json.dumps(rate(argv[1], int(argv[2]), int(argv[3]))))


def callgrind_count(tree: Path, *args: str) -> tuple[int, object]:
    """``(instructions, printed JSON)`` of this script's child mode in ``tree`` run under callgrind."""
    environment = {**os.environ, **{variable: os.environ.get(variable, "1") for variable in THREAD_VARIABLES}}
    environment.update(PYTHONPATH=str(tree), PYTHONHASHSEED="0")  # the same set orders in every run
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, str(Path(__file__).resolve()), "--child", *args],
        cwd=tree, env=environment, capture_output=True, text=True, check=False,
    )
    counted = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or counted is None:
        raise SystemExit(f"the callgrind run in {tree} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return int(counted.group(1)), json.loads(done.stdout.strip().splitlines()[-1])


def instructions(tree: Path, row: str, episodes: int, warmup: int) -> float:
    """CPU instructions per learner turn of ``episodes`` episodes of an engine row in ``tree``: the count
    of warm-up plus episodes less that of the warm-up alone, after a first run that fills numba's caches
    (callgrind emulates a CPU of its own, so native cache entries do not serve it)."""
    callgrind_count(tree, "turns", row, "0", str(warmup))
    alone, _ = callgrind_count(tree, "turns", row, "0", str(warmup))
    total, turns = callgrind_count(tree, "turns", row, str(episodes), str(warmup))
    return (total - alone) / turns


def selected(all_rows: list[str], wanted: str | None) -> list[str]:
    """The rows whose name holds one of the comma-separated texts of ``wanted`` (all when ``None``)."""
    if wanted is None:
        return all_rows
    texts = [text.strip() for text in wanted.split(",") if text.strip()]
    chosen = [row for row in all_rows if any(text in row for text in texts)]
    if not chosen:
        raise SystemExit(f"--rows {wanted!r} matches no row; the rows are {all_rows}")
    return chosen


def count_instructions(trees: dict[str, Path], revision: str, episodes: int, warmup: int, wanted: str | None = None) -> str:
    """The ``--instructions`` table: each engine row's instructions per learner turn in both trees."""
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions counts with valgrind's callgrind, which is not on PATH; install valgrind (e.g. apt-get install valgrind) or time the rows without it")
    engine_rows = selected([row for row in run_in(ROOT, "rows") if not row.startswith("SEAD gym.")], wanted)
    lines = [f"{'row':36s} {revision + ' (instr/turn)':>24s} {'this tree (instr/turn)':>24s} {'ratio':>6s}"]
    for row in engine_rows:
        before, after = (instructions(trees[name], row, episodes, warmup) for name in (revision, "this tree"))
        lines.append(f"{row:36s} {before:24,.0f} {after:24,.0f} {before / after:6.3f}")
    return "\n".join(lines)


def run_in(tree: Path, *args: str) -> object:
    """Run this script's child mode with ``tree`` as the working directory (its package first on the path)."""
    environment = {**os.environ, **{variable: os.environ.get(variable, "1") for variable in THREAD_VARIABLES}}
    environment["PYTHONPATH"] = str(tree)
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", *args], cwd=tree, env=environment,
        capture_output=True, text=True, check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the run in {tree} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(results: dict[str, list[dict[str, float]]], revision: str) -> str:
    rows = list(results["this tree"][0])
    lines = [f"{'row':36s} {revision + ' (per round)':>24s} {'this tree (per round)':>24s} {'ratio':>6s}"]
    for row in rows:
        before = [round_[row] for round_ in results[revision]]
        after = [round_[row] for round_ in results["this tree"]]
        ratio = statistics.mean(after) / statistics.mean(before)
        lines.append(
            f"{row:36s} {' / '.join(f'{x:,.0f}' for x in before):>24s} {' / '.join(f'{x:,.0f}' for x in after):>24s} {ratio:6.2f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        child(argv[1:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("revision", nargs="?", default="HEAD", help="git revision to compare with (default: HEAD)")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds (default: 2)")
    parser.add_argument("--episodes", type=int, help="episodes per row (default: 3000; 300 with --instructions)")
    parser.add_argument("--warmup", type=int, help="untimed episodes before each row (default: 500; 200 with --instructions)")
    parser.add_argument("--fingerprint-episodes", type=int, default=120, help="episodes per audit player (0: skip)")
    parser.add_argument("--quick", action="store_true", help="one round of 60 episodes a row, 12 per audit player")
    parser.add_argument("--rows", help="only the rows whose name holds one of these comma-separated texts (e.g. SEAD,RLADA-Banking)")
    parser.add_argument("--instructions", action="store_true", help="count instructions per learner turn under callgrind instead of timing (engine rows)")
    args = parser.parse_args(argv)
    # under callgrind a turn takes ~50 times as long, and the count needs no repeats to settle
    args.episodes = args.episodes if args.episodes is not None else 300 if args.instructions else 3000
    args.warmup = args.warmup if args.warmup is not None else 200 if args.instructions else 500
    if args.quick:
        args.rounds, args.episodes, args.warmup, args.fingerprint_episodes = 1, 60, 30, 12
    for name in ("rounds", "episodes"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    with tempfile.TemporaryDirectory(prefix="dialogue-gym-rev-") as folder:
        worktree = Path(folder) / "tree"
        added = subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(worktree), args.revision], capture_output=True, text=True
        )
        if added.returncode != 0:
            raise SystemExit(f"cannot check out {args.revision!r}: {added.stderr.strip()}")
        try:
            trees = {args.revision: worktree, "this tree": ROOT}
            same = True
            if args.fingerprint_episodes:
                same, lines = compared({name: run_in(tree, "fingerprint", str(args.fingerprint_episodes)) for name, tree in trees.items()})
                print("\n".join(lines))
            if args.instructions:
                print(f"\nCPU instructions per learner turn under callgrind, {args.episodes} episodes a row after {args.warmup} warm-up; "
                      "ratio: the revision's count over this tree's\n")
                print(count_instructions(trees, args.revision, args.episodes, args.warmup, args.rows))
                return 0 if same else 1
            load_before = os.getloadavg()
            results: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
            for _ in range(args.rounds):
                for name in trees:
                    results[name].append({})
                for row in selected(run_in(ROOT, "rows"), args.rows):
                    for name, tree in trees.items():
                        results[name][-1][row] = run_in(tree, "rate", row, str(args.episodes), str(args.warmup))
            load_after = os.getloadavg()
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)], capture_output=True)
    print(
        f"\n{os.cpu_count()} CPUs; load average (1 min) {load_before[0]:.2f} before, {load_after[0]:.2f} after; "
        f"learner turns per CPU second, {args.rounds} alternating round(s) of {args.episodes} episodes a row; "
        "ratio: mean of this tree's rounds over the revision's\n"
    )
    print(table(results, args.revision))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
