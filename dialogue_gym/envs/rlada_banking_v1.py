"""RLADA-Banking-v1: RLADA-Banking-v0 against a customer that can withhold its problem.

## Description
The game of ``RLADA-Banking-v0`` (:mod:`dialogue_gym.envs.rlada_banking_v0`, whose docstring has the
full rules, spaces, rewards and arguments): the same tools, bank, judge, rewards and starts. Only the
default customer differs: ``customer="withholding"``
(:class:`~dialogue_gym.scenarios.rlada.customers.WithholdingCustomer`). Against v0's scripted customer a
fair agent that matches the caller's words against the public phrasings (``phrase_match``) reaches strict
PASS 1.000, so above about 0.70 that score did not measure understanding. The paper's customer wins on
*ambiguous-intent* calls (a duplicate charge that sounds like a payment mix-up, an unknown merchant that
may be a dispute or fraud, an internal transfer that may be pending or still to make; paper 003,
section 5.3 and appendix E). v1's customer does that: at the :data:`WITHHOLDING_LEVELS` a caller whose
problem one of the :data:`WITHHOLDING_STORIES` fits (``customer.json["withholding"]``; each story is
true of its own problem and of a problem another tool serves) never states the problem. It opens with
a line of the story, answers every real question with another, and hangs up after ``patience`` (3)
questions. Every other call is v0's scripted customer.

So no agent can tell the tool from the caller's words on those calls (about a quarter of the taxonomy's
starts: :data:`WITHHELD_SHARE`), and the fair ceiling (``phrase_match``) is below 1.0 while ``oracle``
(reads the intent) stays at 1.0; the environment's docs page gives every baseline's strict PASS, generated
from the saved sealed run. The baselines keep v0's order.

## Roles, Observation Space, Action Space, Rewards, Starting State, Episode End
As RLADA-Banking-v0.

## Arguments
As RLADA-Banking-v0; ``customer`` defaults to ``"withholding"`` (``"scripted"`` gives v0's episodes).

## Version History
* v1: the withholding customer (issue 42, item 7). v0 is unchanged: its baselines stay comparable.
"""

from __future__ import annotations

from typing import Any

from dialogue_gym.envs.multiagent import DialogueAECEnv, DialogueParallelEnv
from dialogue_gym.envs.rlada_banking_v0 import RladaBankingEnv, RladaBankingVectorEnv
from dialogue_gym.envs.rlada_banking_v0 import raw_env as raw_env_v0
from dialogue_gym.envs.scenario import aec_env, parallel_view
from dialogue_gym.scenarios.rlada.game import RladaGame

ENV_ID = "RLADA-Banking-v1"
NAME = "rlada_banking_v1"
DEFAULT_CUSTOMER = "withholding"
WITHHOLDING_LEVELS = ("vague", "camouflage")
"""The concealment levels at which a caller a story fits withholds its problem (``customer.json``)."""
WITHHOLDING_STORIES = 6
"""Stories in ``customer.json["withholding"]``, each shared by two families of different tools."""
WITHHELD_SHARE = 29 / 78 * 2 / 3
"""The taxonomy's share of withheld calls: 29 of the 78 intents have a story, at 2 of the 3 uniform levels."""


class RladaBankingV1Env(RladaBankingEnv):
    __doc__ = __doc__
    default_players = {"agent": "keyword", "customer": DEFAULT_CUSTOMER}
    view_id = ENV_ID


class RladaBankingV1VectorEnv(RladaBankingVectorEnv):
    __doc__ = __doc__
    default_players = {"agent": "keyword", "customer": DEFAULT_CUSTOMER}
    view_id = ENV_ID


class raw_env(raw_env_v0):
    __doc__ = __doc__
    metadata = {**DialogueAECEnv.metadata, "name": NAME}


def env(render_mode: str | None = None, **config: Any) -> DialogueAECEnv:
    """The AEC env (both roles are agents), wrapped like PettingZoo's own (order enforcing)."""
    return aec_env(raw_env, render_mode, config)


def parallel_env(render_mode: str | None = None, **config: Any) -> DialogueParallelEnv:
    return parallel_view(RladaGame, NAME, render_mode, config)
