"""Probe policies: policies that try to reach the game instead of playing it.

They sit beside each scenario's audit (:mod:`dialogue_gym.audit`) and show what sealing holds off.

- :class:`DataMutator` plays like a fair policy, then vandalises everything it was handed (the
  ``start`` profile, every observation and ``info``, nested containers and the attributes reachable
  from them). Handed copies, it changes nothing: its episodes equal the fair policy's, and so do the
  episodes played after it in the same process.
"""

from __future__ import annotations

import copy
import gc
from typing import Any, Sequence

import numpy as np

from dialogue_gym.evaluation import EvaluationOrder, episode_seed, make_learner_env
from dialogue_gym.envs.driver import role_info
from dialogue_gym.game import Game, is_privileged

VANDAL = "<vandalised>"
"""What :func:`vandalise` writes wherever it can."""
ORACLE = "oracle"
"""The name a replaying probe gives the scenario's oracle among its proposals."""
_MAX_DEPTH = 12
"""How deep :func:`vandalise` follows containers and attributes (JSON-like data is a few levels deep)."""


def vandalise(value: Any, depth: int = 0, seen: set[int] | None = None) -> None:
    """Overwrite, extend and scramble every mutable thing reachable from ``value``: dict items, list
    items, writable arrays and object attributes (read-only data refuses, which is what it should do)."""
    seen = set() if seen is None else seen
    if depth > _MAX_DEPTH or id(value) in seen or isinstance(value, (str, bytes, int, float, type(None))):
        return
    seen.add(id(value))
    if isinstance(value, dict):
        children = list(value.values())
    elif isinstance(value, (list, tuple, set, frozenset)):
        children = list(value)
    else:
        children = list(getattr(value, "__dict__", {}).values())
    for child in children:
        vandalise(child, depth + 1, seen)
    try:
        if isinstance(value, dict):
            for key in list(value):
                value[key] = VANDAL
            value[VANDAL] = VANDAL
        elif isinstance(value, list):
            value[:] = [VANDAL] * (len(value) + 1)
        elif isinstance(value, set):
            value.clear()
            value.add(VANDAL)
        elif isinstance(value, np.ndarray):
            value[...] = 1
        else:
            for name in list(getattr(value, "__dict__", {})):
                setattr(value, name, VANDAL)
    except (TypeError, AttributeError, ValueError):
        pass


class DataMutator:
    """Plays as ``inner`` does (on private copies), then vandalises the originals it was handed.

    Reads the privileged channel exactly when ``inner`` does (so it is marked alike)."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.privileged = is_privileged(inner)

    def start(self, profile: dict[str, Any], seed: int) -> Any:
        memory = self.inner.start(copy.deepcopy(profile), seed)
        vandalise(profile)
        return memory

    def act_batch(self, observations: Sequence[dict[str, Any]], infos: Sequence[dict[str, Any]], memories: Sequence[Any]) -> list[str]:
        texts = self.inner.act_batch(copy.deepcopy(list(observations)), copy.deepcopy(list(infos)), memories)
        for handed in (*observations, *infos):
            vandalise(handed)
        return texts


# -- replaying the public simulator ---------------------------------------------------------------
PUBLIC_SEEDS = (0, 1, 2, 3)
"""Run seeds a replaying probe tries: the defaults of ``eval`` and ``audit`` and their neighbours."""
MAX_START = 10**6
"""Starts a replaying probe believes a run can reach (a seed implying a later start is not a public one)."""
_MASK64 = (1 << 64) - 1


def _unshift(value: int, shift: int) -> int:
    """The ``x`` with ``x ^ (x >> shift) == value`` (64-bit)."""
    result = value
    for _ in range(64 // shift + 1):
        result = value ^ (result >> shift)
    return result & _MASK64


_GOLDEN, _MIX1, _MIX2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def _unmix(z: int) -> int:
    """Undo one part of :func:`~dialogue_gym.seeding.mix_seed`: the state before it, xor the part."""
    z = _unshift(z, 31)
    z = _unshift(z * pow(_MIX2, -1, 1 << 64) & _MASK64, 27)
    z = _unshift(z * pow(_MIX1, -1, 1 << 64) & _MASK64, 30)
    return (z - 1) * pow(_GOLDEN, -1, 1 << 64) & _MASK64


def invert_mix_seed(output: int, last_part: int) -> list[int]:
    """Every ``first`` with ``mix_seed(first, last_part) == output``: each step of SplitMix64 is a
    bijection, so the seed an open run hands a role's policy gives away the episode seed (two
    candidates, as ``mix_seed`` drops the lowest bit)."""
    return [_unmix(_unmix(output << 1 | low) ^ last_part) for low in (0, 1)]


class Replica:
    """Start ``start`` of an open run with ``run_seed``, rebuilt from the library's public code: the
    game reset as :class:`~dialogue_gym.evaluation.Evaluator` resets it, the counterparts started with
    the seeds an open run gives them and played up to the learner's turn."""

    def __init__(self, environment: Any, start: int, run_seed: int):
        self.environment = environment
        self.start, self.run_seed = start, run_seed
        self.game = environment.game.spawn()
        self.game.reset(seed=episode_seed(run_seed, start, 0), options=self.game.evaluation_options(start, run_seed))
        self.memories = environment.driver.start(self.game)
        environment.driver.advance([self.game], [self.memories])

    def observed(self) -> str:
        """What the learner is handed now (its profile and observation), as comparable text."""
        learner = self.environment.learner
        return repr((self.game.role_profile(learner), self.game.observe(learner)))

    def step(self, text: str) -> None:
        """The learner says ``text``; the counterparts answer up to its next turn."""
        if self.game.current_role == self.environment.learner:
            self.game.step(text)
            self.environment.driver.advance([self.game], [self.memories])

    def fork(self, history: Sequence[str]) -> Replica:
        """A fresh copy of this start with the learner's ``history`` replayed."""
        copy_ = Replica(self.environment, self.start, self.run_seed)
        for text in history:
            copy_.step(text)
        return copy_

    def act(self, policy: Any, memory: Any) -> str:
        """``policy``'s move here, handed what the evaluator would hand it (the hidden state if it asks)."""
        learner = self.environment.learner
        return policy.act_batch([self.game.observe(learner)], [role_info(self.game, learner, policy)], [memory])[0]

    def finish(self, policy: Any, memory: Any) -> float:
        """Play the learner with ``policy`` (and its ``memory``) to the end; the learner's return."""
        while self.game.current_role == self.environment.learner:
            self.step(self.act(policy, memory))
        return float(self.game.returns[self.environment.learner])


class ReplayProbe:
    """Base of the probes that rebuild the game: finds the starts of open runs that agree with what it
    has been handed so far, and plays the scenario's best fair policy (``fallback``) whenever none does.

    ``fair`` names the fair, non-privileged policies of the learner role (weakest first, so the last
    is the fallback); each is started with what the probe gets and plays along, proposing a move.
    ``oracle`` names a policy of the role that reads the privileged channel, if the scenario has one:
    a probe that rebuilt the game hands it its copy's hidden state."""

    def __init__(
        self, env_id: str, learner: str, fair: Sequence[str], env_kwargs: dict[str, Any] | None = None, oracle: str | None = None
    ):
        self.environment = make_learner_env(env_id, learner, dict(env_kwargs or {}))
        self.fair = {name: self.environment.make_role_policy(learner, name) for name in fair}
        self.fallback = list(fair)[-1]
        self.oracle = self.environment.make_role_policy(learner, oracle) if oracle is not None else None

    def start(self, profile: dict[str, Any], seed: int) -> dict[str, Any]:
        return {
            "profile": copy.deepcopy(profile), "seed": seed, "seen": [], "history": [], "replicas": None,
            "fair": {name: policy.start(copy.deepcopy(profile), seed) for name, policy in self.fair.items()},
        }

    def candidates(self, memory: dict[str, Any]) -> list[tuple[int, int]] | None:
        """``(start, run_seed)`` of the open runs this episode may be (each then checked against what is
        observed), or None to look again next turn: by default those whose episode seed the role seed
        in ``memory`` was mixed from."""
        role_index = self.environment.game.roles.index(self.environment.learner)
        return [
            (episode - run_seed, run_seed)
            for episode in invert_mix_seed(memory["seed"], role_index) for run_seed in PUBLIC_SEEDS
            if 0 <= episode - run_seed < MAX_START
        ]

    def proposals(self, observation: dict[str, Any], info: dict[str, Any], memory: dict[str, Any]) -> dict[str, tuple[str, Any]]:
        """Each fair policy's move now and its memory after proposing it (the live one)."""
        proposed = {}
        for name, policy in self.fair.items():
            text = policy.act_batch([copy.deepcopy(observation)], [copy.deepcopy(info)], [memory["fair"][name]])[0]
            proposed[name] = (text, memory["fair"][name])
        return proposed

    def choose(self, replica: Replica | None, proposed: dict[str, tuple[str, Any]], memory: dict[str, Any]) -> str:
        raise NotImplementedError

    def act_batch(self, observations: Sequence[dict[str, Any]], infos: Sequence[dict[str, Any]], memories: Sequence[Any]) -> list[str]:
        return [self.act(observation, info, memory) for observation, info, memory in zip(observations, infos, memories)]

    def act(self, observation: dict[str, Any], info: dict[str, Any], memory: dict[str, Any]) -> str:
        learner = self.environment.learner
        observed = repr((memory["profile"], observation))
        memory["seen"].append(observed)
        if memory["replicas"] is None:
            found = self.candidates(memory)
            if found is not None:
                memory["replicas"] = [Replica(self.environment, *start).fork(memory["history"]) for start in found]
        replicas = [replica for replica in memory["replicas"] or () if replica.game.current_role == learner and replica.observed() == observed]
        memory["replicas"] = replicas if memory["replicas"] is not None else None
        proposed = self.proposals(observation, info, memory)
        text = self.choose(replicas[0] if replicas else None, proposed, memory)
        memory["history"].append(text)
        for replica in replicas:
            replica.step(text)
        return text


class SeedReplay(ReplayProbe):
    """Inverts the seed its ``start`` gets to the episode seed, rebuilds the game of each public run
    seed that fits, and plays by lookahead on it: each turn it tries every fair policy's proposal (and
    the scenario's oracle's, told the copy's hidden state) on a fork of the copy, continued by that
    policy to the end, and says the one with the best return (the fallback's on a tie)."""

    def choose(self, replica: Replica | None, proposed: dict[str, tuple[str, Any]], memory: dict[str, Any]) -> str:
        if replica is None:
            return proposed[self.fallback][0]
        players = dict(self.fair)
        if self.oracle is not None:
            # told the copy's hidden state, started on the copy's whole profile once the game is found
            memory.setdefault("oracle", self.oracle.start(replica.game.episode_profile(), memory["seed"]))
            proposed = {**proposed, ORACLE: (replica.act(self.oracle, memory["oracle"]), memory["oracle"])}
            players[ORACLE] = self.oracle
        best, best_return = None, None  # the first pass (the fallback) always sets both
        for name in [self.fallback, *(n for n in proposed if n != self.fallback)]:
            text, policy_memory = proposed[name]
            fork = replica.fork(memory["history"])
            fork.step(text)
            value = fork.finish(players[name], copy.deepcopy(policy_memory))
            if best_return is None or value > best_return:
                best, best_return = text, value
        return best


class FingerprintMatcher(SeedReplay):
    """Never reads its seed: among the first ``starts`` starts of the public run seeds, keeps those
    whose learner was handed what it was handed so far (while more than ``narrow`` are left, it plays
    the fallback and looks again next turn) and plays by lookahead on them, as :class:`SeedReplay`.

    What the starts show is worked out once per distinct path of observations and moves, so episodes
    that begin alike (every SEAD caller hears nothing before it speaks) share the work."""

    def __init__(
        self, env_id: str, learner: str, fair: Sequence[str], env_kwargs: dict[str, Any] | None = None, oracle: str | None = None,
        starts: int = 600, seeds: Sequence[int] = (0,), narrow: int = 8,
    ):
        super().__init__(env_id, learner, fair, env_kwargs, oracle)
        strata = self.environment.game.evaluation_strata()
        self.public = [(start, run_seed) for run_seed in seeds for start in EvaluationOrder(strata, run_seed).starts(starts)]
        self.narrow = narrow
        self._shown: dict[tuple[tuple[str, ...], tuple[str, ...]], dict[str | None, list[tuple[int, int]]]] = {}

    def candidates(self, memory: dict[str, Any]) -> list[tuple[int, int]] | None:
        found = self.matching(tuple(memory["seen"]), tuple(memory["history"]))
        return found if len(found) <= self.narrow else None

    def matching(self, seen: tuple[str, ...], said: tuple[str, ...]) -> list[tuple[int, int]]:
        """The public starts whose learner, saying ``said``, was handed ``seen`` (one more than said)."""
        key = (seen[:-1], said)
        if key not in self._shown:
            parents = self.matching(seen[:-1], said[:-1]) if said else self.public
            shown: dict[str | None, list[tuple[int, int]]] = {}
            for start in parents:
                replica = Replica(self.environment, *start).fork(said)
                shown.setdefault(replica.observed() if replica.game.current_role == self.environment.learner else None, []).append(start)
            self._shown[key] = shown
        return self._shown[key].get(seen[-1], [])


class ClairvoyantSelector(ReplayProbe):
    """Inverts its seed as :class:`SeedReplay` does, plays every fair policy to the end on the
    rebuilt game before its first move, and then plays the one that did best (the fallback if none
    can be rebuilt): each policy is fair, the choice is not."""

    def choose(self, replica: Replica | None, proposed: dict[str, tuple[str, Any]], memory: dict[str, Any]) -> str:
        if "chosen" not in memory:
            memory["chosen"], best = self.fallback, None
            for name, policy in self.fair.items() if replica is not None else ():
                value = replica.fork([]).finish(policy, policy.start(copy.deepcopy(memory["profile"]), memory["seed"]))
                if best is None or value > best or (value == best and name == self.fallback):
                    memory["chosen"], best = name, value
        return proposed[memory["chosen"]][0]


class GarbageCollectorSnoop:
    """Plays ``fair`` (a policy name), except where it finds the live game it plays in by walking the
    garbage collector: there it plays ``oracle`` on that game's hidden state. In-process it finds it;
    isolated (:mod:`dialogue_gym.agents`) there is no live game in its process to find.

    Built from names and picklable, so it can be sent to an isolated process."""

    def __init__(self, env_id: str, learner: str, fair: str, oracle: str, env_kwargs: dict[str, Any] | None = None):
        self.spec = (env_id, learner, fair, oracle, dict(env_kwargs or {}))
        self._players: tuple[Any, Any] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"spec": self.spec, "_players": None}

    def players(self) -> tuple[Any, Any]:
        if self._players is None:
            env_id, learner, fair, oracle, env_kwargs = self.spec
            environment = make_learner_env(env_id, learner, env_kwargs)
            self._players = environment.make_role_policy(learner, fair), environment.make_role_policy(learner, oracle)
        return self._players

    def start(self, profile: dict[str, Any], seed: int) -> dict[str, Any]:
        return {"fair": self.players()[0].start(profile, seed), "seed": seed}

    def live_game(self, observation: dict[str, Any]) -> Any:
        """A started game in this process whose learner is handed ``observation`` now, or None."""
        learner, shown = self.spec[1], repr(observation)
        for candidate in gc.get_objects():
            if isinstance(candidate, Game) and candidate.started and candidate.current_role == learner and repr(candidate.observe(learner)) == shown:
                return candidate
        return None

    def act_batch(self, observations: Sequence[dict[str, Any]], infos: Sequence[dict[str, Any]], memories: Sequence[Any]) -> list[str]:
        fair, oracle = self.players()
        learner = self.spec[1]
        texts = []
        for observation, info, memory in zip(observations, infos, memories):
            game = self.live_game(observation)
            if game is None:
                texts.append(fair.act_batch([observation], [info], [memory["fair"]])[0])
                continue
            memory.setdefault("oracle", oracle.start(game.episode_profile(), memory["seed"]))
            texts.append(oracle.act_batch([observation], [role_info(game, learner, oracle)], [memory["oracle"]])[0])
        return texts
