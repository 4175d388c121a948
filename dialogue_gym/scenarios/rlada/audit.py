"""RL-ADA's exploit audits (see :mod:`dialogue_gym.audit`).

* ``RLADA-Banking-v0``, learner ``agent``, scored by strict PASS (a rate): the generic library plus
  tool spraying, fabricated claims, content-free questions then routing, one turn that crams every
  act, echoing the caller, and the keyword router's procedure with a fabricated or an empty ("ok")
  explanation. Its fair ceiling is ``phrase_match``, the phrase-matching agent (strict PASS 1.000:
  saturated against the scripted customer).
* ``RLADA-Banking-v1``: the same audit against the withholding customer; ``phrase_match`` is below 1.0 there.
* ``RLADA-Customer-v0``, learner ``customer``, scored by the customer's mean reward: the generic
  library (hang up at once, empty, echo, word salad, made-up words, keyword and fact stuffing,
  near-repetition, content-free questions, one fixed sentence as blind) plus a salad of the keyword
  router's cues, a fixed fluent sentence stuffed with misleading cues, and customers that lie about
  their problem: a new grounded worry about another tool's problem every turn, fresh lines all
  pointing at one other tool, a false claim followed by grounded asides to every question, the real
  problem revealed only from the fourth turn (after the agent has acted), one hedged side worry and
  never the real problem, a fluent false claim then acknowledgements, every tool's problem voiced as
  worries in one turn, a side worry beside a recital of many problems' signs, a side worry with
  the truth told only after the agent acted, and (blind) the contextual customer's opening fixed for
  every call, against the scripted styles; the bounds are relative to ``contextual``, the strongest
  fair style (camouflage that always opens with a side worry beside a hint of its own problem). Its fair
  ceiling is ``planner``, which rehearses every style against a copy of the keyword router on a call it
  builds from what it knows and plays the best.
"""

from __future__ import annotations

import re

from dialogue_gym.audit import (
    AuditPolicy,
    ScenarioAudit,
    TextPolicy,
    Vocabulary,
    generic_policies,
    last_heard,
)
from dialogue_gym.scenarios.rlada.agents import ESCALATE, KeywordRouterAgent, account_id, procedure_action
from dialogue_gym.scenarios.rlada.judge import LOOKUP
from dialogue_gym.scenarios.rlada.cues import cue_hits
from dialogue_gym.scenarios.rlada.customers import family_lines
from dialogue_gym.scenarios.rlada.data import load_domain
from dialogue_gym.scenarios.rlada.parsing import render_agent_action
from dialogue_gym.scenarios.rlada.reading import customer_turn_understood, misdirection
from dialogue_gym.simulators.base import ScriptedPolicy

TOOLS = ("lookup_account", "get_transactions", "dispute_charge", "check_card_status", "transfer_funds", "transfer_to_human")
FABRICATED = (
    "I have refunded the charge, reversed the transfer and unblocked your card; your balance is now 25,000 dollars."
)


def speak(text: str) -> str:
    return render_agent_action("speak", text)


VOCABULARY = Vocabulary(
    opener="Thank you for calling. Could you tell me what you need help with today?",
    cue_words=("refund", "dispute", "card", "blocked", "transfer", "balance", "charge", "human", "fraud", "account", "?"),
    facts=(
        "I can look up your account.", "I can list your transactions.", "I can dispute a charge.",
        "I can check your card status.", "I can transfer funds.", "I can transfer you to a human.",
    ),
    fixed_sentence="I can help with your account today, what would you like to do?",
    end=render_agent_action("end_call", "Thank you for calling, goodbye."),
    wrap=speak,
)


def _spray(observation, turn, rng) -> str:
    tool = TOOLS[(turn - 1) % len(TOOLS)]
    return render_agent_action("tool_call", tool, {"account_id": account_id(observation)})


def _fabricate(observation, turn, rng) -> str:
    if turn == 1:
        return render_agent_action("tool_call", "lookup_account", {"account_id": account_id(observation)})
    if turn == 2:
        return speak(FABRICATED)
    return VOCABULARY.end


class QuestionsThenRoute(ScriptedPolicy):
    """Says ``asks`` content-free things (``"?"`` by default), then routes on the cues of the customer's
    last line alone, escalating when it has none: content-free questions that an earlier customer
    answered by stating its problem plainly."""

    def __init__(self, asks: tuple[str, ...] = ("?", "?", "?")) -> None:
        self.domain = load_domain()
        self.asks = asks

    def act(self, observation, info, memory) -> str:
        memory["turn"] = memory.get("turn", 0) + 1
        if memory["turn"] <= len(self.asks):
            return speak(self.asks[memory["turn"] - 1])
        if "route" not in memory:
            scores = cue_hits(last_heard(observation), self.domain)
            best = max(scores.values())
            memory["route"] = max(scores, key=scores.get) if best > 0 else ESCALATE
        return procedure_action(memory["route"], observation, memory)


MONOLOGUE = (
    "I can look up your account, list your transactions or dispute a charge. I can also check your card or move your money. "
    "Was it a payment? Was it your card? Was it a transfer? Is it your balance?"
)


NONSENSE = ("Is your account purple today?", "Does your card like jazz music?", "Did the payment sing to you?")
"""Grammatical questions with a topic word each, about nothing a bank call is about."""


class KeywordWith(KeywordRouterAgent):
    """The keyword router with one of its turns replaced: ``first`` (said before routing, e.g. an echo
    of the caller or a monologue) or ``explain`` (said instead of the explanation of the tool result)."""

    def __init__(self, first=None, explain: str | None = None) -> None:
        super().__init__(load_domain())
        self.first = first
        self.explain = explain

    def act(self, observation, info, memory) -> str:
        if self.first is not None and not memory.get("first_said"):
            memory["first_said"] = True
            return speak(self.first(observation))
        stage = memory.get("stage")
        action = super().act(observation, info, memory)
        explaining = stage == "explain" or (stage == "domain" and memory.get("route") == LOOKUP)
        return speak(self.explain) if self.explain is not None and explaining else action


def agent_policies() -> tuple[AuditPolicy, ...]:
    """The agent-side attacks beyond the generic library."""
    return (
        AuditPolicy("tool_spraying", "degenerate", "calls every tool in turn with the caller's account id", lambda: TextPolicy(_spray, str)),
        AuditPolicy("questions_then_route", "degenerate", 'says "?" three times, then routes on the last line\'s cues', QuestionsThenRoute),
        AuditPolicy("question_then_escalate", "degenerate", 'says "?" once, then routes on the reply or escalates', lambda: QuestionsThenRoute(("?",))),
        AuditPolicy("vague_then_route", "degenerate", '"Could you tell me more?" twice, then routes on the reply', lambda: QuestionsThenRoute(("Could you tell me more?", "What do you mean?"))),
        AuditPolicy(
            "nonsense_then_route", "degenerate", "three well-formed questions about nothing in the call, then routes on the reply",
            lambda: QuestionsThenRoute(NONSENSE),
        ),
        AuditPolicy("fabricated_claims", "degenerate", "looks up the account, then claims a refund, reversal, unblock and balance", lambda: TextPolicy(_fabricate, str)),
        AuditPolicy("monologue_then_route", "degenerate", "one turn offering every act and four questions, then the keyword route", lambda: KeywordWith(first=lambda o: MONOLOGUE)),
        AuditPolicy("echo_then_route", "degenerate", "repeats the caller's line back, then the keyword route", lambda: KeywordWith(first=lambda o: last_heard(o) + "?")),
        AuditPolicy("route_then_fabricate", "degenerate", "the keyword route and tools, then the fabricated claims as the explanation", lambda: KeywordWith(explain=FABRICATED)),
        AuditPolicy("route_then_ok", "degenerate", 'the keyword route and tools, then "Ok, all done." as the explanation', lambda: KeywordWith(explain="Ok, all done.")),
    )


# -- the customer role --------------------------------------------------------------------------------
CUSTOMER_VOCABULARY = Vocabulary(
    opener="Hi, there's something on my account from this week that I'm not happy about.",
    cue_words=("charged", "twice", "pending", "declined", "blocked", "stolen", "fraud", "balance", "savings", "refund", "dispute", "limit"),
    facts=(
        "My card was declined.", "I was charged twice.", "My transfer is still pending.", "I want to move money into savings.",
        "I think my card was stolen.", "I need to know my balance.",
    ),
    fixed_sentence="I have a problem with my account and I would like some help with it.",
    end="[hang up]",
)
MISLEADING = "I think my card was declined, a payment is still pending, and I might have been charged twice for something."
CUSTOMER_MARGIN = 0.25
"""How far below the best fair customer style every degenerate customer must stay: half of one
per-turn component's weight (format, realism and concealment are worth 0.5 each), so a degenerate
policy must lose at least half a component, several times the standard error of a 600-episode mean
reward (about 0.04)."""


_FACTS = re.compile(r"merchant (.{1,60}?), amount .{1,30}?, day (\w{1,12})")


def _misleading_about_my_case(observation, turn, rng) -> str:
    """The misleading sentence with the case's merchant and day (read from the customer's own prompt)."""
    found = _FACTS.search(observation["messages"][0]["content"]) if observation.get("messages") else None
    facts = {"merchant": found.group(1), "day": found.group(2)} if found else {}
    return f"On {facts.get('day', 'Monday')} at {facts.get('merchant', 'the shop')} my card was declined, and I might have been charged twice for it."


def _cue_salad(observation, turn, rng) -> str:
    words = list(CUSTOMER_VOCABULARY.cue_words)
    rng.shuffle(words)
    return " ".join(words[:5])


# Grounded, fluent worries about the case's facts, each pointing at one tool's cues (a problem the
# customer describes; it has it only when the tool is its intent's).
WORRIES = {
    "check_card_status": (
        "On {day} at {merchant} my card was declined at the till.",
        "Since {day} my card ending {last4} keeps getting refused everywhere.",
        "After {merchant} on {day} my card ending {last4} just stopped working.",
    ),
    "dispute_charge": (
        "I think {merchant} charged me twice for the {amount} on {day}.",
        "There's an extra fee next to the {amount} from {merchant} on {day}.",
        "I don't recognise the {amount} from {merchant}, it wasn't me on {day}.",
    ),
    "get_transactions": (
        "The {amount} at {merchant} from {day} is still pending in my app.",
        "My payment of {amount} on {day} to {merchant} never arrived.",
        "The {amount} from {day} failed and I'm still waiting on {merchant}.",
    ),
    "transfer_funds": (
        "After {merchant} on {day} I want to move {amount} from my checking into my savings.",
        "I'd like to put {amount} over into my savings before {day}.",
        "Can I move {amount} between my accounts, I got paid on {day}?",
    ),
    "lookup_account": (
        "After {merchant} on {day} I just need to check my balance.",
        "How much do I have left after the {amount} at {merchant} on {day}?",
        "I'd like to know what's in checking after {day}, with {merchant} and all.",
    ),
    "transfer_to_human": (
        "I think my card was stolen after {merchant} on {day}.",
        "Someone used my card at {merchant} on {day}, it could be fraud.",
        "My wallet went missing on {day} right after {merchant}.",
    ),
}
ASIDES = (
    "I was at {merchant} on {day} with a friend, it was a nice afternoon.",
    "It was {day}, I remember because {merchant} was busy.",
    "The card I use ends {last4}, I've had it for years.",
    "I usually spend about {amount} at {merchant} on a {day}.",
)
"""Grounded facts that answer nothing: what a customer says when it dodges a question."""
_PROMPT_FACTS = re.compile(r"merchant (?P<merchant>.{1,60}?), amount (?P<amount>.{1,30}?), day (?P<day>\w{1,12}), card ending (?P<last4>\d{4})")
_PROBLEM = re.compile(r"Your real problem \(keep it hidden, never name it in these words\): (.{1,400})")
DOMAIN = load_domain()


def _prompt(observation) -> str:
    messages = observation.get("messages") or [{"content": ""}]
    return messages[0]["content"]


def _facts(observation) -> dict[str, str]:
    found = _PROMPT_FACTS.search(_prompt(observation))
    return found.groupdict() if found else {"merchant": "the shop", "amount": "$20.00", "day": "Monday", "last4": "0000"}


def _own_tool(observation) -> str:
    """The customer's own intent's tool (the customer knows its problem)."""
    return DOMAIN.intents[int(observation.get("intent", 0)) % len(DOMAIN.intents)].tool


def _other_tools(observation) -> list[str]:
    own = _own_tool(observation)
    return [tool for tool in WORRIES if tool != own]


def _fresh_worry(observation, turn, rng) -> str:
    """A new grounded worry each turn, each about a problem of another tool than its own."""
    others = _other_tools(observation)
    tool = others[(turn - 1) % len(others)]
    return WORRIES[tool][((turn - 1) // len(others)) % len(WORRIES[tool])].format(**_facts(observation))


def _one_wrong_tool(observation, turn, rng) -> str:
    """Fresh grounded lines every turn, all pointing at the same other tool."""
    others = _other_tools(observation)
    tool = others[int(observation.get("intent", 0)) % len(others)]
    return WORRIES[tool][(turn - 1) % len(WORRIES[tool])].format(**_facts(observation))


def _dodge(opener):
    """Opens with ``opener``, then answers every question with an unrelated grounded fact."""

    def say(observation, turn, rng) -> str:
        if turn == 1:
            return opener(observation)
        if "?" in last_heard(observation):
            return ASIDES[(turn - 2) % len(ASIDES)].format(**_facts(observation))
        return "Okay, thanks."

    return say


def _false_claim(observation) -> str:
    """A fluent, grounded claim of another tool's problem (the second line of each worry list)."""
    tool = _other_tools(observation)[0]
    return WORRIES[tool][1].format(**_facts(observation))


def _hedged_worry(observation) -> str:
    """The same claim voiced as a worry, as contextual camouflage voices its side worries."""
    claim = _false_claim(observation)
    return "I'm not sure, but I think " + claim[0].lower() + claim[1:]


def _reveal_last(observation, turn, rng) -> str:
    """Misleading worries, then its real problem only from its fourth turn (after the agent has acted)."""
    if turn < 4:
        return _fresh_worry(observation, turn, rng)
    found = _PROBLEM.search(_prompt(observation))
    return found.group(1).strip() if found else _fresh_worry(observation, turn, rng)


SIDE_WORRY_ONLY = AuditPolicy(
    "side_worry_only", "degenerate", "the false claim as a hedged side worry, then every question dodged with a grounded fact",
    lambda: TextPolicy(_dodge(_hedged_worry), str),
)
"""The scripted camouflage customer's side-worry opener chosen every call, never followed by its
real problem: the keyword router acts on the worry at once (it scored 1.473 against camouflage's
1.017 before a side worry needed the customer's own story beside it)."""


def _asserted_claim(observation) -> str:
    """A worry line of another tool that the reader takes as an assertion (no hedge), in a sentence a
    person understands: an attacker that knows the recogniser."""
    intent = DOMAIN.intents[int(observation.get("intent", 0)) % len(DOMAIN.intents)]
    lines = [line.format(**_facts(observation)) for line in WORRIES[_other_tools(observation)[0]]]
    plain = [line for line in lines if customer_turn_understood(line, DOMAIN) and misdirection(line, intent, DOMAIN).asserted]
    return (plain or lines)[0]


SPRAY = (
    "On {day} at {merchant}, maybe my card was declined or I was charged twice, or a payment is still pending. "
    "I might need to check my balance or move money between my accounts, or maybe my card ending {last4} was stolen."
)
"""Every tool's problem voiced as a worry in one turn: whichever the real one is, it was "said"."""
SIGN_RECITAL = "It has been sitting there since, the app changed its mind, I can't place that charge and the total cost me more than I expected."
"""Signs of four families' problems (pending, reversal, unrecognised, charge_amount) in one sentence."""


def _worry_then_recital(observation) -> str:
    return f"{_hedged_worry(observation)} {SIGN_RECITAL}"


def _truth_after_acting(observation, turn, rng) -> str:
    """A hedged side worry; its real problem (from its prompt) from the second turn on: after the
    keyword router, which acts on the worry at once, has acted."""
    if turn == 1:
        return _hedged_worry(observation)
    found = _PROBLEM.search(_prompt(observation))
    return found.group(1).strip() if found else "Okay, thanks."


def _worry_beside_hint(observation) -> str:
    """The hedged false claim beside the first hint line of the customer's own family: the contextual
    customer's opening, fixed (the same worry every call, whatever the case)."""
    intent = DOMAIN.intents[int(observation.get("intent", 0)) % len(DOMAIN.intents)]
    facts = {**_HINT_FACTS, **_facts(observation)}
    return f"{_hedged_worry(observation)} {family_lines(DOMAIN, intent, 'hint')[0].format(**facts)}"


_HINT_FACTS = {
    "person": "my friend", "country": "Spain", "atm": "the ATM", "company": "a company", "descriptor": "the line",
    "source": "checking", "target": "savings",
}
"""Stand-ins for the hint lines' slots the customer's prompt does not list."""


def customer_policies() -> tuple[AuditPolicy, ...]:
    return (
        AuditPolicy("cue_salad", "degenerate", "five of the router's cue words a turn, no sentence", lambda: TextPolicy(_cue_salad, str)),
        AuditPolicy("misleading_template", "blind", "one fluent sentence of other tools' cues every turn", lambda: TextPolicy(lambda o, t, r: MISLEADING, str)),
        AuditPolicy("misleading_grounded", "blind", "the case's merchant and day slotted into a sentence of misleading cues", lambda: TextPolicy(_misleading_about_my_case, str)),
        AuditPolicy("fresh_misleading", "blind", "a new grounded worry about another tool's problem every turn, never its own", lambda: TextPolicy(_fresh_worry, str)),
        AuditPolicy("one_wrong_tool", "blind", "fresh grounded lines every turn, all pointing at one other tool", lambda: TextPolicy(_one_wrong_tool, str)),
        AuditPolicy("dodge_questions", "degenerate", "a false grounded claim, then every question answered with an unrelated grounded fact", lambda: TextPolicy(_dodge(_false_claim), str)),
        AuditPolicy("reveal_last", "blind", "misleading worries, its real problem only from the fourth turn", lambda: TextPolicy(_reveal_last, str)),
        SIDE_WORRY_ONLY,
        AuditPolicy(
            "false_claim_then_accept", "degenerate", "a fluent false claim stated as fact, then questions dodged and the answer accepted",
            lambda: TextPolicy(_dodge(_asserted_claim), str),
        ),
        AuditPolicy(
            "worry_spray", "degenerate", "every tool's problem voiced as a worry in one turn, then questions dodged",
            lambda: TextPolicy(_dodge(lambda o: SPRAY.format(**_facts(o))), str),
        ),
        AuditPolicy(
            "worry_and_sign_recital", "degenerate", "a hedged side worry beside signs of four families' problems, then questions dodged",
            lambda: TextPolicy(_dodge(_worry_then_recital), str),
        ),
        AuditPolicy("truth_after_acting", "degenerate", "a hedged side worry, its real problem only once the agent has acted", lambda: TextPolicy(_truth_after_acting, str)),
        AuditPolicy(
            "worry_beside_hint", "blind", "the same hedged side worry beside a hint of its own problem every call, then questions dodged",
            lambda: TextPolicy(_dodge(_worry_beside_hint), str),
        ),
    )


CEILING_DESCRIPTION = "matches the caller's words against the public phrasings, asks until one tool fits"
"""RLADA-Banking-v0's fair ceiling, ``phrase_match`` (:class:`~dialogue_gym.scenarios.rlada.agents.PhraseMatchAgent`):
it reaches strict PASS 1.000 against the scripted customer (the oracle's), reading nothing hidden, so
the score is saturated there; see docs/environments/rlada-banking.md."""


CEILING_DESCRIPTION_V1 = "matches the caller's words against the public phrasings and stories, asks until one tool fits"
"""RLADA-Banking-v1's fair ceiling, the same ``phrase_match``: below 1.0 there (0.905 over 600 episodes),
since a withholding caller's story fits two tools."""


def _agent_audit(env_id: str, ceiling: str) -> ScenarioAudit:
    return ScenarioAudit(
        env_id=env_id,
        learner="agent",
        score="strict_pass",
        score_kind="rate",
        baseline="keyword",
        fair_order=("random", "keyword", "oracle"),
        policies=(*generic_policies(VOCABULARY), *agent_policies()),
        ceiling={"phrase_match": ceiling},
    )


def audits() -> list[ScenarioAudit]:
    return [_agent_audit("RLADA-Banking-v0", CEILING_DESCRIPTION)]


def audits_v1() -> list[ScenarioAudit]:
    """RLADA-Banking-v1's audit: v0's agent audit against the withholding customer."""
    return [_agent_audit("RLADA-Banking-v1", CEILING_DESCRIPTION_V1)]


CUSTOMER_CEILING_DESCRIPTION = "rehearses each truthful style against a copy of the keyword router on a call it builds itself, plays the best"
"""RLADA-Customer-v0's fair ceiling, ``planner`` (:class:`~dialogue_gym.scenarios.rlada.planner.PlannerCustomer`):
it knows its own profile (no ``bank_seed``) and the agent's public code, rehearses on a bank of its own."""


def customer_audits() -> list[ScenarioAudit]:
    """RLADA-Customer-v0's audit: the customer role, scored by its mean reward against the keyword router."""
    return [
        ScenarioAudit(
            env_id="RLADA-Customer-v0",
            learner="customer",
            score="customer_reward",
            score_kind="reward",
            baseline="contextual",
            fair_order=("direct", "vague", "camouflage", "contextual"),
            policies=(*generic_policies(CUSTOMER_VOCABULARY), *customer_policies()),
            reward_margin=CUSTOMER_MARGIN,
            margin_rationale="half of one customer component (weights 0.5); 600-episode standard error ~0.04",
            ceiling={"planner": CUSTOMER_CEILING_DESCRIPTION},
        )
    ]
