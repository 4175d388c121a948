"""Collect rollouts on Ray: rollout workers are Ray actors, each playing chunks of a fixed evaluation run.

:func:`collect_rollouts` plays episodes ``0 .. episodes - 1`` of the same fixed sequence as
:func:`dialogue_gym.evaluation.evaluate` (episode ``i`` seeded ``seed + i``, with the game's
evaluation options), split into chunks that ``num_workers`` :class:`RolloutWorker` actors take from
one shared :class:`ChunkDealer` as they need work. Each worker builds its env and policies ONCE from
data (env id, env kwargs JSON, agent policy by name, backend specs) and plays the chunks it takes as
ONE stream through :meth:`~dialogue_gym.evaluation.Evaluator.play`: up to ``batch_size`` episodes in
flight, a slot refilled as soon as its episode ends (taking the next chunk when the current one has
no episode left to start), so LLM-played roles get full batches however small the chunks. Trajectories
come back as dicts and are returned in episode order, so the result does not depend on which worker
played what: with scripted policies (and with LLM policies, whose requests carry per-episode seeds) it
equals ``evaluate(...)`` with the same arguments. That holds for backends whose output is a function of
the request (canned, a ``cached`` replay, batch-invariant engines); a local model whose numerics depend
on its batch mates (padding) can differ between any two batchings, here as between batch sizes.

Ray is an optional extra (``pip install 'dialogue_gym[ray]'``), imported only when a function here runs.

On one machine::

    from dialogue_gym.distributed import collect_rollouts
    trajectories = collect_rollouts("SEAD-Outbound-v0", "adaptive", 2400, num_workers=4)

On a cluster:

1. install ``dialogue_gym[ray]`` (plus the extras the policies need, e.g. ``[llm]``) on every node,
   in the same environment (or ship it with ``ray_init={"runtime_env": {"py_modules": [...]}}``);
2. start Ray: ``ray start --head`` on one node, ``ray start --address=<head-ip>:6379`` on the others;
3. from any node, ``collect_rollouts(..., num_workers=W, ray_init={"address": "auto"})``. Each worker
   reserves ``num_cpus_per_worker`` CPUs and ``num_gpus_per_worker`` GPUs, so Ray places workers where
   those are free (e.g. ``num_gpus_per_worker=1`` for a local ``transformers`` / ``vllm`` backend).
   To share a vLLM server fleet instead, give the LLM roles an ``openai`` backend pointing at it; a
   ``cached`` backend in ``replay`` mode can read one recording from every node at once (keep
   ``record`` / ``read-through`` files on node-local disks: SQLite must not be written over NFS).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Iterator

from dialogue_gym.errors import ConfigError, DependencyNotInstalled, DialogueGymError
from dialogue_gym.evaluation import Evaluator
from dialogue_gym.types import Trajectory

_PURPOSE = "Ray rollouts (dialogue_gym.distributed.collect_rollouts)"


def import_ray() -> Any:
    """The ``ray`` module, or :class:`DependencyNotInstalled` naming the ``ray`` extra."""
    try:
        import ray
    except ImportError as exc:
        raise DependencyNotInstalled("ray", "ray", _PURPOSE) from exc
    return ray


class RolloutWorker:
    """Plays chunks of one evaluation run; :func:`collect_rollouts` runs it as a Ray actor.

    Args:
        env_id: a registered id, e.g. ``"SEAD-Outbound-v0"``.
        agent: the policy that plays ``learner``, by name (e.g. ``"adaptive"``, or ``"llm"`` with
            ``agent_backend``).
        learner: the role ``agent`` plays.
        env_kwargs_json: the env's keyword arguments as JSON text (other roles, backends, rules).
        agent_backend_json: the agent's backend spec as JSON text (``"null"`` for none).
        batch_size: episodes in flight at once (one backend batch per round per LLM role; a slot is
            refilled as soon as its episode ends).
        isolate: where ``agent`` plays: ``"none"`` (this worker), ``"process"`` or ``"sandbox"``
            (:mod:`dialogue_gym.agents`, as :func:`~dialogue_gym.evaluation.evaluate`).
        agent_limits_json: the isolated agent's limits as JSON text (``"null"``: the defaults).

    A configuration error while building (unknown policy name, bad backend spec, ...) is kept and
    raised by :meth:`play`, so the caller gets the typed error (Ray re-raises it as an instance of its
    class) rather than a dead actor.
    """

    def __init__(
        self, env_id: str, agent: str, learner: str, env_kwargs_json: str, agent_backend_json: str, batch_size: int,
        isolate: str = "none", agent_limits_json: str = "null",
    ) -> None:
        self.error: DialogueGymError | None = None
        self.play_cpu_seconds = 0.0
        self.episodes = 0
        try:
            self.evaluator: Evaluator | None = Evaluator(
                env_id,
                agent,
                learner=learner,
                env_kwargs=json.loads(env_kwargs_json),
                agent_backend=json.loads(agent_backend_json),
                batch_size=batch_size,
                isolate=isolate,
                agent_limits=json.loads(agent_limits_json),
            )
        except DialogueGymError as exc:
            self.evaluator, self.error = None, exc

    def play(self, dealer: Any, seed: int) -> list[tuple[int, list[dict[str, Any]]]]:
        """Play the chunks taken from ``dealer`` (a :class:`ChunkDealer` actor) until it has none left,
        as one continuous stream; ``(chunk index, its trajectory dicts in episode order)`` per chunk taken.

        A chunk is taken only when a slot is free and the chunks taken so far have no episode left to
        start, so the episodes not yet started stay with the dealer for whichever worker frees first."""
        if self.evaluator is None:
            raise self.error
        cpu = time.process_time()
        ray = import_ray()
        evaluator = self.evaluator
        chunks: list[list[dict[str, Any] | None]] = []
        places: list[tuple[int, int]] = []  # per play of the stream: (chunk index, offset in the chunk)
        indices: list[int] = []

        def stream() -> Iterator[tuple[int, int]]:
            while (chunk := ray.get(dealer.take.remote())) is not None:
                index, first, count = chunk
                indices.append(index)
                chunks.append([None] * count)
                for offset, play in enumerate(evaluator.plays(count, seed, first_episode=first)):
                    places.append((len(chunks) - 1, offset))
                    yield play

        for position, trajectory in evaluator.play(stream(), seed):
            taken, offset = places[position]
            chunks[taken][offset] = trajectory.to_dict()
        self.play_cpu_seconds += time.process_time() - cpu
        self.episodes += len(places)
        return list(zip(indices, chunks))

    def usage(self) -> dict[str, float]:
        """CPU seconds this worker's process has used: ``total`` (start-up included: imports, building the
        env and policies), ``play`` (inside :meth:`play`, dealing and serialising included), and the
        ``episodes`` it played, so that a caller can tell a worker's fixed cost from its cost per episode."""
        return {"total": time.process_time(), "play": self.play_cpu_seconds, "episodes": self.episodes}


class ChunkDealer:
    """Hands out the chunks ``(index, first episode, episode count)`` of a run, each once, in order;
    :func:`collect_rollouts` runs it as one Ray actor that every :class:`RolloutWorker` takes from."""

    def __init__(self, chunks: list[tuple[int, int]]) -> None:
        self.chunks = chunks
        self.next = 0

    def take(self) -> tuple[int, int, int] | None:
        """The next chunk, or ``None`` when all have been handed out."""
        if self.next == len(self.chunks):
            return None
        index, self.next = self.next, self.next + 1
        first, count = self.chunks[index]
        return index, first, count


def _as_json(value: Any, name: str) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"collect_rollouts: {name} must be JSON data (policies and backends by name + kwargs), got {value!r:.200} "
            f"({exc}); live objects cannot be rebuilt on Ray workers."
        ) from exc


def _positive(value: Any, name: str, minimum: float = 1, integer: bool = True) -> Any:
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or value < minimum:
        raise ConfigError(f"collect_rollouts: {name} must be {'an int' if integer else 'a number'} >= {minimum}, got {value!r}.")
    return value


def collect_rollouts(
    env_id: str,
    agent: str = "sop",
    episodes: int = 100,
    seed: int = 0,
    *,
    learner: str = "agent",
    env_kwargs: dict[str, Any] | None = None,
    agent_backend: dict[str, Any] | None = None,
    num_workers: int = 2,
    chunk_size: int | None = None,
    batch_size: int = 32,
    num_cpus_per_worker: float = 1,
    num_gpus_per_worker: float = 0,
    out: str | Path | None = None,
    ray_init: dict[str, Any] | None = None,
    isolate: bool | str = False,
    agent_limits: dict[str, Any] | None = None,
    usage: list[dict[str, float]] | None = None,
) -> list[Trajectory]:
    """Play ``episodes`` episodes of ``env_id`` on ``num_workers`` Ray actors; trajectories in episode order.

    Args:
        env_id, agent, episodes, seed, learner, env_kwargs, agent_backend, batch_size: as for
            :func:`dialogue_gym.evaluation.evaluate`, except that ``agent``, ``env_kwargs`` and
            ``agent_backend`` must be data (names and JSON), since each worker rebuilds them.
        num_workers: rollout actors to start (fewer if there are fewer chunks).
        chunk_size: episodes per chunk a worker takes from the shared dealer (default: ``batch_size``,
            or fewer so that every worker gets work). A worker plays its chunks as one stream, so the
            chunk size does not limit batching; smaller chunks balance the end of a run better.
        num_cpus_per_worker, num_gpus_per_worker: Ray resources each actor reserves.
        out: append the trajectories to this JSONL file (as ``evaluate`` does).
        ray_init: keyword arguments for ``ray.init`` when Ray is not initialised yet (e.g.
            ``{"address": "auto"}`` on a cluster, ``{"num_cpus": 2}`` locally); Ray stays up afterwards.
        isolate, agent_limits: as for :func:`~dialogue_gym.evaluation.evaluate`: each worker plays
            ``agent`` (a name or ``"module:Class"``, imported only in the agent's process) in a process
            of its own (``"process"``) or a bubblewrap sandbox (``"sandbox"``, or ``True``), within
            ``agent_limits`` (:class:`~dialogue_gym.agents.Limits` or a dict of its fields); the trajectories
            are those of the in-process run, with ``meta["isolation"]`` and any moves the boundary
            refused in ``meta["agent_problems"]``.
        usage: a list to append each worker's :meth:`RolloutWorker.usage` to (CPU seconds in all and in
            play, episodes played), read before the workers stop; ``benchmarks/ray_rollouts.py`` uses it
            to find from how many cores Ray pays.
    """
    import gymnasium as gym

    from dialogue_gym.agents.process import Limits, check_level

    if not isinstance(env_id, str) or env_id not in gym.registry:
        raise ConfigError(f"collect_rollouts: {env_id!r} is not a registered id; `dialogue-gym list` shows them.")
    if not isinstance(agent, str):
        raise ConfigError(
            f"collect_rollouts: agent must be a policy name (e.g. 'sop', or 'llm' with agent_backend=...), got "
            f"{type(agent).__name__} {agent!r:.100}; workers rebuild policies from names."
        )
    _positive(episodes, "episodes")
    _positive(seed, "seed", 0)
    _positive(num_workers, "num_workers")
    _positive(batch_size, "batch_size")
    _positive(num_cpus_per_worker, "num_cpus_per_worker", 0, integer=False)
    _positive(num_gpus_per_worker, "num_gpus_per_worker", 0, integer=False)
    if chunk_size is None:
        chunk_size = max(1, min(batch_size, math.ceil(episodes / num_workers)))
    _positive(chunk_size, "chunk_size")
    level = check_level(isolate)
    limits = _as_json(asdict(Limits.of(agent_limits)), "agent_limits")  # checked here, before Ray starts
    worker_args = (
        env_id, agent, learner, _as_json(env_kwargs or {}, "env_kwargs"), _as_json(agent_backend, "agent_backend"), batch_size, level, limits,
    )

    ray = import_ray()
    if not ray.is_initialized():
        ray.init(**(ray_init or {}))
    chunks = [(start, min(chunk_size, episodes - start)) for start in range(0, episodes, chunk_size)]
    dealer = ray.remote(num_cpus=0)(ChunkDealer).remote(chunks)
    actor_class = ray.remote(num_cpus=num_cpus_per_worker, num_gpus=num_gpus_per_worker)(RolloutWorker)
    actors = [actor_class.remote(*worker_args) for _ in range(min(num_workers, len(chunks)))]
    results: list[list[dict[str, Any]] | None] = [None] * len(chunks)
    try:
        for taken in ray.get([actor.play.remote(dealer, seed) for actor in actors]):
            for index, chunk in taken:
                results[index] = chunk
        if usage is not None:
            usage.extend(ray.get([actor.usage.remote() for actor in actors]))
    finally:
        for actor in [*actors, dealer]:
            ray.kill(actor)

    trajectories = [Trajectory.from_dict(data) for chunk in results for data in chunk or ()]
    if out is not None:
        with open(out, "a", encoding="utf-8") as sink:
            sink.writelines(t.to_json() + "\n" for t in trajectories)
    return trajectories
