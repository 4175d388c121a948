"""Play whole episodes with every role played by a policy: the engine of ``dialogue-gym eval``.

**Continuous batching.** Up to ``batch_size`` episodes are in flight, and a slot whose episode ends
takes the next start of the run at once, so each batched call of an LLM-played role (one backend
batch) holds every episode in flight, not only those of a fixed group still running
(:meth:`Evaluator.play`). An episode depends only on its start, repeat and seed, never on its batch
mates, so the results equal those of one-at-a-time play (with LLM-played roles, for backends that
answer each request alone: canned, a ``cached`` replay; a local model whose numerics depend on the
padding of its batch differs between any two batchings, as it did between batch sizes).

**Where trajectories go.** They are returned, handed to ``on_episode`` and appended to a JSONL file
(strict JSON, :meth:`~dialogue_gym.types.Trajectory.to_json`) in *start order*: an episode that
ends early waits until every earlier start of the run has been written, and each line is flushed as
it is written. The file of an interrupted run is therefore always a prefix of the run, so it resumes
with ``first_episode`` (the starts already in the file, with ``repeats=1``) and ``append=True``.

**The evaluation order.** A game with a fixed evaluation set (:meth:`~dialogue_gym.game.Game.evaluation_strata`:
SEAD's 120 initial states, TRACER's reference sessions, RL-ADA's intents x concealment levels) is
played in cycles of its ``S`` strata. Each cycle is a permutation of the cycle's ``S`` starts drawn
from the run's seed (:class:`EvaluationOrder`), so the first ``n`` episodes of a run play every
stratum ``n // S`` or ``n // S + 1`` times, and each facet of the strata (cooperation, trust, tool,
concealment, ...) close to its share. A run of a multiple of ``S`` episodes plays exactly the starts
(and seeds) of the cycles in full, whatever the order, so its numbers do not depend on the order.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import json
import os
import threading
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import gymnasium as gym
import numpy as np

from dialogue_gym.envs.driver import CounterpartDriver, act_with_errors, role_info
from dialogue_gym.envs.single import DialogueEnv
from dialogue_gym.errors import ConfigError
from dialogue_gym.game import Game, is_privileged
from dialogue_gym.health import UNHEALTHY_THRESHOLD, mark_unhealthy
from dialogue_gym.agents.process import AgentProcess, Limits, check_level, in_process, safe_file_part
from dialogue_gym.sealing import Seal
from dialogue_gym.seeding import mix_seed
from dialogue_gym.types import Trajectory

ORDER_STREAM = 0x6F72646572
"""Seeds the evaluation order apart from every other use of the run's seed (``"order"`` in ASCII)."""


def make_learner_env(env_id: str, learner: str, env_kwargs: dict[str, Any]) -> DialogueEnv:
    """The unwrapped single-agent env of ``env_id`` with ``learner`` as the learning role."""
    if "learner" in env_kwargs:
        raise ConfigError(
            f"env_kwargs hold learner={env_kwargs['learner']!r}; the role the agent plays is the learner argument "
            "(`--learner` on the command line), so leave it out of the env kwargs."
        )
    try:
        environment = gym.make(env_id, learner=learner, disable_env_checker=True, **env_kwargs).unwrapped
    except gym.error.Error as exc:
        raise ConfigError(f"Cannot make {env_id!r}: {exc}. `dialogue-gym list` shows the registered ids.") from exc
    if not isinstance(environment, DialogueEnv):
        raise ConfigError(f"{env_id!r} is not a dialogue_gym environment.")
    return environment


def _check_count(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{name} must be an int >= {minimum}, got {value!r}.")
    return value


def check_output_path(path: str | Path, *, append: bool, name: str = "out") -> Path:
    """``path`` as a file a run may write: its folder exists, it is not a folder, and an existing
    non-empty file is refused unless ``append`` (so running twice never silently doubles a file)."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise ConfigError(f"{name}={str(path)!r} is a folder; give a file path such as {str(target / 'run.jsonl')!r}.")
    if not folder.is_dir():
        raise ConfigError(f"{name}={str(path)!r}: the folder {str(folder)!r} does not exist; create it first (mkdir -p {folder}).")
    if not os.access(folder, os.W_OK):
        raise ConfigError(f"{name}={str(path)!r}: the folder {str(folder)!r} is not writable.")
    if not append and target.exists() and target.stat().st_size > 0:
        raise ConfigError(
            f"{name}={str(path)!r} already exists ({target.stat().st_size} bytes); choose a new path, delete it, "
            "or append to it on purpose (append=True, `--append`)."
        )
    return target


def stratified_permutation(strata: Sequence[dict[str, Any]], seed: int) -> list[int]:
    """A permutation of ``range(len(strata))`` whose every prefix is close to proportional on each facet.

    Greedy: each pick takes, among the strata not picked yet, one whose facet values are the most
    under-represented so far (the sum over facets of played count minus expected count, the expected
    count being the prefix length times the value's share of all strata), ties broken by a random
    priority drawn from ``seed``. With no facets it is a uniform random permutation.

    Worked in whole numbers, ``len(strata)`` times each deficit (``count * played - length * total``
    per facet), kept up to date from one pick to the next rather than summed afresh, with the strata
    laid out in priority order so that the first lowest deficit is the pick: 2.4 -> 0.86 ms for
    SEAD's 120 strata and 9 -> 2.6 ms for TRACER's and DM-Bench's 400 (a run orders one cycle of
    starts per that many episodes; for SEAD that was 3% of a scripted episode). The float sums it replaces kept every tie within ``1e-9``, and distinct deficits
    differ by at least ``1 / len(strata)``, so both pick alike (a test checks it against the float
    sums on every registered ID's strata and on random ones).
    """
    count = len(strata)
    by_priority = np.argsort(np.random.default_rng(seed).permutation(count))
    laid_out = [strata[stratum] for stratum in by_priority]
    # deficit[r] = count * (played minus expected) of the stratum of priority r, summed over facets
    deficit = np.zeros(count, dtype=np.int64)
    sharers = []  # per facet, per stratum of priority r: the positions of the strata with its value
    for facet in sorted({facet for stratum in strata for facet in stratum}):
        values = [repr(stratum.get(facet)) for stratum in laid_out]
        members: dict[str, list[int]] = {}
        for position, value in enumerate(values):
            members.setdefault(value, []).append(position)
        positions = {value: np.array(at) for value, at in members.items()}
        sharers.append([positions[value] for value in values])
        deficit -= np.array([len(members[value]) for value in values])
    per_length = deficit.copy()  # what each step of the prefix length takes from a deficit
    taken = np.iinfo(np.int64).max // 2  # above any deficit (at most count * facets * count away from 0)
    order = []
    for _ in range(count):
        position = int(deficit.argmin())  # the first lowest: the highest priority among ties
        order.append(int(by_priority[position]))
        for members_of in sharers:
            deficit[members_of[position]] += count
        deficit[position] = taken
        deficit += per_length
    return order


class EvaluationOrder:
    """Which start of the fixed evaluation set a run with ``seed`` plays at each position.

    Position ``i`` lies in cycle ``b = i // S`` (``S = len(strata)``); the cycle plays starts
    ``b * S .. b * S + S - 1`` in the order of :func:`stratified_permutation` seeded by ``(seed, b)``,
    so start ``p`` plays stratum ``p % S`` (:meth:`~dialogue_gym.game.Game.evaluation_strata`). With
    no strata, position ``i`` plays start ``i``.
    """

    def __init__(self, strata: Sequence[dict[str, Any]], seed: int):
        self.strata = tuple(strata)
        self.seed = seed
        self._cycles: dict[int, list[int]] = {}

    def start(self, position: int) -> int:
        size = len(self.strata)
        if not size:
            return position
        cycle, offset = divmod(position, size)
        if cycle not in self._cycles:
            self._cycles[cycle] = stratified_permutation(self.strata, mix_seed(self.seed, cycle, ORDER_STREAM))
        return cycle * size + self._cycles[cycle][offset]

    def starts(self, count: int, first: int = 0) -> list[int]:
        return [self.start(position) for position in range(first, first + count)]


def episode_seed(seed: int, start: int, repeat: int) -> int:
    """The reset seed of ``repeat`` of ``start`` in a run with ``seed``: ``seed + start`` for the first
    play (as before repeats existed), a derived seed for the others."""
    return seed + start if repeat == 0 else mix_seed(seed, start, repeat)


def coverage_note(strata: Sequence[dict[str, Any]], episodes: int, seed: int, what: str = "strata") -> str | None:
    """What a run of ``episodes`` starts covers when ``episodes`` is not a multiple of ``len(strata)``
    (None when it is, or when there is no fixed set): how many strata are played how often, and each
    facet's played counts beside the counts proportional to its share."""
    size = len(strata)
    if not size or episodes % size == 0:
        return None
    played = Counter(start % size for start in EvaluationOrder(strata, seed).starts(episodes))
    times = Counter(played.get(stratum, 0) for stratum in range(size))
    spread = ", ".join(f"{times[n]} played {n}x" for n in sorted(times, reverse=True))
    lines = [
        f"note: {episodes} episodes is not a multiple of the {size} {what}, so they are not played equally often: "
        f"{spread} (the order is stratified; a multiple of {size} plays each equally often).",
    ]
    for facet in sorted({facet for stratum in strata for facet in stratum}):
        share = Counter(str(stratum.get(facet)) for stratum in strata)
        counts = Counter(str(strata[stratum].get(facet)) for stratum, n in played.items() for _ in range(n))
        cells = [f"{value} {counts.get(value, 0)}/{episodes * total / size:.1f}" for value, total in share.items()]
        if len(cells) > 8:
            gaps = [counts.get(value, 0) - episodes * total / size for value, total in share.items()]
            lines.append(f"  {facet} ({len(cells)} values): played minus proportional from {min(gaps):+.1f} to {max(gaps):+.1f}")
        else:
            lines.append(f"  {facet} (played/proportional): " + ", ".join(cells))
    return "\n".join(lines)


FREEZE_EVERY = 256
""":meth:`Evaluator.run` hands what is alive to the GC's permanent generation every this many episodes
(see :func:`kept_out_of_gc`)."""

YOUNG_THRESHOLD = 100_000
"""The youngest generation's threshold inside :func:`kept_out_of_gc` (Python's default is 700): a
scripted turn makes dozens of container objects that outlive it (the turn, its records), and at 700
the GC scanned them, then again when promoting them, every few turns. SEAD learner turns 430,066 ->
409,489 instructions under callgrind (20,000 gave 412,247). It counts tracked objects made and not
freed, so it delays only the collection of cycles, not of garbage that reference counts free."""

_freezing = threading.Lock()


@contextlib.contextmanager
def kept_out_of_gc() -> Iterator[Callable[[], None]]:
    """Yields ``freeze()``: it collects the young generations, then moves every object alive into the
    cyclic GC's permanent generation, which full collections skip; leaving the block hands them all back
    to the oldest generation (``gc.unfreeze``), so whatever became garbage meanwhile is still collected.

    A run keeps every trajectory it has played (about 130 GC-tracked objects per SEAD episode), and each
    full collection traverses all of them again: a fifth of a scripted SEAD run of 3,000 episodes.
    Freezing them as they finish keeps full collections as cheap as at the start. ``freeze`` does
    nothing when the GC is disabled, when other code has frozen objects (``gc.get_freeze_count()``: its
    freeze is not ours to undo) or while another thread's block is freezing.

    Where it freezes, the block also raises the youngest generation's threshold to
    :data:`YOUNG_THRESHOLD` and puts the thresholds back as they were when it ends."""
    if not gc.isenabled() or gc.get_freeze_count() or not _freezing.acquire(blocking=False):
        yield lambda: None
        return

    def freeze() -> None:
        gc.collect(1)
        gc.freeze()

    threshold = gc.get_threshold()
    gc.set_threshold(max(threshold[0], YOUNG_THRESHOLD), *threshold[1:])
    try:
        yield freeze
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()
        _freezing.release()


class Evaluator:
    """Plays episodes of one env's fixed evaluation sequence with every role played by a policy.

    Builds the env and the policies (an LLM backend, say) once, so many :meth:`run` and :meth:`play`
    calls (the stream of chunks a Ray rollout worker plays, say) share them; :meth:`for_agent`
    evaluates another agent on the same env and counterparts. :func:`evaluate` is one run of a fresh one.

    With a ``seal`` the runs are sealed (:mod:`dialogue_gym.sealing`): the ``seed`` of :meth:`run`,
    :meth:`plays` and :meth:`play` is not used, every seed comes from the seal's secret instead.
    With ``isolate`` (``"sandbox"`` or ``"process"``) the agent plays in a process of its own
    (:mod:`dialogue_gym.agents`) within ``agent_limits``, printing to a log file in ``agent_logs``
    (by default a temporary file, removed at the end if the agent printed nothing); call :meth:`close`
    (of this evaluator and of each :meth:`for_agent` one) to end it.
    """

    def __init__(
        self,
        env_id: str,
        agent: Any,
        *,
        learner: str = "agent",
        env_kwargs: dict[str, Any] | None = None,
        agent_backend: Any = None,
        batch_size: int = 32,
        unhealthy_threshold: float | None = None,
        seal: Seal | None = None,
        isolate: bool | str = False,
        agent_limits: Limits | dict[str, Any] | None = None,
        agent_logs: str | Path | None = None,
    ):
        self.seal = seal
        self.isolation = check_level(isolate)
        """Where the agent plays: ``none`` (this process), ``process`` or ``sandbox`` (:mod:`dialogue_gym.agents`)."""
        self.agent_limits = Limits.of(agent_limits)
        self.agent_logs = Path(agent_logs) if agent_logs is not None else None
        if self.agent_logs is not None and not self.agent_logs.is_dir():
            raise ConfigError(f"agent_logs={str(agent_logs)!r} is not a folder; create it first (mkdir -p {agent_logs}).")
        self.env_kwargs = dict(env_kwargs or {})
        self.batch_size = _check_count(batch_size, "batch_size", 1)
        self.unhealthy_threshold = unhealthy_threshold
        """When set, an episode whose counterpart failed its health checks on more than this share of
        its turns is marked (``meta["unhealthy"]``, see :func:`dialogue_gym.health.mark_unhealthy`)
        before it is written, so a saved run says which episodes a benchmark should leave out."""
        self.env_id = env_id
        self.learner = learner
        self.environment = make_learner_env(env_id, learner, dict(env_kwargs or {}))
        self.strata = self.environment.game.evaluation_strata()
        """The game's evaluation strata (see :class:`EvaluationOrder`)."""
        self._orders: dict[int, EvaluationOrder] = {}
        self._pool: list[Game] = []
        self._pool_in_use = threading.Lock()
        """Held by the :meth:`play` that uses :attr:`_pool` (shared with :meth:`for_agent`'s evaluators);
        a play started meanwhile (nested in a callback, or a second generator) plays on games of its own."""
        self._bind(agent, agent_backend)

    def _bind(self, agent: Any, agent_backend: Any) -> None:
        self.agent_name = agent if isinstance(agent, str) else agent["class"] if isinstance(agent, dict) else type(agent).__name__
        self.isolated = None
        if self.isolation != "none":
            log = None if self.agent_logs is None else self.agent_logs / f"{safe_file_part(f'{self.env_id}.{self.learner}.{self.agent_name}')}.{os.getpid()}.{id(self)}.log"
            self.isolated = AgentProcess(
                self.env_id, self.learner, self.env_kwargs, agent, agent_backend, level=self.isolation, limits=self.agent_limits, log=log
            )
        policies = {
            **self.environment.driver.policies,
            self.learner: self.isolated or self.environment.make_role_policy(self.learner, in_process(agent), agent_backend),
        }
        self.driver = CounterpartDriver(policies, learner=None, seal=self.seal)
        self.privileged = is_privileged(policies[self.learner])
        """Whether the evaluated policy reads the privileged channel (its trajectories say so in
        ``meta["privileged"]`` and result tables mark its row): an upper bound, not a fair entry."""

    def for_agent(self, agent: Any, agent_backend: Any = None) -> Evaluator:
        """An evaluator of ``agent`` that shares this one's env, counterpart policies (and so an LLM
        counterpart's loaded model) and game pool; building it checks the agent before anything runs."""
        other = copy.copy(self)
        other._bind(agent, agent_backend)
        return other

    def run_seed(self, seed: int) -> int:
        """The seed of the order of the starts and of their options: ``seed``, or the seal's."""
        return self.seal.run_seed if self.seal is not None else seed

    def episode_seed(self, seed: int, start: int, repeat: int) -> int:
        """The reset seed of ``repeat`` of ``start``: :func:`episode_seed`, or the seal's."""
        return self.seal.episode_seed(start, repeat) if self.seal is not None else episode_seed(seed, start, repeat)

    def close(self) -> None:
        """End the isolated agent's process (nothing to do for an agent played in this process)."""
        if self.isolated is not None:
            self.isolated.close()

    def order(self, seed: int) -> EvaluationOrder:
        seed = self.run_seed(seed)
        if seed not in self._orders:
            self._orders[seed] = EvaluationOrder(self.strata, seed)
        return self._orders[seed]

    def plays(self, episodes: int, seed: int, *, repeats: int = 1, first_episode: int = 0) -> list[tuple[int, int]]:
        """The ``(start, repeat)`` pairs of the starts at positions ``first_episode .. first_episode +
        episodes - 1`` of the run with ``seed``, each ``repeats`` times, in the order they are returned."""
        return [(start, repeat) for start in self.order(seed).starts(episodes, first_episode) for repeat in range(repeats)]

    def play(self, plays: Iterable[tuple[int, int]], seed: int) -> Iterator[tuple[int, Trajectory]]:
        """Play each ``(start, repeat)`` of ``plays`` (seeded as in :func:`evaluate`); yields ``(index of
        the play in plays, trajectory)`` as each episode ends, so in completion order.

        Up to ``batch_size`` episodes are in flight and a slot whose episode ends takes the next play at
        once. Each round gives every role in turn (the game's role order) one move in every episode
        waiting for it, so the episodes in flight stay in step and each role's batched call (one
        backend batch for an LLM) holds all that wait for that role, newly started ones included.
        ``plays`` is read lazily, one play per free slot, so it may be a stream (a Ray worker's queue).
        A play started while another is still running on this evaluator (or one of :meth:`for_agent`'s)
        plays on games of its own, so neither resets the other's.
        """
        shared = self._pool_in_use.acquire(blocking=False)
        try:
            yield from self._play(plays, seed, self._pool if shared else [])
        finally:
            if shared:
                self._pool_in_use.release()

    def _play(self, plays: Iterable[tuple[int, int]], seed: int, pool: list[Game]) -> Iterator[tuple[int, Trajectory]]:
        pending = enumerate(plays)
        # slot -> (index in plays, start, repeat, the policies' memories); slot i plays on pool[i].
        in_flight: dict[int, tuple[int, int, int, dict[str, Any]]] = {}
        ended: list[tuple[int, Trajectory]] = []

        def fill(slot: int) -> bool:
            """Start the next play in ``slot``; False once ``plays`` is exhausted."""
            for index, (start, repeat) in pending:
                while len(pool) <= slot:
                    pool.append(self.environment.game.spawn())
                game = pool[slot]
                game.reset(seed=self.episode_seed(seed, start, repeat), options=game.evaluation_options(start, self.run_seed(seed)))
                memories = self.driver.start(game)
                if not game.done:
                    in_flight[slot] = (index, start, repeat, memories)
                    return True
                ended.append((index, self._record(game, start, repeat, memories)))
            return False

        for slot in range(self.batch_size):
            if not fill(slot):  # fewer plays than slots: the rest stay empty (a huge batch_size costs nothing)
                break
        while True:
            yield from ended
            ended.clear()
            if not in_flight:
                return
            for role in self.environment.game.roles:
                movers = [slot for slot in sorted(in_flight) if pool[slot].current_role == role]
                if not movers:
                    continue
                self._move(role, [pool[slot] for slot in movers], [in_flight[slot][3][role] for slot in movers])
                for slot in movers:
                    if pool[slot].done:
                        index, start, repeat, memories = in_flight.pop(slot)
                        ended.append((index, self._record(pool[slot], start, repeat, memories)))
                        fill(slot)

    def _move(self, role: str, games: list[Game], memories: list[Any]) -> None:
        """One move of ``role`` in each of ``games``, as ONE batched policy call. (The driver's
        ``advance`` plays a fixed set of games to the end; moving one role at a time lets a slot be
        refilled between moves.) A move the policy reports as failed aborts its game."""
        policy = self.driver.policies[role]
        texts, errors = act_with_errors(
            policy, [game.observe(role) for game in games], [role_info(game, role, policy) for game in games], memories
        )
        for game, text, error in zip(games, texts, errors):
            if error is not None:
                game.abort(f"{role} policy failed: {error}")
            else:
                game.step(text)

    def _record(self, game: Game, start: int, repeat: int, memories: dict[str, Any]) -> Trajectory:
        trajectory = game.trajectory()
        trajectory.learner = self.learner
        trajectory.meta = {**trajectory.meta, "agent": self.agent_name, "env_id": self.env_id, "start": start, "repeat": repeat}
        if self.privileged:
            trajectory.meta["privileged"] = True
        if self.seal is not None:
            trajectory.meta["sealed"] = True
        if self.isolated is not None:
            trajectory.meta["isolation"] = self.isolation
            problems = self.isolated.problems(memories[self.learner])
            if problems:
                trajectory.meta["agent_problems"] = problems
            self.isolated.end(memories[self.learner])
        if self.unhealthy_threshold is not None:
            mark_unhealthy([trajectory], self.unhealthy_threshold)
        return trajectory

    def run(
        self,
        episodes: int,
        seed: int = 0,
        *,
        repeats: int = 1,
        first_episode: int = 0,
        out: str | Path | None = None,
        on_episode: Callable[[Trajectory], None] | None = None,
    ) -> list[Trajectory]:
        """The starts at positions ``first_episode .. first_episode + episodes - 1`` of the run, each
        played ``repeats`` times (see :func:`evaluate`), in start order; ``out`` is appended to and
        ``on_episode`` called in that order, as soon as every earlier play has ended."""
        _check_count(episodes, "episodes", 1)
        _check_count(repeats, "repeats", 1)
        _check_count(first_episode, "first_episode", 0)
        plays = self.plays(episodes, seed, repeats=repeats, first_episode=first_episode)
        trajectories: list[Trajectory | None] = [None] * len(plays)
        released = 0
        sink = open(out, "a", encoding="utf-8") if out is not None else None
        try:
            with kept_out_of_gc() as freeze:
                for index, trajectory in self.play(plays, seed):
                    trajectories[index] = trajectory
                    if index % FREEZE_EVERY == FREEZE_EVERY - 1:
                        freeze()
                    while released < len(plays) and trajectories[released] is not None:
                        ready = trajectories[released]
                        if sink is not None:
                            # Serialised before writing, so a trajectory that is not strict JSON leaves no partial line.
                            line = ready.to_json() + "\n"
                            sink.write(line)
                            sink.flush()
                        if on_episode is not None:
                            on_episode(ready)
                        released += 1
        finally:
            if sink is not None:
                sink.close()
        return trajectories


def evaluate(
    env_id: str,
    agent: Any,
    episodes: int,
    seed: int = 0,
    *,
    learner: str = "agent",
    env_kwargs: dict[str, Any] | None = None,
    agent_backend: Any = None,
    batch_size: int = 32,
    repeats: int = 1,
    out: str | Path | None = None,
    append: bool = False,
    on_episode: Callable[[Trajectory], None] | None = None,
    first_episode: int = 0,
    invalid_on_unhealthy: bool = False,
    sealed: bool = False,
    unseal: str | None = None,
    isolate: bool | str = False,
    agent_limits: Limits | dict[str, Any] | None = None,
    agent_logs: str | Path | None = None,
    save: str | Path | None = None,
    bootstrap: int = 1000,
) -> list[Trajectory]:
    """Play ``episodes`` starts of ``env_id``'s fixed evaluation sequence with ``agent`` in the ``learner`` role.

    The starts come in the stratified order of :class:`EvaluationOrder` (seeded by ``seed``); start
    ``p`` uses the game's evaluation options for ``p`` (for SEAD: initial state ``p % 120``, behaviors
    drawn from ``(seed, p)``) and reset seed ``seed + p``, so runs with the same arguments give the
    same trajectories. ``repeats`` plays each start that many times, repeat ``r > 0`` with seed
    :func:`episode_seed` ``(seed, p, r)`` (for pass^k and repeated-seed variance); ``meta["start"]``
    and ``meta["repeat"]`` of each trajectory say which. ``first_episode`` plays the starts at
    positions ``first_episode .. first_episode + episodes - 1`` of that same sequence, so shards of a
    run (e.g. on several Ray workers) add up to the whole run.

    ``batch_size`` episodes are in flight at once, and a slot is refilled with the next start as soon
    as its episode ends (continuous batching: each LLM-played role's backend batch holds every episode
    waiting for it); the results do not depend on it.

    ``out`` is a JSONL file the trajectories are written to, in start order like the returned list and
    the ``on_episode`` calls (each line flushed as written, so an interrupted run leaves a prefix of
    the run that ``first_episode`` and ``append=True`` complete); an existing non-empty file is
    refused unless ``append=True``.

    ``invalid_on_unhealthy`` marks the episodes in which an LLM-played counterpart failed its health
    checks on more than :data:`~dialogue_gym.health.UNHEALTHY_THRESHOLD` of its turns (not those the
    learner provoked) with ``meta["unhealthy"]``; :func:`dialogue_gym.health.benchmark_split` leaves
    them out of a benchmark.

    Every episode is returned: one whose LLM-played role failed after the backend's bounded retries
    ends with outcome ``backend_failure`` and the cause in ``meta["failure"]`` (the metrics'
    ``summary`` counts those apart from the completed ones).

    ``sealed=True`` plays a sealed run (:mod:`dialogue_gym.sealing`): a fresh secret, not ``seed``,
    gives the starts' order and options, the episode seeds and the seeds the policies get, so no
    in-process policy can replay the game. Each trajectory's ``meta["sealed"]`` is true; once the run
    has ended, the returned trajectories also carry the secret in ``meta["secret"]`` (the lines written
    to ``out`` during the run do not), and ``unseal=SECRET`` plays the same episodes again.
    ``isolate`` plays the agent in a process of its own (:mod:`dialogue_gym.agents`) that speaks JSON
    lines, so it cannot reach the live game through the stack, the garbage collector or shared
    modules, and nothing it sends is run: ``"sandbox"`` (or ``True``) under bubblewrap, out of reach
    of the evaluator's memory, files and the network; ``"process"`` a plain process of the same user
    (weaker: it can read the evaluator's memory through ``/proc``). ``agent_limits``
    (:class:`~dialogue_gym.agents.process.Limits`) bounds its time per call, CPU, memory and files;
    its prints go to a log in ``agent_logs``. A move the boundary refuses (not a string, too long,
    late, or an error the agent reports) is an invalid move of its episode, listed in
    ``meta["agent_problems"]``; each trajectory's ``meta["isolation"]`` names the level. Sealed and
    sandboxed is the benchmark setting.

    ``save`` writes the results file ``dialogue-gym eval --save`` writes (summary, per-episode scores,
    headline intervals over ``bootstrap`` resamples of the starts, provenance), so a run evaluated from
    Python can be set beside others with ``dialogue-gym compare``.
    """
    from dialogue_gym.results import check_save_suffix, now, results_of  # here: an agent's process builds envs without the metrics (numba)

    started, clock = now(), time.perf_counter()
    _check_count(episodes, "episodes", 1)
    _check_count(repeats, "repeats", 1)
    _check_count(first_episode, "first_episode", 0)
    seal = sealing_of(sealed, unseal, seed)
    if out is not None:
        check_output_path(out, append=append)
    if save is not None:
        check_save_suffix(save)
        check_output_path(save, append=True, name="save")
        _check_count(bootstrap, "bootstrap", 0)
    evaluator = Evaluator(
        env_id, agent, learner=learner, env_kwargs=env_kwargs, agent_backend=agent_backend, batch_size=batch_size,
        unhealthy_threshold=UNHEALTHY_THRESHOLD if invalid_on_unhealthy else None, seal=seal, isolate=isolate,
        agent_limits=agent_limits, agent_logs=agent_logs,
    )
    try:
        trajectories = evaluator.run(episodes, seed, repeats=repeats, first_episode=first_episode, out=out, on_episode=on_episode)
    finally:
        evaluator.close()
    if seal is not None:
        for trajectory in trajectories:
            trajectory.meta["secret"] = seal.hex
    if save is not None:
        provenance = {
            "env_kwargs": dict(env_kwargs or {}), "learner": learner, "agent_backend": agent_backend, "episodes": episodes,
            "repeats": repeats, "seed": None if seal else seed, "sealed": seal is not None and unseal is None, "replay": unseal is not None,
            "secret": seal.hex if seal else None, "public_targets": evaluator.environment.game.public_targets() if seal else None,
            "isolation": evaluator.isolation, "isolated": evaluator.isolation != "none",
            "agent_kwargs": agent.get("kwargs") if isinstance(agent, dict) else None,
            "agent_limits": asdict(evaluator.agent_limits) if evaluator.isolation != "none" else None,
            "strata": len(evaluator.strata), "strata_played_equally": coverage_note(evaluator.strata, episodes, evaluator.run_seed(seed)) is None,
            "metric_kwargs": {}, "invalid_on_unhealthy": invalid_on_unhealthy, "command": None, "started": started, "seconds": round(time.perf_counter() - clock, 3),
        }
        results_of(env_id, {evaluator.agent_name: trajectories}, provenance, resamples=bootstrap).save(save)
    return trajectories


def sealing_of(sealed: bool, unseal: str | None, seed: int) -> Seal | None:
    """The seal of a run: none (an open run from ``seed``), a fresh one, or the one ``unseal`` names."""
    if not isinstance(sealed, bool):
        raise ConfigError(f"sealed must be True or False, got {type(sealed).__name__}: {sealed!r:.60}.")
    if (sealed or unseal is not None) and seed != 0:
        raise ConfigError(
            f"seed={seed!r} (--seed) has no effect on a sealed run (its seeds come from a secret); leave it out, or play "
            "an open run from the seed without sealed/unseal (--sealed, --unseal)."
        )
    if unseal is not None:
        return Seal.parse(unseal, "unseal (--unseal)")
    return Seal.draw() if sealed else None


RUN_FILE_FIX = "pass the JSONL file of trajectories that `dialogue-gym eval --out RUN.jsonl` wrote."


def load_trajectories(path: str | Path) -> list[Trajectory]:
    """Read a JSONL file written by :func:`evaluate` (or any view's ``trajectory().to_dict()``)."""
    trajectories = []
    try:
        with open(path, "rb") as handle:
            for number, raw in enumerate(handle, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise ConfigError(
                        f"{path}: line {number}: not UTF-8 text (byte {raw[exc.start:exc.start + 1]!r} at column {exc.start + 1}); {RUN_FILE_FIX}"
                    ) from None
                if not line.strip():
                    continue
                try:
                    trajectories.append(Trajectory.from_dict(json.loads(line)))
                except RecursionError:
                    raise ConfigError(f"{path}: line {number}: nested deeper than any trajectory record (Python's JSON reader gave up); {RUN_FILE_FIX}") from None
                except KeyError as exc:
                    raise ConfigError(f"{path}: line {number}: not a trajectory record (field {exc} is missing); {RUN_FILE_FIX}") from exc
                except (json.JSONDecodeError, TypeError, ValueError) as exc:
                    raise ConfigError(f"{path}: line {number}: not a trajectory record ({exc}); {RUN_FILE_FIX}") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the run file ({exc.strerror or exc}); {RUN_FILE_FIX}") from exc
    return trajectories
