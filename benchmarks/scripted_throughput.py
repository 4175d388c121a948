"""Scripted rollout throughput: learner turns per second on one core, every ID and learner role side by side.

    python benchmarks/scripted_throughput.py [--episodes 3000] [--warmup 500] [--sizes 1,64,512] [--quick]

Table 1 plays every registered ID with each of its roles as the learner through the batched engine
(:class:`dialogue_gym.evaluation.Evaluator`, what :func:`~dialogue_gym.evaluation.evaluate` runs; built
and warmed up before the clock starts): the learner role is played by the ID's default agent (its first
``agents`` entry) when it is the ID's default learner, else by the scenario's default scripted player of
that role; every other role by its scripted default. Table 2 plays SEAD-Outbound-v0 with the ``sop``
agent through ``gym.make`` (unwrapped and with Gymnasium's default wrappers) and ``gym.make_vec`` at
each ``--sizes`` K (default 1, 64 and 512 sub-envs, default ``keep_trajectories``), until ``--episodes``
episodes have finished.

A turn is a learner move actually played, each including the counterparts' replies: the engine counts
the learner's turns in its trajectories, a single env one per step, and the vector env one per sub-env
per step except for sub-envs being autoreset on that step (``NEXT_STEP`` autoreset: the step after an
episode's last one starts a new episode in that sub-env and ignores its action). Each row gives its wall
time and this process's CPU time (``time.process_time``) with both rates; the load stretches the wall
time far more, so ``vs engine`` compares CPU rates. Before its clock starts each row plays ``--warmup``
(500) episodes from other seeds, and no row replays another's seeds (:data:`SEED_BLOCK`): the
scenarios memoise their parsers, so a cold cache costs a first pass ~1.6x and a replay flatters a row.
``--quick`` plays 120 episodes a row.

Threads are pinned to one: ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS`` and
``NUMBA_NUM_THREADS`` are set before NumPy, numba or torch is imported (when run as a script; a value
already in the environment is kept, and printed), BLAS pools already loaded are limited through
threadpoolctl, and torch (if imported) gets ``torch.set_num_threads(1)``; all are restored afterwards.
They are printed with the load average (``os.getloadavg``) before and after: on shared cores, rerun
when the load is low. Target: >= 20,000 agent turns/s for SEAD's engine with the ``sop`` agent.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
import warnings
from typing import Any, Iterator

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")

if __name__ == "__main__":
    # NumPy's BLAS, numba and torch size their pools from these once, at import, so they go first
    for variable in THREAD_VARIABLES:
        os.environ.setdefault(variable, "1")

TARGET = 20_000
QUICK_EPISODES = 120
"""``--quick``: one cycle of SEAD's 120 initial states per row."""
SEED_BLOCK = 10**6
"""Row ``r`` is timed on the seeds from ``2 r`` blocks and warmed up on those from ``2 r + 1``: no row
replays another's episodes, whose memoised parses would flatter it."""


def clock() -> tuple[float, float]:
    """Wall and CPU time now; :func:`elapsed` turns it into a row's times."""
    return time.perf_counter(), time.process_time()


def elapsed(start: tuple[float, float]) -> dict[str, float]:
    """Wall seconds and this process's CPU seconds since ``start``: on shared cores the load stretches the
    wall time far more than the CPU time, so a row reports both."""
    wall, cpu = clock()
    return {"seconds": wall - start[0], "cpu_seconds": cpu - start[1]}


@contextlib.contextmanager
def pinned_threads() -> Iterator[list[str]]:
    """One thread for BLAS and torch while the tables run (restored after); yields what was set, to print."""
    from threadpoolctl import threadpool_info, threadpool_limits

    with threadpool_limits(1):
        settings = [f"{variable}={os.environ.get(variable, 'unset')}" for variable in THREAD_VARIABLES]
        settings += [f"{info['internal_api']} {info['num_threads']}" for info in threadpool_info()]
        torch = sys.modules.get("torch")  # the scripted paths do not import it; pin it only if something did
        if torch is None:
            yield [*settings, "torch not imported"]
            return
        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            yield [*settings, f"torch {torch.get_num_threads()}"]
        finally:
            torch.set_num_threads(before)


def learner_players() -> list[tuple[str, str, str]]:
    """``(env_id, learner role, agent)`` for every role of every registered ID, the default learner first."""
    from envs_registry import REGISTRY, resolve

    players = []
    for entry in REGISTRY:
        defaults = resolve(entry.entry_point).default_players
        for role in sorted(entry.roles, key=lambda role: role != entry.default_learner):
            players.append((entry.id, role, entry.agents[0] if role == entry.default_learner else defaults[role]))
    return players


def row_seeds(row: int) -> tuple[int, int]:
    """``(timed, warm-up)`` first seeds of table row ``row`` (see :data:`SEED_BLOCK`)."""
    return 2 * row * SEED_BLOCK, (2 * row + 1) * SEED_BLOCK


def engine(env_id: str, learner: str, agent: str, episodes: int, warmup: int, row: int) -> dict[str, Any]:
    """``episodes`` episodes of the evaluation sequence through the batched engine; the learner's turns."""
    from dialogue_gym.evaluation import Evaluator

    seed, warmup_seed = row_seeds(row)
    evaluator = Evaluator(env_id, agent, learner=learner)
    evaluator.run(warmup, seed=warmup_seed)
    start = clock()
    trajectories = evaluator.run(episodes, seed=seed)
    times = elapsed(start)
    turns = sum(len(trajectory.turns_of(learner)) for trajectory in trajectories)
    return {"env_id": env_id, "learner": learner, "agent": agent, "episodes": len(trajectories), "turns": turns, **times}


def play_single(env: Any, seeds: range) -> int:
    """Play one SEAD episode per seed with the ``sop`` agent; the learner turns taken (one per ``step``)."""
    from dialogue_gym.envs.driver import role_seed
    from dialogue_gym.scenarios.sead.agents import SopAgent

    agent, turns = SopAgent(), 0
    for seed in seeds:
        observation, info = env.reset(seed=seed)
        memory = agent.start({}, role_seed(seed, "agent", ("agent", "user")))
        done = False
        while not done:
            observation, _, done, _, info = env.step(agent.act(observation, info, memory))
            turns += 1
    return turns


def single(episodes: int, unwrapped: bool, warmup: int, row: int) -> dict[str, Any]:
    import gymnasium as gym

    seed, warmup_seed = row_seeds(row)
    env = gym.make("SEAD-Outbound-v0")
    env = env.unwrapped if unwrapped else env
    play_single(env, range(warmup_seed, warmup_seed + warmup))
    start = clock()
    turns = play_single(env, range(seed, seed + episodes))
    path = "gym.make env.unwrapped" if unwrapped else "gym.make with default wrappers"
    return {"path": path, "episodes": episodes, "turns": turns, **elapsed(start)}


def play_vector(envs: Any, episodes: int, seed: int = 0) -> dict[str, Any]:
    """Step SEAD vector ``envs`` with the ``sop`` agent from ``reset(seed=seed)`` until ``episodes``
    episodes have finished."""
    import numpy as np

    from dialogue_gym.scenarios.sead.agents import SopAgent

    agent = SopAgent()
    observations, _ = envs.reset(seed=seed)
    resetting = np.zeros(envs.num_envs, dtype=bool)
    turns = finished = steps = 0
    start = clock()
    while finished < episodes:
        actions = [agent.act({"turn": int(turn)}, {}, None) for turn in observations["turn"]]
        turns += envs.num_envs - int(resetting.sum())  # a sub-env that ended last step is reset now: no turn
        observations, _, terminations, truncations, _ = envs.step(actions)
        resetting = terminations | truncations
        finished += int(resetting.sum())
        steps += 1
    times = elapsed(start)
    return {"path": f"gym.make_vec num_envs={envs.num_envs}", "episodes": finished, "steps": steps, "turns": turns, **times}


def vector(num_envs: int, episodes: int, warmup: int, row: int) -> dict[str, Any]:
    """The vector env as a Gymnasium loop meets it: default retention, never popped."""
    import gymnasium as gym

    with warnings.catch_warnings():
        # the cap dropping trajectories nobody pops is the default working as documented, not news
        warnings.filterwarnings("ignore", message=".*has begun dropping the oldest")
        seed, warmup_seed = row_seeds(row)
        envs = gym.make_vec("SEAD-Outbound-v0", num_envs=num_envs)
        play_vector(envs, warmup, seed=warmup_seed)
        return play_vector(envs, episodes, seed=seed)


TIMES = f"{'seconds':>8s} {'turns/s':>9s} {'cpu s':>7s} {'turns/cpu s':>11s}"


def times(row: dict[str, Any]) -> str:
    return (f"{row['seconds']:8.2f} {row['turns'] / row['seconds']:9.0f} {row['cpu_seconds']:7.2f} "
            f"{row['turns'] / row['cpu_seconds']:11.0f}")


def print_tables(engine_rows: list[dict[str, Any]], sead_rows: list[dict[str, Any]]) -> float:
    """Print both tables; the SEAD ``sop`` engine's wall-clock rate, which the target is about."""
    print(f"\nbatched engine, every ID and learner role\n{'env id':22s} {'learner':9s} {'agent':9s} "
          f"{'episodes':>8s} {'learner turns':>13s} {TIMES}")
    for row in engine_rows:
        print(f"{row['env_id']:22s} {row['learner']:9s} {row['agent']:9s} {row['episodes']:8d} {row['turns']:13d} {times(row)}")
    base_row = next(row for row in engine_rows if row["env_id"] == "SEAD-Outbound-v0" and row["learner"] == "agent")
    base_cpu_rate = base_row["turns"] / base_row["cpu_seconds"]
    print(f"\nSEAD-Outbound-v0, sop agent\n{'path':32s} {'episodes':>8s} {'learner turns':>13s} {TIMES} {'vs engine':>9s}")
    for row in sead_rows:
        ratio = row["turns"] / row["cpu_seconds"] / base_cpu_rate
        print(f"{row['path']:32s} {row['episodes']:8d} {row['turns']:13d} {times(row)} {ratio:9.2f}")
    print("(vs engine: turns per CPU second over the engine's, the ratio the load distorts least)")
    return base_row["turns"] / base_row["seconds"]


def main(argv: list[str] | None = None) -> dict[str, list[dict[str, Any]]]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=3000, help="episodes per row (at least; vector rows finish a step)")
    parser.add_argument("--sizes", default="1,64,512", help="comma-separated numbers of vector sub-envs")
    parser.add_argument("--warmup", type=int, default=500, help="untimed episodes (other seeds) before each row")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_EPISODES} episodes per row")
    args = parser.parse_args(argv)
    episodes = QUICK_EPISODES if args.quick else args.episodes
    warmup = min(args.warmup, episodes)
    sizes = [int(size) for size in args.sizes.split(",")]
    import dialogue_gym  # noqa: F401  (registers the ids)

    with pinned_threads() as settings:
        load_before = os.getloadavg()
        players = learner_players()
        engine_rows = [engine(*player, episodes, warmup, row) for row, player in enumerate(players)]
        sead_rows = [single(episodes, unwrapped, warmup, len(players) + row) for row, unwrapped in enumerate((True, False))]
        sead_rows += [vector(size, episodes, warmup, len(players) + 2 + row) for row, size in enumerate(sizes)]
        load_after = os.getloadavg()
    print(
        f"{os.cpu_count()} CPUs; load average (1, 5, 15 min) {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f} "
        f"before, {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f} after\nthreads: {', '.join(settings)}"
    )
    base = print_tables(engine_rows, sead_rows)
    verdict = "meets" if base >= TARGET else "misses"
    print(f"\nSEAD engine throughput {base:,.0f} agent turns/s/core {verdict} the {TARGET:,} target")
    return {"engine": engine_rows, "sead": sead_rows}


if __name__ == "__main__":
    main()
