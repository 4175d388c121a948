"""RL-ADA's fast paths give exactly what the general code gives: each memoised or shortened reader
against the plain code it stands for, on the lines scripted calls say and on hostile text, and the
bank's draws against the draws they replace."""

import hashlib
import json
import random
import re
from dataclasses import asdict

import pytest

from dialogue_gym.evaluation import Evaluator
from dialogue_gym.scenarios.common import MAX_ACTION_CHARS, MAX_CACHED_TEXT_CHARS
from dialogue_gym.scenarios.rlada import reading
from dialogue_gym.scenarios.rlada.bank import BACKGROUND_DAYS_AGO, generate_bank
from dialogue_gym.scenarios.rlada.cues import _names_intent, names_intent
from dialogue_gym.scenarios.rlada.data import load_domain
from dialogue_gym.scenarios.rlada.game import read_customer_output
from dialogue_gym.scenarios.rlada.parsing import parse_customer_output
from dialogue_gym.scenarios.rlada.prompts import tool_catalogue

DOMAIN = load_domain()


def scripted_texts() -> list[str]:
    """What scripted calls say and hear: raw turns and their readings, tool calls and their results."""
    texts = []
    for env_id, learner, agent in (("RLADA-Banking-v0", "agent", "keyword"), ("RLADA-Customer-v0", "customer", "direct")):
        for trajectory in Evaluator(env_id, agent, learner=learner).run(24, seed=5):
            for turn in trajectory.turns:
                texts += [turn.raw, turn.text]
                outcome = turn.parsed.get("tool_outcome")
                if outcome is not None:
                    texts += [json.dumps(outcome["args"]), json.dumps(outcome["result"])]
    return list(dict.fromkeys(texts))


def hostile_texts() -> list[str]:
    """Long runs of the characters the readers look at, texts on both sides of the memo's length
    limit, odd code points, markup and number-like junk."""
    units = ("1,234.5 ", "$1", "9" * 7, "-0.5e9 ", "ACC-12 ", "[hang up] ", "Customer: ", '"', "<a>", "? ", "refund ", "\x00\ud800")
    texts = [unit * (MAX_ACTION_CHARS // len(unit) + 1) for unit in units]
    texts += [unit * (MAX_CACHED_TEXT_CHARS // len(unit)) for unit in units]
    texts += ["", " ", "?", "1" * 5000, "1,000,000,000,000,000.129", ".5", "5.", "1.2.3", "00042.80", "1e999", "NaN"]
    texts += ["transaction charged twice", "I want to dispute_charge this", "TRANSFER  TO  HUMAN please", "lost_or_stolen_card?"]
    return texts


TEXTS = scripted_texts() + hostile_texts()


def test_the_texts_cover_the_memo_limit_and_the_parsers_bound():
    lengths = [len(text) for text in TEXTS]
    assert min(lengths) == 0 and max(lengths) > MAX_ACTION_CHARS
    assert any(length <= MAX_CACHED_TEXT_CHARS for length in lengths) and any(MAX_CACHED_TEXT_CHARS < length <= MAX_ACTION_CHARS for length in lengths)
    assert len(TEXTS) > 150


def test_evidence_numbers_reads_every_match_as_the_match_loop_did():
    # _evidence_numbers takes the distinct matches from findall; the loop over match objects it replaced:
    def by_match_loop(text: str) -> frozenset[float]:
        found = {match.group(0) for match in reading._NUMBER.finditer(text)}
        return frozenset(value for value in map(reading.number_value, found) if value is not None)

    assert reading._NUMBER.groups == 0  # findall gives whole matches only while the pattern has no group
    for text in TEXTS:
        bounded = text[:MAX_ACTION_CHARS]
        assert reading.evidence_numbers(text) == by_match_loop(bounded), text[:80]


# The patterns as first written, each beginning with its assertion (reading.py says why they no longer do).
PLAIN_PATTERNS = {
    "ID_PATTERN": re.compile(r"\b[A-Z]{2,5}-\d{3,}\b"),
    "_LONG_NUMBER": re.compile(r"(?<![\w$.,-])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d{3,}(?:\.\d+)?)(?![\w-])"),
    "_NUMBER": re.compile(r"(?<![A-Za-z_\d.])\d+(?:,\d{3})*(?:\.\d+)?"),
}


def near_miss_texts(count: int, seed: int = 0) -> list[str]:
    """Random texts of the characters the number and id patterns turn on: digits (ASCII and others that
    are digits to ``\\d``), upper and lower case letters (ASCII and not), the separators they look
    behind and ahead for, spaces and JSON punctuation; ids and amounts glued to each other."""
    pieces = list("0123456789AZQxy_.,-$ \"{}[]:") + ["\u0663", "\u00c9", "\u00e9", "\u212a", "DSP-", "ACC-1234", "CARD-0042", "1,234.50", "12,34", "ABCDEF-123"]
    rng = random.Random(seed)
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 40))) for _ in range(count)]


@pytest.mark.parametrize("name", sorted(PLAIN_PATTERNS))
def test_the_class_first_patterns_match_what_the_plain_patterns_match(name):
    fast, plain = getattr(reading, name), PLAIN_PATTERNS[name]
    assert (fast.flags, fast.groups) == (plain.flags, plain.groups)
    for text in [*TEXTS, *near_miss_texts(20000)]:
        expected = [(match.span(), match.groups()) for match in plain.finditer(text)]
        assert [(match.span(), match.groups()) for match in fast.finditer(text)] == expected, (name, text[:80])
        assert fast.findall(text) == plain.findall(text) and fast.sub(" ", text) == plain.sub(" ", text)


def test_the_near_miss_texts_reach_every_pattern_both_ways():
    # The random texts are only worth comparing on if each pattern finds something in some and nothing in others.
    texts = near_miss_texts(20000)
    for plain in PLAIN_PATTERNS.values():
        found = [bool(plain.search(text)) for text in texts]
        assert 500 < sum(found) < len(texts) - 500, plain.pattern


@pytest.mark.parametrize("customer_max_chars", [400, 20, MAX_ACTION_CHARS])
def test_the_memoised_customer_parse_is_the_parse(customer_max_chars):
    patterns = (DOMAIN.hangup_markers, DOMAIN.role_reversal, DOMAIN.meta_talk)
    for max_sentences in (1, 2):
        for text in TEXTS:
            expected = parse_customer_output(text, *patterns, max_sentences, customer_max_chars)
            for _ in range(2):  # a miss, then a hit where the text is short enough to be kept
                assert read_customer_output(text, DOMAIN, max_sentences, customer_max_chars) == expected, text[:80]


def test_the_memoised_names_intent_is_the_plain_check():
    tools = DOMAIN.tool_names
    for intent in DOMAIN.intents[::7]:
        for text in TEXTS:
            expected = _names_intent.__wrapped__(text, intent.name, intent.phrase, tools)
            assert names_intent(text, intent, tools) == expected, (intent.name, text[:80])
            assert names_intent(text, intent, list(tools)) == expected
    intent = DOMAIN.intent("transaction_charged_twice")
    assert names_intent("Was my transaction charged twice?", intent, tools)
    assert names_intent("please transfer to human", intent, tools)
    assert not names_intent("I see the same coffee twice on my statement", intent, tools)


def test_the_domain_keeps_its_tool_names_in_order():
    assert DOMAIN.tool_names == tuple(tool.name for tool in DOMAIN.tools)
    assert DOMAIN.tool_names is DOMAIN.tool_names


def test_the_kept_tool_catalogue_is_the_domain_catalogue():
    lines = [f"- {tool.name}: {tool.description} Arguments: {json.dumps(tool.parameters, separators=(',', ':'))}" for tool in DOMAIN.tools]
    assert tool_catalogue(DOMAIN) == "\n".join(lines)


def test_choice_draws_what_randrange_and_randint_draw():
    # generate_bank draws with choice where it drew options[randrange(len(options))] and randint(1, 30).
    for seed in range(300):
        sizes = random.Random(-seed).choices(range(1, 5000), k=40)
        by_choice, by_randrange = random.Random(seed), random.Random(seed)
        for size in sizes:
            options = range(size)
            assert by_choice.choice(options) == options[by_randrange.randrange(len(options))]
            assert by_choice.choice(BACKGROUND_DAYS_AGO) == by_randrange.randint(1, 30)
        assert by_choice.getstate() == by_randrange.getstate()


def test_the_banks_are_the_ones_drawn_before():
    # The digest of these banks and facts as the generator drew them with randrange and randint.
    digest = hashlib.sha256()
    for index, intent in enumerate(DOMAIN.intents):
        for seed in (index, 10**9 + 7 * index, 2**61 + index):
            bank, facts = generate_bank(seed, intent, DOMAIN)
            digest.update(json.dumps([asdict(bank), facts], sort_keys=True).encode())
    assert digest.hexdigest() == "f8f14969c9564fd34b3c7ffc3a5b5d1a55275f917f6dc9416b65c1d5384f5ef4"


def test_no_reader_keeps_a_text_over_the_memo_limit():
    long_text = "I was charged twice at Netflix. " * (MAX_CACHED_TEXT_CHARS // 30)
    assert len(long_text) > MAX_CACHED_TEXT_CHARS
    before = read_customer_output.cache_info().currsize, _names_intent.cache_info().currsize
    read_customer_output(long_text, DOMAIN, 2, 400)
    names_intent(long_text, DOMAIN.intents[0], DOMAIN.tool_names)
    assert (read_customer_output.cache_info().currsize, _names_intent.cache_info().currsize) == before
    assert read_customer_output(long_text, DOMAIN, 2, 400).utterance.startswith("I was charged twice at Netflix.")


@pytest.mark.parametrize(("env_id", "learner", "agent"), [("RLADA-Banking-v0", "agent", "random"), ("RLADA-Customer-v0", "customer", "direct")])
def test_the_per_role_terms_in_info_are_the_filtered_reward_terms(env_id, learner, agent):
    # info() hands each role its terms from the per-role record add_reward keeps; the plain code
    # filtered the game's "<role>/<term>" keys. Checked after every move (invalid actions, hang-ups,
    # judged endings: each path that credits a term) and at the end, in the order the terms came.
    evaluator = Evaluator(env_id, agent, learner=learner)
    game = evaluator.environment.game.spawn()
    checked = set()
    for episode in range(40):
        game.reset(seed=episode, options=game.evaluation_options(episode, 0))
        memories = evaluator.driver.start(game)
        while True:
            for role in game.roles:
                plain = {key.split("/", 1)[1]: value for key, value in game.reward_terms.items() if key.startswith(f"{role}/")}
                assert list(game.info(role)["reward_terms"].items()) == list(plain.items())
                checked.update(f"{role}/{term}" for term in plain)
            if game.done:
                break
            role = game.current_role
            policy = evaluator.driver.policies[role]
            game.step(policy.act(game.observe(role), game.info(role), memories[role]))
    assert {"agent/judge", "customer/realism"} <= checked
