"""RLADA-Banking-v0: a tool-using bank support agent vs. an adversarial customer with a hidden intent.

## Description
RL-ADA's banking proof of concept (paper 003; SPEC section 3). A customer phones the support line
with one of 78 intents (Banking77's 77 labels + one core synthetic intent, ``check_account_balance``)
and never names it; the support agent must verify the caller with ``lookup_account``, route the call
to the one tool that serves the intent (many-to-one: 38 intents go to ``transfer_to_human``), explain
the result and end the call. Tools execute against a small simulated bank generated per episode from
the seed (accounts, cards, a month of transactions, with the customer's problem planted in it), and
a fixed judge scores the call. The default customer is the scripted adversarial customer (direct,
vague or contextual-camouflage phrasing); an LLM can play it, and a judge model can replace the rule
judge's score.

## Roles
``agent`` and ``customer`` (speaks first). Single-agent view: ``learner="agent"`` (this ID's default)
or ``"customer"`` (the default of ``RLADA-Customer-v0``).

## Observation Space
Agent: ``Dict(messages=ChatMessages(system, user, assistant, tool), turn=Discrete(max_agent_turns + 1))``:
the system prompt (the six tools with their JSON schemas, the protocol, the caller's account id), the
customer's words as ``user`` messages, its own outputs as ``assistant`` messages, tool results (and
format errors) as ``tool`` messages, ready for ``apply_chat_template``. Customer: ``messages`` (its
system prompt holds its hidden problem, facts and style), ``turn``, ``intent=Discrete(78)``,
``concealment=Discrete(3)``. The agent never observes the intent: not in its observation, its
``info`` or its policy's ``start`` profile (empty for the agent). The customer's ``info`` names its own
``intent`` and ``concealment``. For analysis, ``env.unwrapped.game.privileged()`` holds the intent,
``target_tool``, scenario and the whole profile; only policies that declare ``privileged = True``
(``oracle``) get it, in ``info["privileged"]``.

## Action Space
``Utterance``: the role's raw text. Agent: one JSON object ``{"thinking", "action_type": "speak" |
"tool_call" | "end_call", "content", "tool_args"}`` (for ``tool_call``, ``content`` is the tool name).
Malformed JSON, unknown tools and arguments that break the schema are flagged in
``info["invalid_action"]`` with ``invalid_action_penalty``; a bad call executes nothing and returns a
structured error to the agent. Customer: one or two spoken sentences; ``[hang up]`` ends the call.
A non-``str`` action raises :class:`~dialogue_gym.errors.InvalidAction`.

Only the first ``MAX_ACTION_CHARS`` (20,000) characters of an action are read: a longer agent action
is flagged invalid, and a customer turn longer than ``customer_max_chars`` is cut and fails the format
check. JSON nested deeper than 32, integers over 100 digits and NaN/Infinity are malformed output; tool
amounts must be finite and at least 0.01 (a structured tool error, nothing executed). Parsing is
linear-time and no string raises.

## Rewards
Agent (``dialogue_gym.rewards.rlada``): per action ``turn_cost`` (-0.05), ``tool_progress`` (+0.1 for
the first successful lookup and domain tool), ``invalid_action`` (-0.3); at the end the ``judge``
score (0-3: routing 1, lookup first 0.5, procedure 1, clean ending 0.25, claim consistency 0.25),
``identity_check`` (-1.2 without a successful lookup before the domain tool), ``domain_tool`` (-1.8
when missing or wrong), ``wrong_escalation`` (-1.0), ``hallucination`` (-1.0). Customer at the end:
``format`` + ``realism`` + ``concealment`` (0.5 each, means over its turns; a turn a person would not
understand or a near-repeat of its own earlier turn scores 0) + ``inverse_agent`` (-0.5 x the agent's
total; positive only for a customer that mentioned a fact of its case; a customer that ends the call
itself gets ``conceded`` = -0.5 x max(agent total, 3.0) instead), and ``role_reversal`` (-1.0 per turn
that sounds like the bank). What the customer, the router and the judge understand is documented in
``scenarios/rlada/data/UNDERSTANDING.md``.
Every term is in ``info["reward_terms"]`` and the trajectory's ``reward_terms``.
Strict PASS (``info["strict_pass"]``) = correct routing AND lookup first AND agent reward >= 2.0 AND a
clean ending. **A win for the agent is a strict PASS**; the arena counts wins on customer-winnable
scenarios (``trainers.rlada``).

## Starting State
An intent drawn uniformly from the taxonomy with a uniform concealment level (``scenario_set=
"taxonomy"``), or one of the 10 arena / 12 held-out scenarios (``scenario_set="arena" | "heldout"``);
or ``reset(options={"scenario": "dispute_duplicate"})``, ``{"intent": ..., "concealment": ...}``, or
``{"profile": env.unwrapped.game.episode_profile()}`` to replay a start exactly.

In the single-agent and vector views ``reset`` always returns an episode in which it is the learner's
turn: one that ends before the learner's first move (the counterpart's backend failed on its opening
move, say) is set aside and re-drawn (see :class:`~dialogue_gym.envs.single.DialogueEnv`). A ``reset``
that raises leaves no episode running: ``step`` raises ``EpisodeStateError`` until a ``reset`` succeeds.

## Episode End
Terminated when the agent ends the call (outcome ``success`` with a strict PASS, else ``hangup``),
the customer hangs up (``hangup``), after ``max_agent_turns`` (12) agent actions (``timeout``, a task
failure, so a termination), or on an invalid output with ``invalid_action="end"`` (``invalid``).

## Arguments
``learner`` ("agent" | "customer"), ``agent`` ("keyword" | "always_escalate" | "random" | "oracle" |
"phrase_match" | "llm"; plays the agent when the customer learns; "phrase_match" matches the caller's
words against the public phrasings and asks until one tool fits: the audit's fair ceiling), ``customer`` ("scripted" | "direct" | "vague" |
"camouflage" | "contextual" | "withholding" | "planner" | "llm"; "contextual" is camouflage that always opens with a side worry beside
a hint of its own problem; "withholding" is RLADA-Banking-v1's customer; "planner" rehearses each truthful style against
the agent it faces on a call of its own and plays the best: the customer audit's fair ceiling), ``agent_backend`` / ``customer_backend`` (backend specs such as ``{"name": "transformers",
"model": "smollm2"}``), ``agent_sampling`` / ``customer_sampling``, ``render_mode``, and every
:class:`~dialogue_gym.scenarios.rlada.game.RladaConfig` field (``max_agent_turns``, ``invalid_action``,
``invalid_action_penalty``, ``judge`` ("rule" | "llm") with ``judge_backend`` / ``judge_sampling``,
``judge_components``, the reward weights, ``pass_threshold``, ``scenario_set``, ``concealment``,
``data_dir``, ...).

Vector view only: ``keep_trajectories`` ("auto" | int >= 0 | None) caps the finished trajectories
kept for ``envs.unwrapped.pop_trajectories()``: ``"auto"`` (default) keeps the last ``max(1024,
2 * num_envs)``, 0 keeps none, None keeps all; the cap drops the oldest and counts them in
``dropped_trajectories`` (see :class:`~dialogue_gym.envs.vector.DialogueVectorEnv`).

## Version History
* v0: initial release.
* v0, hardening (unreleased, no bump): parsing bounded and total; tool amounts must be finite and >= 0.01 (schemas say ``minimum``). Scripted baselines score as before.
* v0, scores follow quality (issue 9, unreleased, no bump): the scripted customer reads the agent's turn as
  sentences: only a real, on-topic question earns disclosure; "?", content-free questions, salads, made-up
  words, echoes, near-repeats and monologues earn confusion and, the second time, a hang-up (saying "?"
  three times then routing had scored above the keyword router). The rule judge checks every claim
  (refunds, reversals, disputes, card status and card actions, transfers, escalation, balances,
  "resolved") and every stated amount, id and long number against the tool results; "explained" needs a
  value or status of the result;
  ``procedure`` needs every spoken turn to be one the customer could follow. The keyword router routes on
  the customer's understood sentences. Customer reward: per-turn credit needs an understood, non-repeated
  turn; a hang-up concedes the call; adversarial credit needs a grounded customer. Fair agent baselines
  score as before (the docs page's table, generated from the saved run).
* v0, the fair ceiling (issue 42, unreleased, no bump): a new named agent, ``phrase_match``, the audit's fair
  ceiling: it reaches the oracle's strict PASS reading nothing hidden, so strict PASS is saturated against
  the scripted customer (the docs page gives the figures, generated from the saved run). The customer's
  ``start`` profile no longer holds ``bank_seed`` (it rebuilt the bank: a customer could replay its
  episode against ``keyword``); the episode profile, trajectory and privileged channel keep it. Every
  episode of the existing players is unchanged.
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
from dialogue_gym.scenarios.rlada.game import RladaGame
from dialogue_gym.scenarios.rlada.policies import make_policy

ROLES = RladaGame.roles
NAME = "rlada_banking_v0"


class _Rlada:
    game_class = RladaGame
    default_learner = "agent"
    default_players = {"agent": "keyword", "customer": "scripted"}

    def make_role_policy(self, role: str, spec: Any, backend: Any = None, sampling: dict | None = None):
        return make_policy(role, spec, self.game.domain, backend, sampling)


class RladaBankingEnv(_Rlada, ScenarioEnv):
    __doc__ = __doc__


class RladaBankingVectorEnv(_Rlada, ScenarioVectorEnv):
    __doc__ = __doc__


class raw_env(ScenarioAECEnv):
    __doc__ = __doc__
    game_class = RladaGame
    metadata = {**DialogueAECEnv.metadata, "name": NAME}


def env(render_mode: str | None = None, **config: Any) -> DialogueAECEnv:
    """The AEC env (both roles are agents), wrapped like PettingZoo's own (order enforcing)."""
    return aec_env(raw_env, render_mode, config)


def parallel_env(render_mode: str | None = None, **config: Any) -> DialogueParallelEnv:
    return parallel_view(RladaGame, NAME, render_mode, config)
