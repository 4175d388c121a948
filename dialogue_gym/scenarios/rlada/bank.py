"""The small simulated bank an episode runs against: one customer, a checking and a savings
account, one or two cards, a month of transactions, generated from a seed.

The intent's ``plant`` (``data/intents.jsonl``) puts the customer's problem into the bank (a
duplicated charge, a frozen card, a pending transfer, ...), so the right tool finds it and the
customer's facts (merchant, amount, day, card) are true. :meth:`Bank.execute` runs one tool call
whose arguments already passed schema validation.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from dataclasses import dataclass, field
from functools import lru_cache
from operator import attrgetter
from typing import Any, Callable, Sequence

from dialogue_gym.scenarios.rlada.data import MIN_AMOUNT, Domain, Intent
from dialogue_gym.seeding import mix_seed
from dialogue_gym.types import finite_number

DEBIT_KINDS = frozenset({"card_payment", "cash_withdrawal", "transfer_out", "fee", "direct_debit"})
MAX_LISTED = 12
"""get_transactions lists at most this many transactions, newest first."""
BACKGROUND_DAYS_AGO = range(1, 31)
"""How many days before ``today`` a background transaction may lie."""
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def _record(row: Transaction | Card | SubAccount) -> dict[str, Any]:
    """A tool result's copy of a bank row: its fields in order (what ``dataclasses.asdict`` gives for
    these flat rows of atoms, without its per-value deep copy)."""
    return dict(vars(row))


@dataclass
class Transaction:
    transaction_id: str
    date: str
    merchant: str
    amount: float
    kind: str
    status: str
    direction: str


@dataclass
class Card:
    card_id: str
    last4: str
    status: str = "active"
    virtual: bool = False
    expiry: str = "2027-09"
    contactless_enabled: bool = True
    delivery: str | None = None


@dataclass
class SubAccount:
    account_id: str
    type: str
    balance: float


@dataclass
class Bank:
    customer_id: str
    name: str
    accounts: list[SubAccount]
    cards: list[Card]
    transactions: list[Transaction]
    limits: dict[str, float]
    identity_verified: bool = True
    seed: int = 0
    today: str = "2024-06-14"
    disputes: list[dict[str, Any]] = field(default_factory=list)
    transfers: list[dict[str, Any]] = field(default_factory=list)
    escalations: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._ids = random.Random(mix_seed(self.seed, 7))

    # -- tool handlers -----------------------------------------------------------------------
    def execute(self, name: str, args: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        """``(ok, result)`` or ``(False, error)`` for a schema-valid call of tool ``name``."""
        return getattr(self, f"_tool_{name}")(args)

    def _account_error(self, account_id: str) -> dict[str, Any] | None:
        if account_id == self.customer_id:
            return None
        return {"code": "account_not_found", "message": f"No account {account_id!r}; the caller's account id is in your instructions."}

    @staticmethod
    def _amount(args: dict[str, Any]) -> tuple[float, dict[str, Any] | None]:
        """``args["amount"]`` in dollars and cents, and an error when that is under one cent or not
        finite (a domain whose schema lets such amounts through must still not move $0.00 or NaN)."""
        given = args["amount"]
        amount = round(float(given), 2) if finite_number(given) else math.nan
        if not amount >= MIN_AMOUNT:
            shown = "an integer beyond the float range" if isinstance(given, int) and not finite_number(given) else repr(given)[:40]
            return amount, {"code": "invalid_amount", "message": f"Amounts are dollars and cents, at least ${MIN_AMOUNT}; got {shown}."}
        return amount, None

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}-{self._ids.randrange(10**6):06d}"

    def _tool_lookup_account(self, args: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        error = self._account_error(args["account_id"])
        if error:
            return False, error
        return True, {
            "customer_id": self.customer_id,
            "name": self.name,
            "identity_verified": self.identity_verified,
            "accounts": [_record(account) for account in self.accounts],
            "cards": [{"card_id": c.card_id, "last4": c.last4, "virtual": c.virtual} for c in self.cards],
            "limits": dict(self.limits),
        }

    def _tool_get_transactions(self, args: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        error = self._account_error(args["account_id"])
        if error:
            return False, error
        days = args.get("days", 30)
        status = args.get("status", "all")
        rows = [
            _record(t)
            for t in sorted(self.transactions, key=lambda t: (t.date, t.transaction_id), reverse=True)
            if _days_before(self.today, t.date) <= days and status in ("all", t.status)
        ]
        return True, {"account_id": self.customer_id, "days": days, "transactions": rows[:MAX_LISTED]}

    def _tool_dispute_charge(self, args: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        error = self._account_error(args["account_id"])
        if error:
            return False, error
        amount, invalid = self._amount(args)
        if invalid:
            return False, invalid
        matches = [t for t in self.transactions if t.direction == "debit" and t.status == "posted" and abs(t.amount - amount) < 0.005]
        wanted = args.get("merchant", "").lower()
        if wanted and len(matches) > 1:
            named = [t for t in matches if _same_merchant(wanted, t.merchant.lower())]
            matches = named or matches
        if not matches:
            return False, {"code": "no_matching_charge", "message": f"No posted charge of ${amount:.2f} on {self.customer_id}."}
        disputed = {d["transaction_id"] for d in self.disputes}
        target = max((t for t in matches if t.transaction_id not in disputed), key=lambda t: (t.date, t.transaction_id), default=None)
        if target is None:
            return False, {"code": "already_disputed", "message": f"The ${amount:.2f} charge is already under dispute."}
        dispute = {
            "dispute_id": self._new_id("DSP"),
            "transaction_id": target.transaction_id,
            "merchant": target.merchant,
            "amount": target.amount,
            "reason": args["reason"],
            "status": "opened",
            "provisional_credit": "within 3 business days",
        }
        self.disputes.append(dispute)
        return True, dispute

    def _tool_check_card_status(self, args: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        for card in self.cards:
            if card.card_id == args["card_id"]:
                return True, _record(card)
        return False, {"code": "card_not_found", "message": f"No card {args['card_id']!r}; card ids are listed by lookup_account."}

    def _tool_transfer_funds(self, args: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        accounts = {account.account_id: account for account in self.accounts}
        amount, invalid = self._amount(args)
        if invalid:
            return False, invalid
        source, target = accounts.get(args["from_account_id"]), accounts.get(args["to_account_id"])
        if source is None or target is None:
            return False, {"code": "account_not_found", "message": f"Both accounts must belong to the caller: {sorted(accounts)}."}
        if source is target:
            return False, {"code": "same_account", "message": "from_account_id and to_account_id must differ."}
        if amount > source.balance:
            return False, {"code": "insufficient_funds", "message": f"{source.account_id} holds ${source.balance:.2f}, less than ${amount:.2f}."}
        if amount > self.limits["daily_transfer"]:
            return False, {"code": "limit_exceeded", "message": f"The daily transfer limit is ${self.limits['daily_transfer']:.2f}."}
        source.balance = round(source.balance - amount, 2)
        target.balance = round(target.balance + amount, 2)
        transfer = {
            "transfer_id": self._new_id("TRF"),
            "from_account_id": source.account_id,
            "to_account_id": target.account_id,
            "amount": amount,
            "new_balances": {a.account_id: a.balance for a in self.accounts},
        }
        self.transfers.append(transfer)
        return True, transfer

    def _tool_transfer_to_human(self, args: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        escalation = {
            "ticket_id": self._new_id("HUM"),
            "department": args.get("department", "general"),
            "reason": args["reason"],
            "estimated_wait_minutes": 2 + self._ids.randrange(9),
        }
        self.escalations.append(escalation)
        return True, escalation


def _same_merchant(a: str, b: str) -> bool:
    words_a, words_b = set(a.replace("*", " ").split()), set(b.replace("*", " ").split())
    return a in b or b in a or bool(words_a & words_b)


# -- generation -------------------------------------------------------------------------------
@lru_cache(maxsize=1024)
def _date(today: str, days_ago: int) -> str:
    return (dt.date.fromisoformat(today) - dt.timedelta(days=days_ago)).isoformat()


@lru_cache(maxsize=1024)
def _days_before(today: str, date: str) -> int:
    """How many days ``date`` lies before ``today`` (ISO dates)."""
    return (dt.date.fromisoformat(today) - dt.date.fromisoformat(date)).days


def weekday(date: str) -> str:
    return WEEKDAYS[dt.date.fromisoformat(date).weekday()]


def _below(bits: Callable[[int], int], n: int) -> int:
    """``rng._randbelow(n)`` (random.Random._randbelow_with_getrandbits) for ``bits = rng.getrandbits``:
    the first ``bits(k)`` below ``n``, ``k = n.bit_length()``. The bank is drawn every episode, and
    random.Random's choice, randrange, randint, uniform and sample spent a third of the bank's
    instructions in their Python layers: written out with this one call (inline in the background
    loop), the bank takes 1.24x fewer instructions (callgrind, 300 banks; the same draws:
    tests/scenarios/rlada/test_rlada_fast_paths.py holds each equality with the random.Random method)."""
    k = n.bit_length()
    r = bits(k)
    while r >= n:
        r = bits(k)
    return r


def _pick(bits: Callable[[int], int], options: Sequence[Any]) -> Any:
    """``rng.choice(options)`` (see :func:`_below`)."""
    if not len(options):
        raise IndexError("Cannot choose from an empty sequence")
    return options[_below(bits, len(options))]


def _two_of(bits: Callable[[int], int], n: int) -> tuple[int, int]:
    """``rng.sample(range(n), 2)`` for ``n > 37`` (see :func:`_below`): two draws below ``n``, the second
    redrawn while it equals the first (sample's set-based selection, which it takes for so many)."""
    first = _below(bits, n)
    second = _below(bits, n)
    while second == first:
        second = _below(bits, n)
    return first, second


_DATE_THEN_ID = attrgetter("date", "transaction_id")
"""The order of a bank's transactions: ``(date, transaction_id)``, as a C getter (a lambda was 3% of a bank)."""


def generate_bank(seed: int, intent: Intent, domain: Domain, overrides: dict[str, Any] | None = None) -> tuple[Bank, dict[str, Any]]:
    """The bank of one episode and the customer's facts, a pure function of the arguments.

    Every random draw happens whatever the overrides, so regenerating from a profile whose facts are
    the generated ones gives the identical bank."""
    data = domain.bank
    rng = random.Random(seed)
    bits, unit = rng.getrandbits, rng.random
    # The draws of random.Random's choice, randrange, randint, uniform and sample, written out (see
    # _below); each comment names the method whose draw a line makes.
    name = f"{_pick(bits, data['first_names'])} {_pick(bits, data['last_names'])}"
    digits = f"{_below(bits, 10**6):06d}"  # rng.randrange(10**6)
    accounts = [
        SubAccount(f"CHK-{digits}", "checking", round(600 + (4000 - 600) * unit(), 2)),  # rng.uniform(600, 4000)
        SubAccount(f"SAV-{digits}", "savings", round(500 + (12000 - 500) * unit(), 2)),  # rng.uniform(500, 12000)
    ]
    card_numbers = _two_of(bits, 10000)
    last4s = [1000 + number for number in _two_of(bits, 9000)]  # rng.sample(range(1000, 10000), 2)
    cards = [Card(f"CARD-{card_numbers[0]:04d}", str(last4s[0]))]
    with_virtual = unit() < 0.5
    if with_virtual:
        cards.append(Card(f"CARD-{card_numbers[1]:04d}", str(last4s[1]), virtual=True))
    low, high = data.get("amount_range", [4.5, 480.0])
    background = []
    today, merchants = data["today"], data["merchants"]
    count = rng.randint(*data.get("background_transactions", [12, 20]))
    if count > 0 and not merchants:
        raise IndexError("Cannot choose from an empty sequence")
    # Each background transaction's draws inline: its day and merchant as pick draws them, its amount
    # as random.Random.uniform computes it, ``a + (b - a) * random()``.
    days, day_bits = len(BACKGROUND_DAYS_AGO), len(BACKGROUND_DAYS_AGO).bit_length()
    shops, shop_bits = len(merchants), len(merchants).bit_length()
    for index in range(count):
        day = bits(day_bits)
        while day >= days:
            day = bits(day_bits)
        shop = bits(shop_bits)
        while shop >= shops:
            shop = bits(shop_bits)
        background.append(
            Transaction(f"TX-{index + 1:04d}", _date(today, BACKGROUND_DAYS_AGO[day]), merchants[shop], round(4.5 + (180.0 - 4.5) * unit(), 2), "card_payment", "posted", "debit")
        )
    facts: dict[str, Any] = {
        "merchant": _pick(bits, data["merchants"]),
        "amount": round(rng.uniform(low, high), 2),
        "day": 1 + _below(bits, 6),  # rng.randint(1, 6)
        "person": _pick(bits, data["people"]),
        "country": _pick(bits, data["countries"]),
        "atm": _pick(bits, data["atms"]),
        "company": _pick(bits, data["companies"]),
        "descriptor": _pick(bits, data["descriptors"]),
        "fee": round(1.5 + (9.5 - 1.5) * unit(), 2),  # rng.uniform(1.5, 9.5)
        "background_amount": round(20.0 + (140.0 - 20.0) * unit(), 2),  # rng.uniform(20.0, 140.0)
    }
    facts_override = dict(overrides or {})
    plant = intent.plant or {}
    kind = next(iter(plant), None)
    spec = plant.get(kind, {}) if kind else {}
    if kind == "transaction":
        source = spec.get("merchant") or {"cash_withdrawal": "atm", "direct_debit": "company"}.get(spec["kind"], "merchants")
        if source == "descriptor":
            facts["merchant"] = facts["descriptor"]
        elif source == "atm" or spec["kind"] == "cash_withdrawal":
            facts["merchant"] = f"{facts['atm']} ATM"
        elif source == "company":
            facts["merchant"] = facts["company"]
        elif source == "transfer_fee":
            facts["merchant"] = "Transfer fee"
        if spec["kind"] == "fee":
            facts["amount"] = facts["fee"]
    days_ago = facts.pop("day")
    facts.pop("fee")
    extra_amount = facts.pop("background_amount")
    facts.update({"day": weekday(_date(data["today"], days_ago)), "last4": cards[0].last4, "source": "checking", "target": "savings"})
    for key, value in facts_override.items():
        facts[key] = round(float(value), 2) if key == "amount" else value
    bank = Bank(
        customer_id=f"ACC-{digits}",
        name=name,
        accounts=accounts,
        cards=cards,
        transactions=background,
        limits=dict(data.get("limits", {"daily_transfer": 5000, "top_up_max": 10000, "atm_daily": 800})),
        seed=seed,
        today=data["today"],
    )
    _plant(bank, kind, spec, facts, days_ago, extra_amount)
    bank.transactions.sort(key=_DATE_THEN_ID)
    return bank, facts


def _plant(bank: Bank, kind: str | None, spec: dict[str, Any], facts: dict[str, Any], days_ago: int, extra_amount: float) -> None:
    """Put the intent's problem into the bank, consistent with ``facts``."""
    next_id = len(bank.transactions) + 1

    def add(merchant: str, amount: float, txn_kind: str, status: str) -> None:
        nonlocal next_id
        direction = "debit" if txn_kind in DEBIT_KINDS else "credit"
        bank.transactions.append(Transaction(f"TX-{next_id:04d}", _date(bank.today, days_ago), merchant, round(amount, 2), txn_kind, status, direction))
        next_id += 1

    if kind == "transaction":
        txn_kind, status = spec["kind"], spec.get("status", "posted")
        merchant = {
            "transfer_out": f"Transfer to {facts['person']}",
            "transfer_in": "Incoming transfer",
            "top_up": "Top-up by card",
            "deposit": "Cheque deposit",
        }.get(txn_kind, facts["merchant"])
        if txn_kind == "fee" and facts["merchant"] != "Transfer fee" and not facts["merchant"].endswith("ATM"):
            add(facts["merchant"], extra_amount, "card_payment", "posted")
            merchant = f"Card payment fee - {facts['merchant']}"
        elif txn_kind == "fee" and facts["merchant"].endswith("ATM"):
            merchant = f"Cash withdrawal fee - {facts['merchant']}"
        if spec.get("foreign"):
            merchant = f"{merchant} ({facts['country']})"
        for _ in range(spec.get("copies", 1)):
            add(merchant, float(facts["amount"]), txn_kind, status)
    elif kind == "card":
        card = next((c for c in bank.cards if c.virtual), None) if spec.get("virtual") else bank.cards[0]
        if card is None:
            card = Card(f"CARD-{(int(bank.cards[0].card_id[5:]) + 1) % 10000:04d}", str((int(bank.cards[0].last4) + 1) % 9000 + 1000), virtual=True)
            bank.cards.append(card)
        status = spec["status"]
        if status == "contactless_off":
            card.contactless_enabled = False
        elif status == "expiring":
            card.status, card.expiry = "expiring", "2024-07"
        elif status == "shipped":
            card.status, card.delivery = "shipped", "posted on 2024-06-10, arriving in 3-5 business days"
        else:
            card.status = status
        facts["last4"] = card.last4
    elif kind == "account":
        bank.identity_verified = bool(spec.get("identity_verified", True))
    elif kind == "move":
        checking = bank.accounts[0]
        checking.balance = round(max(checking.balance, float(facts["amount"]) + 250.0), 2)
    elif kind == "suspicious":
        add(f"{facts['merchant']} ({facts['country']})", float(facts["amount"]), "card_payment", "posted")
        add(f"ONLINE*{facts['descriptor']}", round(extra_amount, 2), "card_payment", "posted")
