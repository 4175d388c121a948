"""TRACER-UserSim-v0: learn a user simulator whose intent trajectories match real sessions.

## Description
A simulated user chats with a merchant's customer-service assistant (TRACER, paper 002; SPEC
section 2). Each episode starts from a reference session: the user's profile, the merchant and the
session's first assistant utterance. Each user turn rates the user's intent level (0 = leaves,
5 = gives contact information) and replies. At the end the simulated intent trajectory is scored
against the reference's by DTW. The packaged references are a SYNTHETIC sample
(``dialogue_gym/scenarios/tracer/data/synthetic_sessions.jsonl``); pass ``sessions_file`` for your own.

## Roles
``assistant`` and ``user``; the opening is already said, so the ``user`` moves first. Single-agent
view: ``learner="user"`` (default; the assistant is the fixed SOP assistant) or ``"assistant"``.

## Observation Space
``Dict(messages=ChatMessages, turn=Discrete(max_user_turns + 1))`` for both roles: the chat from the
role's side, ready for ``apply_chat_template``. The user's system prompt carries its profile, the
merchant, the intent-level definitions and the output format; the assistant's the merchant facts
and SOP. ``turn`` counts user turns so far. Intent levels are never in an observation; ``info`` has them.

## Action Space
``Utterance``: the role's raw text. User: ``<think>...</think><intent_level>z</intent_level><reply>...</reply>``
(z in 0-5; other shapes are read leniently and flagged). Assistant: plain text. A non-``str`` action raises
:class:`~dialogue_gym.errors.InvalidAction`.

Only the first ``MAX_ACTION_CHARS`` (20,000) characters of an action are read; a longer one is
flagged (``info["invalid_action"]``, penalty). JSON nested deeper than 32, integers over 100 digits and
NaN/Infinity are malformed output. Parsing is linear-time and no string raises.

## Rewards
User, at the end: ``l1 R_fmt + l2 R_final + l3 R_traj`` against the paired reference (weights
(0.2, 0.5, 0.3); ``R_traj = exp(-alpha (D + beta |T* - T|) / T) * eta``); ``user_reward="none"`` turns it off.
R_fmt counts a turn only when its output matches the format, its fields agree (an empty reply only
at level 0, contact details at level 5) and its reply is one a person writes (no made-up words,
keyword list, babble or copy of the assistant's last line; ``data/UNDERSTANDING.md``).
Assistant: ``conversion_reward`` (1.0) when the user converts. ``invalid_action_penalty`` (0.0: the
format term already prices malformed output) per flagged move. The user's ``info`` holds its own
``intent_trajectory`` (and ``intent_level``); both roles get ``reward_terms`` (R_fmt, R_final, R_traj, eta,
D, total) at the end. Neither role sees which reference session the episode follows, nor any number
derived from it before the end: ``dtw_cost`` (D), ``deviations`` (d_t), ``deviation_suffix`` (c_t with
``rho``), ``session_id`` and ``reference_intents`` are in ``env.unwrapped.game.privileged()``.

## Starting State
A reference session drawn uniformly from ``sessions_file`` (or ``sessions``), or
``reset(options={"session_id": "syn-g00-s00"})``.

In the single-agent and vector views ``reset`` always returns an episode in which it is the learner's
turn: one that ends before the learner's first move (the counterpart's backend failed on its opening
move, say) is set aside and re-drawn (see :class:`~dialogue_gym.envs.single.DialogueEnv`). A ``reset``
that raises leaves no episode running: ``step`` raises ``EpisodeStateError`` until a ``reset`` succeeds.

## Episode End
Terminated after a user turn at level 5 (conversion, outcome ``success``), level 0 (dropout, ``hangup``)
or the ``max_user_turns``-th (15) user turn (a dropout, ``timeout``), or a malformed output with
``invalid_action="end"``. The limit is a task outcome with the turn counter in the observation, so it
is a termination, not a truncation.

The user's first move cannot end the episode: level 5 is read as 4 and level 0 as 1 (``format_ok``
false, ``parsed["requested_intent_level"]`` kept), so ``max_user_turns`` must be at least 2.

## Arguments
``learner`` ("user" | "assistant"), ``user`` ("scripted" | "random" | "flat" | "eager" | "reluctant" |
"llm"; plays the user when the assistant learns), ``assistant`` ("sop" | "consultative" | "empathetic" |
"pushy" | "random" | "llm"), ``user_backend`` / ``assistant_backend`` (backend spec such as
``{"name": "transformers", "model": "smollm2"}``), ``user_sampling`` / ``assistant_sampling``,
``render_mode``, and every :class:`~dialogue_gym.scenarios.tracer.game.TracerConfig` field
(``max_user_turns``, ``sessions_file``, ``sessions``, ``user_reward``, ``reward_weights``, ``alpha``, ``beta``,
``eta_flat``, ``rho``, ``conversion_reward``, ``invalid_action``, ``invalid_action_penalty``,
``fallback_intent_level``, ``max_utterance_chars``, ``judge``, ``judge_backend``).

Vector view only: ``keep_trajectories`` ("auto" | int >= 0 | None) caps the finished trajectories
kept for ``envs.unwrapped.pop_trajectories()``: ``"auto"`` (default) keeps the last ``max(1024,
2 * num_envs)``, 0 keeps none, None keeps all; the cap drops the oldest and counts them in
``dropped_trajectories`` (see :class:`~dialogue_gym.envs.vector.DialogueVectorEnv`).

## Version History
* v0: initial release.
* v0, hardening (unreleased, no bump): parsing bounded and total; the user's first move cannot end the episode (baselines re-measured in the README: within 0.003 CR for the scripted players).
* v0, scores follow quality (unreleased, no bump; issue 9): a user reply must be something a person
  writes (no made-up words, keyword list, babble or copy of the assistant's last line,
  :func:`~dialogue_gym.scenarios.tracer.acts.reply_problem`), else it is flagged and scores 0 on
  R_fmt; the scripted users read the assistant sentence by sentence (``data/UNDERSTANDING.md``); the
  SYNTHETIC reference sample was regenerated with that user. ``dialogue-gym audit TRACER-UserSim-v0``
  plays degenerate and blind users against the fair ones; baselines re-measured in the README.
* v0, counterpart health (unreleased, no bump; issue 16): every user and assistant turn carries a
  health record in ``turn.parsed["health"]`` (format, repairs, role reversal, rule violations:
  ``scenarios/tracer/health.py``; the LLM judge's in ``meta["response_quality"]["health"]``). The
  LLM-played user's prompt gained a few-shot turn in the exact format and a stay-in-role line, and an
  LLM user stops at ``</reply>`` (an LLM assistant at a blank line). Scripted play is unchanged.
"""

from __future__ import annotations

from typing import Any

from dialogue_gym.envs.multiagent import DialogueAECEnv, DialogueParallelEnv
from dialogue_gym.envs.scenario import (
    ScenarioAECEnv,
    ScenarioEnv,
    ScenarioVectorEnv,
    aec_env,
    parallel_view,
)
from dialogue_gym.scenarios.tracer.game import TracerGame
from dialogue_gym.scenarios.tracer.policies import make_policy

ROLES = TracerGame.roles
NAME = "tracer_usersim_v0"


class TracerViews:
    game_class: type[TracerGame] = TracerGame
    default_learner = "user"
    default_players = {"assistant": "sop", "user": "scripted"}

    def make_role_policy(self, role: str, spec: Any, backend: Any = None, sampling: dict | None = None):
        return make_policy(role, spec, backend, sampling)


class TracerUserSimEnv(TracerViews, ScenarioEnv):
    __doc__ = __doc__


class TracerUserSimVectorEnv(TracerViews, ScenarioVectorEnv):
    __doc__ = __doc__


class raw_env(ScenarioAECEnv):
    __doc__ = __doc__
    game_class = TracerGame
    metadata = {**DialogueAECEnv.metadata, "name": NAME}


def env(render_mode: str | None = None, **config: Any) -> DialogueAECEnv:
    return aec_env(raw_env, render_mode, config)


def parallel_env(render_mode: str | None = None, **config: Any) -> DialogueParallelEnv:
    return parallel_view(TracerGame, NAME, render_mode, config)
