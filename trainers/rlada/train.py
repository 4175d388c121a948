"""RL-ADA co-evolution (paper 003; SPEC section 3), CleanRL style: one file, top to bottom.

Phases, each a numbered *step* of the run:

0. bootstrap: for an LM agent with ``copy_steps``, ``copy`` (synthetic lines that teach it to repeat a
   value of its prompt, :mod:`trainers.rlada.id_copy`); ``sft`` (DA0 imitates the keyword router on the 78-intent taxonomy), for an LM agent
   ``heldout_sft`` (the clone on the 12 held-out scenarios, so the run reports what RL changed over
   SFT), ``warmup_agent`` (GRPO against the scripted customer), ``heldout_before`` (DA0 on the 12 held-out scenarios),
   ``warmup_customer`` (CA0: GRPO against the frozen DA0, no SFT);
1. ``match``: 10 arena scenarios x ``episodes_per_scenario`` with the latest agent and customer;
   win rate over customer-winnable scenarios, safety check apart; the stopping rule decides;
2. ``gym``: ``gym_iterations`` GRPO iterations of the weaker side against the frozen other, starting
   from the last match's transcripts, 70:30 failures:successes; then the next match;
3. ``heldout_after``: the final agent on the held-out scenarios; plots.

Commit protocol (as the SEAD trainer): each step appends its trajectories as they finish, then
saves the updated policy's checkpoint, its metrics row, and last ``state/progress.json`` (which
names the checkpoints and the next step) in one atomic write. ``--resume RUN_DIR`` after a crash or
``kill -9`` continues from the last commit, keeping the finished episodes of the interrupted step.
"""

from __future__ import annotations

import random
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from tqdm import tqdm

from dialogue_gym.envs.driver import CounterpartDriver
from dialogue_gym.metrics import rlada as rlada_metrics
from dialogue_gym.scenarios.rlada.agents import KeywordRouterAgent
from dialogue_gym.scenarios.rlada.customers import ScriptedCustomer
from dialogue_gym.scenarios.rlada.data import LEVELS, Domain, load_domain
from dialogue_gym.scenarios.rlada.game import RladaConfig, RladaGame
from dialogue_gym.seeding import mix_seed
from dialogue_gym.types import Trajectory
from trainers.common import RunDir, RunFolderError
from trainers.common.baselines import best_baseline, fair_baselines
from trainers.common.cli import config_from_cli, run_main
from trainers.common.rundir import STATE_FIX, has_kind
from trainers.grpo.policy import advantages_for
from trainers.rlada.arena import (
    StoppingRule,
    gym_starts,
    heldout_plan,
    match_plan,
    match_summary,
    weaker_side,
)
from trainers.rlada.config import RladaTrainConfig, build_config, parser
from trainers.rlada.strategy import StrategyAgent, StrategyCustomer
from trainers.common.play import play_games

KEEP_CHECKPOINTS = 2


# -- policies ---------------------------------------------------------------------------------------
def _lm_policy(config: RladaTrainConfig, side: str, run: RunDir, checkpoint: Path | None):
    """The LM of ``side``: its cloned model once the ``sft`` phase has finished one (so LoRA adapters and the
    KL reference sit on the clone), else the model SFT starts from; the weights of ``checkpoint`` when given."""
    from trainers.common.sft import SFT_FINISHED
    from trainers.grpo.lm import CausalLMPolicy, GRPOConfig

    cloned = _cloned_folder(run, side)
    model = str(cloned) if (cloned / SFT_FINISHED).exists() else _start_model(config, side, run)
    grpo = GRPOConfig(
        learning_rate=getattr(config, f"{side}_learning_rate"), kl_coef=getattr(config, f"{side}_kl_coef"), clip_eps=config.clip_eps,
        lora_rank=config.lora_rank, temperature=config.temperature, max_new_tokens=getattr(config, f"{side}_max_new_tokens"),
    )
    return CausalLMPolicy(model, grpo, device=config.device, checkpoint=str(checkpoint) if checkpoint else None, seed=config.seed)


def _cloned_folder(run: RunDir, side: str) -> Path:
    """Where the ``sft`` phase writes the cloned model of ``side`` (``trainers.common.sft.sft_lm``)."""
    return run.path / "sft" / side


def _copied_folder(run: RunDir, side: str) -> Path:
    """Where the ``copy`` phase writes ``side``'s warmed-up model (:func:`trainers.rlada.id_copy.warm_up_copying`)."""
    return run.path / "copy" / side


def _start_model(config: RladaTrainConfig, side: str, run: RunDir) -> str:
    """The model the ``sft`` phase clones into: the ``copy`` phase's once it has finished, else the initial one."""
    from trainers.common.sft import SFT_FINISHED

    copied = _copied_folder(run, side)
    return str(copied) if (copied / SFT_FINISHED).exists() else _initial_model(config, side, run)


def _initial_model(config: RladaTrainConfig, side: str, run: RunDir) -> str:
    """The model ``side`` starts from: ``{side}_model``, with "tiny" and "scratch" built in the run folder once."""
    model = getattr(config, f"{side}_model")
    if model in ("tiny", "scratch"):
        from dialogue_gym.backends.tiny import build_tiny_chat_model
        from trainers.common.atomic import saved_folder

        name, model = model, str(run.path / f"{side}_{model}_model" if model == "scratch" else run.path / "tiny_model")
        if not Path(model, "config.json").exists():
            shape = scratch_shape(config, side) if name == "scratch" else {"seed": config.seed, "max_position_embeddings": 4096}
            saved_folder(model, lambda folder: build_tiny_chat_model(folder, **shape))
    return model


def scratch_shape(config: RladaTrainConfig, side: str) -> dict[str, Any]:
    """``build_tiny_chat_model``'s arguments for ``side``'s ``model="scratch"``."""
    from trainers.sead.config import SCRATCH_MODEL

    # Digits one token each (and an id's prefix one piece): the agent copies account ids and amounts from its prompt.
    return {
        "seed": config.seed, "max_position_embeddings": 4096, **SCRATCH_MODEL, "num_hidden_layers": SCRATCH_LAYERS,
        "corpus": router_text(config, side), "digits": True,
    }


SCRATCH_LAYERS = 4
"""Depth of ``model="scratch"``: SEAD's cpu-lm-scratch depth (4 layers fitted its expert where 2 underfit)."""
CORPUS_STREAM = 5
"""Seed stream of the dialogues the scratch tokenizer learns from (apart from every step's seeds)."""


def router_text(config: RladaTrainConfig, side: str) -> list[str]:
    """What ``side`` sees and says in ``sft_episodes`` taxonomy calls of the keyword router and the
    scripted customer (the SFT phase's teacher and counterpart, on starts of their own): the corpus the
    scratch model's tokenizer learns its sentences from."""
    calls = router_calls(config, side, max(1, config.sft_episodes), CORPUS_STREAM)
    return [text for pairs in calls for messages, said in pairs for text in (*(m["content"] for m in messages), said)]


def taxonomy_starts(domain: Domain, count: int, rng: random.Random) -> list[dict[str, Any]]:
    """``count`` taxonomy starts drawn from ``rng``: a random intent at a random concealment level, a fresh bank."""
    intents = domain.intents
    return [
        {"profile": {"intent": intents[rng.randrange(len(intents))].name, "concealment": LEVELS[rng.randrange(3)], "bank_seed": rng.getrandbits(62)}}
        for _ in range(count)
    ]


def router_calls(config: RladaTrainConfig, side: str, count: int, stream: int) -> list[list[list[Any]]]:
    """``count`` taxonomy calls (a random intent at a random level, a fresh bank) of the keyword router and
    the scripted customer on seed stream ``stream``: per call, ``side``'s (chat messages, what it said) pairs."""
    from trainers.rlada.sft import DemoRecorder

    domain = load_domain()
    starts = taxonomy_starts(domain, count, random.Random(mix_seed(config.seed, stream)))
    plan = [(options, mix_seed(config.seed, stream, episode)) for episode, options in enumerate(starts)]
    players = {"agent": KeywordRouterAgent(domain), "customer": ScriptedCustomer(domain)}
    players[side] = DemoRecorder(players[side])
    calls: list[list[list[Any]]] = [[] for _ in plan]
    play(RladaConfig(max_agent_turns=config.max_agent_turns), players, plan, [side], lambda index, trajectory: calls.__setitem__(index, trajectory.meta["records"][side]["pairs"]))
    return calls


def make_side(config: RladaTrainConfig, side: str, domain: Domain, run: RunDir, checkpoint: Path | None):
    """The trainable policy of ``side`` (``agent`` or ``customer``), fresh or from a checkpoint."""
    if getattr(config, f"{side}_policy") == "lm":
        return _lm_policy(config, side, run, checkpoint)
    kind = StrategyAgent if side == "agent" else StrategyCustomer
    if checkpoint is not None:
        return kind.load(domain, checkpoint)
    return kind(domain, getattr(config, f"{side}_learning_rate"))


# -- playing -----------------------------------------------------------------------------------------
def play(
    game_config: RladaConfig,
    players: dict[str, Any],
    plan: Sequence[tuple[dict[str, Any], int]],
    learners: Sequence[str],
    on_done: Callable[[int, Trajectory], None],
    batch_size: int = 256,
) -> None:
    """Play ``plan`` (``(reset options, seed)`` per episode) in lockstep batches; ``on_done(index,
    trajectory)`` as each ends, with each learner's record in ``meta["records"]``."""
    driver = CounterpartDriver(players, learner=None)
    games = [RladaGame(game_config) for _ in range(min(batch_size, len(plan)))]
    for start in range(0, len(plan), batch_size):
        chunk = plan[start : start + batch_size]

        def finished(index: int, trajectory: Trajectory, memories: dict[str, Any], offset: int = start) -> None:
            records = {role: players[role].record(memories[role]) for role in learners}
            trajectory.meta = {**trajectory.meta, "records": records}
            on_done(offset + index, trajectory)

        play_games(games[: len(chunk)], driver, [(seed, options or {}) for options, seed in chunk], finished)


def _episodes(run: RunDir, step: int, resumed: bool, game_config, players, plan, learners) -> list[Trajectory]:
    """Every episode of ``plan`` for ``step``: those already on disk (after a crash) plus the rest, played now."""
    done = run.completed_episodes(step) if resumed else {}
    missing = [e for e in range(len(plan)) if e not in done]
    if missing:

        def keep(index: int, trajectory: Trajectory) -> None:
            trajectory.learner = ",".join(learners) or None
            run.append_trajectories([(missing[index], trajectory)], step)
            done[missing[index]] = trajectory

        play(game_config, players, [plan[e] for e in missing], learners, keep)
    return [done[e] for e in range(len(plan))]


def _grouped(starts: Sequence[dict[str, Any]], group_size: int, seed: int, step: int) -> tuple[list[tuple[dict[str, Any], int]], list[int]]:
    plan, groups = [], []
    for index, options in enumerate(starts):
        for member in range(group_size):
            plan.append((options, mix_seed(seed, step, index, member)))
            groups.append(index)
    return plan, groups


def _update(side: str, policy, trajectories: Sequence[Trajectory], groups: Sequence[int] | None, kind: str) -> dict[str, float]:
    rewards = [t.rewards.get(side, 0.0) for t in trajectories]
    advantages = advantages_for(rewards, kind, groups)
    return {f"{side}/{key}": value for key, value in policy.update([t.meta["records"][side] for t in trajectories], advantages).items()}


def customer_styles(customer: Any, trajectories: Sequence[Trajectory]) -> dict[str, float]:
    """Share of each move at the customer's decisions (strategy customers only): how contextual camouflage spreads."""
    moves = getattr(customer, "moves", None)
    if moves is None:
        return {}
    choices = [moves[choice] for t in trajectories for _, choice, _ in t.meta["records"]["customer"].get("steps", [])]
    return {f"style/{move}": choices.count(move) / max(1, len(choices)) for move in moves}


def _episode_row(trajectories: Sequence[Trajectory]) -> dict[str, float]:
    return {
        "episode/routing_accuracy": rlada_metrics.routing_accuracy(trajectories),
        "episode/strict_pass": rlada_metrics.strict_pass_rate(trajectories),
        "episode/agent_reward": rlada_metrics.mean_reward(trajectories, "agent"),
        "episode/customer_reward": rlada_metrics.mean_reward(trajectories, "customer"),
        "episode/concealment": rlada_metrics.customer_turn_rate(trajectories, "concealment"),
    }


# -- the phases ---------------------------------------------------------------------------------------
class CoEvolution:
    """One run: the policies, the run folder and the committed state; :meth:`step` plays the next step."""

    def __init__(self, config: RladaTrainConfig, run: RunDir, state: dict[str, Any], resumed: bool):
        self.config, self.run, self.state, self.resumed = config, run, state, resumed
        self.domain = load_domain()
        self.game_config = RladaConfig(max_agent_turns=config.max_agent_turns)
        self.agent = make_side(config, "agent", self.domain, run, self._checkpoint("agent"))
        self.customer = make_side(config, "customer", self.domain, run, self._checkpoint("customer"))
        self._pool: tuple[tuple[int, ...], list[Trajectory]] = ((), [])
        self.rule = StoppingRule(config.min_matches, config.max_matches, config.win_threshold, config.patience, config.stability_epsilon)

    def _checkpoint(self, side: str) -> Path | None:
        name = self.state["checkpoints"].get(side)
        return self.run.path / name if name else None

    def _rng(self, step: int) -> random.Random:
        return random.Random(mix_seed(self.config.seed, step, 2))

    def _arena_starts(self, count: int, rng: random.Random) -> list[dict[str, Any]]:
        arena = self.domain.arena
        return [{"scenario": arena[rng.randrange(len(arena))].id, "profile": {"bank_seed": rng.getrandbits(62)}} for _ in range(count)]

    def sft(self, step: int) -> dict[str, Any]:
        """DA0's supervised bootstrap on keyword-router demonstrations (taxonomy, all levels)."""
        rng = self._rng(step)
        plan = [(options, mix_seed(self.config.seed, step, i)) for i, options in enumerate(taxonomy_starts(self.domain, self.config.sft_episodes, rng))]
        teacher = KeywordRouterAgent(self.domain)
        if isinstance(self.agent, StrategyAgent):
            self.agent.teacher = teacher
            players = {"agent": self.agent, "customer": ScriptedCustomer(self.domain)}
            trajectories = _episodes(self.run, step, self.resumed, self.game_config, players, plan, ["agent"])
            self.agent.teacher = None
            update = self.agent.imitate([t.meta["records"]["agent"] for t in trajectories], self.config.sft_epochs)
        else:
            from trainers.common.sft import sft_lm
            from trainers.rlada.sft import DemoRecorder, demonstration_rows

            players = {"agent": DemoRecorder(teacher), "customer": ScriptedCustomer(self.domain)}
            trajectories = _episodes(self.run, step, self.resumed, self.game_config, players, plan, ["agent"])
            sessions = [demonstration_rows(t.meta["records"]["agent"]["pairs"]) for t in trajectories]
            # The shared SFT phase (cosine schedule with warm-up at its own rate, calls packed one sequence
            # each, resumable); the agent then reloads on the clone, with a fresh optimizer at the RL rate.
            update = sft_lm(
                _start_model(self.config, "agent", self.run), sessions, _cloned_folder(self.run, "agent"), epochs=1,
                learning_rate=self.config.sft_learning_rate, seed=self.config.seed, batch_size=self.config.sft_batch_size,
                accumulation=1, max_steps=self.config.sft_epochs,
            )
            self.run.save_state("sft", update)
            update = {key: value for key, value in update.items() if key != "sft/curve"}
            self.agent = _lm_policy(self.config, "agent", self.run, None)
        return {"updated": ["agent"], **_episode_row(trajectories), **update}

    def copy(self, step: int) -> dict[str, Any]:
        """The agent LM's copy warm-up on lines built from what the router's calls say (the scratch
        tokenizer's corpus); the model it saves in the run folder is what ``sft`` clones into."""
        from trainers.rlada.id_copy import warm_up_copying

        update = warm_up_copying(
            _initial_model(self.config, "agent", self.run), _copied_folder(self.run, "agent"), self.config.copy_steps,
            router_text(self.config, "agent"), self.config.seed,
        )
        self.run.save_state("copy", update)
        self.agent = _lm_policy(self.config, "agent", self.run, None)
        # No checkpoint of its own: the finished copy folder is the agent's model until SFT replaces it.
        return {"updated": [], **{key: value for key, value in update.items() if key != "copy/curve"}}

    def warmup_agent(self, step: int) -> dict[str, Any]:
        rng = self._rng(step)
        starts = taxonomy_starts(self.domain, max(1, self.config.warmup_batch // self.config.group_size), rng)
        plan, groups = _grouped(starts, self.config.group_size, self.config.seed, step)
        players = {"agent": self.agent, "customer": ScriptedCustomer(self.domain)}
        trajectories = _episodes(self.run, step, self.resumed, self.game_config, players, plan, ["agent"])
        return {"updated": ["agent"], **_episode_row(trajectories), **_update("agent", self.agent, trajectories, groups, self.config.advantage)}

    def warmup_customer(self, step: int) -> dict[str, Any]:
        rng = self._rng(step)
        starts = self._arena_starts(max(1, self.config.warmup_batch // self.config.group_size), rng)
        plan, groups = _grouped(starts, self.config.group_size, self.config.seed, step)
        players = {"agent": self.agent, "customer": self.customer}
        trajectories = _episodes(self.run, step, self.resumed, self.game_config, players, plan, ["agent", "customer"])
        return {"updated": ["customer"], **_episode_row(trajectories), **_update("customer", self.customer, trajectories, groups, self.config.advantage)}

    def heldout(self, step: int, name: str) -> dict[str, Any]:
        """The agent (greedy) on the 12 fixed held-out scenarios against the scripted customer at each scenario's level."""
        plan = heldout_plan(self.domain, self.config.heldout_repeats, self.config.eval_seed)
        greedy = getattr(self.agent, "greedy", None)
        if greedy is not None:
            self.agent.greedy = True
        players = {"agent": self.agent, "customer": ScriptedCustomer(self.domain)}
        trajectories = _episodes(self.run, step, self.resumed, self.game_config, players, plan, [])
        if greedy is not None:
            self.agent.greedy = greedy
        result = heldout_result(trajectories)
        self.run.save_state(name, result)
        return {"updated": [], **{f"{name}/{k}": v for k, v in result.items() if not isinstance(v, dict)}}

    def heldout_baseline(self) -> dict[str, Any]:
        """The fair scripted agents on the same held-out episodes (scripted customer): the best one's
        result by strict PASS, and every one's strict PASS (not stored as trajectories: nothing trains on them)."""
        plan = heldout_plan(self.domain, self.config.heldout_repeats, self.config.eval_seed)
        results = {}
        for name, agent in fair_baselines("RLADA-Banking-v0").items():
            played: dict[int, Trajectory] = {}
            play(self.game_config, {"agent": agent, "customer": ScriptedCustomer(self.domain)}, plan, [], played.__setitem__)
            results[name] = heldout_result([played[index] for index in range(len(plan))])
        best, _ = best_baseline({name: result["strict_pass"] for name, result in results.items()}, lambda rate: -rate)
        return {"agent": best, **results[best], "strict_pass_per_agent": {name: result["strict_pass"] for name, result in results.items()}}

    def match(self, step: int, number: int) -> dict[str, Any]:
        plan = match_plan(self.domain, self.config.episodes_per_scenario, self.config.seed, step)
        players = {"agent": self.agent, "customer": self.customer}
        trajectories = _episodes(self.run, step, self.resumed, self.game_config, players, plan, ["agent", "customer"])
        summary = {**match_summary(trajectories), **customer_styles(self.customer, trajectories)}
        self.state["matches"].append({"match": number, "step": step, **summary})
        self._write_examples(number, trajectories)
        row = {f"arena/{k}": v for k, v in summary.items() if not isinstance(v, dict)}
        row.update({f"arena/scenario/{k}": v for k, v in summary["per_scenario"].items()})
        return {"updated": [], "match": number, **row}

    def gym(self, step: int, side: str, index: int) -> dict[str, Any]:
        """One isolation-gym iteration of ``side`` against the frozen other side."""
        recent = tuple(m["step"] for m in self.state["matches"][-self.config.recent_matches :])
        if self._pool[0] != recent:
            pool = []
            for match_step in recent:
                episodes = self.run.completed_episodes(match_step)
                pool.extend(episodes[e] for e in sorted(episodes))
            self._pool = (recent, pool)
        pool = self._pool[1]
        rng = self._rng(step)
        starts = [{"profile": profile} for profile in gym_starts(pool, side, self.config.gym_starts, self.config.failure_fraction, rng)]
        plan, groups = _grouped(starts, self.config.group_size, self.config.seed, step)
        players = {"agent": self.agent, "customer": self.customer}
        trajectories = _episodes(self.run, step, self.resumed, self.game_config, players, plan, ["agent", "customer"])
        policy = self.agent if side == "agent" else self.customer
        return {"updated": [side], "side": side, "gym_iteration": index, **_episode_row(trajectories), **_update(side, policy, trajectories, groups, self.config.advantage)}

    def _write_examples(self, number: int, trajectories: Sequence[Trajectory]) -> None:
        """A readable transcript of one lost and one won episode per scenario (all are in trajectories.jsonl)."""
        from dialogue_gym.scenarios.rlada.judge import transcript_text

        folder = self.run.path / "transcripts"
        folder.mkdir(exist_ok=True)
        blocks = []
        for scenario in self.domain.arena:
            episodes = [t for t in trajectories if t.profile["scenario"] == scenario.id]
            for won in (False, True):
                example = next((t for t in episodes if rlada_metrics.passed(t) == won), None)
                if example is not None:
                    header = f"## {scenario.id} ({scenario.kind}) - agent {'won' if won else 'lost'}; routed {rlada_metrics.verdict(example)['routed_tools']}, target {example.profile['tool']}"
                    blocks.append(f"{header}\n{transcript_text(example)}\n")
        (folder / f"match_{number:02d}.txt").write_text("\n".join(blocks), encoding="utf-8")

    # -- the schedule ----------------------------------------------------------------------------
    def planned_steps(self) -> int:
        """Steps of the whole run if it plays ``max_matches`` matches (with a gym between each two)."""
        config = self.config
        matches = config.max_matches
        return (
            self._copies() + bool(config.sft_episodes) + self._heldout_sft() + config.warmup_agent_iterations + 1 + config.warmup_customer_iterations
            + matches + (matches - 1) * config.gym_iterations + 1
        )

    def _heldout_sft(self) -> bool:
        """Whether the run evaluates the clone right after SFT: an LM agent that was cloned."""
        return bool(self.config.sft_episodes) and self.config.agent_policy == "lm"

    def _copies(self) -> bool:
        """Whether the run starts with the agent LM's copy warm-up (the config allows it for an LM agent only)."""
        return self.config.copy_steps > 0

    def first_phase(self) -> dict[str, Any]:
        if self._copies():
            return {"phase": "copy"}
        return self.after({"phase": "copy"})

    def after(self, phase: dict[str, Any]) -> dict[str, Any]:
        """The step that follows ``phase`` (and whatever the state says about matches)."""
        config, kind = self.config, phase["phase"]
        if kind == "copy":
            return {"phase": "sft"} if config.sft_episodes else self.after({"phase": "sft"})
        if kind == "sft" and self._heldout_sft():
            return {"phase": "heldout_sft"}
        if kind in ("sft", "heldout_sft") and config.warmup_agent_iterations:
            return {"phase": "warmup_agent", "index": 0}
        if kind == "warmup_agent" and phase["index"] + 1 < config.warmup_agent_iterations:
            return {"phase": "warmup_agent", "index": phase["index"] + 1}
        if kind in ("sft", "heldout_sft", "warmup_agent"):
            return {"phase": "heldout_before"}
        if kind == "heldout_before" and config.warmup_customer_iterations:
            return {"phase": "warmup_customer", "index": 0}
        if kind == "warmup_customer" and phase["index"] + 1 < config.warmup_customer_iterations:
            return {"phase": "warmup_customer", "index": phase["index"] + 1}
        if kind in ("heldout_before", "warmup_customer"):
            return {"phase": "match", "match": 1}
        if kind == "match":
            stop, reason = self.rule.decide([m["win_rate"] for m in self.state["matches"]])
            self.state["stop_reason"] = reason if stop else None
            if stop:
                return {"phase": "heldout_after"}
            side = weaker_side(self.state["matches"][-1]["win_rate"], config.weaker_threshold)
            if not config.gym_iterations:
                return {"phase": "match", "match": phase["match"] + 1}
            return {"phase": "gym", "side": side, "index": 0, "match": phase["match"]}
        if kind == "gym" and phase["index"] + 1 < config.gym_iterations:
            return {**phase, "index": phase["index"] + 1}
        if kind == "gym":
            self.state["versions"][phase["side"]] += 1
            return {"phase": "match", "match": phase["match"] + 1}
        return {"phase": "done"}

    def step(self) -> dict[str, Any]:
        """Play, update and commit the next step; returns its metrics row."""
        phase = self.state["next"]
        step = self.state["step"] + 1
        started = time.perf_counter()
        kind = phase["phase"]
        if kind == "copy":
            row = self.copy(step)
        elif kind == "sft":
            row = self.sft(step)
        elif kind == "warmup_agent":
            row = self.warmup_agent(step)
        elif kind == "warmup_customer":
            row = self.warmup_customer(step)
        elif kind in ("heldout_sft", "heldout_before", "heldout_after"):
            row = self.heldout(step, kind)
        elif kind == "match":
            row = self.match(step, phase["match"])
        else:
            row = self.gym(step, phase["side"], phase["index"])
        self.commit(step, phase, row, time.perf_counter() - started)
        return row

    def commit(self, step: int, phase: dict[str, Any], row: dict[str, Any], seconds: float) -> None:
        """Checkpoints first, then the metrics row, then the progress record that points at them."""
        for side in row.pop("updated"):
            name = f"checkpoints/{side}_step_{step:04d}"
            (self.agent if side == "agent" else self.customer).save(self.run.path / name)
            self.state["checkpoints"][side] = name
        self.run.append_metrics({"iteration": step, "phase": phase["phase"], **row, "time/seconds": seconds})
        self.state["next"] = self.after(phase)
        self.state["step"] = step
        self.run.save_state("progress", self.state)
        self.resumed = False
        keep = set(self.state["checkpoints"].values())
        for side in ("agent", "customer"):
            old = sorted((self.run.path / "checkpoints").glob(f"{side}_step_*"))[:-KEEP_CHECKPOINTS]
            for folder in old:
                if f"checkpoints/{folder.name}" not in keep:
                    shutil.rmtree(folder, ignore_errors=True)


def heldout_result(trajectories: Sequence[Trajectory]) -> dict[str, Any]:
    groups = rlada_metrics.by_group(trajectories, "scenario")
    return {
        "routing_accuracy": rlada_metrics.routing_accuracy(trajectories),
        "strict_pass": rlada_metrics.strict_pass_rate(trajectories),
        "lookup_first": rlada_metrics.component_rate(trajectories, "lookup_first"),
        "agent_reward": rlada_metrics.mean_reward(trajectories, "agent"),
        "episodes": len(trajectories),
        "per_scenario": {k: v["strict_pass_rate"] for k, v in groups.items()},
        "per_scenario_routing": {k: v["routing_accuracy"] for k, v in groups.items()},
        "passed": [int(rlada_metrics.passed(t)) for t in trajectories],
        "scenarios": [str(t.profile.get("scenario")) for t in trajectories],
    }


def paired_strict_pass(before: dict[str, Any], after: dict[str, Any], resamples: int = 1000, seed: int = 0) -> dict[str, float]:
    """The change of strict PASS from the held-out result ``before`` to ``after`` (:func:`heldout_result`
    of the same held-out episodes), with the percentile bootstrap interval of the paired change: a
    resample draws held-out scenarios (a scenario's repeats go together) once for both sides."""
    from dialogue_gym.errors import ConfigError
    from dialogue_gym.metrics.core import bootstrap_resamples, percentile_interval, ratio_of_sums, resampled_ratios

    if before.get("scenarios") != after.get("scenarios") or "passed" not in before or "passed" not in after:
        raise ConfigError(
            "paired_strict_pass needs two held-out results of the same episodes, each with 'passed' and 'scenarios' "
            f"({len(before.get('passed', []))} and {len(after.get('passed', []))} episodes given); evaluate both on heldout_plan."
        )
    scenarios = sorted(set(before["scenarios"]))
    rows = bootstrap_resamples(len(scenarios), resamples, seed)
    sides = {}
    for name, result in (("before", before), ("after", after)):
        passes = [sum(p for p, s in zip(result["passed"], result["scenarios"]) if s == scenario) for scenario in scenarios]
        counts = [result["scenarios"].count(scenario) for scenario in scenarios]
        sides[name] = (ratio_of_sums(passes, counts), resampled_ratios(passes, counts, rows))
    low, high = percentile_interval(sides["after"][1] - sides["before"][1])
    return {"before": sides["before"][0], "after": sides["after"][0], "change": sides["after"][0] - sides["before"][0],
            "change_low": low, "change_high": high, "episodes": len(before["passed"])}


def save_heldout_changes(run: RunDir, seed: int) -> None:
    """The paired strict PASS changes to the end of the run, each saved once: from after the warm-up
    (``heldout_change``) and, for a cloned LM agent, from right after SFT (``heldout_change_sft``)."""
    after = run.load_state("heldout_after", HELDOUT_FIELDS)
    for start, saved in (("heldout_before", "heldout_change"), ("heldout_sft", "heldout_change_sft")):
        before = run.load_state(start, HELDOUT_FIELDS)
        if before and after and "passed" in before and run.load_state(saved, {}) is None:
            run.save_state(saved, paired_strict_pass(before, after, seed=seed))


def new_state() -> dict[str, Any]:
    """The progress record of a run that has committed nothing yet."""
    return {"step": -1, "next": None, "matches": [], "checkpoints": {}, "versions": {"agent": 0, "customer": 0}, "stop_reason": None}


PHASES = ("copy", "sft", "heldout_sft", "warmup_agent", "heldout_before", "warmup_customer", "match", "gym", "heldout_after", "done")
PROGRESS_FIELDS = {"step": int, "next": dict, "matches": list, "checkpoints": dict, "versions": dict, "stop_reason": (str, type(None))}
HELDOUT_FIELDS = {"routing_accuracy": (int, float), "strict_pass": (int, float)}
BASELINE_FIELDS = {**HELDOUT_FIELDS, "agent": str, "strict_pass_per_agent": dict}
COPY_FIELDS = {"copy/steps": (int, float), "copy/heldout_tokens": (int, float), "copy/heldout_replies": (int, float)}


def load_progress(run: RunDir, checkpoints: bool = True) -> dict[str, Any] | None:
    """The committed state, checked field by field (a wrong one names the file and the field); with
    ``checkpoints=False`` the checkpoints it names need not exist (a run's files saved without them, read
    for its :func:`summary`)."""
    state = run.load_state("progress", PROGRESS_FIELDS)
    if state is None:
        return None
    path = run.state_path("progress")

    def wrong(field: str, expected: str, got: Any) -> RunFolderError:
        return RunFolderError(f"{path}: field {field!r} must be {expected}, got {got!r:.80}; {STATE_FIX}.")

    if state["step"] < -1:
        raise wrong("step", "an int >= -1", state["step"])
    if state["next"].get("phase") not in PHASES:
        raise wrong("next.phase", f"one of {PHASES}", state["next"].get("phase"))
    for position, match in enumerate(state["matches"]):
        if not isinstance(match, dict) or not all(has_kind(match.get(k), int) for k in ("match", "step")) or not has_kind(match.get("win_rate"), (int, float)):
            raise wrong(f"matches[{position}]", "an object with int 'match' and 'step' and a number 'win_rate'", match)
    for side, name in state["checkpoints"].items():
        if side not in ("agent", "customer"):
            raise wrong(f"checkpoints.{side}", "absent (only 'agent' and 'customer' have checkpoints)", name)
        if checkpoints:
            run.checkpoint_path("progress", f"checkpoints.{side}", name)
    for side in ("agent", "customer"):
        if not has_kind(state["versions"].get(side), int):
            raise wrong(f"versions.{side}", "an int", state["versions"].get(side))
    return state


def train(config: RladaTrainConfig, resume: bool = False) -> RunDir:
    # Everything the config can get wrong fails here, before the run folder is touched.
    RladaConfig(max_agent_turns=config.max_agent_turns)
    run = RunDir.resume(config.resolved_run_dir()) if resume else RunDir.create(config.resolved_run_dir(), config.to_dict())
    with run:
        if "lm" in (config.agent_policy, config.customer_policy):
            from trainers.common.threads import run_threads

            print(run_threads(run, config.threads)[1], file=sys.stderr)
        _train(config, run, resume)
    return run


def _train(config: RladaTrainConfig, run: RunDir, resume: bool) -> None:
    state = load_progress(run)
    if state is not None:
        run.truncate_metrics_after(state["step"])
    fresh = state is None
    state = state or new_state()
    evolution = CoEvolution(config, run, state, resumed=resume)
    if fresh:
        state["next"] = evolution.first_phase()
    bar = tqdm(desc="RL-ADA", file=sys.stderr, initial=state["step"] + 1, total=evolution.planned_steps(), unit="step")
    while state["next"]["phase"] != "done":
        row = evolution.step()
        bar.update(1)
        if "arena/win_rate" in row:
            bar.set_postfix(match=row["match"], win=f"{row['arena/win_rate']:.2f}")
    bar.total = bar.n  # the stopping rule may end the run before max_matches
    bar.refresh()
    bar.close()
    if run.load_state("heldout_baseline", BASELINE_FIELDS) is None:
        run.save_state("heldout_baseline", evolution.heldout_baseline())
    save_heldout_changes(run, config.seed)
    if config.plots:
        from trainers.rlada.plots import plot_run

        plot_run(run)


def _verified(result: dict[str, Any]) -> str:
    """The share of held-out calls whose account lookup succeeded before any domain tool, where the result
    has it (runs made before it was recorded do not)."""
    return f", account verified first {result['lookup_first']:.3f}" if "lookup_first" in result else ""


def summary(run: RunDir) -> list[str]:
    """What a finished run prints: the copy warm-up's held-out copying and the clone's held-out routing and
    strict PASS when the run had them, each match's win rate, why the loop stopped, and the held-out routing
    and strict PASS from after the warm-up to the end beside the best scripted baseline, with the paired
    change. Read from the run folder's files only, so ``tools/docs_tables.py`` renders a saved run's files with it."""
    lines = []
    state = load_progress(run, checkpoints=False)
    copied = run.load_state("copy", COPY_FIELDS)
    if copied:
        lines.append(
            f"copy warm-up: {copied['copy/steps']:.0f} steps; held-out copy lines: reply tokens right {copied['copy/heldout_tokens']:.3f}, "
            f"whole replies right {copied['copy/heldout_replies']:.3f}"
        )
    cloned = run.load_state("heldout_sft", HELDOUT_FIELDS)
    if cloned:
        lines.append(f"held-out after SFT: routing {cloned['routing_accuracy']:.3f}, strict PASS {cloned['strict_pass']:.3f}{_verified(cloned)}")
    for match in state["matches"]:
        lines.append(f"match {match['match']}: agent win rate {match['win_rate']:.3f} (safety {match['safety_pass_rate']:.3f})")
    lines.append(f"stopped: {state['stop_reason']}")
    before, after = run.load_state("heldout_before", HELDOUT_FIELDS), run.load_state("heldout_after", HELDOUT_FIELDS)
    baseline = run.load_state("heldout_baseline", BASELINE_FIELDS)
    if before and after:
        beside = (
            f"; best scripted baseline {baseline['agent']}: routing {baseline['routing_accuracy']:.3f}, strict PASS {baseline['strict_pass']:.3f}"
            if baseline else ""
        )
        verified = f", account verified first {before['lookup_first']:.3f} -> {after['lookup_first']:.3f}" if "lookup_first" in before and "lookup_first" in after else ""
        lines.append(
            f"held-out routing {before['routing_accuracy']:.3f} -> {after['routing_accuracy']:.3f}, strict PASS {before['strict_pass']:.3f} -> "
            f"{after['strict_pass']:.3f}{verified}{beside}"
        )
    for saved, start in (("heldout_change_sft", "after SFT"), ("heldout_change", "after the warm-up")):
        change = run.load_state(saved, {})
        if change:
            lines.append(
                f"held-out strict PASS {start} {change['before']:.3f} -> at the end {change['after']:.3f}: change {change['change']:+.3f} "
                f"[{change['change_low']:+.3f}, {change['change_high']:+.3f}] (paired over the same {change['episodes']} episodes, resampling scenarios)"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    cli = parser()

    def run_from_cli() -> int:
        config, resume = config_from_cli(cli, build_config, argv)
        run = train(config, resume=resume)
        for line in summary(run):
            print(line)
        print(f"run folder: {run.path}")
        return 0

    return run_main(cli.prog, run_from_cli)
