"""``dialogue-gym verify RUN.jsonl RESULTS.json``: check a saved run against its results file.

A results file (``eval --save``) holds numbers; the run file (``eval --out``) holds the dialogues they
were computed from. Either can be edited by hand. :func:`verify` checks, without trusting either:

1. **Which episodes.** From the results' provenance (the revealed secret of a sealed run or a replay,
   else the public ``seed``) it recomputes the run's plays: the order of the starts
   (:class:`~dialogue_gym.evaluation.EvaluationOrder`) and each play's reset seed. Every agent of the
   results must have exactly those plays in the run file, in that order, each with its seed: a dropped,
   duplicated, swapped or re-labelled episode is named.
2. **The numbers.** It re-scores every agent's trajectories with the scenario's own metrics (the
   registry's ``summary`` with counterpart health, and ``episode_scores``), recomputes the headline
   intervals from the re-scored episodes, and compares all of them with the results file: a
   hand-edited score is named.
3. **The dialogues.** It replays each episode: the game is reset with the play's seed and options, the
   counterparts are played by the id's own scripted policies (seeded as in the run, keyed by the secret
   when sealed), and the learner's recorded moves are played back in order. The transcript the game
   produces (every turn, hidden state, reward, the outcome) must equal the recorded one: a hand-edited
   line of a counterpart, a reward or an outcome is named. The agent is never run: its moves are data.

A counterpart played by a language model is not a function of the seed, so its episodes are re-scored
but not replayed (the verdict says so). Numbers are compared to 1e-9 relative (the metrics are exact
sums; the slack covers only a model-based metric's last digits on another CPU).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from dialogue_gym.envs.driver import CounterpartDriver, act_with_errors, role_info
from dialogue_gym.errors import ConfigError, DialogueGymError
from dialogue_gym.evaluation import EvaluationOrder, episode_seed, load_trajectories, make_learner_env
from dialogue_gym.health import UNHEALTHY_KEY, benchmark_split, summary_with_health
from dialogue_gym.results import AgentResult, Results, _strict
from dialogue_gym.sealing import Seal
from dialogue_gym.simulators.base import ScriptedPolicy
from dialogue_gym.types import Outcome, Trajectory

RELATIVE = 1e-9
ABSOLUTE = 1e-12
SHOWN = 5
"""How many mismatches the CLI names (all are in :attr:`Verdict.mismatches`)."""
RUN_ADDED = ("agent", "env_id", "start", "repeat", "privileged", "sealed", "secret", "isolation", "agent_problems", UNHEALTHY_KEY)
"""Trajectory ``meta`` keys the evaluator adds to what the game records (not replayed)."""


@dataclass
class Verdict:
    """What :func:`verify` checked and what did not match."""

    episodes: int = 0
    replayed: int = 0
    agents: list[str] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def line(self) -> str:
        """The one-line verdict."""
        if self.ok:
            replay = f", {self.replayed} replayed turn by turn" if self.replayed else ", none replayed"
            return f"verified: {self.episodes} episodes of {len(self.agents)} agent(s) re-scored and match the results{replay}"
        return f"NOT verified: {len(self.mismatches)} mismatch(es); first: {self.mismatches[0]}"


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=RELATIVE, abs_tol=ABSOLUTE)
    if a is None or b is None:  # strict JSON writes NaN as null
        return all(x is None or (isinstance(x, float) and math.isnan(x)) for x in (a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[key], b[key]) for key in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _short(value: Any, width: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=True) if not isinstance(value, str) else repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _seeding(provenance: dict[str, Any]) -> tuple[Seal | None, int]:
    secret = provenance.get("secret")
    if secret is not None:
        return Seal.parse(secret, "the results' provenance['secret']"), 0
    if provenance.get("sealed") or provenance.get("replay"):
        raise ConfigError("the results are of a sealed run but hold no secret; verify needs the revealed secret (save the run once it has ended).")
    seed = provenance.get("seed")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f"the results' provenance['seed'] must be an int for an open run, got {seed!r}.")
    return None, seed


def _unhealthy_flag(provenance: dict[str, Any]) -> bool:
    if "invalid_on_unhealthy" in provenance:
        return bool(provenance["invalid_on_unhealthy"])
    return "--invalid-on-unhealthy" in str(provenance.get("command") or "")  # files saved before the key


def _transcript(trajectory: Trajectory) -> dict[str, Any]:
    data = json.loads(trajectory.to_json())
    data["meta"] = {key: value for key, value in data["meta"].items() if key not in RUN_ADDED}
    data.pop("learner", None)
    return data


def _first_difference(recorded: dict[str, Any], replayed: dict[str, Any]) -> str:
    for index, (a, b) in enumerate(zip(recorded["turns"], replayed["turns"])):
        if not _same(a, b):
            keys = [key for key in a if not _same(a.get(key), b.get(key))]
            key = keys[0] if keys else "role"
            return f"turn {index} ({b.get('role')}) {key}: recorded {_short(a.get(key))}, replay gives {_short(b.get(key))}"
    if len(recorded["turns"]) != len(replayed["turns"]):
        return f"recorded {len(recorded['turns'])} turns, replay gives {len(replayed['turns'])}"
    for key in ("scenario", "seed", "profile", "outcome", "rewards", "reward_terms", "meta"):
        if not _same(recorded.get(key), replayed.get(key)):
            return f"{key}: recorded {_short(recorded.get(key))}, replay gives {_short(replayed.get(key))}"
    return "no difference"


class Replayer:
    """Replays recorded episodes of one id: scripted counterparts, the learner's moves from the record."""

    def __init__(self, env_id: str, learner: str, env_kwargs: dict[str, Any], seal: Seal | None, run_seed: int):
        self.environment = make_learner_env(env_id, learner, env_kwargs)
        self.learner = learner
        policies = self.environment.driver.policies
        self.unreplayable = sorted(role for role, policy in policies.items() if not isinstance(policy, ScriptedPolicy))
        self.driver = CounterpartDriver(policies, learner=None, seal=seal)
        self.game = self.environment.game.spawn()
        self.run_seed = run_seed

    def replay(self, recorded: Trajectory, start: int, seed: int) -> Trajectory:
        game = self.game
        game.reset(seed=seed, options=game.evaluation_options(start, self.run_seed))
        memories = self.driver.start(game)
        moves = iter(recorded.turns_of(self.learner))
        while not game.done:
            role = game.current_role
            if role == self.learner:
                move = next(moves, None)
                if move is None:
                    if recorded.outcome is Outcome.BACKEND_FAILURE and recorded.meta.get("failure"):
                        game.abort(str(recorded.meta["failure"]))
                        break
                    raise _Ended(f"the record holds {len(recorded.turns_of(self.learner))} moves of {self.learner!r}, the game asks for more")
                game.step(move.raw, token_ids=move.token_ids, logprobs=move.logprobs)
                continue
            policy = self.driver.policies[role]
            texts, errors = act_with_errors(policy, [game.observe(role)], [role_info(game, role, policy)], [memories[role]])
            if errors[0] is not None:
                game.abort(f"{role} policy failed: {errors[0]}")
            else:
                game.step(texts[0])
        return game.trajectory()


class _Ended(Exception):
    pass


def verify(run: str | Path, results_path: str | Path, *, replay: bool = True) -> Verdict:
    """Check the run file ``run`` against the results file ``results_path`` (see the module docstring);
    ``replay=False`` skips the turn-by-turn replay. Unreadable inputs raise :class:`ConfigError`."""
    from envs_registry import get, resolve

    results = Results.load(results_path)
    provenance = results.provenance
    env_id, learner = provenance["env_id"], provenance["learner"]
    env_kwargs = dict(provenance.get("env_kwargs") or {})
    metric_kwargs = dict(provenance.get("metric_kwargs") or {})
    entry = get(env_id)
    summary = resolve(entry.summary)
    episode_scores = resolve(entry.episode_scores) if entry.episode_scores else (lambda trajectory: {})
    seal, seed = _seeding(provenance)
    run_seed = seal.run_seed if seal is not None else seed
    replayer = Replayer(env_id, learner, env_kwargs, seal, run_seed)
    order = EvaluationOrder(replayer.environment.game.evaluation_strata(), run_seed)
    episodes, repeats = int(provenance["episodes"]), int(provenance["repeats"])
    plays = [(start, repeat) for start in order.starts(episodes) for repeat in range(repeats)]

    def seed_of(start: int, repeat: int) -> int:
        return seal.episode_seed(start, repeat) if seal is not None else episode_seed(seed, start, repeat)

    verdict = Verdict(agents=[agent.name for agent in results.agents])
    wrong = verdict.mismatches.append
    listed = provenance.get("agents")
    if listed is not None and list(listed) != verdict.agents:
        wrong(f"provenance names agents {listed}, the results hold {verdict.agents}")
    trajectories = load_trajectories(run)
    mine = [t for t in trajectories if t.meta.get("env_id", env_id) == env_id and t.meta.get("agent") in verdict.agents]
    if len(mine) < len(trajectories):
        verdict.notes.append(f"{len(trajectories) - len(mine)} trajectories of other agents or ids in {run} left aside")
    flag = _unhealthy_flag(provenance)
    if replay and replayer.unreplayable:
        verdict.notes.append(f"not replayed: {replayer.unreplayable} played by a language model (not a function of the seed)")
    for agent in results.agents:
        played = [t for t in mine if t.meta.get("agent") == agent.name]
        _check_plays(agent.name, played, plays, seed_of, wrong)
        if len(played) != len(plays) or not played:
            continue  # re-scoring a different set of episodes only repeats the finding
        verdict.episodes += len(played)
        for trajectory in played:
            trajectory.meta.pop(UNHEALTHY_KEY, None)  # recomputed below, never trusted
        row = summary_with_health(played, summary, invalid_on_unhealthy=flag, **metric_kwargs)
        for kept_apart in ("counterpart_health", "health_warnings"):
            row.pop(kept_apart)
        row = _strict(row)
        counted = benchmark_split(played)[0] if flag else played
        rescored = AgentResult.from_trajectories(agent.name, counted, row, episode_scores)
        _check_scores(agent, rescored, entry.pass_metric, repeats, provenance, wrong)
        if replay and not replayer.unreplayable:
            for trajectory in played:
                start, repeat = trajectory.meta["start"], trajectory.meta["repeat"]
                where = f"{agent.name!r} start {start} repeat {repeat}"
                try:
                    replayed = replayer.replay(trajectory, start, seed_of(start, repeat))
                except _Ended as exc:
                    wrong(f"{where}: transcript differs from its replay: {exc}")
                    continue
                except DialogueGymError as exc:
                    wrong(f"{where}: the recorded moves cannot be replayed ({exc})")
                    continue
                verdict.replayed += 1
                a, b = _transcript(trajectory), _transcript(replayed)
                if not _same(a, b):
                    wrong(f"{where}: transcript differs from its replay: {_first_difference(a, b)}")
    return verdict


def _check_plays(name: str, played: Sequence[Trajectory], plays: list[tuple[int, int]], seed_of: Any, wrong: Any) -> None:
    keys = [(t.meta.get("start"), t.meta.get("repeat")) for t in played]
    expected = set(plays)
    counts = Counter(keys)
    missing = [play for play in plays if play not in counts]
    extra = [key for key in counts if key not in expected]
    twice = [key for key, n in counts.items() if n > 1]
    for label, found in (("missing from the run file", missing), ("not a play of this run", extra), ("in the run file more than once", twice)):
        if found:
            shown = ", ".join(f"start {s} repeat {r}" for s, r in found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
            wrong(f"{name!r}: {len(found)} episode(s) {label}: {shown}")
    for trajectory in played:
        start, repeat = trajectory.meta.get("start"), trajectory.meta.get("repeat")
        if (start, repeat) in expected and trajectory.seed != seed_of(start, repeat):
            wrong(f"{name!r} start {start} repeat {repeat}: played with seed {trajectory.seed}, the run's seed for it is {seed_of(start, repeat)}")
    if not (missing or extra or twice) and keys != plays:
        index = next(i for i, (a, b) in enumerate(zip(keys, plays)) if a != b)
        wrong(f"{name!r}: episodes out of the run's order from line {index + 1} of its episodes (start {keys[index][0]} where start {plays[index][0]} was played)")


def _check_scores(saved: AgentResult, rescored: AgentResult, pass_metric: str | None, repeats: int, provenance: dict[str, Any], wrong: Any) -> None:
    name = saved.name
    if saved.privileged != rescored.privileged:
        wrong(f"{name!r}: privileged is {saved.privileged} in the results, {rescored.privileged} in its trajectories")
    for key in sorted(set(saved.summary) | set(rescored.summary)):
        if not _same(saved.summary.get(key, "<absent>"), rescored.summary.get(key, "<absent>")):
            wrong(f"{name!r} table {key}: results say {_short(saved.summary.get(key, '<absent>'))}, its trajectories score {_short(rescored.summary.get(key, '<absent>'))}")
    by_key = {(e["start"], e["repeat"]): e for e in rescored.episodes}
    saved_keys = [(e["start"], e["repeat"]) for e in saved.episodes]
    if sorted(saved_keys) != sorted(by_key):
        wrong(f"{name!r}: the results hold {len(saved_keys)} episode scores, its counted trajectories {len(by_key)} (episodes dropped or added)")
    for episode in saved.episodes:
        fresh = by_key.get((episode["start"], episode["repeat"]))
        if fresh is None:
            continue
        for key in ("seed", "scores"):
            if not _same(episode[key], fresh[key]):
                wrong(f"{name!r} start {episode['start']} repeat {episode['repeat']} {key}: results say {_short(episode[key])}, its trajectory gives {_short(fresh[key])}")
    bootstrap = provenance.get("bootstrap") or {}
    resamples = int(bootstrap.get("resamples", 0) or 0)
    rescored.episodes = [by_key[key] for key in saved_keys if key in by_key] if sorted(saved_keys) == sorted(by_key) else rescored.episodes
    rescored.compute_headline(pass_metric, repeats, resamples, int(bootstrap.get("seed", 0) or 0))
    for key in sorted(set(saved.headline) | set(rescored.headline)):
        if not _same(saved.headline.get(key), rescored.headline.get(key)):
            wrong(f"{name!r} headline {key}: results say {_short(saved.headline.get(key))}, recomputed {_short(rescored.headline.get(key))}")


def add_command(commands: Any) -> None:
    """Register ``verify`` on the CLI's subparsers."""
    parser = commands.add_parser(
        "verify", help="re-score a saved run's trajectories and replay its dialogues; check them against its results file"
    )
    parser.add_argument("run_file", metavar="RUN.jsonl", help="the trajectories `dialogue-gym eval --out` wrote")
    parser.add_argument("results", metavar="RESULTS.json", help="the results `dialogue-gym eval --save` wrote for the same run")
    parser.add_argument("--no-replay", action="store_true", help="re-score only; do not replay the dialogues")
    parser.set_defaults(run=cmd_verify)


def cmd_verify(args: Any) -> int:
    from dialogue_gym.reporting import terminal_safe

    verdict = verify(args.run_file, args.results, replay=not args.no_replay)
    for note in verdict.notes:
        print(terminal_safe(f"note: {note}"))
    print(terminal_safe(verdict.line()))
    for mismatch in verdict.mismatches[1:SHOWN]:
        print(terminal_safe(f"  also: {mismatch}"))
    if len(verdict.mismatches) > SHOWN:
        print(f"  and {len(verdict.mismatches) - SHOWN} more")
    return 0 if verdict.ok else 1
