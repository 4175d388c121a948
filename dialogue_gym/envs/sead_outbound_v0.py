"""SEAD-Outbound-v0: an outbound promotion call, agent vs. a user with hidden state.

## Description
A service agent phones a restaurant owner to get them to claim a free advertising trial credit
(SEAD, paper 000; SPEC section 1). The owner has a hidden state (cooperation 0-4, emotion 0-3,
trust 0-5) and 1-3 behaviors (asks whether the caller is a robot, asks about hidden costs, ...).
The scripted simulator (default) reacts to the agent's free text; an LLM can play the user instead.

## Roles
``agent`` (speaks first) and ``user``. Single-agent view: ``learner="agent"`` (default) or ``"user"``.

## Observation Space
``Dict(messages=ChatMessages, turn=Discrete(T_max + 1))`` for the agent: the chat from its side
(system prompt with SOP and facts, then the call), ready for ``apply_chat_template``. The user
additionally gets ``state=MultiDiscrete([5, 4, 6])`` and ``behaviors=MultiBinary(|L|)``; its
system prompt carries its persona and rules, and each caller turn ends with a note of its state then
(``[Your current state: cooperation c/4, emotion e/3, trust tr/5.]``, kept in the history, so the chat
only grows at the end and each turn's prompt is a prefix of the next). The agent never observes the
hidden state: not in its observation, its ``info`` or its policy's ``start`` profile (empty for the agent). The user's
``info["user_state"]`` is its own state. For analysis, ``env.unwrapped.game.privileged()`` holds the
true state and the whole profile; the trajectory keeps both for metrics, read after the episode.

## Action Space
``Utterance``: the role's raw text. Agent: SEAD tags (``<response>`` + ``<cooperation_score>``,
``<emotion_score>``, ``<trust_score>``), the same fields as JSON, or plain text. User:
``<think>``, ``<reply>``, ``<cooperation>``, ``<emotion>``, ``<trust>``, ``<status>``.
A non-``str`` action raises :class:`~dialogue_gym.errors.InvalidAction`.

Only the first ``MAX_ACTION_CHARS`` (20,000) characters of an action are read; a longer one is
flagged (``info["invalid_action"]``, penalty). JSON nested deeper than 32, integers over 100 digits and
NaN/Infinity are malformed output. Parsing is linear-time and no string raises.

## Rewards
Agent: ``success_reward`` (1.0) when the user completes the operation, else 0; minus
``invalid_action_penalty`` (0.1) per malformed output. User: ``success_reward`` when the agent
fails (``user_reward="adversarial"``, SEAD's "Train URM" ablation) or 0 (``"none"``).

## Starting State
A profile drawn uniformly: one of the 120 states and 1-3 behaviors; or ``reset(options={"profile":
{"state": [c, e, tr], "behaviors": [ids]}})``.

In the single-agent and vector views ``reset`` always returns an episode in which it is the learner's
turn: one that ends before the learner's first move (the counterpart's backend failed on its opening
move, say) is set aside and re-drawn (see :class:`~dialogue_gym.envs.single.DialogueEnv`). A ``reset``
that raises leaves no episode running: ``step`` raises ``EpisodeStateError`` until a ``reset`` succeeds.

## Episode End
Terminated on success (user status 1 with cooperation >= 3), hang-up (status -1), timeout after
``max_agent_turns`` (15) agent turns, or a malformed output with ``invalid_action="end"``. The
timeout is a task failure with the turn counter in the observation, so it is a termination, not a
truncation. When an LLM-played role's backend fails after its retries, the episode ends with
outcome ``backend_failure`` (cause in ``trajectory().meta["failure"]``); metrics leave such
episodes out rather than count them as the agent's failures. ``info["outcome"]`` names the end.

## Arguments
``learner`` ("agent" | "user"), ``agent`` ("sop" | "adaptive" | "oracle" | "random" | "informed" | "llm";
plays the agent when the user learns; "informed" is the oracle's play on the state the owner's words voice
and the concerns its public lines name: the audit's fair ceiling), ``user`` ("scripted" | "llm"), ``agent_backend`` / ``user_backend``
(backend spec such as ``{"name": "transformers", "model": "smollm2"}``), ``agent_sampling`` /
``user_sampling`` (sampling params), ``render_mode``, and every :class:`SeadConfig` field
(``max_agent_turns``, ``success_reward``, ``invalid_action``, ``invalid_action_penalty``,
``user_reward``, ``max_utterance_chars``, ``scenario_file``, ``behaviors_file``).

Vector view only: ``keep_trajectories`` ("auto" | int >= 0 | None) caps the finished trajectories
kept for ``envs.unwrapped.pop_trajectories()``: ``"auto"`` (default) keeps the last ``max(1024,
2 * num_envs)``, 0 keeps none, None keeps all; the cap drops the oldest and counts them in
``dropped_trajectories`` (see :class:`~dialogue_gym.envs.vector.DialogueVectorEnv`).

## Version History
* v0: initial release.
* v0, hardening (unreleased, no bump): parsing bounded and total (``MAX_ACTION_CHARS``); non-finite reward settings rejected. Scripted baselines score as before.
* v0, scores follow quality (unreleased, no bump; issue 9): the scripted owner understands
  sentences, not keywords (``scenarios/sead/acts.py``, ``scenarios/sead/data/UNDERSTANDING.md``).
  Acts count only from understood sentences; made-up words, strung cue words, keyword lists,
  silence, echoes and content-free questions confuse it (three such turns and it hangs up); a turn
  over 4 acts, 4 sentences or 60 words is a monologue; repeated acts saturate; near-repeats compare
  content words. Success needs the walkthrough: the three operation steps as understood
  instructions, in order, while cooperation >= 3 (and trust >= 2), rolled only when the claim step
  lands (it used to be the guide keyword twice). The ``sop`` script now reads the offer and then the
  walkthrough twice in other words. Scripted baselines re-measured (1200 episodes, seed 0): CR
  random 0.072 -> 0.002, sop 0.360 -> 0.252, adaptive 0.629 -> 0.602, oracle 0.771 -> 0.677.
* v0, counterpart health (unreleased, no bump; issue 16): every agent and user turn carries a
  health record in ``turn.parsed["health"]`` (format, repairs, role reversal, rule violations:
  ``scenarios/sead/health.py``, ``data/health.json``). Both roles' prompts gained a few-shot turn in
  the exact format (the owner's also a stay-in-role line), and an LLM owner stops at ``</status>``
  (an LLM caller at ``</trust_score>``). Scripted play is unchanged.
* v0, cacheable prompts (unreleased, no bump; issue 15): the owner's state left its system prompt
  (re-rendered whenever the state changed) for a note at the end of each caller turn, kept in the
  history, so an LLM owner's prompt only grows at the end and a prefix cache reuses all of it.
  Scripted play is unchanged.
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
from dialogue_gym.scenarios.sead.game import SeadGame
from dialogue_gym.scenarios.sead.policies import make_policy

ROLES = SeadGame.roles
NAME = "sead_outbound_v0"


class _Sead:
    game_class = SeadGame
    default_learner = "agent"
    default_players = {"agent": "sop", "user": "scripted"}

    def make_role_policy(self, role: str, spec: Any, backend: Any = None, sampling: dict | None = None):
        return make_policy(role, spec, self.game.library, backend, sampling)


class SeadOutboundEnv(_Sead, ScenarioEnv):
    __doc__ = __doc__


class SeadOutboundVectorEnv(_Sead, ScenarioVectorEnv):
    __doc__ = __doc__


class raw_env(ScenarioAECEnv):
    __doc__ = __doc__
    game_class = SeadGame
    metadata = {**DialogueAECEnv.metadata, "name": NAME}


def env(render_mode: str | None = None, **config: Any) -> DialogueAECEnv:
    return aec_env(raw_env, render_mode, config)


def parallel_env(render_mode: str | None = None, **config: Any) -> DialogueParallelEnv:
    return parallel_view(SeadGame, NAME, render_mode, config)
