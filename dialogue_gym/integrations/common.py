"""What the integrations share, needing none of their libraries.

- :class:`LearnerEpisodes`: episodes of one id whose learner moves come from outside (a trainer's
  model, an OpenEnv client, a ``verifiers`` rollout) while the env's own policies play every other
  role, batched across episodes as in the vector view.
- Training starts: episode ``i`` of a training set starts like evaluation episode ``i`` of
  :func:`dialogue_gym.evaluation.evaluate` (seed ``seed + i``, the game's fixed evaluation options),
  so every generation of one prompt, in every integration, meets the same start state.
- :func:`replay`: a recorded trajectory's moves stepped through its game's rules again, which gives
  back what each role saw (the chat messages an export writes) and checks the record.

A learner that stops before the dialogue is over (a model that ends without calling the env's tool,
a rollout out of token budget) is **silent for the rest of it**: the env plays its remaining turns as
empty moves until its own rules end the dialogue, and it is scored by them. Walking away is never a
way around a scenario's turn costs and deductions, and the reward is always the env's.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from dialogue_gym.errors import ConfigError, ScenarioError
from dialogue_gym.evaluation import make_learner_env
from dialogue_gym.game import Game
from dialogue_gym.types import Outcome, Trajectory
from envs_registry import get, resolve

SILENCE = ""
"""The move of a learner that has stopped talking."""

MAX_SILENT_MOVES = 1000
"""More empty moves than any scenario's turn limit allows: a game still running after these has no turn limit."""


def check_kwargs(env_kwargs: dict[str, Any] | None, flag: str = "env_kwargs") -> dict[str, Any]:
    """A copy of ``env_kwargs`` (``{}`` for ``None``); anything but a dict is a ConfigError."""
    if env_kwargs is None:
        return {}
    if not isinstance(env_kwargs, dict):
        raise ConfigError(f"{flag} must be a dict of env keyword arguments, got {type(env_kwargs).__name__}: {env_kwargs!r:.80}.")
    return dict(env_kwargs)


def json_kwargs(env_kwargs: dict[str, Any] | None, flag: str = "env_kwargs") -> dict[str, Any]:
    """``env_kwargs`` checked to be JSON data, for what is written down or sent over the wire (a backend
    by spec, never a live object)."""
    env_kwargs = check_kwargs(env_kwargs, flag)
    try:
        json.dumps(env_kwargs, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"{flag} must be JSON data (pass backends by spec, e.g. {{'name': 'transformers', 'model': ...}}), "
            f"got {env_kwargs!r:.120}: {exc}."
        ) from exc
    return env_kwargs


def learner_of(env_id: str, learner: str | None) -> str:
    """``learner``, or ``env_id``'s default learner role; an unknown id or role is a ConfigError naming the choices."""
    entry = get(env_id)
    if learner is None:
        return entry.default_learner
    if learner not in entry.roles:
        raise ConfigError(f"learner={learner!r} is not a role of {env_id}; choose one of {list(entry.roles)}.")
    return learner


def make_game(env_id: str, env_kwargs: dict[str, Any] | None = None) -> Game:
    """The rules of ``env_id`` configured by ``env_kwargs`` (role keywords are accepted and unused):
    no policy and no backend is built."""
    _, game = resolve(get(env_id).entry_point).split(check_kwargs(env_kwargs))
    return game


def check_episode(episode: Any, seed: Any) -> tuple[int, int]:
    for name, value in (("episode", episode), ("seed", seed)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"{name} must be a non-negative int, got {type(value).__name__}: {value!r:.80}.")
    return episode, seed


class LearnerEpisodes:
    """Episodes of ``env_id`` in which the ``learner`` role's moves are supplied by :meth:`move` and
    every other role is played by the policies ``env_kwargs`` choose (scripted by default).

    Slot ``k`` holds one episode at a time; :meth:`start` (re)starts slots, and the counterpart moves
    of one :meth:`move` call go to each counterpart policy as one batch.
    """

    def __init__(self, env_id: str, *, learner: str | None = None, env_kwargs: dict[str, Any] | None = None):
        self.env_id = env_id
        self.learner = learner_of(env_id, learner)
        self.env_kwargs = check_kwargs(env_kwargs)
        template = make_learner_env(env_id, self.learner, self.env_kwargs)
        self.driver = template.driver
        self.games: list[Game] = [template.game]
        self.memories: list[dict[str, Any]] = [{}]

    def _slot(self, slot: int) -> Game:
        while len(self.games) <= slot:
            self.games.append(self.games[0].spawn())
            self.memories.append({})
        return self.games[slot]

    def start(self, slot: int, episode: int, seed: int) -> list[dict[str, str]]:
        """Start training episode ``episode`` (seed ``seed + episode``, the game's evaluation options)
        in ``slot``, played up to the learner's first turn; returns the learner's messages."""
        episode, seed = check_episode(episode, seed)
        game = self._slot(slot)
        (self.memories[slot],), _ = self.driver.begin([game], [seed + episode], game.evaluation_options(episode, seed))
        return self.messages(slot)

    def start_from(self, slot: int, seed: int, profile: dict[str, Any]) -> list[dict[str, str]]:
        """Start ``slot`` from ``profile`` with ``seed`` (as ``reset(seed=seed, options={"profile": profile})``
        does), played up to the learner's first turn; returns the learner's messages."""
        game = self._slot(slot)
        (self.memories[slot],), _ = self.driver.begin([game], [seed], {"profile": profile})
        return self.messages(slot)

    def messages(self, slot: int) -> list[dict[str, str]]:
        """The learner's chat so far (its observation's ``messages``)."""
        return [dict(message) for message in self.games[slot].observe(self.learner)["messages"]]

    def learners_turn(self, slot: int) -> bool:
        return self.games[slot].current_role == self.learner

    def move(
        self,
        slots: Sequence[int],
        texts: Sequence[str],
        token_ids: Sequence[list[int] | None] | None = None,
        logprobs: Sequence[list[float] | None] | None = None,
    ) -> list[list[dict[str, str]]]:
        """The learner says ``texts[k]`` in ``slots[k]``; the counterparts answer (one batch per role).
        Returns, per slot, the messages the learner hears next (replies, tool results)."""
        before = []
        for k, (slot, text) in enumerate(zip(slots, texts)):
            game = self.games[slot]
            before.append(len(game.observe(self.learner)["messages"]))
            game.step(
                text,
                token_ids=token_ids[k] if token_ids is not None else None,
                logprobs=logprobs[k] if logprobs is not None else None,
            )
        self.driver.advance([self.games[s] for s in slots], [self.memories[s] for s in slots])
        # the learner's own message is the first one after what it had seen
        return [self.messages(slot)[count + 1 :] for slot, count in zip(slots, before)]

    def finish_silently(self, slots: Sequence[int]) -> None:
        """End the episodes of ``slots`` with the learner silent (see the module docstring)."""
        for _ in range(MAX_SILENT_MOVES):
            waiting = [slot for slot in slots if self.learners_turn(slot)]
            if not waiting:
                return
            self.move(waiting, [SILENCE] * len(waiting))
        raise ScenarioError(
            f"{self.env_id} was still running after {MAX_SILENT_MOVES} silent {self.learner!r} moves; "
            "its game needs a turn limit (every scenario ends its dialogues within a bounded number of turns)."
        )

    def done(self, slot: int) -> bool:
        return self.games[slot].done

    def reward(self, slot: int) -> float:
        """The learner's return so far: the sum of its reward terms."""
        return float(self.games[slot].returns[self.learner])

    def trajectory(self, slot: int) -> Trajectory:
        trajectory = self.games[slot].trajectory()
        trajectory.learner = self.learner
        trajectory.meta = {**trajectory.meta, "env_id": self.env_id}
        return trajectory


# Chat-template helpers shared by the trainers' integrations (TRL's rollout_func, verl's agent loop):
# the tokenizer is duck-typed (``apply_chat_template``, ``__call__``, ``eos_token``).


def render(tokenizer: Any, messages: Sequence[dict[str, str]], **template_kwargs: Any) -> str:
    """``messages`` rendered by the chat template, ending with the opening of the model's next turn."""
    return tokenizer.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=False, **template_kwargs)


def encode(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def heard_tokens(tokenizer: Any, seen: Sequence[dict[str, str]], text: str, now: Sequence[dict[str, str]], ended_with_eos: bool, **template_kwargs: Any) -> list[int] | None:
    """The tokens between the learner's turn ``text`` (said after the chat ``seen``) and the opening of
    its next turn in the chat ``now``: the template's end of the turn (less the eos the learner already
    generated), what it heard, and the next turn's opening. None when the template renders the earlier
    chat differently once more follows (it rewrote the learner's text), so no one sequence holds both."""
    said = render(tokenizer, seen, **template_kwargs) + text
    rendered = render(tokenizer, now, **template_kwargs)
    if not rendered.startswith(said):
        return None
    heard = rendered[len(said) :]
    eos = tokenizer.eos_token
    if ended_with_eos and eos and heard.startswith(eos):
        heard = heard[len(eos) :]
    return encode(tokenizer, heard)


def env_id_of(trajectory: Trajectory) -> str:
    """The id a trajectory was played under: ``meta["env_id"]`` where recorded, else its scenario."""
    return str(trajectory.meta.get("env_id", trajectory.scenario))


def replay(trajectory: Trajectory, env_kwargs: dict[str, Any] | None = None) -> Game:
    """The game after stepping ``trajectory``'s recorded moves through the rules of its id (configured
    by ``env_kwargs``, which must be the ones it was played with), from its seed and start profile.

    Only the rules run, never a policy: a rule that calls a model (an LLM judge) calls its backend,
    so replay such runs through the ``cached`` backend. A record that the rules do not reproduce
    (other env kwargs, an edited file) raises :class:`~dialogue_gym.errors.ConfigError` naming what differs.
    """
    env_id = env_id_of(trajectory)
    game = make_game(env_id, env_kwargs)
    try:
        game.reset(seed=trajectory.seed, options=game.start_options(trajectory.profile))
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"the {env_id} trajectory (seed {trajectory.seed}) has a profile its game cannot start from: {exc!r}.") from exc
    for number, turn in enumerate(trajectory.turns):
        if game.current_role != turn.role:
            raise ConfigError(
                f"the {env_id} trajectory (seed {trajectory.seed}) does not replay: turn {number} is by {turn.role!r} but the "
                f"rules give the move to {game.current_role!r}. Pass the env kwargs it was played with."
            )
        game.step(turn.raw, token_ids=turn.token_ids, logprobs=turn.logprobs)
    if trajectory.outcome is Outcome.BACKEND_FAILURE and not game.done:
        game.abort(str(trajectory.meta.get("failure", "backend failure")))
    replayed = game.trajectory().to_dict()
    recorded = trajectory.to_dict()
    differing = [key for key in ("turns", "outcome", "rewards", "reward_terms") if replayed[key] != recorded[key]]
    if differing:
        raise ConfigError(
            f"the {env_id} trajectory (seed {trajectory.seed}) does not replay: the rules give other {', '.join(differing)} for "
            "the same moves. Pass the env kwargs it was played with (e.g. --env-kwargs)."
        )
    return game
