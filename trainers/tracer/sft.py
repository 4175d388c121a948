"""Stage 1: supervised fine-tuning on the reference sessions rendered in TRACER's output format.

Every reference session is replayed through the game itself (its assistant turns and its user turns,
the latter rendered as ``<think>rationale</think><intent_level>z</intent_level><reply>text</reply>``),
so each training example is exactly what the simulator will see and say in an RL episode: the user
observation before the turn, and the turn. The strategy policy learns the levels from those
observations' features; a language model learns the rendered turns through the shared SFT phase
(:mod:`trainers.common.sft`), each session packed into one sequence with the loss on its user turns only.
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

import numpy as np

from dialogue_gym.scenarios.tracer.data import ReferenceSession
from dialogue_gym.scenarios.tracer.game import TracerGame
from dialogue_gym.scenarios.tracer.parsing import render_user_output


def replay(game: TracerGame, session: ReferenceSession) -> Iterator[tuple[dict[str, Any], dict[str, Any], str, int]]:
    """``(observation, info, rendered user turn, its level)`` before each user turn of ``session`` (until the
    game ends: a game with a lower turn limit than the session stops early)."""
    game.reset(seed=0, options={"session_id": session.session_id})
    for turn in session.turns[1:]:
        if game.done:
            return
        if turn.role == "user":
            text = render_user_output(turn.text, int(turn.intent_level), turn.rationale or "")
            yield game.observe("user"), game.info("user"), text, int(turn.intent_level)
        else:
            text = turn.text
        game.step(text)


def strategy_samples(policy: Any, game: TracerGame, sessions: Sequence[ReferenceSession] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Feature rows and reference levels of every user turn of ``sessions`` (default: all of ``game``'s)."""
    rows, levels = [], []
    for session in game.references.sessions if sessions is None else sessions:
        for observation, info, _, level in replay(game, session):
            rows.append(policy.context(observation, info, {"profile": game.episode_profile()}))
            levels.append(level)
    return np.array(rows), np.array(levels, dtype=np.int64)


def lm_sessions(game: TracerGame, sessions: Sequence[ReferenceSession] | None = None) -> list[list[dict[str, Any]]]:
    """Conversational prompt-completion rows (TRL's format), one list per session of ``sessions``
    (default: all of ``game``'s), in turn order."""
    return [
        [{"prompt": observation["messages"], "completion": [{"role": "assistant", "content": text}]} for observation, _, text, _ in replay(game, session)]
        for session in (game.references.sessions if sessions is None else sessions)
    ]
