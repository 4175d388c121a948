"""RLADA-Customer-v0: the RL-ADA banking call with the adversarial customer as the learner.

## Description
The same game as ``RLADA-Banking-v0`` (:mod:`dialogue_gym.envs.rlada_banking_v0`, whose docstring
has the full rules), seen from the customer's side: the learner is a caller with a hidden intent who
must sound like a real, confused customer while hiding what it wants well enough that the support
agent routes the call to the wrong tool (RL-ADA's Adversarial Customer Agent). The support agent is
played by a policy: the ``keyword`` router by default, or an LLM.

## Roles
``customer`` (the learner, speaks first) and ``agent``; ``learner="agent"`` gives RLADA-Banking-v0's view.

## Observation Space
``Dict(messages=ChatMessages, turn=Discrete(max_agent_turns + 1), intent=Discrete(78),
concealment=Discrete(3))``: the system prompt states the hidden problem, the facts (merchant,
amount, day, card digits), the suggested style and the rules; the agent's spoken words arrive as
``user`` messages. Tool calls of the agent are not heard.

## Action Space
``Utterance``: one or two spoken sentences; ``[hang up]`` ends the call. Empty output is flagged
(``info["invalid_action"]``, ``invalid_action_penalty``); text that sounds like the bank
("How can I help you?", "your account shows ...") is flagged in ``info["role_reversal"]`` and costs
``role_reversal_penalty``.

Only the first ``MAX_ACTION_CHARS`` (20,000) characters of an action are read: a longer agent action
is flagged invalid, and a customer turn longer than ``customer_max_chars`` is cut and fails the format
check. JSON nested deeper than 32, integers over 100 digits and NaN/Infinity are malformed output; tool
amounts must be finite and at least 0.01 (a structured tool error, nothing executed). Parsing is
linear-time and no string raises.

## Rewards
At the end of the call: ``format`` (share of turns with 1-2 sentences), ``realism`` (share of turns
without role reversal or meta talk, halved if the customer never mentioned a fact of its case),
``concealment`` (turns without an explicit cue of the true tool score 1, one cue 0.5, more or naming
the intent 0), 0.5 each, plus ``inverse_agent`` = -0.5 x the agent's total reward; per flagged turn
``role_reversal`` (-1.0) and ``invalid_action`` (-0.3). Terms are in ``info["reward_terms"]``.
A turn a person would not understand (word salad, made-up words, a keyword list, a bare "?") or that
near-repeats an earlier turn of the customer scores 0 on format, realism and concealment.
``inverse_agent`` is positive only for a customer that mentioned a fact of its case, told the truth about
its problem (no turn asserting a problem another tool serves, side worries in one turn only and beside
a story that told its own problem, by its tools' cues or its family's signs, before the agent acted:
otherwise that turn scores realism 0, the call's realism is halved and the call earns no concealment)
and did not withhold it (after three real questions before the agent's domain tool, it had stated it).
A customer that
ends the call itself (hang-up) concedes it: ``conceded`` = -0.5 x max(agent total, 3.0) replaces
``inverse_agent``, so leaving before the agent can act (which earned +1.375, more than any style) is
never worth more than staying and losing. The default opponent, the ``keyword`` router, routes only
on the customer's understood sentences. ``dialogue-gym audit RLADA-Customer-v0`` plays the degenerate
customers (``scenarios/rlada/audit.py``).

## Starting State
As RLADA-Banking-v0: a taxonomy intent at a random concealment level, an arena or held-out scenario
(``scenario_set``), or ``reset(options={"scenario": ...} | {"intent": ..., "concealment": ...} | {"profile": ...})``.

In the single-agent and vector views ``reset`` always returns an episode in which it is the learner's
turn: one that ends before the learner's first move (the counterpart's backend failed on its opening
move, say) is set aside and re-drawn (see :class:`~dialogue_gym.envs.single.DialogueEnv`). A ``reset``
that raises leaves no episode running: ``step`` raises ``EpisodeStateError`` until a ``reset`` succeeds.

## Episode End
The agent ends the call, the customer hangs up, ``max_agent_turns`` agent actions pass (``timeout``),
or an invalid output with ``invalid_action="end"``. ``info["strict_pass"]`` says whether the agent
won (the customer wins when it is False).

## Arguments
As RLADA-Banking-v0; ``learner`` defaults to ``"customer"`` and ``agent`` ("keyword" |
"always_escalate" | "random" | "oracle" | "phrase_match" | "llm", with ``agent_backend``) chooses the opponent.

## Version History
* v0: initial release.
* v0, hardening (unreleased, no bump): parsing bounded and total; over-long customer turns are cut; tool amounts >= 0.01. Scripted baselines score as before.
* v0, scores follow quality (issue 9, unreleased, no bump): a hang-up concedes the call (hanging up at once
  now earns -1.5 instead of +1.375); per-turn credit needs an understood, non-repeated turn; adversarial
  credit needs a grounded customer; the keyword opponent ignores word salad. The scripted styles keep their
  order (direct < vague < camouflage); their rewards are re-measured in the README.
* v0, a realistic customer (issue 9, unreleased, no bump): adversarial credit needs a customer that tells the
  truth about its problem and states it when asked (``scenarios/rlada/data/UNDERSTANDING.md``). A turn that
  asserts a problem of another tool than its intent's, or a second turn of side worries, scores realism and
  concealment 0, halves the call's realism and caps ``inverse_agent`` at 0; so does withholding the problem
  after three real questions. A blind script of fresh grounded misleading lines earned about 1.5 (agent
  PASS 0.0) against camouflage's ~1.0; it now earns 0.775. Camouflage 1.022 -> 1.017, direct and vague and
  every agent-side number unchanged. Turn records gain ``invents_problem`` and ``discloses``.
* v0, a side worry needs the customer's own story (issue 9, unreleased, no bump): one hedged side worry and
  never the real problem scored 1.473 against camouflage's 1.017 (the keyword router acts on the worry at
  once), and a fluent false claim then acknowledgements 0.800 (above the degenerate bound, 0.767). A side worry in
  a call whose story never told the customer's own problem before the agent acted (``lexicon.json``
  ``problem_signs``, ``reading.told_problem``) now invents a problem, and an untruthful call earns no
  concealment: the two score 0.56. Every packaged customer line tells its own problem, so the fair styles
  keep their order and scores (camouflage loses 0.002: its one false-positive opener). Turn records gain
  ``side_worry``; trajectories ``meta["customer_told_problem"]``.
* v0, the contextual customer (issue 9, unreleased, no bump): a new scripted customer, ``contextual``
  (camouflage that always opens with a hedged worry about another tool's problem beside a hint of its own),
  1.430 over the 234 starts against camouflage's 0.988. The same opening fixed for every call scored 1.349,
  above the old audit baseline (camouflage) + 0.05 while telling the truth: the customer audit's bounds are
  now relative to ``contextual`` (1.412 over 600 episodes). Rewards, rules and every other style unchanged.
* v0, the customer knows no bank seed (issue 42, unreleased, no bump): the customer's ``start`` profile
  (``role_profile("customer")``) no longer holds ``bank_seed``, with which a customer policy rebuilt the
  simulated bank and replayed its own episode against the deterministic ``keyword`` agent (+0.17 reward). The
  episode profile, the trajectory and the privileged channel keep it; the scripted styles never read it, so
  every episode is unchanged. ``agent="phrase_match"`` (the agent audit's fair ceiling) is a new opponent.
"""

from __future__ import annotations

from dialogue_gym.envs.rlada_banking_v0 import (
    RladaBankingEnv,
    RladaBankingVectorEnv,
    env,
    parallel_env,
    raw_env,
)

__all__ = ["RladaCustomerEnv", "RladaCustomerVectorEnv", "env", "parallel_env", "raw_env"]


class RladaCustomerEnv(RladaBankingEnv):
    __doc__ = __doc__
    default_learner = "customer"
    view_id = "RLADA-Customer-v0"


class RladaCustomerVectorEnv(RladaBankingVectorEnv):
    __doc__ = __doc__
    default_learner = "customer"
    view_id = "RLADA-Customer-v0"
