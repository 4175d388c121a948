"""Recorded runs as Hugging Face ``datasets`` (``dialogue-gym export RUN.jsonl --format ... -o DIR``).

Each trajectory of the JSONL file (``dialogue-gym eval --out``, :func:`dialogue_gym.evaluation.evaluate`)
is replayed through its game's rules (:func:`~dialogue_gym.integrations.common.replay`) to recover the
learner's chat exactly as the env showed it, which also checks that the record and the env kwargs
given match. Three formats, every row carrying ``env_id``, ``env_kwargs`` (JSON), ``learner``,
``seed``, ``version`` (of dialogue_gym) and ``source_hash`` (SHA-256 of the trajectory's canonical JSON):

- ``sft``: one row per dialogue: ``messages`` (the learner's chat: its system prompt, what it heard
  as ``user`` / ``tool``, its raw outputs as ``assistant``), ``outcome``, ``reward`` (the learner's
  return), ``rewards`` (per role) and ``reward_terms`` (``[{"name": "<role>/<term>", "value"}]``).
- ``preference``: per start state (same id, env kwargs, learner, seed and start profile) with at
  least two dialogues of different learner reward, the best and the worst: ``prompt`` (the shared
  start of their chats), ``chosen`` / ``rejected`` (the rest), TRL's conversational preference format,
  with each side's reward, outcome, reward terms and source hash.
- ``rollouts``: the ``sft`` columns plus everything of the trajectory (``scenario``, ``profile`` and
  ``meta`` as JSON, ``turns`` with raw and heard text, parsed fields as JSON, hidden state, invalid
  reason, token ids and logprobs): :func:`trajectories_from_dataset` rebuilds the trajectories.

``profile``, ``meta`` and each turn's ``state`` hold privileged data (hidden state, references,
target labels); ``messages``, ``prompt``, ``chosen`` and ``rejected`` hold only what the learner saw.
Dialogues in which the learner never moved have nothing to learn from and are left out of
``sft`` and ``preference`` (``rollouts`` keeps every one).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import dialogue_gym
from dialogue_gym.errors import ConfigError, DependencyNotInstalled
from dialogue_gym.evaluation import load_trajectories
from dialogue_gym.integrations.common import env_id_of, json_kwargs, learner_of, replay
from dialogue_gym.types import Outcome, Trajectory, Turn

FORMATS = ("sft", "preference", "rollouts")


def _datasets():
    try:
        import datasets
    except ImportError as exc:
        raise DependencyNotInstalled("datasets", "datasets", "Exporting runs as Hugging Face datasets") from exc
    return datasets


def source_hash(trajectory: Trajectory) -> str:
    """SHA-256 of the trajectory's canonical JSON (sorted keys, no spaces): the same record hashes the
    same wherever and however it was written."""
    text = json.dumps(trajectory.to_dict(), sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _features(format: str):
    datasets = _datasets()
    Value, List = datasets.Value, datasets.List
    chat = List({"role": Value("string"), "content": Value("string")})
    named = List({"name": Value("string"), "value": Value("float64")})
    common = {
        "env_id": Value("string"),
        "env_kwargs": Value("string"),
        "learner": Value("string"),
        "seed": Value("int64"),
        "version": Value("string"),
    }
    dialogue = {"outcome": Value("string"), "reward": Value("float64"), "rewards": named, "reward_terms": named, "source_hash": Value("string")}
    if format == "sft":
        return datasets.Features({**common, "messages": chat, **dialogue})
    if format == "rollouts":
        turn = {
            "role": Value("string"),
            "raw": Value("string"),
            "text": Value("string"),
            "parsed": Value("string"),
            "state": List(Value("int64")),
            "invalid": Value("string"),
            "token_ids": List(Value("int64")),
            "logprobs": List(Value("float64")),
        }
        extra = {"scenario": Value("string"), "profile": Value("string"), "meta": Value("string"), "turns": List(turn)}
        return datasets.Features({**common, "messages": chat, **dialogue, **extra})
    side = {f"{side}_{key}": value for side in ("chosen", "rejected") for key, value in dialogue.items()}
    return datasets.Features({**common, "prompt": chat, "chosen": chat, "rejected": chat, **side})


@dataclass
class _Dialogue:
    trajectory: Trajectory
    messages: list[dict[str, str]]
    learner: str
    source_hash: str

    @property
    def reward(self) -> float:
        return float(self.trajectory.rewards.get(self.learner, 0.0))

    @property
    def learner_moved(self) -> bool:
        return any(turn.role == self.learner for turn in self.trajectory.turns)

    def columns(self) -> dict[str, Any]:
        trajectory = self.trajectory
        return {
            "outcome": trajectory.outcome.value if trajectory.outcome is not None else None,
            "reward": self.reward,
            "rewards": [{"name": role, "value": float(value)} for role, value in trajectory.rewards.items()],
            "reward_terms": [{"name": name, "value": float(value)} for name, value in trajectory.reward_terms.items()],
            "source_hash": self.source_hash,
        }


def _dialogues(trajectories: Iterable[Trajectory], env_kwargs: dict[str, Any]) -> list[_Dialogue]:
    dialogues = []
    for trajectory in trajectories:
        game = replay(trajectory, env_kwargs)
        learner = learner_of(env_id_of(trajectory), trajectory.learner)
        messages = [dict(m) for m in game.observe(learner)["messages"]]
        dialogues.append(_Dialogue(trajectory, messages, learner, source_hash(trajectory)))
    return dialogues


def _common(dialogue: _Dialogue, env_kwargs_json: str) -> dict[str, Any]:
    return {
        "env_id": env_id_of(dialogue.trajectory),
        "env_kwargs": env_kwargs_json,
        "learner": dialogue.learner,
        "seed": dialogue.trajectory.seed,
        "version": dialogue_gym.__version__,
    }


def _rollout_columns(trajectory: Trajectory) -> dict[str, Any]:
    return {
        "scenario": trajectory.scenario,
        "profile": json.dumps(trajectory.profile, allow_nan=False),
        "meta": json.dumps(trajectory.meta, allow_nan=False),
        "turns": [
            {
                "role": turn.role,
                "raw": turn.raw,
                "text": turn.text,
                "parsed": json.dumps(turn.parsed, allow_nan=False),
                "state": list(turn.state) if turn.state is not None else None,
                "invalid": turn.invalid,
                "token_ids": turn.token_ids,
                "logprobs": turn.logprobs,
            }
            for turn in trajectory.turns
        ],
    }


def _start_key(dialogue: _Dialogue) -> tuple:
    trajectory = dialogue.trajectory
    return (env_id_of(trajectory), dialogue.learner, trajectory.seed, json.dumps(trajectory.profile, sort_keys=True))


def _split_at_shared_start(chosen: list[dict[str, str]], rejected: list[dict[str, str]]) -> int:
    """How many leading messages two chats share, cut back so that both continue with a learner
    (``assistant``) message: DPO compares continuations of one prompt."""
    shared = 0
    while shared < min(len(chosen), len(rejected)) and chosen[shared] == rejected[shared]:
        shared += 1
    while shared > 0 and not (
        shared < len(chosen) and shared < len(rejected) and chosen[shared]["role"] == rejected[shared]["role"] == "assistant"
    ):
        shared -= 1
    return shared


def preference_pairs(dialogues: Sequence[_Dialogue]) -> list[tuple[_Dialogue, _Dialogue]]:
    """``(best, worst)`` by the learner's reward per start state, in order of first appearance; ties
    go to the earlier dialogue, and a start state whose dialogues all earned the same has no pair."""
    groups: dict[tuple, list[_Dialogue]] = {}
    for dialogue in dialogues:
        if dialogue.learner_moved:
            groups.setdefault(_start_key(dialogue), []).append(dialogue)
    pairs = []
    for group in groups.values():
        best = max(group, key=lambda d: d.reward)
        worst = min(group, key=lambda d: d.reward)
        if best.reward > worst.reward:
            pairs.append((best, worst))
    return pairs


def build_rows(trajectories: Sequence[Trajectory], format: str, env_kwargs: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The rows of ``format`` for ``trajectories`` played with ``env_kwargs`` (see the module docstring)."""
    if format not in FORMATS:
        raise ConfigError(f"format={format!r} is not supported; use one of {', '.join(map(repr, FORMATS))}.")
    env_kwargs = json_kwargs(env_kwargs)
    env_kwargs_json = json.dumps(env_kwargs, sort_keys=True)
    dialogues = _dialogues(trajectories, env_kwargs)
    if format == "preference":
        rows = []
        for chosen, rejected in preference_pairs(dialogues):
            shared = _split_at_shared_start(chosen.messages, rejected.messages)
            row = {**_common(chosen, env_kwargs_json), "prompt": chosen.messages[:shared]}
            row["chosen"], row["rejected"] = chosen.messages[shared:], rejected.messages[shared:]
            for side, dialogue in (("chosen", chosen), ("rejected", rejected)):
                row.update({f"{side}_{key}": value for key, value in dialogue.columns().items()})
            rows.append(row)
        return rows
    rows = []
    for dialogue in dialogues:
        if format == "sft" and not dialogue.learner_moved:
            continue
        row = {**_common(dialogue, env_kwargs_json), "messages": dialogue.messages, **dialogue.columns()}
        if format == "rollouts":
            row.update(_rollout_columns(dialogue.trajectory))
        rows.append(row)
    return rows


def to_dataset(trajectories: Sequence[Trajectory], format: str, env_kwargs: dict[str, Any] | None = None):
    """A ``datasets.Dataset`` of ``format`` rows for ``trajectories`` (see the module docstring)."""
    datasets = _datasets()
    rows = build_rows(trajectories, format, env_kwargs)
    return datasets.Dataset.from_list(rows, features=_features(format))


def export(
    run: str | Path, format: str, out: str | Path, *, env_kwargs: dict[str, Any] | None = None, parquet: bool = False
) -> Any:
    """Write the trajectories of the JSONL file ``run`` as a ``format`` dataset: Arrow with
    ``save_to_disk(out)`` (``datasets.load_from_disk(out)`` reads it), or with ``parquet=True`` the
    file ``out/<format>.parquet``. ``env_kwargs`` are those the run was played with. Returns the dataset."""
    dataset = to_dataset(load_trajectories(run), format, env_kwargs)
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"-o {str(out)!r} exists and is not an empty folder; pass a new folder for the dataset.")
    if parquet:
        out.mkdir(parents=True, exist_ok=True)
        dataset.to_parquet(str(out / f"{format}.parquet"))
    else:
        dataset.save_to_disk(str(out))
    return dataset


def trajectories_from_dataset(dataset: Any) -> list[Trajectory]:
    """The trajectories a ``rollouts`` dataset (or any iterable of its rows) was exported from."""
    trajectories = []
    for index, row in enumerate(dataset):
        if "turns" not in row:
            raise ConfigError(f"row {index} has no 'turns' column: only a 'rollouts' export can be turned back into trajectories.")
        turns = [
            Turn(
                role=turn["role"],
                raw=turn["raw"],
                text=turn["text"],
                parsed=json.loads(turn["parsed"]),
                state=tuple(turn["state"]) if turn["state"] is not None else None,
                invalid=turn["invalid"],
                token_ids=turn["token_ids"],
                logprobs=turn["logprobs"],
            )
            for turn in row["turns"]
        ]
        trajectories.append(
            Trajectory(
                scenario=row["scenario"],
                seed=row["seed"],
                profile=json.loads(row["profile"]),
                turns=turns,
                outcome=Outcome(row["outcome"]) if row["outcome"] is not None else None,
                rewards={item["name"]: item["value"] for item in row["rewards"]},
                reward_terms={item["name"]: item["value"] for item in row["reward_terms"]},
                learner=row["learner"],
                meta=json.loads(row["meta"]),
            )
        )
    return trajectories
