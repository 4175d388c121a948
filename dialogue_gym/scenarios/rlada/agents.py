"""Baseline support agents for RL-ADA: ``keyword`` (routes on the cue lexicon, asks when unsure),
``always_escalate`` (sends every caller to a human: scores on the 38 human intents, fails the
rest, the transfer_to_human imbalance of the taxonomy), ``random`` (random actions, tools and
arguments, malformed output now and then) and ``oracle`` (reads the hidden intent from ``info``: an
upper bound, not a fair agent).

Once an agent has chosen its route, :func:`procedure_action` plays the protocol: lookup_account,
the routed tool with arguments read from the call, an explanation built from the tool result (so
its claims match the tools), end_call. The trainer's strategy agent uses the same procedure.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from dialogue_gym.game import PRIVILEGED_INFO_KEY
from dialogue_gym.scenarios.rlada.cues import cue_hits
from dialogue_gym.scenarios.rlada.data import Domain
from dialogue_gym.scenarios.rlada.judge import ESCALATE, LOOKUP
from dialogue_gym.scenarios.rlada.parsing import render_agent_action
from dialogue_gym.scenarios.rlada.reading import split_sentences, vocabulary
from dialogue_gym.scenarios.understanding import read_sentence
from dialogue_gym.simulators.base import ScriptedPolicy

ACCOUNT_ID = re.compile(r"\bACC-\d{6}\b")
AMOUNT = re.compile(r"\$\s?(\d[\d,]*(?:\.\d{1,2})?)")
LAST4 = re.compile(r"\b(?:ending|ends in|last four|last 4)\D{0,12}(\d{4})\b", re.IGNORECASE)
CLARIFY = (
    "I'm sorry to hear that. Could you tell me a bit more about what happened?",
    "Which payment, card or account is this about, and what exactly went wrong?",
    "Just so I get this right, what would you like me to do with your account today?",
)
GOODBYE = "Thank you for calling, have a good day. Goodbye."
DISPUTE_REASONS = (
    ("duplicate", re.compile(r"twice|two times|double|again", re.I)),
    ("unrecognised", re.compile(r"recogni[sz]e|didn't make|wasn't me|never (signed|bought|made)|don't remember|can't (place|match|tie)", re.I)),
    ("fee", re.compile(r"\bfees?\b", re.I)),
    ("refund_not_received", re.compile(r"refund|money back|returned|sent back", re.I)),
    ("wrong_amount", re.compile(r"rate|part of|wrong|more than", re.I)),
)
FRAUD = re.compile(r"stolen|fraud|someone|hacked|don't remember|details", re.I)


# -- reading the call ------------------------------------------------------------------------------
def customer_text(observation: dict[str, Any]) -> str:
    """Everything the customer has said so far."""
    return " ".join(m["content"] for m in observation["messages"] if m["role"] == "user")


def understood_customer_text(observation: dict[str, Any], domain: Domain) -> str:
    """The customer's sentences a person understands (:func:`~dialogue_gym.scenarios.understanding.read_sentence`):
    what the keyword router routes on, so a keyword list or word salad moves no route."""
    extra = vocabulary(domain)
    return " ".join(part for part in split_sentences(customer_text(observation)) if read_sentence(part, extra).understood)


def account_id(observation: dict[str, Any]) -> str:
    match = ACCOUNT_ID.search(observation["messages"][0]["content"])
    return match.group(0) if match else "ACC-000000"


def last_tool_message(observation: dict[str, Any]) -> dict[str, Any] | None:
    last = observation["messages"][-1]
    if last["role"] != "tool":
        return None
    try:
        return json.loads(last["content"])
    except json.JSONDecodeError:
        return None


def _amount(text: str) -> float | None:
    """The first dollar amount the customer said, or None (also for a digit run too long to be finite)."""
    found = AMOUNT.search(text)
    if found is None:
        return None
    amount = float(found.group(1).replace(",", ""))
    return amount if math.isfinite(amount) else None


def tool_args(tool: str, observation: dict[str, Any], lookup: dict[str, Any] | None) -> dict[str, Any]:
    """Arguments for ``tool`` read from the call: the caller's account id, amounts and card digits the
    customer said, and ids from the lookup result."""
    said = customer_text(observation)
    account = account_id(observation)
    if tool in (LOOKUP, "get_transactions"):
        return {"account_id": account} if tool == LOOKUP else {"account_id": account, "days": 30}
    if tool == "dispute_charge":
        reason = next((name for name, pattern in DISPUTE_REASONS if pattern.search(said)), "other")
        return {"account_id": account, "amount": _amount(said) or 1.0, "reason": reason}
    cards = (lookup or {}).get("cards", [])
    accounts = {a["type"]: a["account_id"] for a in (lookup or {}).get("accounts", [])}
    if tool == "check_card_status":
        digits = LAST4.findall(said)
        virtual = bool(re.search(r"virtual|online|in my app", said, re.I))
        card = next((c for c in cards if c["last4"] in digits), None) or next((c for c in cards if c["virtual"] == virtual), None)
        return {"card_id": (card or (cards[0] if cards else {"card_id": "CARD-0000"}))["card_id"]}
    if tool == "transfer_funds":
        source, target = ("savings", "checking") if re.search(r"from (my )?savings|savings side to", said, re.I) else ("checking", "savings")
        return {
            "from_account_id": accounts.get(source, "CHK-000000"),
            "to_account_id": accounts.get(target, "SAV-000000"),
            "amount": _amount(said) or 1.0,
        }
    department = "fraud" if FRAUD.search(said) else "general"
    return {"reason": "The customer needs a specialist for this request.", "department": department}


def explanation(message: dict[str, Any] | None) -> str:
    """What to tell the customer about a tool result; its claims are exactly what the tool returned."""
    if not message or not message.get("ok"):
        detail = (message or {}).get("error", {}).get("message", "the system did not answer")
        return f"I'm sorry, I could not complete that: {detail}"
    tool, result = message["tool"], message["result"]
    if tool == LOOKUP:
        parts = [f"your {a['type']} balance is ${a['balance']:,.2f}" for a in result["accounts"]]
        return "I have your account open: " + " and ".join(parts) + "."
    if tool == "get_transactions":
        rows = result["transactions"]
        unusual = [t for t in rows if t["status"] != "posted"] or rows
        if not unusual:
            return "I don't see any transactions in the last 30 days."
        t = unusual[0]
        return f"I can see the {t['merchant']} transaction of ${t['amount']:,.2f} from {t['date']}, and its status is {t['status']}."
    if tool == "dispute_charge":
        return (
            f"I've opened a dispute, reference {result['dispute_id']}, for the ${result['amount']:,.2f} charge at "
            f"{result['merchant']}; you'll get a provisional credit {result['provisional_credit']}."
        )
    if tool == "check_card_status":
        status = {"shipped": "on its way", "pin_blocked": "pin-blocked", "contactless_off": "active"}.get(result["status"], result["status"])
        extra = "" if result["contactless_enabled"] else " Contactless payments are switched off on it."
        delivery = f" It was {result['delivery']}." if result.get("delivery") else ""
        return f"Your card ending {result['last4']} is {status}.{extra}{delivery}"
    if tool == "transfer_funds":
        return f"I've moved ${result['amount']:,.2f} from {result['from_account_id']} to your savings." if result["to_account_id"].startswith("SAV") else (
            f"I've moved ${result['amount']:,.2f} from {result['from_account_id']} into your checking."
        )
    return f"I'm transferring you to a specialist now, ticket {result['ticket_id']}; the wait is about {result['estimated_wait_minutes']} minutes."


NEEDS_AMOUNT = ("dispute_charge", "transfer_funds")


def procedure_action(route: str, observation: dict[str, Any], memory: dict[str, Any], max_questions: int = 2) -> str:
    """The protocol after routing: lookup, the routed tool, an explanation, end_call (one action per
    call). A route that needs an amount the customer has not said asks for details first (at most
    ``max_questions`` questions in the call)."""
    stage = memory.setdefault("stage", "lookup")
    if stage == "lookup":
        if route in NEEDS_AMOUNT and _amount(customer_text(observation)) is None and memory.get("asked", 0) < max_questions:
            return clarify(memory)
        memory["stage"] = "domain"
        return render_agent_action("tool_call", LOOKUP, tool_args(LOOKUP, observation, None), "Verify the caller first.")
    if stage == "domain":
        result = last_tool_message(observation)
        memory["lookup"] = result.get("result") if result and result.get("ok") else None
        if route == LOOKUP:
            memory["stage"] = "end"
            return render_agent_action("speak", explanation(result))
        memory["stage"] = "explain"
        return render_agent_action("tool_call", route, tool_args(route, observation, memory["lookup"]), f"Route to {route}.")
    if stage == "explain":
        memory["stage"] = "end"
        return render_agent_action("speak", explanation(last_tool_message(observation)))
    return render_agent_action("end_call", GOODBYE)


def clarify(memory: dict[str, Any]) -> str:
    asked = memory.get("asked", 0)
    memory["asked"] = asked + 1
    return render_agent_action("speak", CLARIFY[asked % len(CLARIFY)], thinking="The request is unclear; ask.")


# -- baselines --------------------------------------------------------------------------------------
class KeywordRouterAgent(ScriptedPolicy):
    """Routes to the tool with the most lexicon cues in the customer's understood sentences (a keyword
    list or salad counts for nothing); asks up to ``max_questions`` clarifying questions while no tool
    leads, then escalates."""

    def __init__(self, domain: Domain, max_questions: int = 2):
        self.domain = domain
        self.max_questions = max_questions

    def route(self, observation: dict[str, Any], memory: dict[str, Any]) -> str | None:
        scores = cue_hits(understood_customer_text(observation, self.domain), self.domain)
        best = max(scores.values())
        leaders = [tool for tool, score in scores.items() if score == best]
        if best > 0 and len(leaders) == 1:
            return leaders[0]
        if memory.get("asked", 0) < self.max_questions:
            return None
        return leaders[0] if best > 0 else ESCALATE

    def act(self, observation: dict[str, Any], info: dict[str, Any], memory: dict[str, Any]) -> str:
        if "route" not in memory:
            route = self.route(observation, memory)
            if route is None:
                return clarify(memory)
            memory["route"] = route
        return procedure_action(memory["route"], observation, memory, self.max_questions)


class AlwaysEscalateAgent(ScriptedPolicy):
    """Looks the caller up and hands every call to a human."""

    def act(self, observation: dict[str, Any], info: dict[str, Any], memory: dict[str, Any]) -> str:
        return procedure_action(ESCALATE, observation, memory)


class OracleAgent(ScriptedPolicy):
    """Routes to the hidden intent's tool, read from the privileged channel
    (``info["privileged"]["target_tool"]``): an upper bound of the procedure, not a fair baseline."""

    privileged = True

    def act(self, observation: dict[str, Any], info: dict[str, Any], memory: dict[str, Any]) -> str:
        return procedure_action(info[PRIVILEGED_INFO_KEY]["target_tool"], observation, memory)


class RandomAgent(ScriptedPolicy):
    """Random action types, tools and arguments; one output in ten is not valid JSON."""

    def __init__(self, domain: Domain):
        self.tools = domain.tool_names

    def act(self, observation: dict[str, Any], info: dict[str, Any], memory: dict[str, Any]) -> str:
        rng = self.rng(memory)
        roll = rng.random()
        if roll < 0.1:
            return "I think I should check your account"
        if roll < 0.35:
            return clarify(memory)
        if roll < 0.45:
            return render_agent_action("end_call", GOODBYE)
        tool = self.tools[rng.randrange(len(self.tools))]
        args = tool_args(tool, observation, memory.get("lookup")) if rng.random() < 0.7 else {"id": rng.randrange(100)}
        return render_agent_action("tool_call", tool, args)


# -- the fair ceiling: matching the caller's words against the public phrasings ----------------------
SLOT = re.compile(r"\{[a-z0-9_]+\}")
SENTENCE_GAP = re.compile(r"(?<=[.?!]) ")


def template_parts(template: str) -> tuple[str, ...]:
    """A line template as its literal pieces around the ``{slot}`` fields (lowercased): n slots, n + 1 pieces."""
    return tuple(piece.lower() for piece in SLOT.split(template))


def fills(text: str, parts: tuple[str, ...]) -> bool:
    """Whether ``text`` (lowercased) is the template ``parts`` with every slot filled by a non-empty
    string. Leftmost literal search, linear in the text per piece: no backtracking on hostile input."""
    if len(parts) == 1:
        return text == parts[0]
    first, last = parts[0], parts[-1]
    if not (text.startswith(first) and text.endswith(last)):
        return False
    position, end = len(first), len(text) - len(last)
    for piece in parts[1:-1]:
        found = text.find(piece, position + 1, end)
        if found < 0:
            return False
        position = found + len(piece)
    return position + 1 <= end


@dataclass(frozen=True, eq=False)
class Phrasebook:
    """The public lines of the scripted customer (``intents.jsonl`` and ``customer.json``), as templates:
    each intent's own lines (direct, vague, hint, camouflage, camouflage follow-up), the side worries
    per tool, the lines any customer says (acknowledgements, confusion, hang-ups) and the restating prefixes."""

    own: dict[str, tuple[tuple[str, ...], ...]]
    worries: dict[str, tuple[tuple[str, ...], ...]]
    own_tools: dict[str, frozenset[str]]
    generic: tuple[tuple[str, ...], ...]
    prefixes: tuple[str, ...]


@lru_cache(maxsize=8)
def phrasebook(domain: Domain) -> Phrasebook:
    from dialogue_gym.scenarios.rlada.customers import family_lines, withheld_story  # customers imports the reading module this one does
    from dialogue_gym.scenarios.rlada.reading import own_tools

    customer = domain.customer
    own = {
        intent.name: tuple(
            template_parts(line)
            for line in (
                *intent.direct, *intent.vague, *(line for kind in ("hint", "camouflage", "camouflage_followup") for line in family_lines(domain, intent, kind)),
                *(line for story in withheld_story(domain, intent) for line in story),
            )
        )
        for intent in domain.intents
    }
    generic = [*customer["acknowledgements"], *customer["hangups"], *customer["confused_hangups"], *(line for lines in customer["confused"].values() for line in lines)]
    return Phrasebook(
        own=own,
        worries={tool: tuple(template_parts(line) for line in lines) for tool, lines in customer.get("side_worries", {}).items()},
        own_tools={intent.name: own_tools(intent, domain) for intent in domain.intents},
        generic=tuple(template_parts(line) for line in generic),
        prefixes=tuple(prefix.lower() for prefix in (*customer["direct_followup_prefix"], "Like I said, ")),
    )


def explains(book: Phrasebook, intent: str, turn: str) -> bool:
    """Whether the scripted customer with ``intent`` could have said ``turn``: one of its own lines
    (after a restating prefix, maybe), or a side worry about a tool outside its own tools followed by one."""

    def own_line(text: str) -> bool:
        bodies = [text, *(text[len(prefix):] for prefix in book.prefixes if text.startswith(prefix))]
        return any(fills(body, parts) for body in bodies for parts in book.own[intent])

    if own_line(turn):
        return True
    worries = [parts for tool, lines in book.worries.items() if tool not in book.own_tools[intent] for parts in lines]
    for gap in SENTENCE_GAP.finditer(turn):
        head, tail = turn[: gap.start()], turn[gap.end():]
        if any(fills(head, parts) for parts in worries) and own_line(tail):
            return True
    return False


class PhraseMatchAgent(KeywordRouterAgent):
    """The strongest fair agent we wrote for the scripted customer (the audit's fair ceiling): it
    matches every customer turn against the public phrasings of each intent (``intents.jsonl``,
    ``customer.json``, its withholding stories included: the lines are public, the customer's intent is not), keeps the intents that
    could have said all of them, and asks a clarifying question while they point at more than one
    tool (up to ``max_questions``, the customer's patience); then routes to the one tool, or the
    keyword router's pick among the remaining tools. A caller none of the phrasings explains (a
    language model, say) gets the keyword router. Reads only its observation."""

    def __init__(self, domain: Domain, max_questions: int | None = None):
        super().__init__(domain, max_questions if max_questions is not None else int(domain.customer["patience"]))
        self.book = phrasebook(domain)

    def candidates(self, observation: dict[str, Any]) -> list[str]:
        """The intents whose scripted customer could have said every customer turn so far."""
        turns = [m["content"].strip().lower() for m in observation["messages"] if m["role"] == "user"]
        turns = [turn for turn in turns if not any(fills(turn, parts) for parts in self.book.generic)]
        return [name for name in self.book.own if all(explains(self.book, name, turn) for turn in turns)]

    def route(self, observation: dict[str, Any], memory: dict[str, Any]) -> str | None:
        names = self.candidates(observation)
        tools = sorted({self.domain.intent(name).tool for name in names})
        if not tools:
            return super().route(observation, memory)
        if len(tools) == 1:
            return tools[0]
        if memory.get("asked", 0) < self.max_questions:
            return None
        scores = cue_hits(understood_customer_text(observation, self.domain), self.domain)
        return max(tools, key=lambda tool: (scores.get(tool, 0), sum(self.domain.intent(name).tool == tool for name in names)))
