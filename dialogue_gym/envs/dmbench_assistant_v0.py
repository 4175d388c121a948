"""DMBench-Assistant-v0: a marketing assistant persuades a simulated user (Dynamic Marketing Benchmark).

## Description
The assistant of a merchant (automotive, healthcare, education, legal) chats with a simulated user
whose intent evolves turn by turn (DM-Bench, paper 002 section 6; SPEC section 2). The user decides
conversion (giving contact information); a judge rates the assistant's response quality (RQ) over
accuracy, helpfulness, informativeness and empathy. The scripted user and the heuristic judge react
to what the assistant's turns say as sentences, not to keywords (``data/UNDERSTANDING.md``). The rules are TRACER-UserSim-v0's
(:class:`~dialogue_gym.scenarios.tracer.game.TracerGame`); instances are the reference sessions'
profiles, merchants and openings (the packaged ones are SYNTHETIC).

## Roles
``assistant`` and ``user``; the opening is already said, so the ``user`` moves first. Single-agent
view: ``learner="assistant"`` (default; the user is the scripted intent-dynamics simulator) or ``"user"``.

## Observation Space
``Dict(messages=ChatMessages, turn=Discrete(max_user_turns + 1))`` for both roles. The assistant's chat
starts with a system prompt holding the merchant facts and the SOP, then its opening. It never
observes the user's intent level; only the user's own ``info`` carries it (``intent_level``, ``intent_trajectory``); for analysis
``env.unwrapped.game.privileged()`` and the trajectory hold it.

## Action Space
``Utterance``: the role's raw text. Assistant: plain text (``<response>`` tags or ``{"response": ...}``
are unwrapped). User: ``<think>...</think><intent_level>z</intent_level><reply>...</reply>``.
A non-``str`` action raises :class:`~dialogue_gym.errors.InvalidAction`.

Only the first ``MAX_ACTION_CHARS`` (20,000) characters of an action are read; a longer one is
flagged (``info["invalid_action"]``, penalty). JSON nested deeper than 32, integers over 100 digits and
NaN/Infinity are malformed output. Parsing is linear-time and no string raises.

## Rewards
Assistant: ``conversion_reward`` (1.0) when the user converts, else 0; minus ``invalid_action_penalty``
(0.1) per malformed turn. The judge's scores (``judge="heuristic"`` by default, ``"llm"`` with
``judge_backend``, or ``"none"``) are reported in ``info["response_quality"]`` at the end, not rewarded; a dialogue the judge could not
score (an unreadable judge answer, or an assistant that never spoke) has ``None`` scores.
User: TRACER's reward against the reference (see TRACER-UserSim-v0).

## Starting State
A reference session's profile, merchant and opening, drawn uniformly, or
``reset(options={"session_id": "syn-g00-s00"})``.

In the single-agent and vector views ``reset`` always returns an episode in which it is the learner's
turn: one that ends before the learner's first move (the counterpart's backend failed on its opening
move, say) is set aside and re-drawn (see :class:`~dialogue_gym.envs.single.DialogueEnv`). A ``reset``
that raises leaves no episode running: ``step`` raises ``EpisodeStateError`` until a ``reset`` succeeds.

## Episode End
Terminated after a user turn at level 5 (conversion, outcome ``success``), level 0 (dropout,
``hangup``) or the ``max_user_turns``-th (15) user turn (``timeout``), or a malformed output with
``invalid_action="end"``.

The user's first move cannot end the episode: level 5 is read as 4 and level 0 as 1 (``format_ok``
false, ``parsed["requested_intent_level"]`` kept), so ``max_user_turns`` must be at least 2.

## Arguments
``learner`` ("assistant" | "user"), ``user`` ("scripted" | "random" | "flat" | "eager" | "reluctant" |
"llm", e.g. an LLM simulator in TRACER's format), ``assistant`` ("sop" | "consultative" | "empathetic" |
"pushy" | "random" | "planner" | "llm"; plays the assistant when the user learns; "planner" plans each turn with
the user's public intent-dynamics model: the audit's fair ceiling), ``user_backend`` /
``assistant_backend``, ``user_sampling`` / ``assistant_sampling``, ``render_mode``, and every
:class:`~dialogue_gym.scenarios.tracer.game.DMBenchConfig` field (those of TRACER-UserSim-v0, with
``judge="heuristic"`` and ``invalid_action_penalty=0.1``).

Vector view only: ``keep_trajectories`` ("auto" | int >= 0 | None) caps the finished trajectories
kept for ``envs.unwrapped.pop_trajectories()``: ``"auto"`` (default) keeps the last ``max(1024,
2 * num_envs)``, 0 keeps none, None keeps all; the cap drops the oldest and counts them in
``dropped_trajectories`` (see :class:`~dialogue_gym.envs.vector.DialogueVectorEnv`).

## Version History
* v0: initial release.
* v0, hardening (unreleased, no bump): parsing bounded and total; the user's first move cannot end the episode; unscored RQ is ``None`` (baselines re-measured in the README: within 0.003 CR for the scripted players).
* v0, scores follow quality (unreleased, no bump; issue 9): the scripted user and the heuristic judge
  read the assistant's turns sentence by sentence (:mod:`dialogue_gym.scenarios.tracer.acts`,
  ``data/UNDERSTANDING.md``): acts need understood sentences and their constructions, effects saturate,
  crammed turns are monologues, an answer must state the fact the user asked about, and confusing
  turns, echoes, near-repeats and ignored questions cost intent; the judge
  scores no dimension for such turns and is not raised by keyword or fact stuffing or length. The
  dynamics weights gained ``turn:*`` rows and were re-set; the scripted assistants state each fact
  once and have larger probe and empathy pools (``data/sop.json``); the SYNTHETIC reference sample
  was regenerated. ``dialogue-gym audit DMBench-Assistant-v0``
  passes at 600 episodes; baselines re-measured in the README.
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
from dialogue_gym.envs.tracer_usersim_v0 import TracerViews
from dialogue_gym.scenarios.tracer.game import DMBenchGame

ROLES = DMBenchGame.roles
NAME = "dmbench_assistant_v0"


class DMBenchViews(TracerViews):
    game_class = DMBenchGame
    default_learner = "assistant"


class DMBenchAssistantEnv(DMBenchViews, ScenarioEnv):
    __doc__ = __doc__


class DMBenchAssistantVectorEnv(DMBenchViews, ScenarioVectorEnv):
    __doc__ = __doc__


class raw_env(ScenarioAECEnv):
    __doc__ = __doc__
    game_class = DMBenchGame
    metadata = {**DialogueAECEnv.metadata, "name": NAME}


def env(render_mode: str | None = None, **config: Any) -> DialogueAECEnv:
    return aec_env(raw_env, render_mode, config)


def parallel_env(render_mode: str | None = None, **config: Any) -> DialogueParallelEnv:
    return parallel_view(DMBenchGame, NAME, render_mode, config)
