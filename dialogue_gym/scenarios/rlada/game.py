"""The RL-ADA banking call: its rules, written once.

Roles: ``agent`` (the tool-using support agent) and ``customer`` (an adversarial caller with a hidden
intent). The customer speaks first; the agent then speaks, calls tools (results come back to it as
``tool`` messages and it moves again) or ends the call. Every tool call runs against the episode's
simulated bank (:mod:`.bank`). The episode ends on ``end_call``, on a customer hang-up, after
``max_agent_turns`` agent actions, or on a malformed output with ``invalid_action="end"``; then the
judge scores the call and both roles get their terminal reward terms (:mod:`dialogue_gym.rewards.rlada`).

Outcomes: ``success`` = strict PASS (the agent's win), ``hangup`` = the call ended (by the agent or
the customer) without a strict PASS, ``timeout``, ``invalid``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any

from gymnasium import spaces

from dialogue_gym.errors import ConfigError
from dialogue_gym.game import Game, StepResult, check_invalid_action_mode
from dialogue_gym.rewards.rlada import (
    AgentWeights,
    CustomerWeights,
    agent_terminal_terms,
    agent_turn_terms,
    customer_terminal_terms,
    strict_pass,
)
from dialogue_gym.readonly import message, message_views, thawed
from dialogue_gym.scenarios.common import MAX_ACTION_CHARS, config_number, memoise_short_texts, short_repr
from dialogue_gym.scenarios.rlada.bank import generate_bank
from dialogue_gym.scenarios.rlada.cues import (
    concealment,
    cue_hits,
    grounded,
    names_intent,
)
from dialogue_gym.scenarios.rlada.data import (
    FACT_KEYS,
    LEVELS,
    MIN_AMOUNT,
    Domain,
    Scenario,
    load_domain,
)
from dialogue_gym.scenarios.rlada.judge import LOOKUP, LLMJudge, RuleJudge, Verdict
from dialogue_gym.scenarios.rlada.parsing import (
    CustomerMove,
    parse_agent_action,
    parse_customer_output,
)
from dialogue_gym.scenarios.rlada.reading import (
    customer_turn_understood,
    misdirection,
    read_agent_turn,
    repeats_itself,
    told_problem,
)
from dialogue_gym.scenarios.rlada.prompts import (
    agent_system_prompt,
    customer_system_prompt,
)
from dialogue_gym.scenarios.rlada.tools import call_tool
from dialogue_gym.seeding import mix_seed
from dialogue_gym.spaces import ChatMessages, Utterance
from dialogue_gym.types import Outcome, Trajectory, Turn, finite_number

SCENARIO_SETS = ("taxonomy", "arena", "heldout")
JUDGES = ("rule", "llm")
PROFILE_KEYS = ("scenario", "intent", "concealment", "bank_seed", "facts")
SILENCE = "(silence)"
CUSTOMER_UNKNOWN = frozenset({"bank_seed"})
"""Profile keys the customer's :meth:`RladaGame.role_profile` leaves out: the seed of the simulated
bank is how the episode was made, not something a caller knows (the bank's facts it needs are in
``facts`` and its system prompt)."""


MAX_FACT_CHARS = 200
"""Longest text fact (merchant, person, ...) a reset profile may plant in the bank."""


@memoise_short_texts(maxsize=16384)
def read_customer_output(text: str, domain: Domain, max_sentences: int, max_chars: int) -> CustomerMove:
    """:func:`~dialogue_gym.scenarios.rlada.parsing.parse_customer_output` with ``domain``'s patterns,
    memoised: scripted customers repeat most of their lines, and the key holds the domain (hashed by
    identity) rather than its pattern tuples, which would be hashed pattern by pattern on every turn."""
    return parse_customer_output(text, domain.hangup_markers, domain.role_reversal, domain.meta_talk, max_sentences, max_chars)


@dataclass(frozen=True)
class RladaConfig:
    """Rules' constants (SPEC section 3); every one is a keyword of the envs. ``*_deduction`` values
    are added as written (RL-ADA: -1.2, -1.8); ``*_penalty`` and ``*_cost`` values are subtracted."""

    max_agent_turns: int = 12
    """Agent actions (speak, tool call, end_call, invalid output) before the call times out."""
    invalid_action: str = "penalize"
    """Malformed output, unknown tool or schema-invalid arguments: ``penalize`` (flag, penalty, go on), ``end``, ``raise``."""
    invalid_action_penalty: float = 0.3
    """Subtracted from the mover's reward per flagged move (agent and customer)."""
    judge: str = "rule"
    """``rule`` (the rule-based judge) or ``llm`` (a judge model through ``judge_backend``; routing stays rule-based)."""
    judge_backend: Any = None
    """Backend spec of the judge model (``judge="llm"``), e.g. ``{"name": "transformers", "model": "smollm2"}``."""
    judge_sampling: dict | None = None
    """Sampling of the judge model (default: greedy, 128 new tokens)."""
    judge_components: dict | None = None
    """Weights of the judge's components (default ``data/judge.json``: routing 1, lookup_first 0.5, procedure 1, clean_ending 0.25, consistency 0.25)."""
    judge_weight: float = 1.0
    """The agent's terminal ``judge`` term is this times the judge score (0-3)."""
    identity_deduction: float = -1.2
    """Added when no successful lookup_account precedes the domain tool."""
    domain_tool_deduction: float = -1.8
    """Added when the domain tool is missing or wrong."""
    wrong_escalation_penalty: float = 1.0
    """Subtracted when the agent escalates (transfer_to_human) an intent another tool serves."""
    hallucination_penalty: float = 1.0
    """Subtracted when a spoken claim is not backed by the tool results."""
    turn_cost: float = 0.05
    """Subtracted per agent action."""
    tool_progress_bonus: float = 0.1
    """Added for the first successful lookup_account and the first successful domain tool."""
    pass_threshold: float = 2.0
    """Strict PASS needs an agent reward of at least this."""
    customer_format_weight: float = 0.5
    customer_realism_weight: float = 0.5
    customer_concealment_weight: float = 0.5
    customer_inverse_weight: float = 0.5
    """The customer's ``inverse_agent`` term is minus this times the agent's total reward."""
    role_reversal_penalty: float = 1.0
    """Subtracted per customer turn that sounds like the bank."""
    customer_max_sentences: int = 2
    customer_max_chars: int = 400
    """Longer customer turns are cut to this (what the agent hears) and fail the format check; at most ``MAX_ACTION_CHARS``."""
    max_utterance_chars: int = 2000
    """Longer agent content is truncated and flagged; at most ``MAX_ACTION_CHARS``."""
    scenario_set: str = "taxonomy"
    """Where episodes come from without reset options: ``taxonomy`` (any of the 78 intents), ``arena`` (the 10 arena scenarios) or ``heldout`` (the 12 held-out ones)."""
    concealment: str | None = None
    """Concealment level of taxonomy episodes: ``direct``, ``vague``, ``camouflage``, or None (uniform per episode)."""
    data_dir: str | None = None
    """Folder with domain files replacing the packaged ones (see ``scenarios/rlada/data``)."""

    def __post_init__(self) -> None:
        check_invalid_action_mode(self.invalid_action)
        for name in ("max_agent_turns", "customer_max_sentences", "customer_max_chars", "max_utterance_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a positive int, got {value!r}.")
        for name in ("customer_max_chars", "max_utterance_chars"):
            if getattr(self, name) > MAX_ACTION_CHARS:
                raise ConfigError(f"{name} must be at most {MAX_ACTION_CHARS} (MAX_ACTION_CHARS, what a parser reads), got {getattr(self, name)!r}.")
        for spec in fields(self):
            if spec.type == "float":
                config_number(spec.name, getattr(self, spec.name))
        if self.judge not in JUDGES:
            raise ConfigError(f"judge={self.judge!r} is not supported; use one of {JUDGES} (with judge_backend=... for 'llm').")
        if self.judge == "llm" and self.judge_backend is None:
            raise ConfigError("judge='llm' needs judge_backend=..., e.g. judge_backend={'name': 'transformers', 'model': 'smollm2'}.")
        if self.judge == "rule" and self.judge_backend is not None:
            raise ConfigError("judge_backend is only used with judge='llm'; pass judge='llm' too, or drop judge_backend.")
        if self.scenario_set not in SCENARIO_SETS:
            raise ConfigError(f"scenario_set={self.scenario_set!r} is not supported; use one of {SCENARIO_SETS}.")
        if self.concealment is not None and self.concealment not in LEVELS:
            raise ConfigError(f"concealment={self.concealment!r} is not a level; use one of {list(LEVELS)} or None.")

    def agent_weights(self) -> AgentWeights:
        return AgentWeights(
            judge_weight=self.judge_weight, identity_deduction=self.identity_deduction,
            domain_tool_deduction=self.domain_tool_deduction, wrong_escalation_penalty=-self.wrong_escalation_penalty,
            hallucination_penalty=-self.hallucination_penalty, turn_cost=-self.turn_cost,
            tool_progress_bonus=self.tool_progress_bonus,
        )

    def customer_weights(self) -> CustomerWeights:
        return CustomerWeights(
            format_weight=self.customer_format_weight, realism_weight=self.customer_realism_weight,
            concealment_weight=self.customer_concealment_weight, inverse_weight=self.customer_inverse_weight,
            role_reversal_penalty=-self.role_reversal_penalty,
        )


class RladaGame(Game):
    id = "RLADA-Banking-v0"
    roles = ("agent", "customer")
    reset_options = ("profile", "scenario", "intent", "concealment")
    config_class = RladaConfig

    def __init__(self, config: RladaConfig | None = None, judge: Any = None, **kwargs: Any):
        """``judge``: a judge object to use instead of the one ``config`` names (``spawn`` shares its judge)."""
        super().__init__()
        self.config = config if config is not None else RladaConfig(**kwargs)
        self.domain: Domain = load_domain(self.config.data_dir)
        if judge is None:
            judge = (
                LLMJudge(self.domain, self.config.judge_backend, self.config.judge_sampling, self.config.judge_components)
                if self.config.judge == "llm"
                else RuleJudge(self.domain, self.config.judge_components)
            )
        self.judge = judge
        self._tools = {tool.name: tool for tool in self.domain.tools}
        self._agent_weights = self.config.agent_weights()
        components = self.config.judge_components or self.domain.judge["components"]
        self._conceded_agent_reward = self.config.judge_weight * float(sum(components.values()))
        """What a customer that ends the call concedes: the agent's best judge term (3.0 by default)."""
        self._customer_weights = self.config.customer_weights()
        self._utterance_space = Utterance(max_length=max(4096, self.config.max_utterance_chars * 2))
        turn_space = spaces.Discrete(self.config.max_agent_turns + 1)
        self._observation_spaces = {
            "agent": spaces.Dict({"messages": ChatMessages(roles=("system", "user", "assistant", "tool")), "turn": turn_space}),
            "customer": spaces.Dict(
                {
                    "messages": ChatMessages(),
                    "turn": turn_space,
                    "intent": spaces.Discrete(len(self.domain.intents)),
                    "concealment": spaces.Discrete(len(LEVELS)),
                }
            ),
        }

    def spawn(self) -> RladaGame:
        return type(self)(self.config, judge=self.judge)

    # -- spaces ----------------------------------------------------------------------------
    def observation_space(self, role: str) -> spaces.Space:
        return self._observation_spaces[self.check_role(role)]

    def action_space(self, role: str) -> spaces.Space:
        self.check_role(role)
        return self._utterance_space

    # -- episode start ---------------------------------------------------------------------
    def scenarios(self) -> tuple[Scenario, ...]:
        return self.domain.arena if self.config.scenario_set == "arena" else self.domain.heldout

    def _scenario_profile(self, scenario: Scenario) -> dict[str, Any]:
        return {
            "scenario": scenario.id, "intent": scenario.intent, "concealment": scenario.concealment, "facts": dict(scenario.facts),
            "kind": scenario.kind, "customer_winnable": scenario.customer_winnable, "safety": scenario.safety,
        }

    def _coerce_profile(self, options: dict[str, Any]) -> dict[str, Any]:
        """A partial or complete profile from reset options (``profile``, ``scenario``, ``intent``, ``concealment``)."""
        profile: dict[str, Any] = {}
        if "profile" in options:
            given = options["profile"]
            if not isinstance(given, dict):
                raise ConfigError(f"options['profile'] must be a dict (an episode_profile()), got {type(given).__name__}: {given!r:.80}.")
            profile = {key: given[key] for key in (*PROFILE_KEYS, "kind", "customer_winnable", "safety") if key in given}
        if "scenario" in options:
            scenario_id = options["scenario"]
            if not isinstance(scenario_id, str):
                raise ConfigError(f"options['scenario'] must be a scenario id (str), got {scenario_id!r}.")
            profile = {**self._scenario_profile(self.domain.scenario(scenario_id)), **profile}
        for key in ("intent", "concealment"):
            if key in options:
                profile[key] = options[key]
        if profile.get("scenario") is not None and "intent" not in profile:
            profile = {**self._scenario_profile(self.domain.scenario(profile["scenario"])), **profile}
        return profile

    def _complete_profile(self, profile: dict[str, Any]) -> dict[str, Any]:
        if "intent" not in profile:
            if self.config.scenario_set == "taxonomy":
                profile["intent"] = self.domain.intents[self.rng.randrange(len(self.domain.intents))].name
            else:
                scenarios = self.scenarios()
                profile = {**self._scenario_profile(scenarios[self.rng.randrange(len(scenarios))]), **profile}
        intent = self.domain.intent(profile["intent"]) if isinstance(profile["intent"], str) else None
        if intent is None:
            raise ConfigError(f"profile intent must be an intent name (str), got {profile['intent']!r}.")
        level = profile.get("concealment") or self.config.concealment or LEVELS[self.rng.randrange(len(LEVELS))]
        if level not in LEVELS:
            raise ConfigError(f"concealment={level!r} is not a level; use one of {list(LEVELS)}.")
        # Drawn only when missing: a start given whole (every evaluation start) then seeds no random stream.
        bank_seed = profile["bank_seed"] if "bank_seed" in profile else self.rng.getrandbits(62)
        if isinstance(bank_seed, bool) or not isinstance(bank_seed, int) or bank_seed < 0:
            raise ConfigError(f"profile bank_seed must be a non-negative int, got {bank_seed!r}.")
        facts = profile.get("facts") or {}
        if not isinstance(facts, dict):
            raise ConfigError(f"profile facts must be a dict, got {facts!r}.")
        unknown = sorted(map(str, set(facts) - FACT_KEYS))
        if unknown:
            raise ConfigError(f"profile facts {short_repr(unknown)} are not facts; use keys from {sorted(FACT_KEYS)}.")
        amount = facts.get("amount", MIN_AMOUNT)
        if not (finite_number(amount) and amount >= MIN_AMOUNT):
            raise ConfigError(f"profile facts['amount'] must be a finite number of dollars >= {MIN_AMOUNT}, got {short_repr(amount)}.")
        for key, value in facts.items():
            if key != "amount" and not (isinstance(value, str) and 0 < len(value) <= MAX_FACT_CHARS):
                raise ConfigError(f"profile facts[{key!r}] must be a non-empty str of at most {MAX_FACT_CHARS} characters, got {short_repr(value)}.")
        if not (profile.get("kind") is None or isinstance(profile["kind"], str)):
            raise ConfigError(f"profile kind must be a str or None, got {short_repr(profile['kind'])}.")
        for key in ("customer_winnable", "safety"):
            if profile.get(key) is not None and not isinstance(profile[key], bool):
                raise ConfigError(f"profile {key} must be true, false or None, got {short_repr(profile[key])}.")
        bank, facts = generate_bank(bank_seed, intent, self.domain, facts)
        self.bank, self.intent = bank, intent
        return {
            "scenario": profile.get("scenario"), "intent": intent.name, "tool": intent.tool, "family": intent.family,
            "concealment": level, "bank_seed": bank_seed, "facts": facts,
            "kind": profile.get("kind"), "customer_winnable": profile.get("customer_winnable"), "safety": profile.get("safety"),
        }

    def _reset(self, options: dict[str, Any]) -> None:
        self.profile = self._complete_profile(self._coerce_profile(options))
        self.facts = self.profile["facts"]
        self.turns: list[Turn] = []
        self.agent_turns = 0
        self.outcome: Outcome | None = None
        self.failure: str | None = None
        self.verdict: Verdict | None = None
        self.passed: bool | None = None
        self.begin_accounting()
        self._role_terms: dict[str, dict[str, float]] = {role: {} for role in self.roles}
        self._tool_error: str | None = None
        self._role_reversal = False
        self._progress = {"lookup": False, "domain": False}
        self._customer_scores: dict[str, list[float]] = {"format": [], "realism": [], "concealment": []}
        self._grounded = False
        self._worry_turns: list[int] = []
        """Indices (into the customer's per-turn scores) of its turns that voiced side worries."""
        self._story: list[str] = []
        """The customer's understood turns before the agent acted: what it acted on."""
        self._acted = False
        """Whether the agent made its routing decision: a domain tool call that passed schema validation
        (accepted by the bank or not), as the judge counts routing."""
        self._told: bool | None = None
        self._misled = False
        self._disclosed = False
        self._questions = 0
        self._shown_results: dict[int, str] = {}
        """The JSON text of each successful tool result (by turn index), as the agent's tool message holds it: handed to the judge."""
        self._agent_messages = [message("system", agent_system_prompt(self.domain, self.bank))]
        self._customer_messages = [
            message("system", customer_system_prompt(self.domain, self.bank, self.intent, self.facts, self.profile["concealment"])),
            message("user", self.domain.bank["greeting"]),
        ]
        self._role = "customer"

    def evaluation_options(self, episode: int, seed: int) -> dict[str, Any]:
        """The fixed evaluation set: every intent at each concealment level in turn (``taxonomy``), or
        the arena / held-out scenarios in turn; the bank and facts come from ``(seed, episode)``."""
        bank_seed = mix_seed(seed, episode)
        if self.config.scenario_set == "taxonomy":
            intents = self.domain.intents
            level = self.config.concealment or LEVELS[(episode // len(intents)) % len(LEVELS)]
            return {"profile": {"intent": intents[episode % len(intents)].name, "concealment": level, "bank_seed": bank_seed}}
        scenarios = self.scenarios()
        return {"profile": {**self._scenario_profile(scenarios[episode % len(scenarios)]), "bank_seed": bank_seed}}

    def evaluation_strata(self) -> tuple[dict[str, Any], ...]:
        """``taxonomy``: one stratum per intent at each concealment level played, faceted by the intent's
        tool and the level; the arena / held-out sets: one per scenario, faceted by kind and level."""
        if self.config.scenario_set == "taxonomy":
            levels = (self.config.concealment,) if self.config.concealment else LEVELS
            return tuple({"tool": intent.tool, "concealment": level} for level in levels for intent in self.domain.intents)
        return tuple({"kind": scenario.kind, "concealment": scenario.concealment} for scenario in self.scenarios())

    # -- moves -------------------------------------------------------------------------------

    def add_reward(self, rewards: dict[str, float], role: str, term: str, value: float) -> None:
        """:meth:`Game.add_reward`, also kept per role for :meth:`info`, which hands each role its own
        terms twice a move: filtering every ``<role>/<term>`` key for it each time cost 2-3% of a
        scripted RL-ADA episode's CPU (keyword agent, measured side by side in one process)."""
        super().add_reward(rewards, role, term, value)
        terms = self._role_terms[role]
        terms[term] = terms.get(term, 0.0) + value

    def _add(self, rewards: dict[str, float], role: str, terms: dict[str, float]) -> None:
        for term, value in terms.items():
            self.add_reward(rewards, role, term, value)

    def _step(self, role: str, text: str, token_ids: list[int] | None, logprobs: list[float] | None) -> StepResult:
        rewards = {"agent": 0.0, "customer": 0.0}
        if role == "agent":
            self._agent_move(text, token_ids, logprobs, rewards)
        else:
            self._customer_move(text, token_ids, logprobs, rewards)
        return StepResult(role, rewards, terminated=self._role is None, truncated=False, info=self.info(role))

    def _agent_move(self, text: str, token_ids, logprobs, rewards: dict[str, float]) -> None:
        action = parse_agent_action(text, self.config.max_utterance_chars)
        self.agent_turns += 1
        problem = action.problem
        outcome = None
        progress = 0
        heard = ""
        self._tool_error = None
        self._agent_messages.append(message("assistant", text))
        if problem is None and action.action_type == "tool_call":
            outcome = call_tool(self.bank, self._tools, action.tool, action.args)
            self._acted = self._acted or (outcome.schema_ok and outcome.tool != LOOKUP)
            if not outcome.schema_ok:
                problem = f"{outcome.error['code']}: {outcome.error['message']}"
            elif not outcome.ok:
                self._tool_error = outcome.error["code"]
            elif outcome.tool == LOOKUP and not self._progress["lookup"]:
                self._progress["lookup"], progress = True, 1
            elif outcome.tool != LOOKUP and not self._progress["domain"]:
                self._progress["domain"], progress = True, 1
            result, shown = outcome.message_json()
            self._agent_messages.append(message("tool", result))
            if shown is not None:
                self._shown_results[len(self.turns)] = shown  # the index this agent turn gets below
            heard = f"[{outcome.tool}({json.dumps(outcome.args)}) -> {'ok' if outcome.ok else 'error'}]"
        elif problem is not None:
            self._agent_messages.append(message("tool", json.dumps({"error": "invalid_action", "detail": problem})))
        else:
            heard = action.content
            if action.action_type == "speak" and not self._progress["domain"]:
                self._count_question(action.content)
        parsed = action.parsed()  # a fresh dict each call: the turn's own
        parsed["tool_outcome"] = outcome.record() if outcome is not None else None
        self.turns.append(Turn("agent", text, heard or ("(invalid output)" if problem else ""), parsed, None, problem, token_ids, logprobs))
        self._add(rewards, "agent", agent_turn_terms(progress=progress, weights=self._agent_weights))
        if self.flag_invalid("agent", problem, rewards):
            self._finish(Outcome.INVALID, rewards)
        elif problem is None and action.action_type == "end_call":
            self._finish(None, rewards)
        elif problem is None and action.action_type == "speak":
            self._customer_messages.append(message("user", action.content))
            self._role = "customer"
        if self._role is not None and self.agent_turns >= self.config.max_agent_turns:
            self._finish(Outcome.TIMEOUT, rewards)

    def _count_question(self, content: str) -> None:
        """Count a real question the agent asks before it acts (a domain tool), read as the scripted customer
        reads it (from the customer turns as the agent heard them, which are bounded by ``customer_max_chars``)."""
        heard = [turn.text for turn in self.turns if turn.role == "customer"]
        said = [self.domain.bank["greeting"], *(turn.text for turn in self.turns if turn.role == "agent" and turn.parsed.get("action_type") == "speak")]
        if read_agent_turn(content, heard, said, self.domain).kind == "question":
            self._questions += 1

    def _customer_move(self, text: str, token_ids, logprobs, rewards: dict[str, float]) -> None:
        domain, config = self.domain, self.config
        move = read_customer_output(text, domain, config.customer_max_sentences, config.customer_max_chars)
        understood = bool(move.utterance) and customer_turn_understood(move.utterance, domain)
        earlier = [turn.text for turn in self.turns if turn.role == "customer" and turn.text]
        repeated = bool(move.utterance) and repeats_itself(move.utterance, earlier, domain)
        # A turn earns per-turn credit only when it says something: one a person understands that is
        # not a near-repeat of an earlier turn (word salad, made-up words and parroting score 0).
        says_something = understood and not repeated
        conceal = concealment(move.utterance, self.intent, domain) if move.utterance else 1.0
        is_grounded = understood and grounded(move.utterance, self.facts)
        self._grounded = self._grounded or is_grounded
        # A realistic customer tells the truth about its problem: a turn that asserts a problem it does
        # not have, or a second turn of side worries (a new worry each turn), invents problems: it scores
        # no realism and no concealment (misdirection by a falsehood hides nothing), and the call's realism
        # is halved and earns no adversarial credit. Stating its own problem before the agent
        # acts is a disclosure (data/UNDERSTANDING.md). Whether a side worry stood beside the
        # customer's own story is known once the agent has acted (_finish).
        reading = misdirection(move.utterance, self.intent, domain) if understood else None
        invents = reading is not None and (reading.asserted or (reading.worried and bool(self._worry_turns)))
        if reading is not None:
            if reading.worried:
                self._worry_turns.append(len(self._customer_scores["realism"]))
            if not self._acted:
                self._story.append(move.utterance)
            self._disclosed = self._disclosed or (reading.disclosed and not self._progress["domain"])
        self._misled = self._misled or invents
        if move.utterance:
            self._customer_scores["format"].append(float(move.format_ok and says_something))
            self._customer_scores["realism"].append(float(says_something and not invents and not move.role_reversal and not move.meta_talk))
            self._customer_scores["concealment"].append(conceal if says_something and not invents else 0.0)
        parsed = {
            **move.parsed(),
            "understood": understood,
            "repeat": repeated,
            "concealment": conceal,
            "names_intent": names_intent(move.utterance, self.intent, domain.tool_names),
            "grounded": is_grounded,
            "invents_problem": invents,
            "side_worry": bool(reading is not None and reading.worried),
            "discloses": bool(reading is not None and reading.disclosed),
            "cue_hits": cue_hits(move.utterance, domain),
        }
        self.turns.append(Turn("customer", text, move.utterance, parsed, None, move.problem, token_ids, logprobs))
        self._customer_messages.append(message("assistant", text))
        self._agent_messages.append(message("user", move.utterance or SILENCE))
        self._role_reversal = bool(move.role_reversal)
        if move.role_reversal:
            self.add_reward(rewards, "customer", "role_reversal", self._customer_weights.role_reversal_penalty)
        if self.flag_invalid("customer", move.problem, rewards):
            self._finish(Outcome.INVALID, rewards, conceded=True)
        elif move.hangup:
            self._finish(Outcome.HANGUP, rewards, conceded=True)
        else:
            self._role = "agent"

    def _finish(self, outcome: Outcome | None, rewards: dict[str, float], conceded: bool = False) -> None:
        """End the call, judge it, and add both roles' terminal terms. ``outcome=None``: the agent's end_call;
        ``conceded``: the customer ended the call (hang-up, or an invalid turn with ``invalid_action="end"``),
        so it earns no adversarial credit (:func:`~dialogue_gym.rewards.rlada.customer_terminal_terms`)."""
        self._role = None
        self.outcome = outcome or Outcome.HANGUP
        # The package's judges take the tool results' JSON the game already wrote; a judge object of
        # another kind (set in place of the configured one, as tests do) gets the trajectory alone.
        trajectory = self.trajectory()
        if isinstance(self.judge, (RuleJudge, LLMJudge)):
            verdict = self.judge.judge(trajectory, self._shown_results)
        else:
            verdict = self.judge.judge(trajectory)
        self._add(
            rewards, "agent",
            agent_terminal_terms(
                judge_score=verdict.score, routing_correct=verdict.routing_correct, lookup_first=verdict.lookup_first,
                wrong_escalation=verdict.wrong_escalation, consistent=verdict.consistent, weights=self._agent_weights,
            ),
        )
        self.passed = strict_pass(
            routing_correct=verdict.routing_correct, lookup_first=verdict.lookup_first, agent_reward=self.returns["agent"],
            clean_ending=verdict.clean_ending, threshold=self.config.pass_threshold,
        )
        if outcome is None and self.passed:
            self.outcome = Outcome.SUCCESS
        scores = self._customer_scores
        # A side worry is contextual camouflage only beside the customer's own story: when what the agent
        # heard before it acted never told the customer's problem, the worry was the whole story, a problem
        # the customer does not have, and its turns score no realism (data/UNDERSTANDING.md).
        self._told = told_problem(self._story, self.intent, self.domain)
        worry_alone = bool(self._worry_turns) and not self._told
        realism = [0.0 if worry_alone and index in self._worry_turns else value for index, value in enumerate(scores["realism"])]
        self._add(
            rewards, "customer",
            customer_terminal_terms(
                format_scores=scores["format"], realism_scores=realism, concealment_scores=scores["concealment"],
                grounded=self._grounded, agent_total=self.returns["agent"], weights=self._customer_weights,
                truthful=not (self._misled or worry_alone), withheld=self._questions >= self.domain.customer["reveal_after"]["camouflage"] and not self._disclosed,
                conceded=conceded, conceded_agent_reward=self._conceded_agent_reward,
            ),
        )
        self.verdict = verdict

    def _abort(self, role: str, cause: str) -> None:
        self.outcome = Outcome.BACKEND_FAILURE
        self.failure = cause
        self._role = None

    # -- views -------------------------------------------------------------------------------
    def observe(self, role: str) -> dict[str, Any]:
        if role == "agent":
            return {"messages": message_views(self._agent_messages), "turn": self.agent_turns}
        return {
            "messages": message_views(self._customer_messages),
            "turn": self.agent_turns,
            "intent": self.intent.index,
            "concealment": LEVELS.index(self.profile["concealment"]),
        }

    def info(self, role: str) -> dict[str, Any]:
        verdict = self.verdict
        return {
            "turn": self.agent_turns,
            **({"intent": self.intent.name, "concealment": self.profile["concealment"]} if role == "customer" else {}),
            "invalid_action": self._last_problem[role],
            "tool_error": self._tool_error if role == "agent" else None,
            "role_reversal": self._role_reversal if role == "customer" else False,
            "outcome": self.outcome.value if self.outcome is not None else None,
            "strict_pass": self.passed,
            "routing_correct": verdict.routing_correct if verdict is not None else None,
            "routed_tool": verdict.routed_tool if verdict is not None else None,
            "reward_terms": dict(self._role_terms[role]),
        }

    def episode_profile(self) -> dict[str, Any]:
        return thawed(self.profile)

    def role_profile(self, role: str) -> dict[str, Any]:
        """The customer knows its problem, its facts and how much it conceals; the agent knows nothing
        of the caller before the call. Neither gets :data:`CUSTOMER_UNKNOWN` (``bank_seed``, which
        rebuilds the whole bank: with it a customer could replay its episode against a deterministic
        agent); it stays in :meth:`episode_profile` and :meth:`privileged`."""
        if role != "customer":
            return {}
        return {key: value for key, value in thawed(self.profile).items() if key not in CUSTOMER_UNKNOWN}

    def privileged(self) -> dict[str, Any]:
        return {
            **super().privileged(),
            "intent": self.intent.name,
            "target_tool": self.intent.tool,
            "scenario": self.profile["scenario"],
            "concealment": self.profile["concealment"],
        }

    def trajectory(self) -> Trajectory:
        meta: dict[str, Any] = {}
        if self.failure is not None:
            meta["failure"] = self.failure
        if self.verdict is not None:
            meta["verdict"] = self.verdict.to_dict()
            meta["strict_pass"] = self.passed
            meta["customer_told_problem"] = self._told
        return Trajectory(
            scenario=self.id,
            seed=self.seed,
            profile=dict(self.profile),
            turns=list(self.turns),
            outcome=self.outcome,
            rewards=dict(self.returns),
            reward_terms=dict(self.reward_terms),
            meta=meta,
        )

