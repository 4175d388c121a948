"""RL-ADA reward terms (SPEC section 3) as pure functions of what the judge found; each term is
reported separately, and :func:`agent_reward` / :func:`customer_reward` also work as TRL
``reward_funcs`` over the ``reward_terms`` column of recorded trajectories.

Support agent, per move: ``turn_cost`` (every action costs a little), ``tool_progress`` (the first
successful ``lookup_account`` and the first successful domain tool), and from the game
``invalid_action`` (malformed output, unknown tool, schema-invalid arguments). At the end:
``judge`` (judge score x weight), ``identity_check`` (-1.2 without a successful lookup before any
domain tool), ``domain_tool`` (-1.8 when the domain tool is missing or wrong), ``wrong_escalation``
(``transfer_to_human`` for an intent that did not need it), ``hallucination`` (a spoken claim the
tools do not back).

Customer, at the end (means over its turns): ``format`` (1-2 spoken sentences), ``realism`` (no
role reversal or meta talk, halved when it never mentioned a fact of its case and again when it
invented a problem), ``concealment`` (no explicit cue of its true tool), ``inverse_agent`` (minus the
agent's total reward, positive only for a grounded, truthful customer that did not withhold its
problem when asked; replaced by ``conceded`` when the customer itself ends the call; an untruthful
call also earns no ``concealment``), and per flagged turn ``role_reversal`` (and the
game's ``invalid_action``). A turn a person would not understand (word salad, made-up words, a keyword
list) or that near-repeats an earlier turn of the customer scores 0 on format, realism and concealment.
A turn that invents a problem (asserts one another tool serves, or voices side worries a second time)
scores 0 on realism and concealment (the game reads it, :func:`~dialogue_gym.scenarios.rlada.reading.misdirection`);
so does a side worry in a call whose story never told the customer's own problem before the agent
acted (:func:`~dialogue_gym.scenarios.rlada.reading.told_problem`).

Strict PASS = correct routing AND lookup first AND agent reward >= 2.0 AND a clean ending.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from dialogue_gym.errors import ConfigError


@dataclass(frozen=True)
class AgentWeights:
    judge_weight: float = 1.0
    """Multiplies the judge score (0-3)."""
    identity_deduction: float = -1.2
    """Missing identity verification: no successful lookup_account before the domain tool (RL-ADA: -1.2)."""
    domain_tool_deduction: float = -1.8
    """Missing or wrong domain tool (RL-ADA: -1.8)."""
    wrong_escalation_penalty: float = -1.0
    """transfer_to_human for an intent another tool serves."""
    hallucination_penalty: float = -1.0
    """A spoken claim the tool results do not back."""
    turn_cost: float = -0.05
    """Per agent action."""
    tool_progress_bonus: float = 0.1
    """For the first successful lookup and the first successful domain tool."""


@dataclass(frozen=True)
class CustomerWeights:
    format_weight: float = 0.5
    realism_weight: float = 0.5
    concealment_weight: float = 0.5
    inverse_weight: float = 0.5
    """The customer gains ``-inverse_weight * agent_total``."""
    role_reversal_penalty: float = -1.0
    """Per customer turn that sounds like the bank."""


PASS_THRESHOLD = 2.0


def agent_turn_terms(*, progress: int, weights: AgentWeights) -> dict[str, float]:
    """Terms of one agent move: ``progress`` is how many first successes (lookup, domain tool) it made.
    (A malformed move's ``invalid_action`` penalty is the game's, as in every scenario.)"""
    terms = {"turn_cost": weights.turn_cost}
    if progress:
        terms["tool_progress"] = weights.tool_progress_bonus * progress
    return terms


def agent_terminal_terms(
    *, judge_score: float, routing_correct: bool, lookup_first: bool, wrong_escalation: bool, consistent: bool, weights: AgentWeights
) -> dict[str, float]:
    terms = {"judge": weights.judge_weight * judge_score}
    if not lookup_first:
        terms["identity_check"] = weights.identity_deduction
    if not routing_correct:
        terms["domain_tool"] = weights.domain_tool_deduction
    if wrong_escalation:
        terms["wrong_escalation"] = weights.wrong_escalation_penalty
    if not consistent:
        terms["hallucination"] = weights.hallucination_penalty
    return terms


def customer_terminal_terms(
    *,
    format_scores: Sequence[float],
    realism_scores: Sequence[float],
    concealment_scores: Sequence[float],
    grounded: bool,
    agent_total: float,
    weights: CustomerWeights,
    conceded: bool = False,
    conceded_agent_reward: float = 3.0,
    truthful: bool = True,
    withheld: bool = False,
) -> dict[str, float]:
    """End-of-episode customer terms from per-turn scores (each in [0, 1]); no turns gives zeros.

    ``inverse_agent`` (``-inverse_weight * agent_total``) is the adversarial credit for a call the
    agent could play out. A customer that ends the call itself (``conceded``: a hang-up) did not
    beat the agent, it left: the agent's missing-tool deductions would otherwise pay it for leaving
    (hanging up at once earned 1.375 and beat every fair style). It gets ``conceded`` =
    ``-inverse_weight * max(agent_total, conceded_agent_reward)`` instead, as if the agent had earned
    its best judge score (3.0), so leaving is never worth more than staying and losing.

    Adversarial credit (a positive ``inverse_agent``) also needs the customer to have put its own
    case to the agent (``grounded``: an understood turn that mentions a fact of its case). A
    customer that only ever talks about something else, or says nothing of substance, is not
    concealing its problem, it never presented it; it can still lose from the agent's success.

    It also needs a realistic customer (SPEC section 3: camouflage hides the problem, it does not invent
    others or refuse to ever state it): ``truthful`` (no turn asserted a problem another tool serves,
    side worries stood in one turn, not a new worry each turn, and beside a story that told the
    customer's own problem before the agent acted) and not ``withheld`` (the agent asked as many real
    questions as the camouflage customer needs to state its problem, and the customer still had not
    stated it before the agent acted). A customer that won by lying or by never answering beat no
    agent: its credit is capped at 0 like an ungrounded one's. An untruthful call also earns no
    ``concealment``: what it kept from the agent, it kept behind a falsehood, which conceals nothing
    (an invented problem, then acknowledgements, kept half the concealment and scored above the
    audit's degenerate bound)."""
    mean = lambda values: sum(values) / len(values) if values else 0.0  # noqa: E731
    realism = mean(realism_scores) * (1.0 if grounded else 0.5) * (1.0 if truthful else 0.5)
    terms = {
        "format": weights.format_weight * mean(format_scores),
        "realism": weights.realism_weight * realism,
        "concealment": weights.concealment_weight * mean(concealment_scores) if truthful else 0.0,
    }
    if conceded:
        terms["conceded"] = -weights.inverse_weight * max(agent_total, conceded_agent_reward)
    else:
        fair = grounded and truthful and not withheld
        terms["inverse_agent"] = -weights.inverse_weight * (agent_total if fair else max(agent_total, 0.0))
    return terms


def strict_pass(*, routing_correct: bool, lookup_first: bool, agent_reward: float, clean_ending: bool, threshold: float = PASS_THRESHOLD) -> bool:
    """RL-ADA's strict PASS: correct routing AND lookup_account first AND r_DA >= threshold AND a clean ending."""
    return bool(routing_correct and lookup_first and agent_reward >= threshold and clean_ending)


def _role_reward(role: str, reward_terms: Sequence[dict[str, float]] | None) -> list[float]:
    if reward_terms is None:
        raise ConfigError(
            f"{role}_reward needs the trajectories' reward_terms (reward_terms=[{{'{role}/judge': ..., ...}}, ...]), "
            "e.g. the 'reward_terms' field of Trajectory.to_dict()."
        )
    prefix = f"{role}/"
    return [float(sum(v for k, v in terms.items() if k.startswith(prefix))) for terms in reward_terms]


def agent_reward(completions: Sequence[Any] | None = None, reward_terms: Sequence[dict[str, float]] | None = None, **kwargs: Any) -> list[float]:
    """The support agent's total reward per trajectory: the sum of its ``agent/<term>`` entries
    (a TRL reward function over a rollout's ``reward_terms`` column)."""
    return _role_reward("agent", reward_terms)


def customer_reward(completions: Sequence[Any] | None = None, reward_terms: Sequence[dict[str, float]] | None = None, **kwargs: Any) -> list[float]:
    """The customer's total reward per trajectory: the sum of its ``customer/<term>`` entries."""
    return _role_reward("customer", reward_terms)
